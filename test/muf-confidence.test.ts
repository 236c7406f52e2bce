// mufConfidence (native/kernels/muf_heads.h): every expert's K heads, their scores of the candidates and the mutual
// information in one call, against a plain f64 reference (the MLPs, the dot products, ensembleMIRef), on every ISA.
import { afterAll, describe, expect, it } from 'vitest';

import { Tensor, capabilities, setIsa, type Isa } from '../lib/index.js';
import { fuse } from '../lib/fusion/fuse.js';
import { mufFusion } from '../lib/methods/muf/fusion.js';
import { mufConfidence, type MufConfidenceExpert } from '../lib/methods/muf/serve.js';
import { ensembleMIRef } from './reference/ensemble.js';
import { asyncCode, randomF32, randomShapes, rng } from './helpers.js';

const caps = capabilities();
afterAll(() => setIsa(caps.isa as Isa));

interface Spec {
  B: number;
  dim: number;
  hidden: number;
  layers: number;
  K: number;
  N: number;
  L: number;
  temperature: number;
  dtype?: 'f32' | 'bf16';
  /** The heads' weights in bf16 (the values drawn are rounded to bf16 first, so the reference reads the same). */
  weights?: 'bf16';
}

/** An expert's random inputs: heads with weights ~ 1 / sqrt(in), passages, distinct candidates per question. */
function expert(s: Spec, seed: number) {
  const r = rng(seed);
  const widths = [s.dim, ...Array<number>(s.layers).fill(s.hidden), s.dim];
  const layers = widths.slice(1).map((out, i) => {
    const inW = widths[i]!;
    let w = randomF32(s.K * inW * out, seed + 10 * i + 1).map((v) => v / Math.sqrt(inW));
    if (s.weights === 'bf16') w = Float32Array.from(Tensor.from(w, [w.length]).to('bf16').to('f32').data);
    const b = randomF32(s.K * out, seed + 10 * i + 2).map((v) => 0.1 * v);
    return { w, b, inW, out };
  });
  const q = randomF32(s.B * s.dim, seed + 100);
  const p = randomF32(s.N * s.dim, seed + 101);
  const ids = new Int32Array(s.B * s.L);
  for (let b = 0; b < s.B; b++) {
    const pool = Array.from({ length: s.N }, (_, i) => i).sort(() => r() - 0.5);
    ids.set(pool.slice(0, s.L), b * s.L);
  }
  return { s, layers, q, p, ids };
}

/** The reference: f64 MLPs, dot products with the passages as the kernel reads them, exact-mode MI. */
function reference(x: ReturnType<typeof expert>, passages: Float32Array) {
  const { s, layers, q, ids } = x;
  return Array.from({ length: s.B }, (_, b) => {
    const z = Array.from({ length: s.K }, (_, k) => {
      let h = Array.from(q.subarray(b * s.dim, (b + 1) * s.dim), Number);
      layers.forEach((l, i) => {
        const o = Array.from({ length: l.out }, (_, j) => {
          let v = l.b[k * l.out + j]!;
          for (let t = 0; t < l.inW; t++) v += h[t]! * l.w[(k * l.inW + t) * l.out + j]!;
          return v;
        });
        h = i + 1 < layers.length ? o.map((v) => Math.max(v, 0)) : o;
      });
      return Array.from(ids.subarray(b * s.L, (b + 1) * s.L), (id) => {
        let v = 0;
        for (let t = 0; t < s.dim; t++) v += h[t]! * passages[id * s.dim + t]!;
        return v;
      });
    });
    return s.K === 1 ? { mi: 0, confidence: 1 } : ensembleMIRef(z, s.temperature);
  });
}

function tensors(x: ReturnType<typeof expert>): MufConfidenceExpert {
  const { s, layers } = x;
  const passages = Tensor.from(x.p, [s.N, s.dim]);
  return {
    queries: Tensor.from(x.q, [s.B, s.dim]),
    passages: s.dtype === 'bf16' ? passages.to('bf16') : passages,
    candidates: Tensor.from(x.ids, [s.B, s.L]),
    weights: layers.flatMap((l) => {
      // The kernel reads each member's weights transposed: a row per output unit.
      const wt = new Float32Array(l.w.length);
      for (let k = 0; k < s.K; k++) for (let t = 0; t < l.inW; t++) for (let j = 0; j < l.out; j++) wt[(k * l.out + j) * l.inW + t] = l.w[(k * l.inW + t) * l.out + j]!;
      const t = Tensor.from(wt, [s.K, l.out, l.inW]);
      return [s.weights === 'bf16' ? t.to('bf16') : t, Tensor.from(l.b, [s.K, l.out])];
    }),
    members: s.K,
    temperature: s.temperature,
  };
}

