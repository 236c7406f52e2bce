import { afterAll, describe, expect, it } from 'vitest';

import { QuorumError, Tensor, capabilities, setIsa, type Isa } from '../lib/index.js';
import { RegWeightScheduler, regularizerSync, sparseDenseScoresSync, sparseScoresSync, sparseVectors, spladePool, spladePoolBackwardSync, spladePoolSync, toSparse, toSparseSync } from '../lib/entries/kernels.js';
import { flopsRef, l1Ref, spladePoolRef } from './reference/splade.js';
import { decoded, floatDtypes, randomF32, randomShapes, rng } from './helpers.js';

const caps = capabilities();
const isas = caps.availableIsas as Isa[];
afterAll(() => setIsa(caps.isa as Isa));

function randomMask(n: number, seed: number): Uint8Array {
  const r = rng(seed);
  return Uint8Array.from({ length: n }, () => (r() > -0.4 ? 1 : 0));
}

// [B, L, V, masked]
const shapes: Array<[number, number, number, boolean]> = [
  [1, 1, 1, false],
  [2, 3, 17, false],
  [3, 9, 4100, true], // crosses a 4096-column chunk
  [2, 5, 33, true],
  [4, 16, 300, true],
  // Four more drawn at random (seeded), masked or not.
  ...randomShapes(2028, 4, [[1, 5], [1, 20], [1, 5000], [0, 1]]).map(([B, L, V, m]) => [B, L, V, m === 1] as [number, number, number, boolean]),
];

describe.each(isas)('spladePool, %s variant', (isa) => {
  describe.each(floatDtypes)('logits %s', (dtype) => {
    it.each(shapes)('B=%i L=%i V=%i masked=%s matches the reference', (B, L, V, masked) => {
      setIsa(isa);
      const x = Tensor.from(randomF32(B * L * V, B * L + V), [B, L, V], dtype);
      const mask = masked ? randomMask(B * L, V) : undefined;
      const ref = spladePoolRef(decoded(x), B, L, V, mask);
      const got = spladePoolSync(x, { argmax: true, ...(mask ? { mask } : {}) });
      expect(got.weights.shape).toEqual([B, V]);
      const w = got.weights.data;
      for (let i = 0; i < B * V; i++) expect(Math.abs((w[i] as number) - (ref.w[i] as number))).toBeLessThanOrEqual(2e-7 * (ref.w[i] as number) + 1e-30);
      expect(Array.from(got.argmax!.data)).toEqual(Array.from(ref.argmax));
      // The values-only path (no arg-max tracking) gives the same weights.
      const values = spladePoolSync(x, mask ? { mask } : {});
      expect(Array.from(values.weights.data)).toEqual(Array.from(w));
    });
  });

  it('gives 0 and argmax -1 where no logit is positive, and the lowest token on ties', () => {
    setIsa(isa);
    const x = Float32Array.from([-1, 2, 0.5, /* t1 */ -3, 2, 0.5, /* t2 */ -0.5, 1, 0.25]); // B=1, L=3, V=3
    const r = spladePoolSync({ data: x, shape: [1, 3, 3] }, { argmax: true });
    expect(Array.from(r.argmax!.data)).toEqual([-1, 0, 0]);
    expect(r.weights.data[0]).toBe(0);
    expect(r.weights.data[1]).toBeCloseTo(Math.log1p(2), 6);
    // A fully masked sequence pools to 0 everywhere.
    const m = spladePoolSync({ data: x, shape: [1, 3, 3] }, { mask: [0, 0, 0], argmax: true });
    expect(Array.from(m.weights.data)).toEqual([0, 0, 0]);
    expect(Array.from(m.argmax!.data)).toEqual([-1, -1, -1]);
  });

  it('an infinite logit pools to +Infinity, not NaN', () => {
    setIsa(isa);
    const r = spladePoolSync({ data: Float32Array.from([Infinity, 1, -Infinity, 2]), shape: [1, 2, 2] }, { argmax: true });
    expect(r.weights.data[0]).toBe(Infinity);
    expect(r.weights.data[1]).toBeCloseTo(Math.log1p(2), 6);
  });

  it('keeps full relative precision for tiny logits (log1p, not log(1 + x))', () => {
    setIsa(isa);
    const x = Float32Array.from([1e-8, 3e-5, 1e-3, 0.7, 30, 1e6, 1e-38, 0]);
    const r = spladePoolSync({ data: x, shape: [1, 1, 8] });
    x.forEach((v, i) => expect(Math.abs((r.weights.data[i] as number) - Math.log1p(v))).toBeLessThanOrEqual(3e-7 * Math.log1p(v)));
  });
});

