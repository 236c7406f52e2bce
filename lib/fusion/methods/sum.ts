// CombSUM: the sum of the scores (docs/methods/fusion.md#score-based-methods).
import { scoreBased, sumOf, type FusionMethodDef } from '../method.js';

/** CombSUM: the sum of the scores. */
export const sum: FusionMethodDef = {
  name: 'sum',
  norm: 'min-max',
  missing: 'zero',
  scores: (q) => scoreBased(q, (v) => sumOf(v)),
};
