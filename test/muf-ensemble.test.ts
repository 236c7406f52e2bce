// DPR-MUF's ensemble heads (lib/methods/muf/ensemble.ts) against a plain TypeScript MLP: forward, scores, the
// training step's gradient direction, training per member, save / load, and typed errors.
import { describe, expect, it } from 'vitest';

import { MlpEnsemble } from '../lib/methods/muf/ensemble.js';
import { Retriever } from '../lib/models/retriever.js';
import { asyncCode, code, rng } from './basics.js';

type Params = Map<string, Float32Array>;

function params(heads: MlpEnsemble): Params {
  return new Map(heads.parameters().map(({ name }) => [name, heads.getParameter(name)]));
}

/** Member k's vector for x, in float64: layers of x W + b with ReLU between. */
function memberRef(p: Params, cfg: MlpEnsemble['config'], k: number, x: ArrayLike<number>): number[] {
  let h = Array.from(x);
  for (let l = 0; l <= cfg.layers; l++) {
    const inDim = l === 0 ? cfg.dim : cfg.hidden;
    const outDim = l === cfg.layers ? cfg.dim : cfg.hidden;
    const W = p.get(`layer.${l}.weight`)!;
    const b = p.get(`layer.${l}.bias`)!;
    const next = new Array<number>(outDim).fill(0);
    for (let o = 0; o < outDim; o++) {
      let s = b[k * outDim + o]!;
      for (let i = 0; i < inDim; i++) s += h[i]! * W[(k * inDim + i) * outDim + o]!;
      next[o] = l < cfg.layers ? Math.max(s, 0) : s;
    }
    h = next;
  }
  return h;
}

const dot = (a: ArrayLike<number>, b: ArrayLike<number>, bOffset = 0) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[bOffset + i]!;
  return s;
};

function randomTable(rows: number, dim: number, seed: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: rows * dim }, () => r());
}

/** Member k's DPR NLL over its sub-batch (reference of the native step's loss). */
function memberLossRef(p: Params, cfg: MlpEnsemble['config'], k: number, Q: Float32Array, P: Float32Array, qRows: number[], pRows: number[], group: number): number {
  const b = qRows.length;
  let total = 0;
  for (let i = 0; i < b; i++) {
    const f = memberRef(p, cfg, k, Q.subarray(qRows[i]! * cfg.dim, (qRows[i]! + 1) * cfg.dim));
    const s = pRows.map((r) => dot(f, P, r * cfg.dim));
    const m = Math.max(...s);
    const lse = m + Math.log(s.reduce((a, v) => a + Math.exp(v - m), 0));
    total += lse - s[i * group]!;
  }
  return total / b;
}

