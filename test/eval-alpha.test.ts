import { describe, expect, it } from 'vitest';

import { tuneHybridAlpha } from '../lib/cli/eval.js';
import type { Qrels, Run } from '../lib/eval/ranking.js';

// Questions q0..q3 with relevant passage 'a' among 'x' and 'y'. Even ids (q0, q2) want the dense side: dense ranks
// 'a' first, BM25 second; with centred min-max scores 'a' leads the fused list for alpha < 1/0.7. Odd ids (q1, q3)
// want BM25: it ranks 'a' first, dense second, and 'a' leads for alpha > 0.45. No grid alpha ties.
const ids = ['q0', 'q1', 'q2', 'q3'];
const qrels: Qrels = new Map(ids.map((q) => [q, new Map([['a', 1]])]));
const list = (scores: Record<string, number>) => Object.entries(scores).map(([id, score]) => ({ id, score })).sort((u, v) => v.score - u.score);
const conflicting = (): Run[] => [
  new Map(ids.map((q, i) => [q, i % 2 ? list({ x: 1, a: 0.55, y: 0 }) : list({ a: 1, y: 0.5, x: 0 })])),
  new Map(ids.map((q, i) => [q, i % 2 ? list({ a: 1, y: 0.5, x: 0 }) : list({ x: 1, a: 0.3, y: 0 })])),
];
const lists = (first: string, second: string) => [{ id: first, score: 0.9 }, { id: second, score: 0.1 }];

describe("tuneHybridAlpha (quorum eval's hybrid weight, and its gain over BM25 measured out of sample)", () => {
  it('reports the in-sample best alpha but judges it on questions that did not choose it', () => {
    const t = tuneHybridAlpha(conflicting(), qrels, new Set(ids), 10);
    // In sample, alpha 0.5 (the grid's first in 0.45 .. 1.43) ranks 'a' first everywhere: MRR 1 against BM25's 0.75.
    expect(t.alpha).toBe(0.5);
    expect(t.value).toBe(1);
    // Out of sample, the even half's alpha (0: the dense side) costs the odd half 0.5 and the odd half's (0.5) gains
    // the even half 0.5: no gain, so the one-SE rule gives BM25 alone.
    expect(t.gain).toBeCloseTo(0, 12);
    expect(t.se).toBeCloseTo(Math.sqrt(1 / 3 / 4), 12);
    expect(t.keep).toBe(false);
  });

  it('keeps a dense side that helps every question', () => {
    const dense: Run = new Map(ids.map((q) => [q, lists('a', 'x')]));
    const bm25: Run = new Map(ids.map((q) => [q, lists('x', 'a')]));
    const t = tuneHybridAlpha([dense, bm25], qrels, new Set(ids), 10);
    expect(t.value).toBe(1);
    expect(t.gain).toBeCloseTo(0.5, 12);
    expect(t.se).toBe(0);
    expect(t.keep).toBe(true);
  });

  it('one question gives no out-of-sample evidence: BM25 alone', () => {
    const dense: Run = new Map([['q0', lists('a', 'x')]]);
    const bm25: Run = new Map([['q0', lists('x', 'a')]]);
    const t = tuneHybridAlpha([dense, bm25], qrels, new Set(['q0']), 10);
    expect(t.value).toBe(1);
    expect(t.keep).toBe(false);
  });
});

describe("the alpha grid's fast path", () => {
  it('gives the fuse / evaluate path\'s best alpha and MRR@10, ties and missing documents included', async () => {
    const { tune, tuneByFusing } = await import('../lib/cli/eval.js');
    const { rng } = await import('./basics.js');
    const r = rng(77);
    const docs = Array.from({ length: 40 }, (_, i) => `d${i}`);
    const qs = Array.from({ length: 60 }, (_, i) => `q${i}`);
    // Overlapping top lists with coarse scores (ties within and across lists), a few relevant documents each, some
    // outside both lists, one query with no relevant document and one missing from the dense run.
    const pickList = () => {
      const chosen = docs.filter(() => r() < 0.5);
      return chosen.map((id) => ({ id, score: Math.round(r() * 8) / 4 })).sort((a, b) => b.score - a.score);
    };
    const dense: Run = new Map(qs.filter((q) => q !== 'q7').map((q) => [q, pickList()]));
    const sparse: Run = new Map(qs.map((q) => [q, pickList()]));
    const judged: Qrels = new Map(qs.map((q, i) => [q, new Map(i === 3 ? [['d0', 0]] : docs.filter(() => r() < 0.08).map((d) => [d, 1 + Math.floor(r() * 2)]))]));
    for (const subset of [new Set(qs), new Set(qs.slice(0, 17))]) {
      const fast = tune([dense, sparse], judged, subset, 100);
      const slow = tuneByFusing([dense, sparse], judged, subset, 100);
      expect(fast.alpha).toBe(slow.alpha);
      expect(fast.value).toBeCloseTo(slow.value, 12);
    }
  });
});
