// Mixed: the weighted sum of the scores times the square root of how many lists hold the document
// (docs/methods/fusion.md#score-based-methods).
import { scoreBased, type FusionMethodDef, weighted, weightsFor } from '../method.js';

/** Mixed: the weighted sum of the scores times the square root of how many lists hold the document. */
export const mixed: FusionMethodDef = {
  name: 'mixed',
  norm: 'min-max',
  missing: 'exclude',
  weighted: true,
  scores: (q) => {
    const w = weightsFor(q, 'mixed');
    return scoreBased(q, (v, present, runs) => weighted(w, v, runs) * Math.sqrt(present));
  },
};
