// Every fusion method on one small fixture, against values worked out by hand from docs/methods/fusion.md (arithmetic in the
// comments). Run A ranks a (0.9), b (0.5), c (0.1); run B ranks b (8), d (4). Union: a, b, c, d.
import { describe, expect, it } from 'vitest';

import { type FuseOptions, type FusionMethod, type Qrels, type Run, fuse } from '../lib/index.js';
import { normalizeLists, optimizeFusion, trainFusion, weightGrid } from '../lib/entries/fusion.js';
import { CAME_FUSION_METHODS } from '../lib/entries/methods/came.js';
import { mufFusion, mufSparseFusion } from '../lib/entries/methods/muf.js';
import { FUSION_METHODS, fuseQuery, type FusionMethodDef } from '../lib/entries/fusion.js';
import { code } from './helpers.js';

const A: Run = new Map([['q', [{ id: 'c', score: 0.1 }, { id: 'a', score: 0.9 }, { id: 'b', score: 0.5 }]]]);
const B: Run = new Map([['q', [{ id: 'd', score: 4 }, { id: 'b', score: 8 }]]]);
const qrels: Qrels = new Map([['q', new Map([['b', 1], ['d', 1]])]]);

function scores(method: FusionMethod | FusionMethodDef<object>, options: FuseOptions & Record<string, unknown> = {}, runs: Run[] = [A, B]): Record<string, number> {
  return Object.fromEntries((fuse(runs, method, options).get('q') ?? []).map((d) => [d.id, d.score]));
}

function expectScores(got: Record<string, number>, want: Record<string, number>) {
  expect(Object.keys(got).sort()).toEqual(Object.keys(want).sort());
  for (const [id, v] of Object.entries(want)) expect(got[id], id).toBeCloseTo(v, 9);
}

const w = [0.25, 0.75];
const none = { norm: 'none' } as const;

describe('score-based fusion (raw scores)', () => {
  it('CombSUM / MAX / MIN / MED / ANZ / MNZ / GMNZ', () => {
    expectScores(scores('sum', none), { a: 0.9, b: 8.5, c: 0.1, d: 4 });
    expectScores(scores('max', none), { a: 0.9, b: 8, c: 0.1, d: 4 });
    expectScores(scores('min', none), { a: 0.9, b: 0.5, c: 0.1, d: 4 });
    expectScores(scores('med', none), { a: 0.9, b: 4.25, c: 0.1, d: 4 });
    expectScores(scores('anz', none), { a: 0.9, b: 4.25, c: 0.1, d: 4 });
    expectScores(scores('mnz', none), { a: 0.9, b: 17, c: 0.1, d: 4 });
    expectScores(scores('gmnz', { ...none, gamma: 0.5 }), { a: 0.9, b: 8.5 * Math.SQRT2, c: 0.1, d: 4 });
  });

  it('WSum / WMNZ / Mixed with weights [0.25, 0.75]', () => {
    expectScores(scores('wsum', { ...none, weights: w }), { a: 0.225, b: 6.125, c: 0.025, d: 3 });
    expectScores(scores('wmnz', { ...none, weights: w }), { a: 0.225, b: 8.5, c: 0.025, d: 3 });
    expectScores(scores('mixed', { ...none, weights: w }), { a: 0.225, b: 6.125 * Math.SQRT2, c: 0.025, d: 3 });
  });

  it('explicit missing policies: list minimum, K-th score, -inf', () => {
    // min: A's min 0.1, B's min 4.
    expectScores(scores('sum', { ...none, missing: 'min' }), { a: 4.9, b: 8.5, c: 4.1, d: 4.1 });
    // kth with K = 2: A's 2nd score 0.5, B's 2nd score 4.
    expectScores(scores('sum', { ...none, missing: 'kth', k: 2 }), { a: 4.9, b: 8.5, c: 4.1, d: 4.5 });
    expectScores(scores('sum', { ...none, missing: '-inf' }), { a: -Infinity, b: 8.5, c: -Infinity, d: -Infinity });
    // anz over present lists only vs with zero fills
    expectScores(scores('anz', { ...none, missing: 'zero' }), { a: 0.45, b: 4.25, c: 0.05, d: 2 });
  });

  it('ranx normalizes with min-max by default: A -> a 1, b 0.5, c 0; B -> b 1, d 0', () => {
    expectScores(scores('sum'), { a: 1, b: 1.5, c: 0, d: 0 });
  });
});

