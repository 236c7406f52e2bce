// Borda count over the union C of the lists: a document at rank r of a list gets |C| - r points from it, a list that
// lacks it gives (|C| - n + 1) / 2 (n its length); weighted per run in w_bordafuse
// (docs/methods/fusion.md#rank-based-methods).
import { type FusionId } from '../normalize.js';
import { type FusionMethodDef, type FusionQuery, rankSum, weightsFor } from '../method.js';

function borda<Id extends FusionId>(q: FusionQuery<Id>, w: readonly number[]): Map<Id, number> {
  const c = q.union.length;
  return rankSum(
    q,
    (i, r) => (w[i] as number) * (c - r),
    (i) => ((w[i] as number) * (c - q.lists[i]!.ids.length + 1)) / 2,
  );
}

/** BordaFuse. */
export const bordafuse: FusionMethodDef = {
  name: 'bordafuse',
  norm: 'min-max',
  missing: 'exclude',
  scores: (q) =>
    borda(
      q,
      q.lists.map(() => 1),
    ),
};

/** Weighted BordaFuse: each run's points times its weight. */
export const w_bordafuse: FusionMethodDef = {
  name: 'w_bordafuse',
  norm: 'min-max',
  missing: 'exclude',
  weighted: true,
  scores: (q) => borda(q, weightsFor(q, 'w_bordafuse')),
};
