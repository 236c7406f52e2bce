// TREC-style evaluation (as trec_eval computes it): average precision over the judged queries, P@k.
import { averagePrecision, precision } from './ranking.js';
import { mustBeMap, mustBeString } from '../validate.js';

/** qrels: query id -> relevant document ids (judgment > 0). */
export type Qrels = Map<string, Set<string>>;

/** Parses TREC qrels lines `qid 0 docid rel`. */
export function parseQrels(text: string): Qrels {
  mustBeString(text, 'qrels text');
  const out: Qrels = new Map();
  for (const line of text.split('\n')) {
    const [qid, , doc, rel] = line.trim().split(/\s+/);
    if (!qid || !doc || rel === undefined) continue;
    if (!out.has(qid)) out.set(qid, new Set());
    if (Number(rel) > 0) out.get(qid)!.add(doc);
  }
  return out;
}

/**
 * MAP and P@k over the queries that have judgments and a run (trec_eval's default, without -c). Ties in the
 * run should already be ordered; trec_eval orders equal scores by document id descending.
 */
export function evaluateTrec(run: Map<string, string[]>, qrels: Qrels, k = 30): { map: number; pAtK: number; queries: number } {
  mustBeMap(run, 'run');
  mustBeMap(qrels, 'qrels');
  let ap = 0;
  let p = 0;
  let n = 0;
  for (const [qid, relevant] of qrels) {
    const ranked = run.get(qid);
    if (!ranked || relevant.size === 0) continue;
    const judged = new Map([...relevant].map((d) => [d, 1]));
    ap += averagePrecision(ranked, judged);
    p += precision(ranked, judged, k);
    n++;
  }
  return { map: n ? ap / n : 0, pAtK: n ? p / n : 0, queries: n };
}
