// SQuAD v1.1's official answer metrics (evaluate-v1.1.py): answers are compared after lower-casing, removing ASCII
// punctuation, removing the articles a / an / the and collapsing whitespace; exact match and token F1 each take the
// best over the gold answers. Scores here are fractions in [0, 1] (the official script prints them x 100).
import { QuorumError } from '../../errors.js';
import { mustBeArray, mustBeString } from '../../validate.js';

// Python's string.punctuation.
const PUNCTUATION = new Set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~');

/**
 * SQuAD's `normalize_answer`: lower case, no punctuation, no articles, single spaces.
 *
 * @example
 * normalizeAnswer('The  Denver Broncos!') // 'denver broncos'
 */
export function normalizeAnswer(s: string): string {
  mustBeString(s, 'answer');
  const lower = s.toLowerCase();
  let noPunct = '';
  for (const ch of lower) if (!PUNCTUATION.has(ch)) noPunct += ch;
  // Python 3's \b is Unicode-aware (JS's is ASCII-only): "éthe" keeps its "the".
  const noArticles = noPunct.replace(/(?<![\p{L}\p{N}_])(a|an|the)(?![\p{L}\p{N}_])/gu, ' ');
  return noArticles.split(/\s+/).filter(Boolean).join(' ');
}

/**
 * 1 when the normalized prediction equals the normalized gold answer, else 0.
 *
 * @example
 * exactMatch('The Eiffel Tower', 'eiffel tower');   // 1: case, articles and punctuation ignored
 */
export function exactMatch(prediction: string, gold: string): number {
  return normalizeAnswer(prediction) === normalizeAnswer(gold) ? 1 : 0;
}

/**
 * Token F1 of the normalized answers (a bag of words; 0 when they share no token).
 *
 * @example
 * f1Score('the tall Eiffel Tower', 'Eiffel Tower');   // 0.8: precision 2/3, recall 1
 */
export function f1Score(prediction: string, gold: string): number {
  const p = normalizeAnswer(prediction).split(' ').filter(Boolean);
  const g = normalizeAnswer(gold).split(' ').filter(Boolean);
  const counts = new Map<string, number>();
  for (const t of g) counts.set(t, (counts.get(t) ?? 0) + 1);
  let same = 0;
  for (const t of p) {
    const c = counts.get(t) ?? 0;
    if (c > 0) {
      same++;
      counts.set(t, c - 1);
    }
  }
  if (same === 0) return 0;
  const precision = same / p.length;
  const recall = same / g.length;
  return (2 * precision * recall) / (precision + recall);
}

/**
 * A prediction's best exact match and F1 over its gold answers.
 *
 * @example
 * squadScores('the Eiffel Tower', ['Tower', 'Eiffel Tower']);   // { em: 1, f1: 1 }: the best gold answer counts
 */
export function squadScores(prediction: string, golds: readonly string[]): { em: number; f1: number } {
  mustBeString(prediction, 'prediction');
  mustBeArray(golds, 'gold answers');
  if (golds.length === 0) throw new QuorumError('ERR_ARG', 'a question needs at least one gold answer');
  let em = 0;
  let f1 = 0;
  for (const g of golds) {
    mustBeString(g, 'gold answer');
    em = Math.max(em, exactMatch(prediction, g));
    f1 = Math.max(f1, f1Score(prediction, g));
  }
  return { em, f1 };
}

/**
 * Mean exact match and F1 over questions.
 *
 * @example
 * squadEvaluate(['Denver Broncos'], [['Denver Broncos', 'The Broncos']]) // { em: 1, f1: 1, questions: 1 }
 */
export function squadEvaluate(
  predictions: readonly string[],
  golds: readonly (readonly string[])[],
): { em: number; f1: number; questions: number } {
  mustBeArray(predictions, 'predictions');
  mustBeArray(golds, 'gold answers');
  if (predictions.length !== golds.length)
    throw new QuorumError('ERR_SHAPE', `${predictions.length} predictions for ${golds.length} questions`);
  let em = 0;
  let f1 = 0;
  predictions.forEach((p, i) => {
    const s = squadScores(p, golds[i]!);
    em += s.em;
    f1 += s.f1;
  });
  const n = Math.max(predictions.length, 1);
  return { em: em / n, f1: f1 / n, questions: predictions.length };
}
