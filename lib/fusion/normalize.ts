// Per-run, per-query score normalizations before fusion (docs/methods/fusion.md#normalizations, ranx's definitions).
import { QuorumError } from '../errors.js';
import { mustBeArray, mustBeObject } from '../validate.js';

/** A document id in a fused list: a string (runs, TREC files) or a number (corpus rows). */
export type FusionId = string | number;

/** Ids ascending: numbers (and bigints) numerically, strings by code unit (strcmp's byte order for ASCII). */
export function compareIds<Id extends FusionId | bigint>(a: Id, b: Id): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A candidate list of one run for one query, sorted best first. */
export interface RankedList<Id extends FusionId = string> {
  /** Document ids, best first. */
  readonly ids: readonly Id[];
  /** Their scores, same order. */
  readonly scores: readonly number[];
}

/** Per-list score normalizations before fusion, as ranx defines them (`'none'` keeps raw scores). */
export type Normalization = 'none' | 'min-max' | 'min-max-inverted' | 'max' | 'sum' | 'zmuv' | 'rank' | 'borda';

const EPS = 1e-9;

/**
 * The list sorted best first: score descending, ties by id ascending (a defined order; ranx leaves ties open).
 *
 * @example
 * sortList(['a', 'b', 'c'], [0.5, 0.9, 0.5]);   // { ids: ['b', 'a', 'c'], scores: [0.9, 0.5, 0.5] }
 */
export function sortList<Id extends FusionId = string>(ids: readonly Id[], scores: readonly number[]): RankedList<Id> {
  mustBeArray(ids, 'ids');
  mustBeArray(scores, 'scores', true);
  const order = ids
    .map((_, i) => i)
    .sort((a, b) => (scores[b] as number) - (scores[a] as number) || ((ids[a] as Id) < (ids[b] as Id) ? -1 : 1));
  return { ids: order.map((i) => ids[i] as Id), scores: order.map((i) => scores[i] as number) };
}

function minOf(s: readonly number[]): number {
  return s.length ? Math.min(...s) : 0;
}
function maxOf(s: readonly number[]): number {
  return s.length ? Math.max(...s) : 0;
}

/**
 * Normalizes each list of one query. `borda` is joint over the lists (it needs their union); the others are per
 * list. min-max-inverted re-sorts the list, since it turns the order around.
 *
 * - min-max: (s - min) / max(max - min, 1e-9), so a constant list maps to 0
 * - min-max-inverted: (max - s) / max(max - min, 1e-9)
 * - max: s / max(max, 1e-9)
 * - sum: (s - min) / max(sum(s) - n min, 1e-9)
 * - zmuv: (s - mean) / max(population std, 1e-9)
 * - rank: 1 - i / n for 0-based position i
 * - borda: with C the union over the lists, 1 - i / |C| in a list (missing documents get 0.5 - (n - 1) / (2 |C|),
 *   applied by the fusion through {@link bordaMissing})
 *
 * @example
 * normalizeLists([{ ids: ['a', 'b', 'c'], scores: [4, 2, 0] }], 'min-max');   // [{ ids: ['a', 'b', 'c'], scores: [1, 0.5, 0] }]
 */
export function normalizeLists<Id extends FusionId = string>(
  lists: ReadonlyArray<RankedList<Id>>,
  norm: Normalization,
): Array<RankedList<Id>> {
  mustBeArray(lists, 'lists');
  lists.forEach((l, i) => mustBeObject(l, `lists[${i}]`));
  switch (norm) {
    case 'none':
      return [...lists];
    case 'borda': {
      const c = new Set(lists.flatMap((l) => l.ids)).size;
      return lists.map((l) => ({ ids: l.ids, scores: l.ids.map((_, i) => 1 - i / c) }));
    }
    default:
      return lists.map((l) => normalizeOne(l, norm));
  }
}

function normalizeOne<Id extends FusionId>(l: RankedList<Id>, norm: Exclude<Normalization, 'none' | 'borda'>): RankedList<Id> {
  const s = l.scores;
  const n = s.length;
  const lo = minOf(s);
  const hi = maxOf(s);
  switch (norm) {
    case 'min-max':
      return { ids: l.ids, scores: s.map((x) => (x - lo) / Math.max(hi - lo, EPS)) };
    case 'min-max-inverted':
      return sortList(
        l.ids,
        s.map((x) => (hi - x) / Math.max(hi - lo, EPS)),
      );
    case 'max':
      return { ids: l.ids, scores: s.map((x) => x / Math.max(hi, EPS)) };
    case 'sum': {
      const total = s.reduce((a, b) => a + b, 0);
      return { ids: l.ids, scores: s.map((x) => (x - lo) / Math.max(total - n * lo, EPS)) };
    }
    case 'zmuv': {
      const mean = n ? s.reduce((a, b) => a + b, 0) / n : 0;
      const std = n ? Math.sqrt(s.reduce((a, b) => a + (b - mean) ** 2, 0) / n) : 0;
      return { ids: l.ids, scores: s.map((x) => (x - mean) / Math.max(std, EPS)) };
    }
    case 'rank':
      return { ids: l.ids, scores: s.map((_, i) => 1 - i / n) };
  }
  throw new QuorumError(
    'ERR_ARG',
    `unknown normalization '${String(norm)}': use none, min-max, min-max-inverted, max, sum, zmuv, rank or borda`,
  );
}

/** Borda's score for a document missing from a list of length n, with |C| candidates in the union. */
export function bordaMissing(n: number, c: number): number {
  return 0.5 - (n - 1) / (2 * c);
}