describe('rank-based fusion', () => {
  it('RRF, ISR, log_ISR, logn_ISR, RBC', () => {
    expectScores(scores('rrf'), { a: 1 / 61, b: 1 / 62 + 1 / 61, c: 1 / 63, d: 1 / 62 });
    expectScores(scores('rrf', { rrfK: 0 }), { a: 1, b: 1.5, c: 1 / 3, d: 0.5 });
    // ISR: sum of 1 / (r + 1)^2, times the number of runs holding the document.
    expectScores(scores('isr'), { a: 1, b: 2.5, c: 1 / 9, d: 0.25 });
    expectScores(scores('log_isr'), { a: 0, b: 1.25 * Math.log(2), c: 0, d: 0 });
    expectScores(scores('logn_isr'), { a: Math.log(1.01), b: 1.25 * Math.log(2.01), c: Math.log(1.01) / 9, d: 0.25 * Math.log(1.01) });
    // RBC, phi 0.5: (1 - phi) phi^r
    expectScores(scores('rbc', { phi: 0.5 }), { a: 0.5, b: 0.75, c: 0.125, d: 0.25 });
  });

  it('BordaFuse and weighted BordaFuse: |C| - r ranked, (|C| - n + 1) / 2 unranked', () => {
    // A (n 3): a 4, b 3, c 2, d (4 - 3 + 1) / 2 = 1. B (n 2): b 4, d 3, a = c = (4 - 2 + 1) / 2 = 1.5.
    expectScores(scores('bordafuse'), { a: 5.5, b: 7, c: 3.5, d: 4 });
    expectScores(scores('w_bordafuse', { weights: w }), { a: 2.125, b: 3.75, c: 1.625, d: 2.5 });
  });

  it('Condorcet: b wins every duel it is not tied in; the order of the cycle is implementation-defined', () => {
    // Duels (missing position 1e6): a-b tie, a>c, a-d tie, b>c, b>d, c-d tie. V8's stable sort from a, b, c, d.
    expectScores(scores('condorcet'), { a: 4, b: 3, c: 2, d: 1 });
    // Weighting B up makes b beat a and d beat a and c.
    const weighted = fuse([A, B], 'w_condorcet', { weights: [0.25, 0.75] }).get('q')!.map((d) => d.id);
    expect(weighted.indexOf('b')).toBeLessThan(weighted.indexOf('a'));
    expect(weighted.indexOf('d')).toBeLessThan(weighted.indexOf('c'));
  });
});

