// One entry point for every fusion method (docs/methods/fusion.md): a method's name (ranx's 25 and the hybrid,
// lib/fusion/methods/) or a FusionMethodDef (MUF's and CAME's, which live with their methods). Every method works per
// query over the runs' candidate lists, with an explicit normalization and an explicit missing-score policy; ids
// are strings (runs) or numbers (corpus rows, fuseQuery), never converted.
import { QuorumError } from '../errors.js';
import { type Run, type ScoredDoc } from '../eval/ranking.js';
import { checkRun, count, finite, parse, positiveInt, z } from '../validate.js';
import { type FuseOptions, type FusionMethodDef, type MissingPolicy } from './method.js';
import { FUSION_METHODS, type FusionMethod } from './methods/index.js';
import { type FusionId, type Normalization, type RankedList, bordaMissing, compareIds, normalizeLists, sortList } from './normalize.js';

export { type FuseOptions, type FusionMethodDef, type MissingPolicy, type TrainedFusion } from './method.js';
export { type FusionMethod } from './methods/index.js';

const NORMALIZATIONS = ['none', 'min-max', 'min-max-inverted', 'max', 'sum', 'zmuv', 'rank', 'borda'] as const;
const MISSING = ['zero', 'min', 'kth', 'exclude', '-inf', '+inf'] as const;
const nonNegative = finite.nonnegative();

const fuseOptionsSchema = z
  .object({
    norm: z.enum(NORMALIZATIONS).optional(),
    missing: z.enum(MISSING).optional(),
    k: positiveInt.optional(),
    depth: positiveInt.optional(),
    weights: z.array(finite).optional(),
    rrfK: nonNegative.optional(),
    gamma: finite.optional(),
    // rbc's persistence: (1 - phi) phi^r must stay a decreasing positive weight
    phi: finite.gt(0).lt(1).optional(),
    sigma: finite.positive().optional(),
    window: count.optional(),
    segments: positiveInt.optional(),
    trained: z.object({ method: z.string(), tables: z.array(z.array(z.number())), maps: z.array(z.number()).optional() }).optional(),
    alpha: finite.nonnegative().optional(), // a weight: a negative one ranks BM25's matches last
    normalization: z.boolean().optional(),
    weightOnDense: z.boolean().optional(),
  })
  .strict();

/** The method a name or a definition stands for (ERR_ARG for an unknown name). */
export function fusionMethod<O extends object = object>(method: FusionMethod | FusionMethodDef<O>): FusionMethodDef<O> {
  if (method !== null && typeof method === 'object' && typeof (method as FusionMethodDef).scores === 'function')
    return method as FusionMethodDef<O>;
  if (typeof method !== 'string') throw new QuorumError('ERR_ARG', 'a fusion method is a method name or a FusionMethodDef');
  if (Object.hasOwn(FUSION_METHODS, method)) return FUSION_METHODS[method] as FusionMethodDef<O>;
  throw new QuorumError('ERR_ARG', `unknown fusion method '${method}'`);
}

/**
 * The normalization a method applies when the call names none: ranx's min-max, but raw scores for the hybrid (and
 * for MUF's and CAME's raw-score fusions).
 *
 * @example
 * defaultNormalization('sum');   // 'min-max'
 */
export function defaultNormalization(method: FusionMethod | FusionMethodDef): Normalization {
  return fusionMethod(method).norm;
}

/**
 * The missing-document policy a method applies when the call names none: ranx's fills (0 for sum and wsum, ignored
 * for max and min, excluded for the count-based ones); MUF: the list minimum; CAME: the K-th score.
 *
 * @example
 * defaultMissing('sum');   // 'zero'
 */
export function defaultMissing(method: FusionMethod | FusionMethodDef): MissingPolicy {
  return fusionMethod(method).missing;
}

const schemas = new WeakMap<FusionMethodDef, z.ZodTypeAny>();
function optionsSchema(def: FusionMethodDef): z.ZodTypeAny {
  if (!def.options) return fuseOptionsSchema;
  let s = schemas.get(def);
  if (!s) schemas.set(def, (s = fuseOptionsSchema.extend(def.options).strict()));
  return s;
}

/** One query's lists sorted and normalized (borda puts the union's missing candidates into every list). */
function prepared<Id extends FusionId>(raw: ReadonlyArray<RankedList<Id>>, norm: Normalization): Array<RankedList<Id>> {
  const lists = raw.map((l) => sortList(l.ids, l.scores));
  const normalized = normalizeLists(lists, norm);
  if (norm !== 'borda') return normalized;
  // ranx's borda normalization puts every candidate of the union into every run: missing ones at
  // 0.5 - (n - 1) / (2 |C|), after the ranked ones.
  const union = [...new Set(lists.flatMap((l) => l.ids))].sort(compareIds);
  return normalized.map((l) => {
    const have = new Set(l.ids);
    const extra = union.filter((d) => !have.has(d));
    const fill = bordaMissing(l.ids.length, union.length);
    return { ids: [...l.ids, ...extra], scores: [...l.scores, ...extra.map(() => fill)] };
  });
}

