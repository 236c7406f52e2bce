/**
 * `quorum-retrieval/eval`: ranked-list metrics (ranx / trec_eval), DPR's answer accuracy, KILT's R-precision,
 * significance tests and rank-biased overlap.
 *
 * @packageDocumentation
 */
export {
  averagePrecision,
  evaluate,
  groupMeans,
  hitRate,
  metricFn,
  ndcg,
  precision,
  rPrecision,
  recall,
  reciprocalRank,
  type EvaluateOptions,
  type Evaluation,
  type MetricFn,
  type MetricName,
} from '../eval/ranking.js';
export { rankDocs, rankedRun, type TieOrder } from '../data/runs.js';
export { answerMatcher, averageRank, dprTokens, goldRank, topKAccuracy, type AnswerMatcher } from '../eval/answers.js';
export { kiltRPrecision, provenanceId } from '../eval/kilt.js';
export { incompleteBeta, pairedTTest, randomizationTest, studentTwoTailed, type PairedTest } from '../eval/significance.js';
export { rbo } from '../eval/rbo.js';
