// The CUDA backend against the CPU kernels: the same calls with the operands on 'cuda', results compared with the
// CPU's (exactly where the arithmetic is exact: integer-valued data, maxima, arg-maxes, ties). On a machine without
// a GPU the device suites are skipped (cudaInfo() says why) and the no-GPU behaviour is tested instead. On the GPU
// machine, `npm run test:gpu` bundles this file with test/gpu/vitest-shim.ts and runs it under node:test.
import { describe, expect, it } from 'vitest';

import { Tensor, capabilities, scoreSync, scoreTopK, scoreTopKSync } from '../lib/index.js';
import { cudaInfo, cudaMemoryStats, ensembleMISync, ensembleMI, infoNceSync, infoNce, maxSimSync, maxSim, maxSimBackwardSync, toSparseSync, spladePoolBackwardSync, spladePoolSync, spladePool } from '../lib/entries/kernels.js';
import type { Dtype } from '../lib/index.js';
import { seededRandom } from '../lib/random.js';

const gpu = cudaInfo();
const hasGpu = gpu.count > 0;
/** A device suite's name, with the reason it is skipped here (vitest prints the name of a skipped suite). */
const onGpu = (name: string) => (hasGpu ? name : `${name} (skipped: no GPU here: ${gpu.reason})`);

const rng = seededRandom;
const uniform = (n: number, r: () => number) => Float32Array.from({ length: n }, () => r() * 2 - 1);
const ints = (n: number, r: () => number, lo = -2, hi = 2) =>
  Float32Array.from({ length: n }, () => lo + Math.floor(r() * (hi - lo + 1)));

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return String((e as { code?: string }).code);
  }
  return 'none';
}
async function asyncCodeOf(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (e) {
    return String((e as { code?: string }).code);
  }
  return 'none';
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!, y = b[i]!;
    if (Object.is(x, y) || x === y) continue;
    m = Math.max(m, Number.isFinite(x) && Number.isFinite(y) ? Math.abs(x - y) : Infinity);
  }
  return m;
}
const host = (t: Tensor) => {
  const h = t.to('cpu');
  const v = h.toArray();
  h.dispose();
  return v;
};

describe('cuda without a GPU', () => {
  it.skipIf(hasGpu)('reports why, keeps the CPU working and refuses to move a tensor', async () => {
    expect(gpu.count).toBe(0);
    expect(gpu.reason.length).toBeGreaterThan(0);
    expect(capabilities().devices).toEqual(['cpu']);
    const t = Tensor.from([1, 2, 3], [3]);
    expect(codeOf(() => t.to('cuda'))).toBe('ERR_BACKEND_UNAVAILABLE');
    expect(await asyncCodeOf(() => t.toAsync('cuda'))).toBe('ERR_BACKEND_UNAVAILABLE');
    expect(cudaMemoryStats().allocated).toBe(0);
    const copy = t.to('cpu');  // a device move on the CPU is a copy
    expect(copy.toArray()).toEqual([1, 2, 3]);
    copy.data[0] = 9;
    expect(t.toArray()).toEqual([1, 2, 3]);
    expect(Array.from(scoreTopKSync(Float32Array.of(0, 1), Tensor.from([1, 0, 0, 1], [2, 2]), 1).ids)).toEqual([1]);
    t.dispose();
    copy.dispose();
    expect(codeOf(() => Tensor.from([1], [1]).to('gpu' as never))).toBe('ERR_DTYPE');
  });
});

