// TREC-style evaluation (as trec_eval computes it): average precision over the judged queries, P@k.

/** qrels: query id -> relevant document ids (judgment > 0). */
export type Qrels = Map<string, Set<string>>;

/** Parses TREC qrels lines `qid 0 docid rel`. */
export function parseQrels(text: string): Qrels {
  const out: Qrels = new Map();
  for (const line of text.split('\n')) {
    const [qid, , doc, rel] = line.trim().split(/\s+/);
    if (!qid || !doc || rel === undefined) continue;
    if (!out.has(qid)) out.set(qid, new Set());
    if (Number(rel) > 0) out.get(qid)!.add(doc);
  }
  return out;
}

/** Average precision of one ranked list against its relevant set (0 when nothing is relevant). */
export function averagePrecision(ranked: readonly string[], relevant: ReadonlySet<string>): number {
  if (relevant.size === 0) return 0;
  let hits = 0;
  let sum = 0;
  ranked.forEach((d, i) => {
    if (relevant.has(d)) sum += ++hits / (i + 1);
  });
  return sum / relevant.size;
}

export function precisionAt(ranked: readonly string[], relevant: ReadonlySet<string>, k: number): number {
  let hits = 0;
  for (let i = 0; i < Math.min(k, ranked.length); i++) if (relevant.has(ranked[i] as string)) hits++;
  return hits / k;
}

/**
 * MAP and P@k over the queries that have judgments and a run (trec_eval's default, without -c). Ties in the
 * run should already be ordered; trec_eval orders equal scores by document id descending.
 */
export function evaluateTrec(run: Map<string, string[]>, qrels: Qrels, k = 30): { map: number; pAtK: number; queries: number } {
  let ap = 0;
  let p = 0;
  let n = 0;
  for (const [qid, relevant] of qrels) {
    const ranked = run.get(qid);
    if (!ranked || relevant.size === 0) continue;
    ap += averagePrecision(ranked, relevant);
    p += precisionAt(ranked, relevant, k);
    n++;
  }
  return { map: n ? ap / n : 0, pAtK: n ? p / n : 0, queries: n };
}
