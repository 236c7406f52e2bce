// Ranking metrics, answer accuracy, KILT R-precision and the paired tests, against values worked out by hand
// from the formulas of docs/methods/evaluation.md (the arithmetic is in the comments).
import { describe, expect, it } from 'vitest';

import { answerMatcher, averageRank, dprTokens, evaluate, goldRank, groupMeans, kiltRPrecision, pairedTTest, provenanceId, randomizationTest, rankDocs, rankedRun, studentTwoTailed, topKAccuracy } from '../lib/entries/eval.js';
import { parseQrels } from '../lib/entries/data.js';
import { type Qrels, type Run } from '../lib/index.js';
import { code } from './helpers.js';

// q1: d2 and d3 tie at 2.0. trec_eval order (score desc, id desc): d1, d3, d2, d4, d5.
// Relevant (grade >= 1): d2 (2), d4 (1), d9 (1, never retrieved); d5 is judged 0.
const run: Run = new Map([
  [
    'q1',
    [
      { id: 'd4', score: 1 },
      { id: 'd2', score: 2 },
      { id: 'd1', score: 3 },
      { id: 'd5', score: 0.5 },
      { id: 'd3', score: 2 },
    ],
  ],
  ['q2', [{ id: 'd1', score: 1 }]],
]);
const qrels: Qrels = new Map([
  ['q1', new Map([['d2', 2], ['d4', 1], ['d9', 1], ['d5', 0]])],
  ['q2', new Map([['d1', 0]])], // judged, nothing relevant
  ['q3', new Map([['d7', 1]])], // relevant, but no run
]);
const log2_3 = Math.log2(3);

