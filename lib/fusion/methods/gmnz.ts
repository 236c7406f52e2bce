// CombGMNZ: the sum of the scores times (lists holding the document)^gamma (docs/methods/fusion.md#score-based-methods).
import { need, range, scoreBased, sumOf, type FusionMethodDef } from '../method.js';

/** CombGMNZ: the sum of the scores times (lists holding the document)^gamma. */
export const gmnz: FusionMethodDef = {
  name: 'gmnz',
  norm: 'min-max',
  missing: 'exclude',
  grid: (fixed) => range(0.01, 1, 0.01).map((gamma) => ({ ...fixed, gamma })),
  scores: (q) => {
    const g = need(q.options.gamma, 'gamma', 'gmnz');
    return scoreBased(q, (v, present) => sumOf(v) * present ** g);
  },
};
