// Weighted CombSUM: the sum of each run's weight times its score (docs/methods/fusion.md#score-based-methods).
import { scoreBased, type FusionMethodDef, weighted, weightsFor } from '../method.js';

/** Weighted CombSUM: the sum of each run's weight times its score. */
export const wsum: FusionMethodDef = {
  name: 'wsum',
  norm: 'min-max',
  missing: 'zero',
  weighted: true,
  scores: (q) => {
    const w = weightsFor(q, 'wsum');
    return scoreBased(q, (v, _present, runs) => weighted(w, v, runs));
  },
};
