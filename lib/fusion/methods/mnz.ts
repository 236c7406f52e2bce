// CombMNZ: the sum of the scores times how many lists hold the document (docs/methods/fusion.md#score-based-methods).
import { scoreBased, sumOf, type FusionMethodDef } from '../method.js';

/** CombMNZ: the sum of the scores times how many lists hold the document. */
export const mnz: FusionMethodDef = {
  name: 'mnz',
  norm: 'min-max',
  missing: 'exclude',
  scores: (q) => scoreBased(q, (v, present) => sumOf(v) * present),
};
