// KILT's R-precision (docs/methods/evaluation.md#kilt-r-precision): page or passage level, the best over the gold evidence sets.
import { mustBeArray, mustBeObject } from '../validate.js';

/**
 * KILT's provenance id: the given keys' values joined by '+' (default: the Wikipedia page id, page level).
 *
 * @example
 * provenanceId({ wikipedia_id: '12345', start_paragraph_id: 3 });                                          // '12345'
 * provenanceId({ wikipedia_id: '12345', start_paragraph_id: 3 }, ['wikipedia_id', 'start_paragraph_id']);   // '12345+3'
 */
export function provenanceId(prov: Readonly<Record<string, unknown>>, keys: readonly string[] = ['wikipedia_id']): string {
  mustBeObject(prov, 'provenance');
  mustBeArray(keys, 'keys');
  return keys.map((k) => String(prov[k] ?? '').trim()).join('+');
}

function dedupe(ids: readonly string[]): string[] {
  return [...new Set(ids)];
}

/**
 * R-precision of one query: for each gold evidence set G (de-duplicated, R = |G|), |guess[:R] ∩ G| / R; the
 * query scores the best set. The guess ids are de-duplicated first, keeping first occurrences (so passages of
 * one page collapse at page level before the cut). An empty set scores 0; no sets at all scores 0 (KILT's code
 * would raise).
 *
 * @example
 * kiltRPrecision(['p1', 'p1', 'p7', 'p3'], [['p3', 'p7'], ['p9']]); // guess [p1, p7, p3]: set 1 -> 1/2, set 2 -> 0
 */
export function kiltRPrecision(guess: readonly string[], goldSets: ReadonlyArray<readonly string[]>): number {
  mustBeArray(guess, 'guess');
  mustBeArray(goldSets, 'gold sets');
  goldSets.forEach((g, i) => mustBeArray(g, `gold set ${i}`));
  const ranked = dedupe(guess);
  let best = 0;
  for (const set of goldSets) {
    const g = new Set(dedupe(set));
    if (g.size === 0) continue;
    let hit = 0;
    for (const id of ranked.slice(0, g.size)) if (g.has(id)) hit++;
    best = Math.max(best, hit / g.size);
  }
  return best;
}
