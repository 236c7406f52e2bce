import { describe, expect, it } from 'vitest';

import { hybridFuse, searchAlpha } from '../lib/index.js';

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
});