describe.skipIf(!hasGpu)(onGpu('cuda tensors'), () => {
  it('lists the device and round-trips every dtype, sync and async', async () => {
    expect(capabilities().devices).toEqual(['cpu', 'cuda']);
    const r = rng(1);
    for (const dtype of ['f32', 'bf16', 'f16', 'i32', 'u8'] as Dtype[]) {
      const src = dtype === 'i32' || dtype === 'u8' ? Tensor.from(ints(37, r, 0, 200), [37], dtype) : Tensor.from(uniform(37, r), [37], dtype);
      const d = src.to('cuda');
      expect(d.device).toBe('cuda');
      expect(d.dtype).toBe(dtype);
      expect(codeOf(() => d.data)).toBe('ERR_UNSUPPORTED');
      expect(host(d)).toEqual(src.toArray());
      const d2 = await src.toAsync('cuda');
      const back = await d2.toAsync('cpu');
      expect(back.toArray()).toEqual(src.toArray());
      [src, d, d2, back].forEach((t) => t.dispose());
    }
    // The source may be disposed while its async copy runs: the copy still reads live memory.
    const src = Tensor.from(uniform(4096, r), [4096]);
    const want = src.toArray();
    const pending = src.toAsync('cuda');
    src.dispose();
    const moved = await pending;
    expect(host(moved)).toEqual(want);
    moved.dispose();
    const big = Tensor.from([1n, -2n, 2n ** 40n], [3], 'i64');
    const bd = big.to('cuda');
    expect(Array.from(bd.to('cpu').data as BigInt64Array)).toEqual([1n, -2n, 2n ** 40n]);
    bd.dispose();
  });

  it('converts dtypes on the device as the CPU does (round to nearest even, NaN kept)', () => {
    const x = Tensor.from(Float32Array.of(1, 1.00390625, 1.01171875, -3.3, 65504, 70000, 1e-8, -0, NaN), [9]);
    const xd = x.to('cuda');
    for (const to of ['bf16', 'f16'] as const) {
      const cpu = x.to(to);
      const g = xd.to(to);
      // Bit for bit, except NaN's payload (CUDA writes its canonical NaN): a NaN stays a NaN.
      expect(Array.from(g.to('cpu').data as Uint16Array).slice(0, 8)).toEqual(Array.from(cpu.data as Uint16Array).slice(0, 8));
      expect(Number.isNaN(host(g)[8]!)).toBe(true);
      cpu.dispose();
      g.dispose();
    }
  });

  it('reuses freed device memory (caching allocator)', () => {
    const before = cudaMemoryStats();
    for (let i = 0; i < 20; i++) Tensor.zeros([1000, 64]).to('cuda').dispose();
    const after = cudaMemoryStats();
    expect(after.mallocs - before.mallocs).toBeLessThanOrEqual(1);
    expect(after.peak).toBeGreaterThanOrEqual(1000 * 64 * 4);
  });
});