describe('supervised fusion (trained on qrels: b and d relevant)', () => {
  // Hits: A (a, b, c) -> [0, 1, 0]; B (b, d) -> [1, 1].
  it('PosFuse, MAPFuse, SlideFuse', () => {
    expectScores(scores('posfuse', { trained: trainFusion('posfuse', [A, B], qrels) }), { a: 0, b: 2, c: 0, d: 1 });
    // MAP: A = (1/2) / 2 = 0.25; B = (1 + 1) / 2 = 1. Contribution MAP / (r + 1).
    expectScores(scores('mapfuse', { trained: trainFusion('mapfuse', [A, B], qrels) }), { a: 0.25, b: 1.125, c: 0.25 / 3, d: 0.5 });
    // Window 1 over A's [0, 1, 0]: a (0+1)/2, b (0+1+0)/3, c (1+0)/2; over B's [1, 1]: 1 and 1.
    expectScores(scores('slidefuse', { window: 1, trained: trainFusion('slidefuse', [A, B], qrels) }), { a: 0.5, b: 1 / 3 + 1, c: 0.5, d: 1 });
  });

  it('BayesFuse: segment log-odds, ln(0.001 / 0.999) when missing', () => {
    const missing = Math.log(0.001 / 0.999);
    const la = Math.log(0.2 / 0.8); // A: 1 hit in [0, 5)
    const lb = Math.log(0.4 / 0.6); // B: 2 hits in [0, 5)
    expectScores(scores('bayesfuse', { trained: trainFusion('bayesfuse', [A, B], qrels) }), { a: la + missing, b: la + lb, c: la + missing, d: missing + lb });
  });

  it('ProbFuse (2 segments) and SegFuse', () => {
    // A: segments of ceil(3/2) = 2: [0, 1] -> 1/2, [0] -> 0/2. B: segments of 1: 1, 1. Contribution P_k / (k + 1).
    const trained = trainFusion('probfuse', [A, B], qrels, { segments: 2 });
    expect(trained.tables).toEqual([[0.5, 0], [1, 1]]);
    expectScores(scores('probfuse', { trained }), { a: 0.5, b: 1.5, c: 0, d: 0.5 });
    // SegFuse: [0, 5) -> A 1/5, B 2/5; contribution P_k (s + 1) on raw scores here.
    expectScores(scores('segfuse', { ...none, trained: trainFusion('segfuse', [A, B], qrels) }), { a: 0.38, b: 3.9, c: 0.22, d: 2 });
  });

  it('asks for training, and for it to match the method', () => {
    expect(code(() => fuse([A, B], 'posfuse'))).toBe('ERR_ARG');
    expect(code(() => fuse([A, B], 'posfuse', { trained: trainFusion('segfuse', [A, B], qrels) }))).toBe('ERR_ARG');
    expect(code(() => trainFusion('probfuse', [A, B], qrels))).toBe('ERR_ARG');
    expect(code(() => trainFusion('rrf', [A, B], qrels))).toBe('ERR_ARG');
  });
});

describe('MUF, CAME and the hybrid', () => {
  it("MUF dense: confidence weights, a missing document takes the expert's list minimum, raw scores", () => {
    // w = [1, 3] / 4; fills A 0.1, B 4.
    expectScores(scores(mufFusion as FusionMethodDef<object>, { confidence: [1, 3] }), { a: 3.225, b: 6.125, c: 3.025, d: 3.025 });
    expectScores(scores(mufFusion as FusionMethodDef<object>, { confidence: new Map([['q', [3, 1]]]) }), { a: 1.675, b: 2.375, c: 1.075, d: 0.075 + 1 });
    expectScores(scores(mufSparseFusion as FusionMethodDef<object>, { confidence: [1, 3] }), { b: 8, d: 4 });
    expect(code(() => fuse([A, B], mufFusion, { confidence: [1, -1] }))).toBe('ERR_RANGE');
  });

  it('CAME: Sum with the K-th score, NormSum, NormMax, SumRR, MaxRR, LinearLayer', () => {
    expectScores(scores(CAME_FUSION_METHODS.sum, { k: 2 }), { a: 4.9, b: 8.5, c: 4.1, d: 4.5 });
    expectScores(scores(CAME_FUSION_METHODS.sum), { a: 4.9, b: 8.5, c: 4.1, d: 4.1 }); // K = each list's length
    expectScores(scores(CAME_FUSION_METHODS.normsum), { a: 1, b: 1.5, c: 0, d: 0 });
    expectScores(scores(CAME_FUSION_METHODS.normmax), { a: 1, b: 1, c: 0, d: 0 });
    expectScores(scores(CAME_FUSION_METHODS.sumrr), { a: 1, b: 1.5, c: 1 / 3, d: 0.5 });
    expectScores(scores(CAME_FUSION_METHODS.maxrr), { a: 1, b: 1, c: 1 / 3, d: 0.5 });
    expectScores(scores(CAME_FUSION_METHODS.linear, { weights: w }), { a: 3.225, b: 6.125, c: 3.025, d: 3.025 });
  });

  it('hybrid [dense, sparse]: missing -> that list minimum, alpha on the sparse side', () => {
    expectScores(scores('hybrid', { alpha: 0.5 }), { a: 2.9, b: 4.5, c: 2.1, d: 2.1 });
    expect(code(() => fuse([A], 'hybrid'))).toBe('ERR_ARG');
  });
});

