// CAME's kernel-backed autograd functions (native/torch/kernel_autograd.h): MaxSim and SPLADE pooling forward and
// backward through Quorum's kernels, against a pure-libtorch autograd reference (to 1e-5 relative) and against
// finite differences of the forward, over a table of shapes (random values) with padding and masks.
import { describe, expect, it } from 'vitest';

import { torchTestAddon } from './torch-hooks.js';
import { rng } from './basics.js';

const close = (a: ArrayLike<number>, b: ArrayLike<number>, rel = 1e-5, abs = 1e-5) => {
  expect(a.length).toBe(b.length);
  for (let i = 0; i < a.length; i++) expect(Math.abs((a[i] as number) - (b[i] as number)), `index ${i}: ${a[i]} vs ${b[i]}`).toBeLessThanOrEqual(abs + rel * Math.abs(b[i] as number));
};

const randoms = (n: number, r: () => number) => Float32Array.from({ length: n }, r);

describe('MaxSim as an autograd function', () => {
  it('equals the libtorch reference in value and gradients, for random shapes, padding and query masks', () => {
    const addon = torchTestAddon();
    for (const [B, Lq, N, Ld, D, seed] of [
      [1, 1, 1, 1, 1, 1],
      [2, 3, 4, 5, 8, 2],
      [3, 32, 6, 17, 128, 3],
      [1, 7, 9, 3, 33, 4],
    ] as const) {
      const r = rng(seed);
      const q = randoms(B * Lq * D, r);
      const d = randoms(N * Ld * D, r);
      const qMask = Int32Array.from({ length: B * Lq }, (_, i) => (i % Lq === 0 || r() > -0.5 ? 1 : 0)); // first token always used
      const lengths = Int32Array.from({ length: N }, (_, n) => 1 + ((n * 7 + seed) % Ld));
      const grad = randoms(B * N, r);
      const ours = addon.maxSimAutograd(q, qMask, d, lengths, grad, B, Lq, N, Ld, D, false);
      const ref = addon.maxSimAutograd(q, qMask, d, lengths, grad, B, Lq, N, Ld, D, true);
      close(ours.scores, ref.scores);
      close(ours.dQ, ref.dQ);
      close(ours.dD, ref.dD);
      // Padding rows of a document and masked query tokens get no gradient.
      for (let n = 0; n < N; n++) for (let t = lengths[n]!; t < Ld; t++) for (let e = 0; e < D; e++) expect(ours.dD[(n * Ld + t) * D + e]).toBe(0);
      for (let i = 0; i < B * Lq; i++) if (!qMask[i]) for (let e = 0; e < D; e++) expect(ours.dQ[i * D + e]).toBe(0);
    }
  });

  it('matches finite differences of its own forward', () => {
    const addon = torchTestAddon();
    const [B, Lq, N, Ld, D] = [2, 3, 3, 4, 5];
    const r = rng(9);
    const q = randoms(B * Lq * D, r);
    const d = randoms(N * Ld * D, r);
    const qMask = Int32Array.from({ length: B * Lq }, () => 1);
    const lengths = Int32Array.of(4, 2, 3);
    const grad = randoms(B * N, r);
    const loss = (qq: Float32Array, dd: Float32Array) => {
      const s = addon.maxSimAutograd(qq, qMask, dd, lengths, grad, B, Lq, N, Ld, D, false).scores;
      return s.reduce((a, v, i) => a + v * grad[i]!, 0);
    };
    const g = addon.maxSimAutograd(q, qMask, d, lengths, grad, B, Lq, N, Ld, D, false);
    const eps = 1e-3;
    for (const [x, dx] of [
      [q, g.dQ],
      [d, g.dD],
    ] as const) {
      for (let i = 0; i < x.length; i += 3) {
        const plus = Float32Array.from(x);
        const minus = Float32Array.from(x);
        plus[i] = plus[i]! + eps;
        minus[i] = minus[i]! - eps;
        const fd = x === q ? (loss(plus, d) - loss(minus, d)) / (2 * eps) : (loss(q, plus) - loss(q, minus)) / (2 * eps);
        expect(Math.abs(fd - dx[i]!), `${x === q ? 'dQ' : 'dD'}[${i}]`).toBeLessThan(2e-3);
      }
    }
  });

  it('gives typed errors for bad shapes and lengths', () => {
    const addon = torchTestAddon();
    const one = Float32Array.of(1);
    expect(() => addon.maxSimAutograd(one, Int32Array.of(1), one, Int32Array.of(2), one, 1, 1, 1, 1, 1, false)).toThrow(expect.objectContaining({ code: 'ERR_RANGE' }));
    expect(() => addon.maxSimAutograd(one, Int32Array.of(1), one, Int32Array.of(1), one, 1, 1, 1, 1, 2, false)).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
  });
});

