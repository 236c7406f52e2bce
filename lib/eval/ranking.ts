// Ranked-list metrics (docs/methods/evaluation.md#ranked-list-metrics, ranx and trec_eval definitions), per query and averaged, with graded
// judgments and trec_eval's tie order.
import { QuorumError } from '../errors.js';
import { checkOptions, checkRun, mustBeArray, mustBeMap, mustBeObject, optionKeys } from '../validate.js';

export { type Qrels, type Run, type ScoredDoc, type TieOrder, rankDocs, rankedRun } from '../data/runs.js';
import type { Run, Qrels } from '../data/runs.js';
import { rankDocs, type TieOrder } from '../data/runs.js';

type Judged = ReadonlyMap<string, number>;

function relevantCount(rel: Judged, relLevel: number): number {
  let n = 0;
  for (const g of rel.values()) if (g >= relLevel) n++;
  return n;
}

function checkJudged(ranked: unknown, rel: unknown): void {
  mustBeArray(ranked, 'ranked ids');
  mustBeMap(rel, 'judgements');
}

const isRel = (rel: Judged, id: string, relLevel: number) => (rel.get(id) ?? 0) >= relLevel;

/** ranx's fix_k: k = 0, or k beyond the run, means the whole run. */
const cut = (ranked: readonly string[], k: number) => (k === 0 || k > ranked.length ? ranked.length : k);

/**
 * #relevant in the top k / #relevant (0 when nothing is relevant).
 *
 * @example
 * const rel = new Map([['d2', 1], ['d4', 2]]);
 * recall(['d1', 'd2', 'd3', 'd4'], rel, 2);   // 0.5
 */
export function recall(ranked: readonly string[], rel: Judged, k = 0, relLevel = 1): number {
  checkJudged(ranked, rel);
  const total = relevantCount(rel, relLevel);
  if (total === 0) return 0;
  let hits = 0;
  for (let i = 0; i < cut(ranked, k); i++) if (isRel(rel, ranked[i] as string, relLevel)) hits++;
  return hits / total;
}

/**
 * #relevant in the top k / k, even when the run is shorter than k (k = 0: the whole run).
 *
 * @example
 * precision(['d1', 'd2', 'd3', 'd4'], new Map([['d2', 1], ['d4', 2]]), 10);   // 0.2: 2 of 10, though the run has 4
 */
export function precision(ranked: readonly string[], rel: Judged, k = 0, relLevel = 1): number {
  checkJudged(ranked, rel);
  const kk = k === 0 ? ranked.length : k;
  if (kk === 0 || relevantCount(rel, relLevel) === 0) return 0;
  let hits = 0;
  for (let i = 0; i < Math.min(kk, ranked.length); i++) if (isRel(rel, ranked[i] as string, relLevel)) hits++;
  return hits / kk;
}

/**
 * 1 / (i + 1) for the first relevant position i < k, else 0.
 *
 * @example
 * reciprocalRank(['d1', 'd2', 'd3'], new Map([['d2', 1]]));      // 0.5
 * reciprocalRank(['d1', 'd2', 'd3'], new Map([['d2', 1]]), 1);   // 0: not in the top 1
 */
export function reciprocalRank(ranked: readonly string[], rel: Judged, k = 0, relLevel = 1): number {
  checkJudged(ranked, rel);
  for (let i = 0; i < cut(ranked, k); i++) if (isRel(rel, ranked[i] as string, relLevel)) return 1 / (i + 1);
  return 0;
}

/**
 * 1 if any relevant document is in the top k (success@k; DPR's top-k accuracy with qrels).
 *
 * @example
 * hitRate(['d1', 'd2'], new Map([['d2', 1]]), 1);   // 0
 * hitRate(['d1', 'd2'], new Map([['d2', 1]]), 2);   // 1
 */
export function hitRate(ranked: readonly string[], rel: Judged, k = 0, relLevel = 1): number {
  checkJudged(ranked, rel);
  return reciprocalRank(ranked, rel, k, relLevel) > 0 ? 1 : 0;
}

/**
 * nDCG@k: DCG = sum_{i<k} gain_i / log2(i + 2) over the run, IDCG the same over the judgments sorted by grade.
 * Gain is the grade (`'linear'`, Järvelin; trec_eval's ndcg_cut and ranx's ndcg) or 2^grade - 1
 * (`'exponential'`, Burges; ranx's ndcg_burges). Grades below relLevel give no gain.
 *
 * @example
 * ndcg(['d1', 'd2', 'd3', 'd4'], new Map([['d2', 1], ['d4', 2]]), 4);   // 0.567: (1/log2 3 + 2/log2 5) / (2 + 1/log2 3)
 */