describe.skipIf(!hasGpu)(onGpu('scoreTopK on cuda'), () => {
  const shapes: Array<[number, number, number, number]> = [
    [1, 1, 1, 1], [1, 50, 7, 10], [3, 1000, 64, 100], [8, 4097, 768, 10], [9, 3000, 33, 17], [70, 5000, 128, 100],
    [2, 20, 16, 50], [64, 20000, 96, 1000], [6, 10, 32, 5], [5, 300, 48, 300], [130, 700, 64, 7],
  ];
  for (const dtype of ['f32', 'bf16', 'f16'] as const) {
    it(`matches the CPU on random shapes (${dtype})`, () => {
      const r = rng(7);
      for (const [B, N, D, k] of shapes) {
        const q = Tensor.from(uniform(B * D, r), [B, D]);
        const c = Tensor.from(uniform(N * D, r), [N, D], dtype);
        const cpu = scoreTopKSync(q, c, k);
        const [qd, cd] = [q.to('cuda'), c.to('cuda')];
        const g = scoreTopKSync(qd, cd, k);
        expect(g.rows).toBe(B);
        expect(g.k).toBe(k);
        expect(maxAbsDiff(g.scores, cpu.scores)).toBeLessThan(1e-3);
        // Rows can swap only where their scores are within rounding of each other.
        let swapped = 0;
        for (let i = 0; i < g.ids.length; i++) if (g.ids[i] !== cpu.ids[i]) swapped++;
        expect(swapped).toBeLessThanOrEqual(Math.max(2, Math.ceil(g.ids.length * 0.01)));
        // Padding past the corpus is the CPU's: id -1, score -Infinity.
        for (let i = 0; i < g.ids.length; i++) if (cpu.ids[i] === -1) expect(g.ids[i]).toBe(-1);
        [q, c, qd, cd].forEach((t) => t.dispose());
      }
    });
  }

  it('breaks ties by id and equals the CPU exactly on integer data; NaN rows never enter', async () => {
    const r = rng(3);
    // (B, D) reach each scorer: warp per row (3, 32), tensor cores (12, 32), FMA tiles (12, 24), (3, 24).
    for (const [B, D] of [[3, 32], [12, 32], [12, 24], [3, 24]] as const) {
      const N = 2500;
      const cv = ints(N * D, r, -1, 1);
      for (let d = 0; d < D; d++) cv[17 * D + d] = NaN;  // row 17 scores NaN
      const q = Tensor.from(ints(B * D, r, -1, 1), [B, D]);
      const c = Tensor.from(cv, [N, D], 'bf16');
      for (const k of [1, 5, 64, 300]) {
        const cpu = scoreTopKSync(q, c, k);
        const qd = q.to('cuda');
        const cd = c.to('cuda');
        const g = await scoreTopK(qd, cd, k);
        expect(Array.from(g.ids)).toEqual(Array.from(cpu.ids));
        expect(Array.from(g.scores)).toEqual(Array.from(cpu.scores));
        expect(Array.from(g.ids).includes(17)).toBe(false);
        qd.dispose();
        cd.dispose();
      }
      // A flat Float32Array query beside a GPU corpus is copied over for the call.
      const cd = c.to('cuda');
      const flat = q.data.slice(0, D) as Float32Array;
      expect(Array.from(scoreTopKSync(flat, cd, 5).ids)).toEqual(Array.from(scoreTopKSync(flat, c, 5).ids));
      cd.dispose();
    }
  });

  it('matches the CPU where the paths change: large k with few queries, f16 queries beyond f16 range', () => {
    const r = rng(9);
    for (const [B, k] of [[2, 600], [4, 300], [3, 1024]] as const) {
      const q = Tensor.from(uniform(B * 768, r), [B, 768]);
      const c = Tensor.from(uniform(3000 * 768, r), [3000, 768], 'bf16');
      const cpu = scoreTopKSync(q, c, k);
      const g = scoreTopKSync(q.to('cuda'), c.to('cuda'), k);
      expect(maxAbsDiff(g.scores, cpu.scores)).toBeLessThan(1e-3);
    }
    // |q| >= 65520 cannot be split into f16 halves: those queries take the f32 path (8 queries: the tensor-core case).
    const qv = uniform(8 * 64, r);
    qv[5] = 70000;
    const q = Tensor.from(qv, [8, 64]);
    const c = Tensor.from(uniform(500 * 64, r), [500, 64], 'f16');
    const cpu = scoreTopKSync(q, c, 10);
    const g = scoreTopKSync(q.to('cuda'), c.to('cuda'), 10);
    expect(Array.from(g.ids)).toEqual(Array.from(cpu.ids));
    expect(maxAbsDiff(g.scores, cpu.scores)).toBeLessThan(0.05);
  });

  it('gives typed errors: mixed devices, k above the GPU limit, bad shapes, non-finite with checkFinite', async () => {
    const q = Tensor.from(uniform(8, rng(5)), [2, 4]);
    const c = Tensor.from(uniform(40, rng(6)), [10, 4]);
    const cd = c.to('cuda');
    expect(codeOf(() => scoreTopKSync(q, cd, 3))).toBe('ERR_ARG');
    const qd = q.to('cuda');
    expect(codeOf(() => scoreTopKSync(qd, cd, 2000))).toBe('ERR_UNSUPPORTED');
    expect(await asyncCodeOf(() => scoreTopK(qd, cd, 0))).toBe('ERR_RANGE');
    const wrong = Tensor.zeros([10, 5]).to('cuda');
    expect(codeOf(() => scoreTopKSync(qd, wrong, 3))).toBe('ERR_SHAPE');
    const nan = Tensor.from([NaN, 0, 0, 0], [1, 4]).to('cuda');
    expect(codeOf(() => scoreTopKSync(qd, nan, 1, { checkFinite: true }))).toBe('ERR_NONFINITE');
    // CPU-only functions refuse GPU tensors with a typed error.
    expect(codeOf(() => scoreSync(qd, cd))).toBe('ERR_UNSUPPORTED');
    expect(codeOf(() => toSparseSync(cd))).toBe('ERR_ARG');
    expect(codeOf(() => maxSimBackwardSync(qd, { tokens: cd, lengths: [10] }, Tensor.zeros([1, 10, 2], 'i32'), new Float32Array(10)))).toBe('ERR_UNSUPPORTED');
    expect(codeOf(() => maxSimSync(qd, { tokens: cd, lengths: [10], select: [0] }))).toBe('ERR_UNSUPPORTED');
    qd.dispose();
    expect(codeOf(() => scoreTopKSync(qd, cd, 1))).toBe('ERR_DISPOSED');
  });
});