/** One query's fusion, its options already checked. */
function fuseChecked<Id extends FusionId, O extends object>(
  qid: string,
  raw: ReadonlyArray<RankedList<Id>>,
  def: FusionMethodDef<O>,
  options: FuseOptions & O,
): Array<{ id: Id; score: number }> {
  const lists = prepared(raw, options.norm ?? def.norm);
  const scores = def.scores({
    qid,
    lists,
    pos: lists.map((l) => new Map(l.ids.map((id, i) => [id, i]))),
    union: [...new Set(lists.flatMap((l) => l.ids))].sort(compareIds),
    options,
    missing: options.missing ?? def.missing,
  });
  const list = [...scores].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score || compareIds(a.id, b.id));
  return options.depth === undefined ? list : list.slice(0, options.depth);
}

/**
 * Fuses one query's lists, one per run (any order: each is sorted first), with string or number ids: the fused
 * list sorted by score descending, ties by id ascending, cut at `depth`. `qid` keys per-query options (MUF's).
 *
 * @example
 * fuseQuery([{ ids: [3, 7], scores: [2.5, 1] }, { ids: [7, 9], scores: [0.9, 0.4] }], 'rrf');   // numeric corpus rows
 */
export function fuseQuery<Id extends FusionId, O extends object = object>(
  lists: ReadonlyArray<RankedList<Id>>,
  method: FusionMethod | FusionMethodDef<O>,
  options: FuseOptions & O = {} as FuseOptions & O,
  qid = '',
): Array<{ id: Id; score: number }> {
  if (!Array.isArray(lists) || lists.length === 0) throw new QuorumError('ERR_ARG', 'fuseQuery needs an array of at least one list');
  const def = fusionMethod(method);
  parse(optionsSchema(def as FusionMethodDef), options, 'fuse options');
  lists.forEach((l, i) => {
    if (!l || typeof l !== 'object' || !Array.isArray(l.ids) || !Array.isArray(l.scores) || l.ids.length !== l.scores.length)
      throw new QuorumError('ERR_ARG', `lists[${i}] must be { ids, scores } of equal length`);
    if (!l.ids.every((id: unknown) => typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))))
      throw new QuorumError('ERR_ARG', `lists[${i}].ids must be strings or finite numbers`);
    if (!l.scores.every((x: unknown) => typeof x === 'number' && Number.isFinite(x)))
      throw new QuorumError('ERR_NONFINITE', `lists[${i}].scores must be finite numbers`);
  });
  return fuseChecked(qid, lists, def, options);
}

/**
 * Fuses runs per query. The result holds every query of any run, each list sorted by fused score descending,
 * ties by id ascending (pyserini's merge order), cut at `depth`.
 *
 * @example
 * fuse([bm25Run, denseRun], 'rrf');                                  // RRF, k = 60
 * fuse([bm25Run, denseRun], 'wsum', { norm: 'zmuv', weights: [0.3, 0.7] });
 * fuse(expertRuns, mufFusion, { confidence: perQueryConfidence });   // DPR-MUF's (quorum-retrieval/methods/muf)
 */
export function fuse<O extends object = object>(
  runs: readonly Run[],
  method: FusionMethod | FusionMethodDef<O>,
  options: FuseOptions & O = {} as FuseOptions & O,
): Map<string, ScoredDoc[]> {
  if (!Array.isArray(runs) || runs.length === 0) throw new QuorumError('ERR_ARG', 'fuse needs an array of at least one run');
  const def = fusionMethod(method);
  parse(optionsSchema(def as FusionMethodDef), options, 'fuse options');
  runs.forEach((r, i) => checkRun(r, `runs[${i}]`));
  const queries = [...new Set(runs.flatMap((r) => [...r.keys()]))];
  const fused = new Map<string, ScoredDoc[]>();
  for (const qid of queries) {
    const lists = runs.map((r) => {
      const docs: readonly ScoredDoc[] = r.get(qid) ?? [];
      return { ids: docs.map((d) => d.id), scores: docs.map((d) => d.score) };
    });
    fused.set(qid, fuseChecked(qid, lists, def, options));
  }
  return fused;
}

/** Per query: the 0/1 relevance of each position of each run's sorted list (queries of the qrels). */
export function hitLists(runs: readonly Run[], qrels: ReadonlyMap<string, ReadonlyMap<string, number>>, relLevel = 1): number[][][] {
  return runs.map((r) =>
    [...qrels].map(([qid, rel]) => {
      const docs = r.get(qid) ?? [];
      const l = sortList(
        docs.map((d) => d.id),
        docs.map((d) => d.score),
      );
      return l.ids.map((id) => ((rel.get(id) ?? 0) >= relLevel ? 1 : 0));
    }),
  );
}
