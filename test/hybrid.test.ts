import { describe, expect, it } from 'vitest';

import { gainOverBaseline, searchAlpha } from '../lib/entries/fusion.js';
import { hybridFuse } from '../lib/index.js';
import { code } from './helpers.js';

const dense = [
  { id: 'a', score: 80 },
  { id: 'b', score: 78 },
  { id: 'c', score: 70 },
];
const sparse = [
  { id: 'c', score: 12 },
  { id: 'd', score: 10 },
  { id: 'a', score: 4 },
];

describe('hybridFuse (pyserini HybridSearcher)', () => {
  it('fills a missing score with that list minimum and weights the sparse side by default', () => {
    const r = hybridFuse(dense, sparse, { alpha: 1 });
    const score = Object.fromEntries(r.map((h) => [h.id, h.score]));
    expect(score).toEqual({ a: 84, b: 78 + 4, c: 82, d: 70 + 10 });
    expect(r.map((h) => h.id)).toEqual(['a', 'b', 'c', 'd']); // b and c tie at 82: id ascending
  });

  it('weightOnDense puts alpha on the dense side', () => {
    const r = hybridFuse(dense, sparse, { alpha: 0.5, weightOnDense: true });
    expect(Object.fromEntries(r.map((h) => [h.id, h.score]))).toEqual({ a: 4 + 40, b: 4 + 39, c: 12 + 35, d: 10 + 35 });
  });

  it('normalization centres each list to [-0.5, 0.5]; a flat list maps to 0', () => {
    const r = hybridFuse(dense, sparse, { alpha: 1, normalization: true });
    const score = Object.fromEntries(r.map((h) => [h.id, h.score]));
    expect(score.a).toBeCloseTo(0.5 + -0.5, 12); // dense max, sparse min
    expect(score.c).toBeCloseTo(-0.5 + 0.5, 12);
    expect(score.d).toBeCloseTo(-0.5 + (10 - 8) / 8, 12);
    const flat = hybridFuse(dense, [{ id: 'x', score: 3 }, { id: 'y', score: 3 }], { normalization: true });
    expect(flat.every((h) => Number.isFinite(h.score))).toBe(true);
  });

  it('handles empty lists, ties by id, and k', () => {
    expect(hybridFuse([], [])).toEqual([]);
    expect(hybridFuse([{ id: 2, score: 1 }, { id: 1, score: 1 }], [], { k: 1 })).toEqual([{ id: 1, score: 1 }]);
  });

  it('searchAlpha picks the grid value with the best dev metric', () => {
    // Dense ranks the relevant 'c' third; BM25 ranks it first, so a large sparse weight wins.
    const dev = [{ dense, sparse, relevant: new Set(['c']) }];
    const mrr = (ranked: readonly string[], rel: ReadonlySet<string>) => {
      const i = ranked.findIndex((x) => rel.has(x));
      return i < 0 ? 0 : 1 / (i + 1);
    };
    const r = searchAlpha(dev, { grid: [0, 1, 5], metric: mrr });
    expect(r.tried.map((t) => t.alpha)).toEqual([0, 1, 5]);
    expect(r.alpha).toBe(5);
    expect(r.value).toBe(1);
  });

  it('gainOverBaseline: mean paired gain, its standard error, and the one-SE rule', () => {
    // d = [0.5, 0, 0.5, 0]: mean 0.25, sample variance 1/12, SE sqrt(1/48) = 0.144 < 0.25: kept.
    const a = gainOverBaseline([1, 0.5, 1, 1], [0.5, 0.5, 0.5, 1]);
    expect(a.gain).toBeCloseTo(0.25, 12);
    expect(a.se).toBeCloseTo(Math.sqrt(1 / 48), 12);
    expect(a.keep).toBe(true);
    // d = [0.5, -0.5, 0.1, 0]: mean 0.025 under its SE (0.206): BM25 alone.
    const b = gainOverBaseline([1, 0, 0.6, 1], [0.5, 0.5, 0.5, 1]);
    expect(b.gain).toBeCloseTo(0.025, 12);
    expect(b.se).toBeCloseTo(Math.sqrt((0.475 ** 2 + 0.525 ** 2 + 0.075 ** 2 + 0.025 ** 2) / 3 / 4), 12);
    expect(b.keep).toBe(false);
    // Identical runs gain nothing; a constant positive gain has SE 0 and is kept; a loss never is.
    expect(gainOverBaseline([0.5, 1], [0.5, 1])).toEqual({ gain: 0, se: 0, keep: false });
    expect(gainOverBaseline(new Float64Array([1, 1]), new Float64Array([0.5, 0.5]))).toEqual({ gain: 0.5, se: 0, keep: true });
    expect(gainOverBaseline([0, 0, 0], [1, 0.5, 1]).keep).toBe(false);
    // One query gives no standard error: not enough evidence to keep the dense side.
    expect(gainOverBaseline([1], [0])).toEqual({ gain: 1, se: Infinity, keep: false });
    expect(gainOverBaseline([], [])).toEqual({ gain: 0, se: Infinity, keep: false });
  });

  it('gainOverBaseline rejects mismatched or non-finite values with typed errors', () => {
    expect(code(() => gainOverBaseline([1, 2], [1]))).toBe('ERR_SHAPE');
    expect(code(() => gainOverBaseline([1, Number.NaN], [1, 1]))).toBe('ERR_NONFINITE');
    expect(code(() => gainOverBaseline('ab' as never, [1, 1]))).toBe('ERR_ARG');
    expect(code(() => gainOverBaseline(new BigInt64Array(2) as never, [1, 1]))).toBe('ERR_ARG');
    expect(code(() => gainOverBaseline(new DataView(new ArrayBuffer(8)) as never, [1, 1]))).toBe('ERR_ARG');
    expect(code(() => gainOverBaseline([1, '2'] as never, [1, 1]))).toBe('ERR_ARG');
  });
});
