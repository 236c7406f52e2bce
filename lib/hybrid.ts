// Dense + sparse (BM25) hybrid as Ma et al. / pyserini's HybridSearcher (docs/methods/fusion.md#bm25-hybrid).
import { QuorumError } from './errors.js';
import { compareIds } from './fusion/normalize.js';
import { gridSearch } from './grid-search.js';
import { allFinite, checkHits, checkOptions, finite, mustBeArray, mustBeObject, optionKeys, parse, positiveInt, z } from './validate.js';

const hybridOptionsSchema = z
  .object({
    alpha: finite.nonnegative().optional(), // a weight: a negative one ranks BM25's matches last
    normalization: z.boolean().optional(),
    weightOnDense: z.boolean().optional(),
    k: positiveInt.optional(),
  })
  .strict();

/** One entry of a ranked list: an id and its score, higher is better. */
export type RankedHit<Id> = { id: Id; score: number };

/** How {@link hybridFuse} combines a sparse and a dense list of one query (pyserini's fusion). */
export interface HybridOptions {
  /** Weight of the weighted side (default 0.1, pyserini's default). */
  alpha?: number;
  /** Centred min-max normalisation of each list to [-0.5, 0.5] first (Ma et al.'s normalized variant). */
  normalization?: boolean;
  /** Put alpha on the dense side (`ss + alpha * sd`) instead of the sparse side (`alpha * ss + sd`, default). */
  weightOnDense?: boolean;
  /** Keep the best k (default: the whole union). */
  k?: number;
}

function range<Id>(list: ReadonlyArray<RankedHit<Id>>): [number, number] {
  if (list.length === 0) return [0, 1];
  let lo = Infinity;
  let hi = -Infinity;
  for (const h of list) {
    lo = Math.min(lo, h.score);
    hi = Math.max(hi, h.score);
  }
  return [lo, hi];
}

/**
 * One query's dense and sparse lists merged for {@link hybridFuse} with any alpha: the union of their ids (dense
 * first, then the sparse side's new ones) and each side's score for every id, a missing one at its list's minimum,
 * centred-min-max normalised when asked. A grid over alpha prepares each query once (`quorum eval`'s tuning).
 */
export function hybridPrepare<Id>(
  dense: ReadonlyArray<RankedHit<Id>>,
  sparse: ReadonlyArray<RankedHit<Id>>,
  normalization: boolean,
): { ids: Id[]; dense: Float64Array; sparse: Float64Array } {
  const [minD, maxD] = range(dense);
  const [minS, maxS] = range(sparse);
  const d = new Map(dense.map((h) => [h.id, h.score]));
  const s = new Map(sparse.map((h) => [h.id, h.score]));
  const ids = [...new Set([...d.keys(), ...s.keys()])];
  const norm = (x: number, lo: number, hi: number) => (!normalization ? x : hi > lo ? (x - (lo + hi) / 2) / (hi - lo) : 0);
  return {
    ids,
    dense: Float64Array.from(ids, (id) => norm(d.get(id) ?? minD, minD, maxD)),
    sparse: Float64Array.from(ids, (id) => norm(s.get(id) ?? minS, minS, maxS)),
  };
}

/**
 * Fuses a dense and a sparse ranked list: over the union of both, a document missing from a list takes that
 * list's minimum score; optionally each list is centred-min-max normalised (a list whose scores are all equal
 * maps to 0); then `alpha * sparse + dense` (or `sparse + alpha * dense`). Sorted by score descending, ties by id
 * ascending.
 *
 * @example
 * hybridFuse(denseHits, bm25Hits, { alpha: 1.3 }) // DPR-multi's tuned alpha on NQ
 */
export function hybridFuse<Id extends string | number | bigint>(
  dense: ReadonlyArray<RankedHit<Id>>,
  sparse: ReadonlyArray<RankedHit<Id>>,
  options: HybridOptions = {},
): Array<RankedHit<Id>> {
  parse(hybridOptionsSchema, options, 'hybridFuse options');
  checkHits(dense, 'dense');
  checkHits(sparse, 'sparse');
  const alpha = options.alpha ?? 0.1;
  const p = hybridPrepare(dense, sparse, options.normalization === true);
  const out: Array<RankedHit<Id>> = p.ids.map((id, i) => ({
    id,
    score: options.weightOnDense ? p.sparse[i]! + alpha * p.dense[i]! : alpha * p.sparse[i]! + p.dense[i]!,
  }));
  out.sort((a, b) => b.score - a.score || compareIds(a.id, b.id));
  return options.k === undefined ? out : out.slice(0, options.k);
}

/** ranx's grid for the hybrid's alpha: 0, 0.1, ..., 2 (searchAlpha's default and optimizeFusion's). */
export const HYBRID_ALPHA_GRID: readonly number[] = Object.freeze(Array.from({ length: 21 }, (_, i) => i / 10));

/**
 * A wider grid for `quorum eval`'s per-task alpha: ranx's stops at 2, where lexical-overlap questions still want
 * more BM25 weight; 0..10 by 0.1, then coarser steps up to 100 (the dense side only breaks BM25's ties there).
 */
