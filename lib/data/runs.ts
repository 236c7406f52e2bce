// Runs and judgments, the currency of evaluation, fusion and the TREC / BEIR file formats: per query, scored
// candidates (a run) or graded documents (qrels), and the tie orders under which a run is ranked.
import { checkHits, mustBeMap } from '../validate.js';

/** A scored candidate of one query. */
export interface ScoredDoc {
  /** The candidate's document id. */
  id: string;
  /** Its score, higher is better. */
  score: number;
}

/** Per query id: its candidates, in any order (ranking sorts them; see {@link TieOrder}). */
export type Run = ReadonlyMap<string, readonly ScoredDoc[]>;

/**
 * Graded judgments, the one qrels type of the package (BEIR's qrels/<split>.tsv, TREC qrels): query id -> document
 * id -> grade (relevant when grade >= relLevel).
 */
export type Qrels = ReadonlyMap<string, ReadonlyMap<string, number>>;

/**
 * A run given as ranked id lists (best first) as a {@link Run}: each list's scores descend strictly, so every tie
 * order keeps the given order.
 *
 * @example
 * const { mean } = evaluate(rankedRun(new Map([['q1', ['d3', 'd1']]])), qrels, ['recall@20', 'mrr@10']);
 */
export function rankedRun(ranked: ReadonlyMap<string, readonly string[]>): Run {
  mustBeMap(ranked, 'ranked run');
  return new Map([...ranked].map(([qid, ids]) => [qid, ids.map((id, i) => ({ id, score: ids.length - i }))]));
}

/**
 * How equal scores are ordered before evaluating:
 * - `'trec_eval'`: score descending, then document id descending (trec_eval and pytrec_eval, hence BEIR);
 * - `'id-asc'`: score descending, then document id ascending (pyserini's fusion);
 * - `'as-given'`: the run's own order, scores ignored.
 */
export type TieOrder = 'trec_eval' | 'id-asc' | 'as-given';

/**
 * Document ids of one query's candidates in rank order.
 *
 * @example
 * rankDocs([{ id: 'a', score: 1 }, { id: 'b', score: 2 }, { id: 'c', score: 1 }]);            // ['b', 'c', 'a']
 * (trec_eval: ties by id descending)
 * rankDocs([{ id: 'a', score: 1 }, { id: 'b', score: 2 }, { id: 'c', score: 1 }], 'id-asc');  // ['b', 'a', 'c']
 */
export function rankDocs(docs: readonly ScoredDoc[], tieOrder: TieOrder = 'trec_eval'): string[] {
  checkHits(docs, 'docs', 'string', false);
  if (tieOrder === 'as-given') return docs.map((d) => d.id);
  const byId = tieOrder === 'trec_eval' ? -1 : 1;
  // Code-unit comparison: strcmp's byte order for ASCII ids.
  const cmpId = (a: string, b: string) => (a < b ? -byId : a > b ? byId : 0);
  return [...docs].sort((a, b) => b.score - a.score || cmpId(a.id, b.id)).map((d) => d.id);
}