describe('the method registry and one query over numeric ids', () => {
  it('holds ranx 25 methods and the hybrid, each under its own name', () => {
    expect(Object.keys(FUSION_METHODS)).toHaveLength(26);
    for (const [name, def] of Object.entries(FUSION_METHODS)) expect(def.name).toBe(name);
  });

  it('fuses corpus rows as numbers, never as strings', () => {
    const out = fuseQuery([{ ids: [3, 10], scores: [2, 1] }, { ids: [10, 9], scores: [5, 1] }], 'rrf');
    expect(out.map((d) => d.id)).toEqual([10, 3, 9]); // 1/61 + 1/62, 1/61, 1/62
    expect(out.every((d) => typeof d.id === 'number')).toBe(true);
    expect(out[0]!.score).toBeCloseTo(1 / 61 + 1 / 62, 12);
  });

  it('breaks equal scores by id in its own order (9 before 10)', () => {
    expect(fuseQuery([{ ids: [10], scores: [1] }, { ids: [9], scores: [1] }], CAME_FUSION_METHODS.sumrr).map((d) => d.id)).toEqual([9, 10]);
    expect(fuseQuery([{ ids: ['10'], scores: [1] }, { ids: ['9'], scores: [1] }], 'sum', { norm: 'none' }).map((d) => d.id)).toEqual(['10', '9']);
  });

  it('gives the same scores over numbers as over the same ids as strings', () => {
    const lists = [{ ids: [5, 1, 7], scores: [0.3, 0.9, 0.1] }, { ids: [7, 2], scores: [2, 1] }];
    const asText = lists.map((l) => ({ ids: l.ids.map(String), scores: l.scores }));
    for (const method of ['sum', 'mnz', 'rrf', 'bordafuse', 'condorcet', 'isr'] as const) {
      const n = new Map(fuseQuery(lists, method).map((d) => [String(d.id), d.score]));
      const t = new Map(fuseQuery(asText, method).map((d) => [d.id, d.score]));
      expect(n, method).toEqual(t);
    }
  });

  it('takes a method defined by the caller', () => {
    const firstRunOnly: FusionMethodDef = { name: 'first-run', norm: 'none', missing: 'exclude', scores: (q) => new Map(q.lists[0]!.ids.map((id, i) => [id, -i])) };
    expect(fuse([A, B], firstRunOnly).get('q')!.map((d) => d.id)).toEqual(['a', 'b', 'c']);
  });

  it('refuses malformed lists', () => {
    expect(code(() => fuseQuery([], 'sum'))).toBe('ERR_ARG');
    expect(code(() => fuseQuery([{ ids: [1, 2], scores: [1] }], 'sum'))).toBe('ERR_ARG');
    expect(code(() => fuseQuery([{ ids: [{}], scores: [1] }] as never, 'sum'))).toBe('ERR_ARG');
    expect(code(() => fuseQuery([{ ids: [1], scores: [Number.NaN] }], 'sum'))).toBe('ERR_NONFINITE');
    expect(code(() => fuseQuery([{ ids: [1], scores: [1] }], 'combsum' as never))).toBe('ERR_ARG');
  });
});