describe.skipIf(!hasGpu)(onGpu('maxSim on cuda'), () => {
  it('matches the CPU: packed and padded documents, masks, clamp, several queries', async () => {
    const r = rng(11);
    for (const dtype of ['f32', 'bf16', 'f16'] as const) {
      for (const [nq, lq, dim, n] of [[1, 32, 128, 40], [3, 5, 7, 9], [2, 40, 64, 13]] as const) {
        const lengths = Int32Array.from({ length: n }, (_, i) => (i % 5 === 0 ? 0 : 1 + Math.floor(r() * 30)));
        const rows = lengths.reduce((a, b) => a + b, 0);
        const q = Tensor.from(ints(nq * lq * dim, r), [nq, lq, dim]);
        const docs = Tensor.from(ints(rows * dim, r), [rows, dim], dtype);
        const tokenMask = Uint8Array.from({ length: rows }, () => (r() < 0.8 ? 1 : 0));
        const queryMask = Uint8Array.from({ length: nq * lq }, () => (r() < 0.9 ? 1 : 0));
        for (const clampZero of [false, true]) {
          const opts = { argmax: true, clampZero, queryMask };
          const cpu = maxSimSync(q, { tokens: docs, lengths, tokenMask }, opts);
          const [qd, dd] = [q.to('cuda'), docs.to('cuda')];
          const g = await maxSim(qd, { tokens: dd, lengths, tokenMask }, opts);
          expect(g.scores.device).toBe('cuda');
          expect(host(g.scores)).toEqual(cpu.scores.toArray());
          expect(host(g.argmax!)).toEqual(cpu.argmax!.toArray());
          [qd, dd, g.scores, g.argmax!].forEach((t) => t.dispose());
        }
      }
    }
  });

  it('matches the CPU within rounding on real-valued vectors', () => {
    const r = rng(12);
    const [lq, dim] = [32, 128];
    const lengths = Int32Array.from({ length: 50 }, () => 1 + Math.floor(r() * 180));
    const rows = lengths.reduce((a, b) => a + b, 0);
    const q = Tensor.from(uniform(lq * dim, r), [lq, dim]);
    const docs = Tensor.from(uniform(rows * dim, r), [rows, dim], 'f16');
    const cpu = maxSimSync(q, { tokens: docs, lengths });
    const g = maxSimSync(q.to('cuda'), { tokens: docs.to('cuda'), lengths });
    expect(maxAbsDiff(host(g.scores), cpu.scores.toArray())).toBeLessThan(1e-3);
  });
});

