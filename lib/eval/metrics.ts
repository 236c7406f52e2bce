// The demo's summary metrics over runs given as ranked id lists, on the shared definitions of ranking.ts.
import type { Qrels } from '../data/beir.js';
import { recall, reciprocalRank } from './ranking.js';

// Any positive grade counts as relevant: MIN_VALUE is the smallest positive double, so `grade >= MIN_VALUE` is
// exactly `grade > 0`.
const ANY_POSITIVE = Number.MIN_VALUE;

/** Mean Recall@k for each k and MRR@10 over every query of the qrels (a query without a run scores 0). */
export function evaluateRun(run: ReadonlyMap<string, readonly string[]>, qrels: Qrels, ks: readonly number[]): Record<string, number> {
  const sums: Record<string, number> = {};
  let n = 0;
  for (const [qid, rel] of qrels) {
    const ranked = run.get(qid) ?? [];
    n++;
    for (const k of ks) sums[`Recall@${k}`] = (sums[`Recall@${k}`] ?? 0) + (k > 0 ? recall(ranked, rel, k, ANY_POSITIVE) : 0);
    sums['MRR@10'] = (sums['MRR@10'] ?? 0) + reciprocalRank(ranked, rel, 10, ANY_POSITIVE);
  }
  for (const key of Object.keys(sums)) sums[key] = (sums[key] as number) / Math.max(n, 1);
  return sums;
}