describe('ranking metrics', () => {
  it('orders ties as trec_eval (id descending), pyserini (ascending) or as given', () => {
    const docs = run.get('q1')!;
    expect(rankDocs(docs)).toEqual(['d1', 'd3', 'd2', 'd4', 'd5']);
    expect(rankDocs(docs, 'id-asc')).toEqual(['d1', 'd2', 'd3', 'd4', 'd5']);
    expect(rankDocs(docs, 'as-given')).toEqual(['d4', 'd2', 'd1', 'd5', 'd3']);
  });

  it('matches the hand-worked values on q1', () => {
    const q1 = evaluate(run, qrels, [
      'recall@3',
      'precision@3',
      'precision@10',
      'mrr@10',
      'mrr@2',
      'hit_rate@2',
      'success@3',
      'ndcg@3',
      'ndcg_burges@3',
      'map',
      'map@3',
      'r-precision',
    ]).perQuery.get('q1')!;
    expect(q1['recall@3']).toBeCloseTo(1 / 3, 12); // d2 of {d2, d4, d9}
    expect(q1['precision@3']).toBeCloseTo(1 / 3, 12);
    expect(q1['precision@10']).toBeCloseTo(2 / 10, 12); // the run has 5 < 10: still divided by k
    expect(q1['mrr@10']).toBeCloseTo(1 / 3, 12); // first relevant (d2) at position 2
    expect(q1['mrr@2']).toBe(0);
    expect(q1['hit_rate@2']).toBe(0);
    expect(q1['success@3']).toBe(1);
    // DCG@3 = 2 / log2(4) = 1; IDCG@3 = 2 / 1 + 1 / log2(3) + 1 / 2.
    expect(q1['ndcg@3']).toBeCloseTo(1 / (2 + 1 / log2_3 + 0.5), 12);
    // Burges gains 2^g - 1: DCG = 3 / 2; IDCG = 3 + 1 / log2(3) + 1 / 2.
    expect(q1['ndcg_burges@3']).toBeCloseTo(1.5 / (3 + 1 / log2_3 + 0.5), 12);
    // AP = (1/3 at d2 + 2/4 at d4) / 3 relevant; AP@3 stops before d4.
    expect(q1.map).toBeCloseTo((1 / 3 + 2 / 4) / 3, 12);
    expect(q1['map@3']).toBeCloseTo(1 / 3 / 3, 12);
    expect(q1['r-precision']).toBeCloseTo(1 / 3, 12); // precision at R = 3
  });

  it("averages over the qrels' queries (ranx, BEIR) or only judged ones with a run (trec_eval)", () => {
    const all = evaluate(run, qrels, ['mrr@10', 'recall@100']);
    expect([...all.perQuery.keys()]).toEqual(['q1', 'q2', 'q3']);
    expect(all.perQuery.get('q2')).toEqual({ 'mrr@10': 0, 'recall@100': 0 });
    expect(all.mean['mrr@10']).toBeCloseTo(1 / 3 / 3, 12);
    expect(all.mean['recall@100']).toBeCloseTo(2 / 3 / 3, 12);
    const judged = evaluate(run, qrels, ['mrr@10'], { queries: 'judged' });
    expect([...judged.perQuery.keys()]).toEqual(['q1']);
    expect(judged.mean['mrr@10']).toBeCloseTo(1 / 3, 12);
    // pyserini's tie order puts d2 first among the tied pair.
    expect(evaluate(run, qrels, ['mrr@10'], { tieOrder: 'id-asc' }).perQuery.get('q1')!['mrr@10']).toBeCloseTo(1 / 2, 12);
    // A higher relevance level: only d2 (grade 2) counts.
    expect(evaluate(run, qrels, ['recall@3'], { relLevel: 2 }).perQuery.get('q1')!['recall@3']).toBe(1);
  });

  it('groupMeans: per group, the query count and each mean; a group without evaluated queries is zeros', () => {
    const perQuery = new Map([
      ['q1', { 'mrr@10': 1, 'recall@20': 1 }],
      ['q2', { 'mrr@10': 0.5, 'recall@20': 0 }],
      ['q3', { 'mrr@10': 0.25, 'recall@20': 1 }],
      ['q9', { 'mrr@10': 1, 'recall@20': 1 }], // no group: left out
    ]);
    const groupOf = new Map([['q1', 'a'], ['q2', 'a'], ['q3', 'b'], ['q4', 'c']]);
    expect(groupMeans(perQuery, groupOf, ['mrr@10', 'recall@20'])).toEqual({
      a: { queries: 2, mean: { 'mrr@10': 0.75, 'recall@20': 0.5 } },
      b: { queries: 1, mean: { 'mrr@10': 0.25, 'recall@20': 1 } },
      c: { queries: 0, mean: { 'mrr@10': 0, 'recall@20': 0 } },
    });
    expect(() => groupMeans(perQuery, new Map([['q1', 3 as unknown as string]]), ['mrr@10'])).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(() => groupMeans(perQuery, groupOf, ['ndcg@10'])).toThrow(expect.objectContaining({ code: 'ERR_ARG', message: expect.stringContaining('ndcg@10') }));
  });

  it('ranked id lists (rankedRun) keep their order under every tie order', () => {
    const qrels: Qrels = new Map([['q', new Map([['b', 1]])]]);
    const run = rankedRun(new Map([['q', ['c', 'b', 'a']]]));
    for (const tieOrder of ['trec_eval', 'id-asc', 'as-given'] as const) {
      expect(rankDocs(run.get('q')!, tieOrder)).toEqual(['c', 'b', 'a']);
      // b at rank 2: MRR 1/2, found within 2 but not 1.
      expect(evaluate(run, qrels, ['mrr@10', 'recall@1', 'recall@2'], { tieOrder }).mean).toEqual({ 'mrr@10': 0.5, 'recall@1': 0, 'recall@2': 1 });
    }
  });

  it('reads qrels in the TREC and the BEIR layout alike, and names the bad line', () => {
    const graded = new Map([['q1', new Map([['d1', 2], ['d2', 0]])], ['q2', new Map([['d9', 1]])]]);
    expect(parseQrels('q1 0 d1 2\nq1 0 d2 0\n\nq2 0 d9 1\n')).toEqual(graded);
    expect(parseQrels('query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td9\t1\n')).toEqual(graded);
    expect(() => parseQrels('q1 0 d1 2\nq1 d2\n', 'x.qrels')).toThrow(expect.objectContaining({ code: 'ERR_FORMAT', message: expect.stringContaining('x.qrels:2') }));
    expect(() => parseQrels('q1\td1\thigh\n')).toThrow(expect.objectContaining({ code: 'ERR_FORMAT', message: expect.stringContaining('not an integer') }));
    // A line cut after its last tab is no grade 0.
    expect(() => parseQrels('q1\td1\t1\nq1\td2\t\n', 'cut.tsv')).toThrow(expect.objectContaining({ code: 'ERR_FORMAT', message: expect.stringContaining('cut.tsv:2') }));
  });

  it('rejects unknown metrics', () => {
    expect(code(() => evaluate(run, qrels, ['f1@3']))).toBe('ERR_ARG');
    expect(code(() => evaluate(run, qrels, ['r-precision@3']))).toBe('ERR_ARG');
  });
});