describe('normalizations', () => {
  const list = { ids: ['w', 'x', 'y', 'z'], scores: [3, 2, 2, 0] };
  const one = (norm: Parameters<typeof normalizeLists>[1]) => normalizeLists([list], norm)[0]!;
  it('min-max, min-max-inverted (re-sorted), max, sum, zmuv, rank, borda', () => {
    expect(one('min-max').scores).toEqual([1, 2 / 3, 2 / 3, 0]);
    expect(one('min-max-inverted')).toEqual({ ids: ['z', 'x', 'y', 'w'], scores: [1, 1 / 3, 1 / 3, 0] });
    expect(one('max').scores).toEqual([1, 2 / 3, 2 / 3, 0]);
    expect(one('sum').scores).toEqual([3 / 7, 2 / 7, 2 / 7, 0]);
    const std = Math.sqrt(4.75 / 4); // population std around the mean 1.75
    one('zmuv').scores.forEach((s, i) => expect(s).toBeCloseTo(([3, 2, 2, 0][i]! - 1.75) / std, 12));
    expect(one('rank').scores).toEqual([1, 0.75, 0.5, 0.25]);
    expect(normalizeLists([{ ids: ['p'], scores: [5] }], 'min-max')[0]!.scores).toEqual([0]); // constant list -> 0
    const [b1, b2] = normalizeLists([list, { ids: ['x'], scores: [1] }], 'borda');
    expect(b1!.scores).toEqual([1, 0.75, 0.5, 0.25]);
    expect(b2!.scores).toEqual([1]);
    // Fusing with borda normalization puts the missing candidates in at 0.5 - (n - 1) / (2 |C|).
    expectScores(scores('sum', { norm: 'borda' }), { a: 1 + 0.5 - 1 / 8, b: 0.75 + 1, c: 0.5 + 0.5 - 1 / 8, d: 0.75 + 0.5 - 2 / 8 });
    expect(code(() => fuse([A], 'sum', { norm: 'l2' as never }))).toBe('ERR_ARG');
  });
});

describe('parameter search', () => {
  it('weight simplex without dropping tuples to float error', () => {
    expect(weightGrid(2)).toHaveLength(11);
    const three = weightGrid(3);
    expect(three).toHaveLength(66); // C(12, 2)
    for (const t of three) expect(Math.abs(t.reduce((a, b) => a + b, 0) - 1)).toBeLessThan(1e-12);
  });

  it('optimizeFusion picks the best grid point (later on ties, as ranx) and fuse reproduces its value', () => {
    const best = optimizeFusion([A, B], qrels, 'wsum', { norm: 'min-max', metric: 'ndcg' });
    expect(best.tried).toHaveLength(11);
    expect(best.value).toBe(Math.max(...best.tried.map((t) => t.value)));
    const lastBest = [...best.tried].reverse().find((t) => t.value === best.value)!;
    expect(best.options.weights).toEqual(lastBest.options.weights);
    // min-max maps d (B's last) to 0, so d can only tie with a and c and lose on id: the best order is b, a, c, d,
    // nDCG = (1 + 1 / log2(5)) / (1 + 1 / log2(3)).
    expect(best.value).toBeCloseTo((1 + 1 / Math.log2(5)) / (1 + 1 / Math.log2(3)), 12);
    const rrf = optimizeFusion([A, B], qrels, 'rrf');
    expect(rrf.tried.map((t) => t.options.rrfK)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    const pf = optimizeFusion([A, B], qrels, 'probfuse');
    expect(pf.tried).toHaveLength(100);
  });

  it('rejects bad options', () => {
    expect(code(() => fuse([], 'sum'))).toBe('ERR_ARG');
    expect(code(() => fuse([A, B], 'wsum'))).toBe('ERR_ARG');
    expect(code(() => fuse([A, B], 'wsum', { weights: [1] }))).toBe('ERR_SHAPE');
    expect(code(() => fuse([A, B], 'rbc'))).toBe('ERR_ARG');
    expect(code(() => fuse([A, B], 'sum', { depth: 0 }))).toBe('ERR_RANGE');
    expect(code(() => fuse([A, B], 'nope' as never))).toBe('ERR_ARG');
    expect(fuse([A, B], 'sum', { depth: 2 }).get('q')!.map((d) => d.id)).toEqual(['b', 'a']); // b 1.5, a 1
  });
});