describe('spladePool gradients and regularizers', () => {
  it.each(floatDtypes)('backward of %s logits, random shapes: grad / (1 + x) at the reference arg-max of the decoded logits', (dtype) => {
    const r = rng(dtype.length + 40);
    const draw = (lo: number, hi: number) => lo + Math.floor(((r() + 1) / 2) * (hi - lo + 1));
    for (let trial = 0; trial < 5; trial++) {
      const [B, L, V] = [draw(1, 4), draw(1, 9), draw(1, 70)];
      const x = Tensor.from(randomF32(B * L * V, 90 + trial), [B, L, V], dtype);
      const X = decoded(x);
      const mask = Uint8Array.from({ length: B * L }, (_, i) => (i % 4 === 2 ? 0 : 1));
      const ref = spladePoolRef(X, B, L, V, mask);
      const fwd = spladePoolSync(x, { mask, argmax: true });
      expect(Array.from(fwd.argmax!.data)).toEqual(Array.from(ref.argmax));
      const g = randomF32(B * V, 95 + trial);
      const dx = spladePoolBackwardSync(x, fwd.argmax!, { data: g, shape: [B, V] });
      const want = new Float64Array(B * L * V);
      for (let b = 0; b < B; b++)
        for (let v = 0; v < V; v++) {
          const t = ref.argmax[b * V + v]!;
          if (t >= 0) want[(b * L + t) * V + v] = g[b * V + v]! / (1 + X[(b * L + t) * V + v]!);
        }
      dx.data.forEach((d, i) => expect(Math.abs(d - want[i]!)).toBeLessThanOrEqual(1e-6 * (1 + Math.abs(want[i]!))));
      expect(want.some((w) => w !== 0)).toBe(true);
    }
  });

  it('backward matches central finite differences', () => {
    const B = 2, L = 4, V = 7;
    const x = randomF32(B * L * V, 77);
    const mask = Uint8Array.from([1, 1, 0, 1, 1, 1, 1, 0]);
    const g = randomF32(B * V, 78);
    const objective = (xx: ArrayLike<number>) => spladePoolRef(xx, B, L, V, mask).w.reduce((a, w, i) => a + w * (g[i] as number), 0);
    const fwd = spladePoolSync({ data: x, shape: [B, L, V] }, { mask, argmax: true });
    const dx = spladePoolBackwardSync({ data: x, shape: [B, L, V] }, fwd.argmax!, { data: g, shape: [B, V] });
    expect(dx.shape).toEqual([B, L, V]);
    const h = 1e-5;
    let checked = 0;
    for (let i = 0; i < x.length; i++) {
      if (Math.abs(x[i] as number) < 1e-3) continue; // the relu kink
      const a = Float64Array.from(x), b = Float64Array.from(x);
      a[i]! += h;
      b[i]! -= h;
      const fd = (objective(a) - objective(b)) / (2 * h);
      expect(Math.abs((dx.data[i] as number) - fd)).toBeLessThan(1e-5);
      checked++;
    }
    expect(checked).toBeGreaterThan(40);
  });

  it.each(['flops', 'l1'] as const)('%s value and gradient match the reference and finite differences', (kind) => {
    const B = 3, V = 11;
    const w = Float32Array.from(randomF32(B * V, 5), (v) => Math.max(0, v)); // SPLADE weights are >= 0
    const ref = kind === 'flops' ? flopsRef : l1Ref;
    const r = regularizerSync({ data: w, shape: [B, V] }, kind, { grad: true });
    expect(r.value).toBeCloseTo(ref(w, B, V), 6);
    const h = 1e-4;
    let checked = 0;
    let zeros = 0;
    for (let i = 0; i < w.length; i++) {
      if (w[i] === 0) {
        // |w| has a kink at 0, where the gradient is 0 (torch's abs' too): a weight pruned to 0 is not pushed.
        expect(r.grad!.data[i]).toBe(0);
        zeros++;
        continue;
      }
      if ((w[i] as number) < 2 * h) continue; // too close to the kink for a central difference
      const a = Float64Array.from(w), b = Float64Array.from(w);
      a[i]! += h;
      b[i]! -= h;
      expect(Math.abs((r.grad!.data[i] as number) - (ref(a, B, V) - ref(b, B, V)) / (2 * h))).toBeLessThan(1e-5);
      checked++;
    }
    expect(checked).toBeGreaterThan(10);
    expect(zeros).toBeGreaterThan(5);
  });

  it('RegWeightScheduler grows quadratically from 0 and stays at lambda after T steps', () => {
    const s = new RegWeightScheduler(3e-4, 4);
    expect(s.value).toBe(0);
    expect(s.step()).toBeCloseTo(3e-4 / 16, 12);
    s.step();
    s.step();
    expect(s.step()).toBeCloseTo(3e-4, 12);
    expect(s.step()).toBeCloseTo(3e-4, 12);
    expect(() => new RegWeightScheduler(1, 0)).toThrow(expect.objectContaining({ code: 'ERR_RANGE' }));
  });
});