describe('MUF ensemble heads', () => {
  it('computes every member as the reference MLP, for several shapes', () => {
    for (const [dim, hidden, layers, members, seed] of [
      [5, 7, 2, 3, 1],
      [8, 4, 0, 1, 2],
      [3, 16, 1, 6, 3],
    ] as const) {
      Retriever.seed(seed);
      const heads = MlpEnsemble.create({ dim, hidden, layers, members });
      expect(heads.parameters().map((p) => p.name)).toEqual(Array.from({ length: layers + 1 }, (_, l) => [`layer.${l}.weight`, `layer.${l}.bias`]).flat());
      const p = params(heads);
      const q = randomTable(4, dim, seed + 10);
      const out = heads.membersSync(q);
      expect(out).toHaveLength(4 * members * dim);
      for (let b = 0; b < 4; b++)
        for (let k = 0; k < members; k++) {
          const ref = memberRef(p, heads.config, k, q.subarray(b * dim, (b + 1) * dim));
          for (let d = 0; d < dim; d++) expect(out[(b * members + k) * dim + d]).toBeCloseTo(ref[d]!, 4);
        }
    }
  });

  it('initialises as nn.Linear (U(+-1/sqrt(fan_in))), each member from its own draw', () => {
    Retriever.seed(7);
    const heads = MlpEnsemble.create({ dim: 64, hidden: 32, layers: 1, members: 4 });
    const w0 = heads.getParameter('layer.0.weight');
    const bound = 1 / Math.sqrt(64);
    expect(Math.max(...w0.map(Math.abs))).toBeLessThanOrEqual(bound);
    // Variance of U(-a, a) is a^2 / 3.
    const variance = w0.reduce((a, v) => a + v * v, 0) / w0.length;
    expect(variance).toBeGreaterThan((bound * bound) / 3 * 0.9);
    expect(variance).toBeLessThan((bound * bound) / 3 * 1.1);
    const perMember = 64 * 32;
    expect(Array.from(w0.subarray(0, 10))).not.toEqual(Array.from(w0.subarray(perMember, perMember + 10)));
  });

  it('scores the candidates of each query with every member (z [B, K, L])', async () => {
    Retriever.seed(3);
    const heads = MlpEnsemble.create({ dim: 6, hidden: 9, layers: 2, members: 3 });
    const p = params(heads);
    const Q = randomTable(2, 6, 4);
    const P = randomTable(10, 6, 5);
    const ids = Int32Array.from([9, 0, 3, 3, 1, 2, 8, 7]); // L = 4, a repeated candidate included
    for (const z of [await heads.score(Q, P, ids, 4), heads.scoreSync(Q, P, ids, 4)]) {
      expect(z.shape).toEqual([2, 3, 4]);
      for (let b = 0; b < 2; b++)
        for (let k = 0; k < 3; k++) {
          const f = memberRef(p, heads.config, k, Q.subarray(b * 6, b * 6 + 6));
          for (let l = 0; l < 4; l++) expect(z.data[(b * 3 + k) * 4 + l]).toBeCloseTo(dot(f, P, ids[b * 4 + l]! * 6), 4);
        }
    }
  });

  it("moves each parameter against the finite-difference gradient of the members' mean NLL (Adam's first step)", async () => {
    Retriever.seed(11);
    const heads = MlpEnsemble.create({ dim: 4, hidden: 5, layers: 1, members: 2 });
    const cfg = heads.config;
    const Q = randomTable(6, 4, 12);
    const P = randomTable(8, 4, 13);
    // Member 0: questions 0, 1; member 1: questions 2, 3; 2 passages per question (positive first).
    const qRows = [0, 1, 2, 3];
    const pRows = [0, 5, 1, 6, 2, 7, 3, 4];
    const loss = (p: Params) =>
      (memberLossRef(p, cfg, 0, Q, P, qRows.slice(0, 2), pRows.slice(0, 4), 2) + memberLossRef(p, cfg, 1, Q, P, qRows.slice(2), pRows.slice(4), 2)) / 2;
    const before = params(heads);
    const native = (heads as unknown as { native: { step: (...a: unknown[]) => { loss: number; memberLoss: Float64Array } } }).native;
    const s = native.step(Q, P, Int32Array.from(qRows), Int32Array.from(pRows), 2, 1e-3, 0, false);
    expect(s.loss).toBeCloseTo(loss(before), 4);
    expect(s.memberLoss[0]).toBeCloseTo(memberLossRef(before, cfg, 0, Q, P, [0, 1], pRows.slice(0, 4), 2), 4);
    const after = params(heads);
    let checked = 0;
    for (const [name, values] of before) {
      for (let i = 0; i < values.length; i++) {
        const eps = 1e-3;
        const plus = new Map(before);
        const up = Float32Array.from(values);
        up[i] = up[i]! + eps;
        plus.set(name, up);
        const minus = new Map(before);
        const down = Float32Array.from(values);
        down[i] = down[i]! - eps;
        minus.set(name, down);
        const g = (loss(plus) - loss(minus)) / (2 * eps);
        if (Math.abs(g) < 1e-3) continue; // Adam's first step is lr * g / (|g| + eps): only the sign is checked
        const moved = after.get(name)![i]! - values[i]!;
        expect(Math.sign(moved), `${name}[${i}]`).toBe(-Math.sign(g));
        expect(Math.abs(moved)).toBeCloseTo(1e-3, 4);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('lowers every member loss on a fixture, and members trained on different sub-batches differ', async () => {
    // 64 questions, each the noisy copy of its positive passage among 128.
    const dim = 8;
    const P = randomTable(128, dim, 21);
    const noise = rng(22);
    const Q = Float32Array.from({ length: 64 * dim }, (_, i) => P[i]! + 0.3 * noise());
    const positives = Int32Array.from({ length: 64 }, (_, i) => i);
    const hardNegatives = Array.from({ length: 64 }, (_, i) => [64 + i]);
    Retriever.seed(5);
    const heads = MlpEnsemble.create({ dim, hidden: 32, layers: 2, members: 4 });
    const cfg = heads.config;
    const evalLoss = (p: Params, k: number) =>
      memberLossRef(p, cfg, k, Q, P, Array.from({ length: 16 }, (_, i) => i), Array.from({ length: 16 }, (_, i) => [i, 64 + i]).flat(), 2);
    const before = params(heads);
    const epochs: number[] = [];
    const r = await heads.train({ questions: Q, passages: P, positives, hardNegatives }, { epochs: 30, batchSize: 32, lr: 3e-3, seed: 1, onEpoch: (e) => epochs.push(e.epoch) });
    expect(epochs).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(r.epochs[29]!.loss).toBeLessThan(r.epochs[0]!.loss);
    const after = params(heads);
    for (let k = 0; k < 4; k++) expect(evalLoss(after, k)).toBeLessThan(evalLoss(before, k) * 0.7);
    expect(r.epochs[29]!.accuracy).toBeGreaterThan(0.5);
    const m = heads.membersSync(Q.subarray(0, dim));
    const gap = Math.hypot(...Array.from({ length: dim }, (_, d) => m[d]! - m[dim + d]!));
    expect(gap).toBeGreaterThan(1e-3);
  });

  it('round-trips through bytes and rejects damaged files with ERR_FORMAT', () => {
    Retriever.seed(2);
    const heads = MlpEnsemble.create({ dim: 3, hidden: 4, layers: 1, members: 2 });
    const bytes = heads.toBytes();
    const back = MlpEnsemble.fromBytes(bytes);
    expect(back.config).toEqual(heads.config);
    for (const { name } of heads.parameters()) expect(back.getParameter(name)).toEqual(heads.getParameter(name));
    expect(code(() => MlpEnsemble.fromBytes(bytes.subarray(0, bytes.length - 8)))).toBe('ERR_FORMAT');
    expect(code(() => MlpEnsemble.fromBytes(new Uint8Array(4)))).toBe('ERR_FORMAT');
    expect(code(() => MlpEnsemble.load('/nonexistent/heads.safetensors'))).toBe('ERR_IO');
  });

  it('gives typed errors for bad configurations, data and options', async () => {
    expect(code(() => MlpEnsemble.create({ dim: 0 }))).toBe('ERR_RANGE');
    expect(code(() => MlpEnsemble.create({ dim: '4' as never }))).toBe('ERR_ARG');
    expect(code(() => MlpEnsemble.create({ dim: 4, members: 2000 }))).toBe('ERR_RANGE');
    expect(code(() => MlpEnsemble.create({ dim: 4, bogus: 1 } as never))).toBe('ERR_ARG');
    const heads = MlpEnsemble.create({ dim: 2, hidden: 3, layers: 1, members: 2 });
    const P = new Float32Array(8);
    expect(await asyncCode(heads.train({ questions: new Float32Array(3), passages: P, positives: new Int32Array(1) }))).toBe('ERR_SHAPE');
    expect(await asyncCode(heads.train({ questions: new Float32Array(2), passages: P, positives: Int32Array.of(0) }))).toBe('ERR_RANGE');
    expect(await asyncCode(heads.train({ questions: new Float32Array(8), passages: P, positives: Int32Array.of(0, 1, 2, 9) }, { epochs: 1 }))).toBe('ERR_RANGE');
    expect(await asyncCode(heads.train({ questions: new Float32Array(8), passages: P, positives: Int32Array.of(0, 1, 2, 3) }, { lr: -1 }))).toBe('ERR_RANGE');
    expect(code(() => heads.scoreSync(new Float32Array(2), P, Int32Array.of(0, 7), 2))).toBe('ERR_RANGE');
    expect(code(() => heads.scoreSync(new Float32Array(2), P, Int32Array.of(0), 2))).toBe('ERR_SHAPE');
    expect(code(() => heads.scoreSync(new Float32Array(3), P, Int32Array.of(0, 1), 2))).toBe('ERR_SHAPE');
    expect(code(() => heads.setParameter('layer.0.weight', new Float32Array(3)))).toBe('ERR_SHAPE');
    expect(code(() => heads.getParameter('nope'))).toBe('ERR_NOT_FOUND');
    for (const g of [undefined, null, 5, 'x', {}, [], Number.NaN]) {
      expect(code(() => MlpEnsemble.create(g as never)), String(g)).toMatch(/^ERR_(ARG|RANGE)$/);
      expect(code(() => MlpEnsemble.fromBytes(g as never)), String(g)).toBe('ERR_ARG');
      expect(code(() => MlpEnsemble.load(g as never)), String(g)).toMatch(/^ERR_(ARG|IO)$/);
      expect(await asyncCode(heads.train(g as never)), String(g)).toMatch(/^ERR_(ARG|DTYPE)$/);
    }
  });
});
