// DPR's top-k answer accuracy (docs/methods/evaluation.md#top-k-answer-accuracy): does a passage contain an answer, by
// DPR's tokenizer rules (string
// mode) or by regular expression (regex mode, CuratedTREC); then, per question, the first passage with a hit.
// Also DPR's validation "average rank" (docs/methods/evaluation.md#average-rank).
import { QuorumError } from '../errors.js';
import { mustBeArray, mustBeObject, mustBeString } from '../validate.js';

// DPR's SimpleTokenizer: a run of letters, numbers or combining marks, or any single character that is neither a
// separator nor a control character.
const TOKEN = /([\p{L}\p{N}\p{M}]+)|([^\p{Z}\p{C}])/gu;

/**
 * DPR's tokens of `text`: NFD-normalized, lowercased (Unicode default lowercasing, not case folding).
 *
 * @example
 * dprTokens("Don't panic!");   // ['don', "'", 't', 'panic', '!']
 */
export function dprTokens(text: string): string[] {
  mustBeString(text, 'text');
  return Array.from(text.normalize('NFD').matchAll(TOKEN), (m) => m[0].toLowerCase());
}

/** A compiled answer matcher: call it on passage texts. */
export type AnswerMatcher = (passageText: string) => boolean;

/**
 * A matcher for a question's answers.
 * - `'string'`: an answer matches when its DPR tokens occur contiguously in the passage's. An answer with no
 *   tokens (empty, whitespace) is ignored: in DPR it would match every passage.
 * - `'regex'`: each answer is a pattern searched in the NFD passage text, case-insensitively and multi-line. DPR
 *   uses Python's `regex` module; a pattern JavaScript cannot compile (even without the `u` flag) counts as no
 *   match, as an uncompilable pattern does in DPR.
 * Only the passage text should be given, never its title (DPR searches `doc[0]`, the text).
 *
 * @example
 * const matches = answerMatcher(['Eiffel Tower']);
 * matches('The eiffel tower is in Paris.');   // true
 * matches('A tower named Eiffel');            // false
 */
export function answerMatcher(answers: readonly string[], mode: 'string' | 'regex' = 'string'): AnswerMatcher {
  mustBeArray(answers, 'answers');
  answers.forEach((a, i) => mustBeString(a, `answers[${i}]`));
  if (mode === 'regex') {
    const patterns: RegExp[] = [];
    for (const a of answers) {
      for (const flags of ['imu', 'im']) {
        try {
          patterns.push(new RegExp(a.normalize('NFD'), flags));
          break;
        } catch {
          // try the next flags; a pattern neither compiles is dropped
        }
      }
    }
    return (text) => {
      const t = text.normalize('NFD');
      return patterns.some((p) => p.test(t));
    };
  }
  if (mode !== 'string') throw new QuorumError('ERR_ARG', `answer mode must be 'string' or 'regex', got ${String(mode)}`);
  const wanted = answers.map(dprTokens).filter((t) => t.length > 0);
  return (text) => {
    const tokens = dprTokens(text);
    return wanted.some((w) => {
      outer: for (let i = 0; i + w.length <= tokens.length; i++) {
        for (let j = 0; j < w.length; j++) if (tokens[i + j] !== w[j]) continue outer;
        return true;
      }
      return false;
    });
  };
}

/**
 * DPR's top-k accuracy: the fraction of questions whose first passage with a hit is at rank < k. `hits[q][i]` says
 * whether question q's i-th retrieved passage contains an answer; questions without any hit count in the
 * denominator.
 *
 * @example
 * topKAccuracy([[false, true], [false, false]], [1, 2]); // { 1: 0, 2: 0.5 }
 */
export function topKAccuracy(hits: ReadonlyArray<readonly boolean[]>, ks: readonly number[]): Record<number, number> {
  mustBeArray(hits, 'hits');
  hits.forEach((h, i) => mustBeArray(h, `hits[${i}]`));
  mustBeArray(ks, 'ks');
  const out: Record<number, number> = {};
  if (hits.length === 0) {
    for (const k of ks) out[k] = 0;
    return out;
  }
  const first = hits.map((h) => h.indexOf(true));
  for (const k of ks) out[k] = first.filter((f) => f >= 0 && f < k).length / hits.length;
  return out;
}

/**
 * The 0-based rank of `gold` among `scores` (DPR's validation average rank): `'pessimistic'` counts every other
 * score >= the gold's (ties rank the gold last), `'optimistic'` only those > it. DPR's torch.sort leaves ties
 * arbitrary; name the rule you report.
 *
 * @example
 * goldRank([0.2, 0.9, 0.5, 0.9], 1);                 // 1: the other 0.9 ranks first
 * goldRank([0.2, 0.9, 0.5, 0.9], 1, 'optimistic');   // 0
 */
export function goldRank(scores: ArrayLike<number>, gold: number, ties: 'pessimistic' | 'optimistic' = 'pessimistic'): number {
  mustBeArray(scores, 'scores', true);
  if (!Number.isInteger(gold) || gold < 0 || gold >= scores.length)
    throw new QuorumError('ERR_RANGE', `gold index ${gold} is outside [0, ${scores.length})`);
  const g = scores[gold] as number;
  let rank = 0;
  for (let i = 0; i < scores.length; i++) {
    if (i === gold) continue;
    const s = scores[i] as number;
    if (s > g || (ties === 'pessimistic' && s === g)) rank++;
  }
  return rank;
}

/**
 * Mean {@link goldRank} over questions (lower is better).
 *
 * @example
 * averageRank([{ scores: [0.2, 0.9], gold: 1 }, { scores: [0.2, 0.9, 0.5], gold: 2 }]);   // 0.5: ranks 0 and 1
 */
export function averageRank(
  rows: ReadonlyArray<{ scores: ArrayLike<number>; gold: number }>,
  ties: 'pessimistic' | 'optimistic' = 'pessimistic',
): number {
  mustBeArray(rows, 'rows');
  rows.forEach((r, i) => mustBeObject(r, `rows[${i}]`));
  if (rows.length === 0) return 0;
  return rows.reduce((s, r) => s + goldRank(r.scores, r.gold, ties), 0) / rows.length;
}