describe('SPLADE pooling as an autograd function', () => {
  it('equals the libtorch reference in value and gradients, with masks, negative logits and empty rows', () => {
    const addon = torchTestAddon();
    for (const [B, T, V, seed] of [
      [1, 1, 1, 1],
      [2, 5, 7, 2],
      [3, 16, 300, 3],
    ] as const) {
      const r = rng(seed);
      const x = randoms(B * T * V, () => 2 * r());
      const mask = Int32Array.from({ length: B * T }, (_, i) => (i % T === 0 || r() > -0.3 ? 1 : 0));
      if (B > 2) for (let t = 0; t < T; t++) mask[2 * T + t] = 0; // a row with no token: w = 0, no gradient
      const grad = randoms(B * V, r);
      const ours = addon.spladePoolAutograd(x, mask, grad, B, T, V, false);
      const ref = addon.spladePoolAutograd(x, mask, grad, B, T, V, true);
      close(ours.w, ref.w);
      close(ours.dLogits, ref.dLogits);
      for (let i = 0; i < B * T; i++) if (!mask[i]) for (let v = 0; v < V; v++) expect(ours.dLogits[i * V + v]).toBe(0);
    }
  });

  it('matches finite differences of its own forward', () => {
    const addon = torchTestAddon();
    const [B, T, V] = [2, 4, 6];
    const r = rng(11);
    const x = randoms(B * T * V, () => 2 * r());
    const mask = Int32Array.from({ length: B * T }, () => 1);
    const grad = randoms(B * V, r);
    const g = addon.spladePoolAutograd(x, mask, grad, B, T, V, false);
    const loss = (xx: Float32Array) => addon.spladePoolAutograd(xx, mask, grad, B, T, V, false).w.reduce((a, v, i) => a + v * grad[i]!, 0);
    const eps = 1e-3;
    for (let i = 0; i < x.length; i++) {
      // Skip logits within eps of a kink (0, or a tie with another token of the same column): the derivative jumps.
      const [b, t, v] = [Math.floor(i / (T * V)), Math.floor(i / V) % T, i % V];
      const others = Array.from({ length: T }, (_, u) => u).filter((u) => u !== t).map((u) => x[(b * T + u) * V + v]!);
      if (Math.abs(x[i]!) < 2 * eps || others.some((o) => Math.abs(o - x[i]!) < 2 * eps)) continue;
      const plus = Float32Array.from(x);
      const minus = Float32Array.from(x);
      plus[i] = plus[i]! + eps;
      minus[i] = minus[i]! - eps;
      const fd = (loss(plus) - loss(minus)) / (2 * eps);
      expect(Math.abs(fd - g.dLogits[i]!), `dLogits[${i}]`).toBeLessThan(2e-3);
    }
  });
});

describe('SPLADE pooling fused with the MLM decoder', () => {
  it('equals the libtorch reference (decoder, relu, log1p, masked max) in value and every gradient', () => {
    const addon = torchTestAddon();
    // B = 37 crosses the forward's 16-row slices; V = 1 and dim = 1 are the edges.
    for (const [B, T, V, D, seed] of [
      [1, 1, 1, 1, 1],
      [2, 5, 7, 3, 2],
      [37, 6, 50, 8, 3],
      [3, 20, 400, 16, 4],
    ] as const) {
      const r = rng(seed);
      const h = randoms(B * T * D, r);
      const emb = randoms(V * D, r);
      const bias = randoms(V, () => r() - 0.3);
      const mask = Int32Array.from({ length: B * T }, (_, i) => (i % T === 0 || r() > -0.3 ? 1 : 0));
      if (B > 2) for (let t = 0; t < T; t++) mask[2 * T + t] = 0; // a row with no token
      const grad = randoms(B * V, r);
      const ours = addon.spladeDecoderAutograd(h, mask, emb, bias, grad, B, T, V, D, false);
      const ref = addon.spladeDecoderAutograd(h, mask, emb, bias, grad, B, T, V, D, true);
      close(ours.w, ref.w);
      close(ours.dH, ref.dH, 1e-5, 1e-5);
      close(ours.dEmb, ref.dEmb, 1e-5, 1e-5);
      close(ours.dBias, ref.dBias, 1e-5, 1e-5);
      if (B > 2) for (let v = 0; v < V; v++) expect(ours.w[2 * V + v]).toBe(0);
    }
  });

  it('matches finite differences of its own forward', () => {
    const addon = torchTestAddon();
    const [B, T, V, D] = [2, 3, 5, 4];
    const r = rng(21);
    const h = randoms(B * T * D, r);
    const emb = randoms(V * D, r);
    const bias = randoms(V, r);
    const mask = Int32Array.from({ length: B * T }, () => 1);
    const grad = randoms(B * V, r);
    const g = addon.spladeDecoderAutograd(h, mask, emb, bias, grad, B, T, V, D, false);
    const loss = (hh: Float32Array, ee: Float32Array, bb: Float32Array) =>
      addon.spladeDecoderAutograd(hh, mask, ee, bb, grad, B, T, V, D, false).w.reduce((a, v, i) => a + v * grad[i]!, 0);
    const eps = 1e-3;
    let checked = 0;
    for (const [which, x, dx] of [
      ['h', h, g.dH],
      ['emb', emb, g.dEmb],
      ['bias', bias, g.dBias],
    ] as const) {
      for (let i = 0; i < x.length; i++) {
        const at = (delta: number) => {
          const y = Float32Array.from(x);
          y[i] = y[i]! + delta;
          return loss(which === 'h' ? y : h, which === 'emb' ? y : emb, which === 'bias' ? y : bias);
        };
        const fd = (at(eps) - at(-eps)) / (2 * eps);
        // Skip inputs that move a logit across a kink (0 or a tie for the max): the one-sided slopes differ there.
        const left = (at(0) - at(-eps)) / eps;
        const right = (at(eps) - at(0)) / eps;
        if (Math.abs(left - right) > 1e-2) continue;
        checked++;
        expect(Math.abs(fd - dx[i]!), `${which}[${i}]`).toBeLessThan(3e-3);
      }
    }
    expect(checked).toBeGreaterThan(30);
  });
});