describe('sparse vectors', () => {
  const B = 3, V = 50;
  const w = Float32Array.from(randomF32(B * V, 9), (v) => Math.max(0, v));
  w[3] = w[4] = 0.5; // a tie inside row 0

  function expected(threshold: number, topK: number) {
    const rows: Array<Array<[number, number]>> = [];
    for (let b = 0; b < B; b++) {
      let e: Array<[number, number]> = [];
      for (let v = 0; v < V; v++) if ((w[b * V + v] as number) > threshold) e.push([v, w[b * V + v] as number]);
      if (topK > 0) e = e.sort((x, y) => y[1] - x[1] || x[0] - y[0]).slice(0, topK).sort((x, y) => x[0] - y[0]);
      rows.push(e);
    }
    return rows;
  }

  it.each([
    [0, 0],
    [0.3, 0],
    [0, 5],
    [0.1, 3],
  ])('threshold %f, topK %i', (threshold, topK) => {
    const s = toSparseSync({ data: w, shape: [B, V] }, { threshold, topK });
    expect(s.rows).toBe(B);
    const want = expected(threshold, topK);
    for (let b = 0; b < B; b++) expect(s.row(b).map((e) => [e.index, e.value])).toEqual(want[b]);
  });

  it('sparse-sparse and sparse-dense dot products equal the dense ones', async () => {
    const a = toSparseSync({ data: w, shape: [B, V] });
    const d2 = Float32Array.from(randomF32(4 * V, 10), (v) => Math.max(0, v - 0.3));
    const b = toSparseSync({ data: d2, shape: [4, V] });
    const ss = sparseScoresSync(a, b);
    const sd = sparseDenseScoresSync(a, { data: d2, shape: [4, V] });
    expect(ss.shape).toEqual([B, 4]);
    for (let i = 0; i < B; i++)
      for (let j = 0; j < 4; j++) {
        let s = 0;
        for (let v = 0; v < V; v++) s += (w[i * V + v] as number) * (d2[j * V + v] as number);
        expect(ss.data[i * 4 + j]).toBeCloseTo(s, 5);
        expect(sd.data[i * 4 + j]).toBeCloseTo(s, 5);
      }
    const asyncRows = await toSparse({ data: w, shape: [B, V] }, { topK: 4 });
    expect(Array.from(asyncRows.indices)).toEqual(Array.from(toSparseSync({ data: w, shape: [B, V] }, { topK: 4 }).indices));
  });
});

describe('SPLADE API errors', () => {
  const x = { data: randomF32(2 * 3 * 5, 1), shape: [2, 3, 5] as const };
  const bad: Array<[string, () => unknown, string]> = [
    ['2-D logits', () => spladePoolSync({ data: randomF32(6, 1), shape: [2, 3] }), 'ERR_SHAPE'],
    ['integer logits', () => spladePoolSync({ data: new Int32Array(30), shape: [2, 3, 5] }), 'ERR_DTYPE'],
    ['a mask of the wrong size', () => spladePoolSync(x, { mask: [1, 1] }), 'ERR_SHAPE'],
    ['an unknown regularizer', () => regularizerSync({ data: randomF32(4, 1), shape: [2, 2] }, 'l2' as never), 'ERR_ARG'],
    ['a negative topK', () => toSparseSync({ data: randomF32(4, 1), shape: [2, 2] }, { topK: -1 }), 'ERR_RANGE'],
    [
      'unsorted term ids',
      () => sparseScoresSync(sparseVectors(BigInt64Array.from([0n, 2n]), Int32Array.from([3, 1]), Float32Array.from([1, 1])), toSparseSync({ data: randomF32(4, 1), shape: [1, 4] })),
      'ERR_RANGE',
    ],
    [
      'an offset that overshoots before a later one decreases',
      () => sparseScoresSync(sparseVectors(BigInt64Array.from([0n, 5n, 2n]), Int32Array.from([1, 2]), Float32Array.from([1, 1])), toSparseSync({ data: randomF32(4, 1), shape: [1, 4] })),
      'ERR_RANGE',
    ],
    [
      'a term id outside the dense vocabulary',
      () => sparseDenseScoresSync(sparseVectors(BigInt64Array.from([0n, 1n]), Int32Array.from([9]), Float32Array.from([1])), { data: randomF32(8, 1), shape: [2, 4] }),
      'ERR_RANGE',
    ],
    ['an argmax of the wrong shape', () => spladePoolBackwardSync(x, Tensor.zeros([2, 4], 'i32'), { data: randomF32(10, 1), shape: [2, 5] }), 'ERR_SHAPE'],
    ['an argmax past the sequence', () => spladePoolBackwardSync(x, Tensor.from(new Array(10).fill(3), [2, 5], 'i32'), { data: randomF32(10, 1), shape: [2, 5] }), 'ERR_RANGE'],
  ];
  it.each(bad)('rejects %s', (_n, fn, code) => {
    expect(fn).toThrow(QuorumError);
    expect(fn).toThrow(expect.objectContaining({ code }));
  });

  it('async equals sync', async () => {
    const a = await spladePool(x, { argmax: true });
    const s = spladePoolSync(x, { argmax: true });
    expect(Array.from(a.weights.data)).toEqual(Array.from(s.weights.data));
    expect(Array.from(a.argmax!.data)).toEqual(Array.from(s.argmax!.data));
  });
});