describe('answer accuracy (DPR)', () => {
  it("tokenizes as DPR's SimpleTokenizer: word runs with combining marks, single punctuation, NFD, lowercase", () => {
    expect(dprTokens('Hello, World! café')).toEqual(['hello', ',', 'world', '!', 'cafe\u0301']);
    expect(dprTokens('  ')).toEqual([]);
  });

  it('string mode matches contiguous token runs and ignores empty answers', () => {
    const m = answerMatcher(['the World', '', '  ']);
    expect(m('Hello, the world!')).toBe(true);
    expect(m('the new world')).toBe(false);
    expect(m('theworld')).toBe(false);
    expect(answerMatcher(['Café'])('un CAFE\u0301 noir')).toBe(true); // NFD on both sides
    expect(answerMatcher([''])('anything')).toBe(false);
  });

  it('regex mode (CuratedTREC patterns) searches the text case-insensitively; a bad pattern matches nothing', () => {
    expect(answerMatcher(['Long Island|New\\s?York|Roosevelt Field'], 'regex')('flew from roosevelt field in 1927')).toBe(true);
    expect(answerMatcher(['(5,?778|6,?[05]00)\\s*K'], 'regex')('about 5,778 K at the surface')).toBe(true);
    expect(answerMatcher(['Sept?(ember)?'], 'regex')('in FEBRUARY')).toBe(false);
    expect(answerMatcher(['(unclosed'], 'regex')('(unclosed')).toBe(false);
  });

  it('top-k accuracy counts the first hit; questions without one stay in the denominator', () => {
    const hits = [
      [false, true, true],
      [true, false, false],
      [false, false, false],
      [false, false, true],
    ];
    expect(topKAccuracy(hits, [1, 2, 3, 20])).toEqual({ 1: 1 / 4, 2: 2 / 4, 3: 3 / 4, 20: 3 / 4 });
    expect(topKAccuracy([], [5])).toEqual({ 5: 0 });
  });

  it('average rank: 0-based, pessimistic or optimistic on ties', () => {
    expect(goldRank([0.5, 0.9, 0.5, 0.1], 0)).toBe(2);
    expect(goldRank([0.5, 0.9, 0.5, 0.1], 0, 'optimistic')).toBe(1);
    expect(averageRank([{ scores: [3, 1, 2], gold: 0 }, { scores: [3, 1, 2], gold: 1 }])).toBe(1); // ranks 0 and 2
    expect(code(() => goldRank([1, 2], 2))).toBe('ERR_RANGE');
  });
});

describe('KILT R-precision', () => {
  it('de-duplicates the guess before the cut and takes the best evidence set', () => {
    // guess -> [p1, p7, p3]; set {p3, p7}: R = 2, guess[:2] holds p7 -> 1/2; set {p9}: 0.
    expect(kiltRPrecision(['p1', 'p1', 'p7', 'p3'], [['p3', 'p7'], ['p9']])).toBe(0.5);
    expect(kiltRPrecision(['p3', 'p7'], [['p7', 'p7', 'p3']])).toBe(1); // gold sets are de-duplicated too
    expect(kiltRPrecision(['p1'], [[]])).toBe(0);
    expect(kiltRPrecision(['p1'], [])).toBe(0);
    expect(provenanceId({ wikipedia_id: ' 12 ', start_paragraph_id: 3 }, ['wikipedia_id', 'start_paragraph_id'])).toBe('12+3');
    expect(provenanceId({ wikipedia_id: 12 })).toBe('12');
  });
});

describe('paired significance tests', () => {
  it("Student's t p-values equal the closed forms for 1 and 3 degrees of freedom", () => {
    for (const t of [0, 0.3, 1, 2.5, 4.898979485566356, 12]) {
      expect(studentTwoTailed(t, 1)).toBeCloseTo(1 - (2 / Math.PI) * Math.atan(t), 10);
      const x = t / Math.sqrt(3);
      expect(studentTwoTailed(t, 3)).toBeCloseTo(1 - (2 / Math.PI) * (x / (1 + x * x) + Math.atan(x)), 10);
    }
  });

  it('t-test: d = [0.1, 0.05, 0.15, 0.1] has mean 0.1, sd 0.0408, t = 4.899 on 3 df', () => {
    const r = pairedTTest([0.1, 0.2, 0.3, 0.4], [0.2, 0.25, 0.45, 0.5]);
    expect(r.meanDifference).toBeCloseTo(0.1, 12);
    expect(r.t).toBeCloseTo(0.1 / (Math.sqrt(0.005 / 3) / 2), 9);
    const x = r.t / Math.sqrt(3);
    expect(r.p).toBeCloseTo(1 - (2 / Math.PI) * (x / (1 + x * x) + Math.atan(x)), 10);
    expect(pairedTTest([0.3, 0.2], [0.3, 0.2])).toMatchObject({ p: 1, t: 0 });
    expect(code(() => pairedTTest([1], [2]))).toBe('ERR_RANGE');
    expect(code(() => pairedTTest([1, 2], [2]))).toBe('ERR_SHAPE');
  });

  it('randomization test: 10 same-sign differences give p near 2 / 2^10; identical runs give 1', () => {
    const a = Array.from({ length: 10 }, () => 0);
    const b = Array.from({ length: 10 }, () => 1);
    const r = randomizationTest(a, b, { trials: 20_000, seed: 7 });
    expect(r.p).toBeGreaterThan(0.001);
    expect(r.p).toBeLessThan(0.0035);
    expect(randomizationTest(a, a).p).toBe(1);
    expect(randomizationTest(a, b, { seed: 3 }).p).toBe(randomizationTest(a, b, { seed: 3 }).p);
  });
});
