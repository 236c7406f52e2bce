// CombANZ: the mean of the scores of the lists that hold the document (docs/methods/fusion.md#score-based-methods).
import { scoreBased, sumOf, type FusionMethodDef } from '../method.js';

/** CombANZ: the mean of the scores of the lists that hold the document. */
export const anz: FusionMethodDef = {
  name: 'anz',
  norm: 'min-max',
  missing: 'exclude',
  scores: (q) => scoreBased(q, (v) => sumOf(v) / v.length),
};