export function ndcg(ranked: readonly string[], rel: Judged, k = 0, relLevel = 1, gain: 'linear' | 'exponential' = 'linear'): number {
  checkJudged(ranked, rel);
  const g = (grade: number) => (grade < relLevel ? 0 : gain === 'linear' ? grade : 2 ** grade - 1);
  let dcg = 0;
  for (let i = 0; i < cut(ranked, k); i++) dcg += g(rel.get(ranked[i] as string) ?? 0) / Math.log2(i + 2);
  const ideal = [...rel.values()]
    .map(g)
    .filter((x) => x > 0)
    .sort((a, b) => b - a);
  let idcg = 0;
  for (let i = 0; i < (k === 0 ? ideal.length : Math.min(k, ideal.length)); i++) idcg += (ideal[i] as number) / Math.log2(i + 2);
  return idcg === 0 ? 0 : dcg / idcg;
}

/**
 * Average precision over the top k (k = 0: the whole run), divided by the number of relevant documents.
 *
 * @example
 * averagePrecision(['d1', 'd2', 'd3', 'd4'], new Map([['d2', 1], ['d4', 1]]));   // 0.5: (1/2 + 2/4) / 2
 */
export function averagePrecision(ranked: readonly string[], rel: Judged, k = 0, relLevel = 1): number {
  checkJudged(ranked, rel);
  const total = relevantCount(rel, relLevel);
  if (total === 0) return 0;
  let hits = 0;
  let sum = 0;
  for (let i = 0; i < cut(ranked, k); i++) if (isRel(rel, ranked[i] as string, relLevel)) sum += ++hits / (i + 1);
  return sum / total;
}

/**
 * ranx's R-precision: precision at R = #relevant (no evidence sets; see kiltRPrecision for KILT's).
 *
 * @example
 * rPrecision(['d1', 'd2', 'd3', 'd4'], new Map([['d2', 1], ['d4', 1]]));   // 0.5: 1 relevant in the top R = 2
 */
export function rPrecision(ranked: readonly string[], rel: Judged, relLevel = 1): number {
  checkJudged(ranked, rel);
  const r = relevantCount(rel, relLevel);
  return r === 0 ? 0 : precision(ranked, rel, r, relLevel);
}

/** A metric by name: 'recall@k', 'precision@k', 'mrr@k', 'ndcg@k', 'ndcg_burges@k', 'map', 'map@k', 'r-precision', 'hit_rate@k' (or 'success@k'). */
export type MetricName = string;

/** A metric of one query: its ranked document ids and graded judgements in, a value out (see {@link metricFn}). */
export type MetricFn = (ranked: readonly string[], rel: Judged, relLevel: number) => number;

/**
 * The function that computes one metric for one query (the ranked ids, the query's judgements, the lowest
 * relevant grade). Without `@k` the whole list counts. ERR_ARG for an unknown name.
 *
 * @example
 * const mrr10 = metricFn('mrr@10');
 * mrr10(['d3', 'd1'], new Map([['d1', 1]]), 1);   // 0.5
 */
export function metricFn(name: MetricName): MetricFn {
  const m = /^([a-z_-]+)(?:@(\d+))?$/.exec(name);
  const k = m?.[2] === undefined ? 0 : Number(m[2]);
  switch (m?.[1]) {
    case 'recall':
      return (r, j, l) => recall(r, j, k, l);
    case 'precision':
      return (r, j, l) => precision(r, j, k, l);
    case 'mrr':
      return (r, j, l) => reciprocalRank(r, j, k, l);
    case 'ndcg':
      return (r, j, l) => ndcg(r, j, k, l, 'linear');
    case 'ndcg_burges':
      return (r, j, l) => ndcg(r, j, k, l, 'exponential');
    case 'map':
      return (r, j, l) => averagePrecision(r, j, k, l);
    case 'r-precision':
      if (k !== 0) break;
      return (r, j, l) => rPrecision(r, j, l);
    case 'hit_rate':
    case 'success':
      return (r, j, l) => hitRate(r, j, k, l);
  }
  throw new QuorumError(
    'ERR_ARG',
    `unknown metric '${name}': use recall@k, precision@k, mrr@k, ndcg@k, ndcg_burges@k, map, map@k, r-precision or hit_rate@k`,
  );
}