// Shapes: one question and many (past the register tile's rows and the streaming path's batch), no hidden layer, one member, bf16 passages,
// DPR-MUF's K = 20, and some drawn at random.
const specs: Spec[] = [
  { B: 1, dim: 16, hidden: 32, layers: 2, K: 20, N: 300, L: 100, temperature: 0.05 },
  { B: 13, dim: 24, hidden: 40, layers: 1, K: 5, N: 60, L: 17, temperature: 1 },
  { B: 3, dim: 8, hidden: 8, layers: 0, K: 4, N: 30, L: 30, temperature: 0.2 },
  { B: 2, dim: 12, hidden: 16, layers: 1, K: 1, N: 20, L: 5, temperature: 1 },
  { B: 5, dim: 32, hidden: 24, layers: 2, K: 3, N: 50, L: 9, temperature: 0.5, dtype: 'bf16' },
  // Past kHeadsStreamBatch (16): the GEMM path; bf16 weights stream at any batch.
  { B: 40, dim: 20, hidden: 24, layers: 2, K: 4, N: 50, L: 12, temperature: 0.4 },
  { B: 40, dim: 20, hidden: 24, layers: 1, K: 3, N: 50, L: 12, temperature: 0.4, weights: 'bf16' },
  { B: 3, dim: 33, hidden: 17, layers: 2, K: 5, N: 40, L: 20, temperature: 0.2, weights: 'bf16' },
  ...randomShapes(4401, 3, [[1, 70], [1, 40], [1, 48], [0, 3], [2, 12], [40, 120], [1, 40]]).map(([B, dim, hidden, layers, K, N, L]) => ({ B: B!, dim: dim!, hidden: hidden!, layers: layers!, K: K!, N: N!, L: L!, temperature: 0.3 })),
];

describe.each(caps.availableIsas as Isa[])('mufConfidence, %s variant', (isa) => {
  it('matches the plain reference for every expert of one call', async () => {
    setIsa(isa);
    // The specs of one call must share B: group them by B, each group one call.
    const groups = new Map<number, Spec[]>();
    for (const s of specs) groups.set(s.B, [...(groups.get(s.B) ?? []), s]);
    let seed = 1;
    for (const [B, group] of groups) {
      const xs = group.map((s) => expert(s, (seed += 1000)));
      const args = xs.map(tensors);
      const r = await mufConfidence(args);
      expect(r.confidence.shape).toEqual([xs.length, B]);
      xs.forEach((x, e) => {
        const passages = Float32Array.from(args[e]!.passages.to('f32').data);
        reference(x, passages).forEach((ref, b) => {
          expect(r.mi.data[e * B + b]!, `${isa} ${JSON.stringify(x.s)} b=${b}`).toBeCloseTo(ref.mi, 4);
          expect(r.confidence.data[e * B + b]!).toBeCloseTo(ref.confidence, 4);
        });
      });
      for (const a of args) [a.queries, a.passages, a.candidates, ...a.weights].forEach((t) => t.dispose());
      r.mi.dispose();
      r.confidence.dispose();
    }
  });
});

describe('mufConfidence, bad input', () => {
  const base = () => tensors(expert({ B: 2, dim: 8, hidden: 6, layers: 1, K: 3, N: 10, L: 4, temperature: 0.5 }, 9));
  it('gives typed errors before computing anything', async () => {
    expect(await asyncCode(mufConfidence([]))).toBe('ERR_ARG');
    expect(await asyncCode(mufConfidence([{ ...base(), queries: [1, 2] as never }]))).toBe('ERR_ARG');
    const a = base();
    expect(await asyncCode(mufConfidence([{ ...a, candidates: Tensor.from(new Int32Array([0, 1, 2, 10, 0, 1, 2, 3]), [2, 4]) }]))).toBe('ERR_RANGE');
    expect(await asyncCode(mufConfidence([{ ...a, candidates: Tensor.from(new Int32Array([0, 1, 2, -1, 0, 1, 2, 3]), [2, 4]) }]))).toBe('ERR_RANGE');
    expect(await asyncCode(mufConfidence([{ ...a, temperature: 0 }]))).toBe('ERR_RANGE');
    expect(await asyncCode(mufConfidence([{ ...a, temperature: Number.NaN }]))).toBe('ERR_ARG');
    expect(await asyncCode(mufConfidence([{ ...a, members: 2 }]))).toBe('ERR_SHAPE');
    expect(await asyncCode(mufConfidence([{ ...a, members: 1.5 }]))).toBe('ERR_RANGE');
    expect(await asyncCode(mufConfidence([{ ...a, weights: a.weights.slice(0, 3) }]))).toBe('ERR_SHAPE');
    expect(await asyncCode(mufConfidence([{ ...a, weights: a.weights.slice(0, 2) }]))).toBe('ERR_SHAPE'); // ends at the hidden width
    expect(await asyncCode(mufConfidence([{ ...a, passages: Tensor.from(randomF32(10 * 9, 1), [10, 9]) }]))).toBe('ERR_SHAPE');
    expect(await asyncCode(mufConfidence([{ ...a, candidates: Tensor.from(new Float32Array(8), [2, 4]) as never }]))).toBe('ERR_DTYPE');
    expect(await asyncCode(mufConfidence([a, { ...base(), queries: Tensor.from(randomF32(3 * 8, 2), [3, 8]) }]))).toBe('ERR_SHAPE'); // batches differ
    // The good call still works afterwards.
    const r = await mufConfidence([a]);
    expect(r.confidence.data.every((c) => c >= 0 && c <= 1)).toBe(true);
  });
});