export const WIDE_ALPHA_GRID: readonly number[] = Object.freeze([
  ...Array.from({ length: 101 }, (_, i) => i / 10),
  12,
  15,
  20,
  30,
  50,
  100,
]);

/** What {@link searchAlpha} returns. */
export interface AlphaSearch {
  /** The grid value with the best mean metric (the first on ties). */
  alpha: number;
  /** Its mean metric over the dev questions. */
  value: number;
  /** Every grid value with its mean metric, in grid order. */
  tried: Array<{ alpha: number; value: number }>;
}

const searchAlphaKeys = optionKeys<NonNullable<Parameters<typeof searchAlpha>[1]>>()([
  'normalization',
  'weightOnDense',
  'k',
  'grid',
  'metric',
]);

/**
 * Picks alpha on a dev split: the grid value with the best mean metric (the first on ties). The default metric
 * is Recall@20.
 *
 * @example
 * const { alpha } = searchAlpha(devQuestions.map((q) => ({ dense: denseHits(q), sparse: bm25Hits(q), relevant: gold(q) })), {
 *   grid: [0, 0.5, 1, 2, 4],
 * });
 */
export function searchAlpha<Id extends string | number | bigint>(
  dev: ReadonlyArray<{ dense: ReadonlyArray<RankedHit<Id>>; sparse: ReadonlyArray<RankedHit<Id>>; relevant: ReadonlySet<Id> }>,
  options: Omit<HybridOptions, 'alpha'> & {
    grid?: readonly number[];
    metric?: (ranked: readonly Id[], relevant: ReadonlySet<Id>) => number;
  } = {},
): AlphaSearch {
  mustBeArray(dev, 'dev');
  dev.forEach((q, i) => mustBeObject(q, `dev[${i}]`));
  checkOptions(options, searchAlphaKeys, 'searchAlpha options');
  const { grid: given, metric: metricOption, ...fuseOptions } = options;
  const grid = parse(z.array(finite).nonempty().optional(), given, 'searchAlpha grid') ?? HYBRID_ALPHA_GRID;
  if (metricOption !== undefined && typeof metricOption !== 'function')
    throw new QuorumError('ERR_ARG', 'searchAlpha metric must be a function');
  const metric =
    metricOption ?? ((ranked, relevant) => (relevant.size ? ranked.slice(0, 20).filter((x) => relevant.has(x)).length / relevant.size : 0));
  const meanAt = (alpha: number) => {
    let total = 0;
    for (const q of dev)
      total += metric(
        hybridFuse(q.dense, q.sparse, { ...fuseOptions, alpha }).map((h) => h.id),
        q.relevant,
      );
    return dev.length ? total / dev.length : 0;
  };
  const { best, tried } = gridSearch(grid, meanAt, { goal: 'max', ties: 'first' });
  return { alpha: best.point, value: best.value, tried: tried.map((t) => ({ alpha: t.point, value: t.value })) };
}

/** What {@link gainOverBaseline} returns: the paired gain and the one-standard-error decision. */
export interface GainOverBaseline {
  /** Mean of fused - baseline over the queries. */
  gain: number;
  /** Standard error of that mean (Infinity with fewer than 2 queries). */
  se: number;
  /** The one-standard-error rule: keep the fused run only when its gain is positive and at least one SE. */
  keep: boolean;
}

/**
 * The one-standard-error rule (Breiman et al.'s, for choosing between models on held-out data) applied to a hybrid
 * and its sparse side: per-query metric values of both on the same dev queries (same order) give the mean paired
 * gain and its standard error; the hybrid is kept only when the gain is at least one standard error. Measure the
 * fused values out of sample (`quorum eval` fuses each half of dev with the weight tuned on the other half): on the
 * questions that tuned the weight, the gain is optimistic.
 *
 * @example
 * gainOverBaseline([1, 0.5, 1, 1], [0.5, 0.5, 0.5, 1]) // { gain: 0.25, se: 0.144, keep: true }
 */
export function gainOverBaseline(fused: ArrayLike<number>, baseline: ArrayLike<number>): GainOverBaseline {
  for (const [v, what] of [
    [fused, 'fused'],
    [baseline, 'baseline'],
  ] as const)
    if (!Array.isArray(v) && !(v instanceof Float32Array || v instanceof Float64Array))
      throw new QuorumError('ERR_ARG', `${what} must be an array of numbers or a Float32Array / Float64Array`);
  if (!Array.from(fused).every((x) => typeof x === 'number') || !Array.from(baseline).every((x) => typeof x === 'number'))
    throw new QuorumError('ERR_ARG', 'per-query values must be numbers');
  if (fused.length !== baseline.length)
    throw new QuorumError('ERR_SHAPE', `per-query values differ in length: ${fused.length} and ${baseline.length}`);
  const d = Array.from(fused, (x, i) => x - baseline[i]!);
  if (!allFinite(d)) throw new QuorumError('ERR_NONFINITE', 'per-query values must be finite numbers');
  const n = d.length;
  const gain = n ? d.reduce((a, b) => a + b, 0) / n : 0;
  const se = n < 2 ? Infinity : Math.sqrt(d.reduce((a, b) => a + (b - gain) ** 2, 0) / (n - 1) / n);
  return { gain, se, keep: gain > 0 && gain >= se };
}
