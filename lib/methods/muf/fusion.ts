// DPR-MUF's fusions (docs/methods/fusion.md#muf-fusion): each expert's raw scores weighted by its confidence on the
// query (normalized to sum to 1), a passage missing from an expert's list taking that list's minimum; and the sparse
// form, which keeps the most confident expert's list alone. Used through `fuse(runs, mufFusion, { confidence })`.
import { QuorumError } from '../../errors.js';
import { type FuseOptions, type FusionMethodDef, type FusionQuery, scoreBased, sumOf, weighted } from '../../fusion/method.js';
import { type FusionId } from '../../fusion/normalize.js';
import { finite, z } from '../../validate.js';

/** MUF's own option of `fuse`. */
export interface MufFuseOptions {
  /** One confidence per run, for every query or per query id. */
  confidence?: readonly number[] | ReadonlyMap<string, readonly number[]>;
}

const confidenceSchema = {
  confidence: z.union([z.array(finite.nonnegative()), z.map(z.string(), z.array(finite.nonnegative()))]).optional(),
};

function confidenceFor(q: FusionQuery<FusionId, MufFuseOptions>): number[] {
  const n = q.lists.length;
  const o: FuseOptions & MufFuseOptions = q.options;
  // MUF without its confidences would silently weigh every expert 1: that is 'sum', not MUF.
  if (o.confidence === undefined) throw new QuorumError('ERR_ARG', "muf needs 'confidence' (one per run, or a Map of them per query)");
  const c = o.confidence instanceof Map ? o.confidence.get(q.qid) : (o.confidence as readonly number[]);
  if (c === undefined) throw new QuorumError('ERR_ARG', `muf: no confidences for query ${q.qid}`);
  if (c.length !== n) throw new QuorumError('ERR_SHAPE', `muf: ${c.length} confidences for ${n} runs (query ${q.qid})`);
  return [...c];
}

/** DPR-MUF's dense fusion: confidence-weighted raw scores, a missing passage at its list's minimum. */
export const mufFusion: FusionMethodDef<MufFuseOptions> = {
  name: 'muf',
  norm: 'none',
  missing: 'min',
  options: confidenceSchema,
  scores: (q) => {
    const conf = confidenceFor(q);
    const total = sumOf(conf);
    const w = conf.map((c) => (total > 0 ? c / total : 1 / q.lists.length));
    return scoreBased(q, (v, _present, runs) => weighted(w, v, runs));
  },
};

/** DPR-MUF's sparse fusion: the most confident expert's list alone. */
export const mufSparseFusion: FusionMethodDef<MufFuseOptions> = {
  name: 'muf-sparse',
  norm: 'none',
  missing: 'exclude',
  options: confidenceSchema,
  scores: <Id extends FusionId>(q: FusionQuery<Id, MufFuseOptions>) => {
    const conf = confidenceFor(q);
    const l = q.lists[conf.indexOf(Math.max(...conf))]!;
    return new Map<Id, number>(l.ids.map((d, i) => [d, l.scores[i] as number]));
  },
};
