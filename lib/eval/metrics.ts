import type { Qrels } from '../data/beir.js';

/** Fraction of relevant documents found in the first k of `ranked`. */
export function recallAt(ranked: readonly string[], relevant: ReadonlyMap<string, number>, k: number): number {
  let total = 0;
  let found = 0;
  for (const rel of relevant.values()) if (rel > 0) total++;
  if (total === 0) return 0;
  for (const id of ranked.slice(0, k)) if ((relevant.get(id) ?? 0) > 0) found++;
  return found / total;
}

/** Reciprocal rank (1-based) of the first relevant document within the first k, else 0. */
export function mrrAt(ranked: readonly string[], relevant: ReadonlyMap<string, number>, k: number): number {
  const n = Math.min(k, ranked.length);
  for (let i = 0; i < n; i++) if ((relevant.get(ranked[i] as string) ?? 0) > 0) return 1 / (i + 1);
  return 0;
}

/** Mean Recall@k for each k and MRR@10 over queries that have judgements. */
export function evaluateRun(run: ReadonlyMap<string, readonly string[]>, qrels: Qrels, ks: readonly number[]): Record<string, number> {
  const sums: Record<string, number> = {};
  let n = 0;
  for (const [qid, rel] of qrels) {
    const ranked = run.get(qid) ?? [];
    n++;
    for (const k of ks) sums[`Recall@${k}`] = (sums[`Recall@${k}`] ?? 0) + recallAt(ranked, rel, k);
    sums['MRR@10'] = (sums['MRR@10'] ?? 0) + mrrAt(ranked, rel, 10);
  }
  for (const key of Object.keys(sums)) sums[key] = (sums[key] as number) / Math.max(n, 1);
  return sums;
}