describe.skipIf(!hasGpu)(onGpu('spladePool on cuda'), () => {
  it('matches the CPU forward and backward, with masks and ties', async () => {
    const r = rng(21);
    for (const dtype of ['f32', 'bf16', 'f16'] as const) {
      for (const [B, L, V] of [[2, 7, 31], [3, 16, 1000], [1, 1, 1]] as const) {
        const x = Tensor.from(ints(B * L * V, r, -3, 3), [B, L, V], dtype);
        const mask = Uint8Array.from({ length: B * L }, () => (r() < 0.8 ? 1 : 0));
        const cpu = spladePoolSync(x, { mask, argmax: true });
        const xd = x.to('cuda');
        const g = await spladePool(xd, { mask, argmax: true });
        expect(maxAbsDiff(host(g.weights), cpu.weights.toArray())).toBeLessThan(1e-5);
        expect(host(g.argmax!)).toEqual(cpu.argmax!.toArray());
        const grad = Tensor.from(uniform(B * V, r), [B, V]);
        const dc = spladePoolBackwardSync(x, cpu.argmax!, grad);
        const dg = spladePoolBackwardSync(xd, g.argmax!, grad.to('cuda'));
        expect(maxAbsDiff(host(dg), dc.toArray())).toBeLessThan(1e-5);
      }
    }
    // A caller's arg-max at a non-positive logit gives no gradient (as on the CPU); one past the length is ERR_RANGE.
    const x = Tensor.from([-1, 2, 0.5, -3], [1, 2, 2]);
    const argmax = Tensor.from(Int32Array.of(0, 1), [1, 2]);
    const grad = Tensor.from([1, 1], [1, 2]);
    const cpu = spladePoolBackwardSync(x, argmax, grad).toArray();
    const gpu = host(spladePoolBackwardSync(x.to('cuda'), argmax.to('cuda'), grad.to('cuda')));
    expect(gpu).toEqual(cpu);
    const far = Tensor.from(Int32Array.of(0, 2), [1, 2]).to('cuda');
    expect(codeOf(() => spladePoolBackwardSync(x.to('cuda'), far, grad.to('cuda')))).toBe('ERR_RANGE');
  });
});

describe.skipIf(!hasGpu)(onGpu('infoNce on cuda'), () => {
  it('matches the CPU: loss, ranks, gradients; dot and cosine; weights', async () => {
    const r = rng(31);
    // Sizes in multiples of 8 take the tensor-core products (whole and partial 128-wide tiles); the others the f32 GEMM.
    for (const [B, M, D] of [[1, 1, 1], [4, 8, 16], [33, 70, 65], [128, 256, 96], [24, 136, 40], [256, 512, 768]] as const) {
      // Integer-valued vectors: dot scores are exact on both devices, so ranks and ties must agree exactly (cosine
      // scores are rounded differently on each device, so the cosine case takes real-valued vectors without ties).
      const q = Tensor.from(ints(B * D, r), [B, D]);
      const p = Tensor.from(ints(M * D, r), [M, D]);
      const qc = Tensor.from(uniform(B * D, r), [B, D]);
      const pc = Tensor.from(uniform(M * D, r), [M, D]);
      const pos = Int32Array.from({ length: B }, (_, i) => (i * 2) % M);
      const weights = Float32Array.from({ length: B }, () => r() + 0.5);
      for (const o of [{}, { cosine: true, temperature: 0.05 }, { weights, temperature: 0.5 }]) {
        const [qx, px] = 'cosine' in o ? [qc, pc] : [q, p];
        const cpu = infoNceSync(qx, px, pos, o);
        const g = await infoNce(qx.to('cuda'), px.to('cuda'), pos, o);
        expect(Math.abs(g.loss - cpu.loss)).toBeLessThan(1e-4 * Math.max(1, Math.abs(cpu.loss)));
        const [gr, cr] = [host(g.rank), cpu.rank.toArray()];
        // Cosine scores are rounded differently on each device: a near-tie may order differently there.
        const rankMismatch = gr.filter((x, i) => x !== cr[i]).length;
        if ('cosine' in o) expect(rankMismatch).toBeLessThanOrEqual(1);
        else {
          expect(rankMismatch).toBe(0);
          expect(g.accuracy).toBe(cpu.accuracy);
        }
        expect(maxAbsDiff(host(g.rowLoss), cpu.rowLoss.toArray())).toBeLessThan(1e-3);
        const scale = [...cpu.dQ!.toArray(), ...cpu.dP!.toArray()].reduce((m, x) => Math.max(m, Math.abs(x)), 1e-12);
        expect(maxAbsDiff(host(g.dQ!), cpu.dQ!.toArray()) / scale).toBeLessThan(1e-3);
        expect(maxAbsDiff(host(g.dP!), cpu.dP!.toArray()) / scale).toBeLessThan(1e-3);
      }
    }
    const q = Tensor.zeros([2, 4]).to('cuda');
    expect(codeOf(() => infoNceSync(q, q, [0, 5]))).toBe('ERR_RANGE');
    expect(codeOf(() => infoNceSync(q, q, [0, 1], { temperature: 0 }))).toBe('ERR_RANGE');
  });
});