/** Options of {@link evaluate}. */
export interface EvaluateOptions {
  /** Lowest grade that counts as relevant (default 1). */
  relLevel?: number;
  /** Default 'trec_eval'. */
  tieOrder?: TieOrder;
  /**
   * Which queries the means cover: `'qrels'` (default, ranx and BEIR): every query of the qrels, a query without
   * relevant documents or without a run scoring 0; `'judged'` (trec_eval): queries with a run and at least one
   * relevant document.
   */
  queries?: 'qrels' | 'judged';
}

const evaluateKeys = optionKeys<EvaluateOptions>()(['relLevel', 'tieOrder', 'queries']);

/** What {@link evaluate} returns. */
export interface Evaluation {
  /** Mean of each metric over the evaluated queries. */
  mean: Record<string, number>;
  /** Each evaluated query's values. */
  perQuery: Map<string, Record<string, number>>;
}

/**
 * Evaluates a run against graded qrels.
 *
 * @example
 * const { mean, perQuery } = evaluate(run, qrels, ['ndcg@10', 'recall@100', 'mrr@10']);
 */
export function evaluate(run: Run, qrels: Qrels, metrics: readonly MetricName[], options: EvaluateOptions = {}): Evaluation {
  checkRun(run, 'run', false);
  mustBeMap(qrels, 'qrels');
  mustBeArray(metrics, 'metrics');
  checkOptions(options, evaluateKeys, 'evaluate options');
  const relLevel = options.relLevel ?? 1;
  const tieOrder = options.tieOrder ?? 'trec_eval';
  const fns = metrics.map((m) => [m, metricFn(m)] as const);
  const perQuery = new Map<string, Record<string, number>>();
  const sums: Record<string, number> = Object.fromEntries(metrics.map((m) => [m, 0]));
  for (const [qid, rel] of qrels) {
    const docs = run.get(qid);
    if (options.queries === 'judged' && (!docs || relevantCount(rel, relLevel) === 0)) continue;
    const ranked = docs ? rankDocs(docs, tieOrder) : [];
    const values: Record<string, number> = {};
    for (const [m, f] of fns) {
      values[m] = f(ranked, rel, relLevel);
      sums[m] = (sums[m] as number) + values[m];
    }
    perQuery.set(qid, values);
  }
  const n = perQuery.size;
  const mean = Object.fromEntries(metrics.map((m) => [m, n ? (sums[m] as number) / n : 0]));
  return { mean, perQuery };
}

/**
 * Per group (a task, say), the number of queries and the mean of each metric over the group's queries in
 * `perQuery`. `groupOf` names each query's group; every group it names is reported, one without evaluated queries
 * with zeros.
 *
 * @example
 * const { perQuery } = evaluate(run, qrels, ['mrr@10']);
 * const byTask = groupMeans(perQuery, new Map(queries.map((q) => [q.id, q.task])), ['mrr@10']);
 */
export function groupMeans(
  perQuery: Evaluation['perQuery'],
  groupOf: ReadonlyMap<string, string>,
  metrics: readonly MetricName[],
): Record<string, { queries: number; mean: Record<string, number> }> {
  mustBeMap(perQuery, 'perQuery');
  mustBeMap(groupOf, 'groupOf');
  mustBeArray(metrics, 'metrics');
  for (const [q, g] of groupOf)
    if (typeof g !== 'string') throw new QuorumError('ERR_ARG', `groupOf: the group of query ${String(q)} must be a string`);
  const out: Record<string, { queries: number; mean: Record<string, number> }> = {};
  for (const group of [...new Set(groupOf.values())].sort())
    out[group] = { queries: 0, mean: Object.fromEntries(metrics.map((m) => [m, 0])) };
  for (const [qid, values] of perQuery) {
    const g = groupOf.get(qid);
    if (g === undefined) continue;
    const entry = out[g]!;
    mustBeObject(values, `perQuery ${qid}`);
    entry.queries++;
    for (const m of metrics) {
      const v = values[m];
      if (typeof v !== 'number') throw new QuorumError('ERR_ARG', `perQuery ${qid} has no number for ${m}`);
      entry.mean[m] = (entry.mean[m] as number) + v;
    }
  }
  for (const entry of Object.values(out))
    if (entry.queries) for (const m of metrics) entry.mean[m] = (entry.mean[m] as number) / entry.queries;
  return out;
}