describe('mufConfidence with fuse (native/kernels/muf_fuse.h) against the fusion registry', () => {
  // Three experts over one corpus of 30 rows whose ids sort differently from the rows, lists with shared
  // candidates and tied scores, per-question confidences including a question every expert gives 0.
  const N = 30, B = 5, L = 8, E = 3;
  const corpusIds = Array.from({ length: N }, (_, i) => `p${(N - i) * 7 % 31}`);
  const byId = Array.from({ length: N }, (_, i) => i).sort((a, b) => (corpusIds[a]! < corpusIds[b]! ? -1 : corpusIds[a]! > corpusIds[b]! ? 1 : 0));
  const rank = new Int32Array(N);
  byId.forEach((row, r) => (rank[row] = r));
  const r = rng(77);
  const lists = Array.from({ length: E }, () => {
    const ids = new Int32Array(B * L);
    const scores = new Float32Array(B * L);
    for (let b = 0; b < B; b++) {
      const pool = Array.from({ length: 12 }, (_, i) => (i * 7 + b) % N).sort(() => r() - 0.5);
      ids.set(pool.slice(0, L), b * L);
      // Scores on a coarse grid (ties within and across lists), best first.
      const s = Array.from({ length: L }, () => Math.round(4 * r()) / 4).sort((x, y) => y - x);
      scores.set(s, b * L);
    }
    return { ids, scores };
  });

  async function run(confidence: Float32Array[], k: number, uniform: boolean) {
    const args: MufConfidenceExpert[] = lists.map((l, x) => ({
      ...tensors(expert({ B, dim: 4, hidden: 4, layers: 0, K: 1, N, L, temperature: 1 }, 5 + x)),
      candidates: Tensor.from(l.ids, [B, L]),
      scores: Tensor.from(l.scores, [B, L]),
    }));
    // K = 1 experts have confidence 1: the weights under test come from `confidence`, fed through the fusion alone.
    const got = await mufConfidence(args, { fuse: { k, tieRank: Tensor.from(rank, [N], 'i32'), uniform } });
    const runs = lists.map((l) => new Map(Array.from({ length: B }, (_, b) => [String(b), Array.from({ length: L }, (_, j) => ({ id: corpusIds[l.ids[b * L + j]!]!, score: l.scores[b * L + j]! }))])));
    return { got, runs, confidence };
  }

  it('equals fuse(runs, mufFusion) hit for hit, ties in corpus-id order, padding past the union', async () => {
    for (const k of [1, 4, 40]) {
      const { got, runs } = await run([], k, true);
      const want = fuse(runs, mufFusion, { confidence: Array(E).fill(1), depth: k });
      // The data holds equal fused scores, so the tie order is under test.
      if (k === 40) expect([...want.values()].some((w) => w.some((h, j) => j > 0 && h.score === w[j - 1]!.score))).toBe(true);
      expect(got.confidence.data.every((c) => c === 1)).toBe(true);
      for (let b = 0; b < B; b++) {
        const w = want.get(String(b))!;
        const ids = Array.from(got.ids!.data.subarray(b * k, (b + 1) * k));
        expect(ids.filter((i) => i >= 0).map((i) => corpusIds[i])).toEqual(w.map((h) => h.id));
        w.forEach((h, j) => expect(got.scores!.data[b * k + j]).toBeCloseTo(h.score, 5));
        ids.slice(w.length).forEach((i, j) => {
          expect(i).toBe(-1);
          expect(got.scores!.data[b * k + w.length + j]).toBe(-Infinity);
        });
      }
    }
  });

  it('weighs each expert by its confidence (all zero: equally), as MufRetriever does', async () => {
    // Heads that make confidences differ per expert and question: K = 3 random heads.
    const args: MufConfidenceExpert[] = lists.map((l, x) => ({
      ...tensors(expert({ B, dim: 6, hidden: 5, layers: 1, K: 3, N, L, temperature: 0.05 + 0.3 * x }, 40 + x)),
      candidates: Tensor.from(l.ids, [B, L]),
      scores: Tensor.from(l.scores, [B, L]),
    }));
    const got = await mufConfidence(args, { fuse: { k: 6, tieRank: Tensor.from(rank, [N], 'i32') } });
    const conf = got.confidence.data;
    const runs = lists.map((l) => new Map(Array.from({ length: B }, (_, b) => [String(b), Array.from({ length: L }, (_, j) => ({ id: corpusIds[l.ids[b * L + j]!]!, score: l.scores[b * L + j]! }))])));
    const weights = new Map(Array.from({ length: B }, (_, b) => {
      const w = Array.from({ length: E }, (_, x) => conf[x * B + b]!);
      return [String(b), w.some((v) => v > 0) ? w : w.map(() => 1)];
    }));
    const want = fuse(runs, mufFusion, { confidence: weights, depth: 6 });
    expect(new Set(Array.from(conf).map((c) => c.toFixed(3))).size).toBeGreaterThan(3);
    for (let b = 0; b < B; b++) {
      const w = want.get(String(b))!;
      expect(Array.from(got.ids!.data.subarray(b * 6, b * 6 + w.length), (i) => corpusIds[i])).toEqual(w.map((h) => h.id));
      w.forEach((h, j) => expect(got.scores!.data[b * 6 + j]).toBeCloseTo(h.score, 5));
    }
  });

  it('gives typed errors for bad fusion input', async () => {
    const a = { ...tensors(expert({ B, dim: 4, hidden: 4, layers: 0, K: 1, N, L, temperature: 1 }, 3)), candidates: Tensor.from(lists[0]!.ids, [B, L]) };
    const scores = Tensor.from(lists[0]!.scores, [B, L]);
    expect(await asyncCode(mufConfidence([a], { fuse: { k: 3 } }))).toBe('ERR_ARG'); // no scores
    expect(await asyncCode(mufConfidence([{ ...a, scores }], { fuse: { k: 0 } }))).toBe('ERR_RANGE');
    expect(await asyncCode(mufConfidence([{ ...a, scores: Tensor.from(new Float32Array(B * 2), [B, 2]) }], { fuse: { k: 3 } }))).toBe('ERR_SHAPE');
    expect(await asyncCode(mufConfidence([{ ...a, scores }], { fuse: { k: 3, tieRank: Tensor.from(new Int32Array(N - 1), [N - 1], 'i32') } }))).toBe('ERR_SHAPE');
    expect(await asyncCode(mufConfidence([{ ...a, scores }], { fuse: { k: 3, kk: 1 } as never }))).toBe('ERR_ARG');
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      const s = Float32Array.from(lists[0]!.scores);
      s[L + 2] = bad;
      const t = Tensor.from(s, [B, L]);
      const e = (await mufConfidence([{ ...a, scores: t }], { fuse: { k: 3 } }).catch((x: unknown) => x)) as { code: string; message: string };
      expect(e.code).toBe('ERR_RANGE');
      expect(e.message).toMatch(/score .* at \[1, 2\] is not finite/);
      t.dispose();
    }
    const ok = await mufConfidence([{ ...a, scores }], { fuse: { k: 3 } });
    expect(ok.ids!.shape).toEqual([B, 3]);
  });

  it('breaks ties of equal tie rank by row', async () => {
    // Two experts, one question, the same score for rows listed in opposite orders: every fused score ties, and with
    // every tie rank equal the rows come out ascending, whatever order their slots were made in.
    const a = { ...tensors(expert({ B: 1, dim: 4, hidden: 4, layers: 0, K: 1, N, L: 4, temperature: 1 }, 5)) };
    const one = { ...a, candidates: Tensor.from(Int32Array.of(9, 3, 7, 1), [1, 4], 'i32'), scores: Tensor.from(new Float32Array(4).fill(0.5), [1, 4]) };
    const two = { ...a, candidates: Tensor.from(Int32Array.of(1, 7, 3, 9), [1, 4], 'i32'), scores: Tensor.from(new Float32Array(4).fill(0.5), [1, 4]) };
    const got = await mufConfidence([one, two], { fuse: { k: 4, uniform: true, tieRank: Tensor.from(new Int32Array(N), [N], 'i32') } });
    expect(Array.from(got.ids!.data)).toEqual([1, 3, 7, 9]);
    expect(Array.from(got.scores!.data)).toEqual([0.5, 0.5, 0.5, 0.5]);
  });
});