describe.skipIf(!hasGpu)(onGpu('ensembleMI on cuda'), () => {
  it('matches the CPU in both modes, with lengths', async () => {
    const r = rng(41);
    for (const [B, K, L] of [[1, 2, 1], [5, 20, 100], [64, 3, 300], [7, 4, 1024]] as const) {
      const z = Tensor.from(uniform(B * K * L, r).map((x) => x * 0.01), [B, K, L]);
      const lengths = Int32Array.from({ length: B }, () => 1 + Math.floor(r() * L));
      for (const o of [{}, { mode: 'muf' as const }, { lengths, temperature: 0.02 }]) {
        const cpu = ensembleMISync(z, o);
        const g = await ensembleMI(z.to('cuda'), o);
        expect(maxAbsDiff(host(g.mi), cpu.mi.toArray())).toBeLessThan(2e-4);
        expect(maxAbsDiff(host(g.confidence), cpu.confidence.toArray())).toBeLessThan(2e-4);
      }
    }
    const z = Tensor.zeros([2, 1, 3]).to('cuda');
    expect(codeOf(() => ensembleMISync(z))).toBe('ERR_SHAPE');
  });
});

// One contract per kernel (native/kernels/contract.h): the CUDA module refuses each bad argument with the CPU's code
// and message. Each case builds its operands with `on` (identity on the CPU, a copy on the device).
type On = (t: Tensor) => Tensor;
const z = (shape: number[], dtype: Dtype = 'f32') => Tensor.zeros(shape, dtype);
const contractCases: Array<[string, string, (on: On) => unknown]> = [
    ['scoreTopK: 3-D queries', 'ERR_SHAPE', (on) => scoreTopKSync(on(z([1, 2, 4])), on(z([3, 4])), 1)],
    ['scoreTopK: bf16 queries', 'ERR_DTYPE', (on) => scoreTopKSync(on(z([1, 4], 'bf16')), on(z([3, 4])), 1)],
    ['scoreTopK: dimension 0', 'ERR_SHAPE', (on) => scoreTopKSync(on(z([1, 0])), on(z([3, 0])), 1)],
    ['scoreTopK: corpus dimension', 'ERR_SHAPE', (on) => scoreTopKSync(on(z([1, 4])), on(z([3, 5])), 1)],
    ['scoreTopK: i32 corpus', 'ERR_DTYPE', (on) => scoreTopKSync(on(z([1, 4])), on(z([3, 4], 'i32')), 1)],
    ['maxSim: 4-D queries', 'ERR_SHAPE', (on) => maxSimSync(on(z([1, 1, 2, 4])), { tokens: on(z([3, 4])), lengths: [3] })],
    ['maxSim: document dimension', 'ERR_SHAPE', (on) => maxSimSync(on(z([2, 4])), { tokens: on(z([3, 5])), lengths: [3] })],
    ['maxSim: lengths sum', 'ERR_SHAPE', (on) => maxSimSync(on(z([2, 4])), { tokens: on(z([3, 4])), lengths: [1, 1] })],
    ['maxSim: negative length', 'ERR_RANGE', (on) => maxSimSync(on(z([2, 4])), { tokens: on(z([3, 4])), lengths: [4, -1] })],
    ['maxSim: padded count', 'ERR_SHAPE', (on) => maxSimSync(on(z([2, 4])), { tokens: on(z([2, 3, 4])), lengths: [3] })],
    ['maxSim: padded length', 'ERR_RANGE', (on) => maxSimSync(on(z([2, 4])), { tokens: on(z([2, 3, 4])), lengths: [3, 4] })],
    ['maxSim: query mask', 'ERR_SHAPE', (on) => maxSimSync(on(z([2, 4])), { tokens: on(z([3, 4])), lengths: [3] }, { queryMask: [1] })],
    ['maxSim: token mask', 'ERR_SHAPE', (on) => maxSimSync(on(z([2, 4])), { tokens: on(z([3, 4])), lengths: [3], tokenMask: [1, 1] })],
    ['spladePool: 2-D logits', 'ERR_SHAPE', (on) => spladePoolSync(on(z([2, 4])))],
    ['spladePool: mask', 'ERR_SHAPE', (on) => spladePoolSync(on(z([2, 3, 4])), { mask: [1, 1] })],
    ['spladePoolBackward: argmax shape', 'ERR_SHAPE', (on) => spladePoolBackwardSync(on(z([2, 3, 4])), on(z([2, 3], 'i32')) as Tensor<'i32'>, on(z([2, 4])))],
    ['spladePoolBackward: grad shape', 'ERR_SHAPE', (on) => spladePoolBackwardSync(on(z([2, 3, 4])), on(z([2, 4], 'i32')) as Tensor<'i32'>, on(z([2, 3])))],
    ['infoNce: passage dimension', 'ERR_SHAPE', (on) => infoNceSync(on(z([2, 4])), on(z([3, 5])), [0, 1])],
    ['infoNce: no passages', 'ERR_SHAPE', (on) => infoNceSync(on(z([2, 4])), on(z([0, 4])), [0, 0])],
    ['infoNce: positives count', 'ERR_SHAPE', (on) => infoNceSync(on(z([2, 4])), on(z([3, 4])), [0])],
    ['infoNce: positive range', 'ERR_RANGE', (on) => infoNceSync(on(z([2, 4])), on(z([3, 4])), [0, 3])],
    ['infoNce: weights count', 'ERR_SHAPE', (on) => infoNceSync(on(z([2, 4])), on(z([3, 4])), [0, 1], { weights: new Float32Array(3) })],
    ['infoNce: temperature', 'ERR_RANGE', (on) => infoNceSync(on(z([2, 4])), on(z([3, 4])), [0, 1], { temperature: -1 })],
    ['ensembleMI: one member', 'ERR_SHAPE', (on) => ensembleMISync(on(z([2, 1, 3])))],
    ['ensembleMI: no candidates', 'ERR_SHAPE', (on) => ensembleMISync(on(z([2, 2, 0])))],
    ['ensembleMI: lengths count', 'ERR_SHAPE', (on) => ensembleMISync(on(z([2, 2, 3])), { lengths: Int32Array.of(1) })],
    ['ensembleMI: length range', 'ERR_RANGE', (on) => ensembleMISync(on(z([2, 2, 3])), { lengths: Int32Array.of(1, 4) })],
];
const errorOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return { code: String((e as { code?: string }).code), message: (e as Error).message };
  }
  return { code: 'none', message: '' };
};

describe('the kernels\' contracts on the CPU', () => {
  it('refuses each case of the shared contract with a shape, dtype or range error', () => {
    for (const [name, code, call] of contractCases) expect({ name, code: errorOf(() => call((t) => t)).code }).toEqual({ name, code });
  });
});

describe.skipIf(!hasGpu)(onGpu('the kernels\' contracts on cuda'), () => {
  it('refuses each bad argument with the CPU\'s code and message', () => {
    for (const [name, , call] of contractCases) {
      const cpu = errorOf(() => call((t) => t));
      const cuda = errorOf(() => call((t) => t.to('cuda')));
      expect({ name, ...cpu, refused: cpu.code !== 'none' }).toEqual({ name, ...cuda, refused: true });
    }
  });
});
