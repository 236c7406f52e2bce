// Weighted CombMNZ: the sum of the scores times the summed weights of the runs that hold the document
// (docs/methods/fusion.md#score-based-methods).
import { scoreBased, sumOf, type FusionMethodDef, weightsFor } from '../method.js';

/** Weighted CombMNZ: the sum of the scores times the summed weights of the runs that hold the document. */
export const wmnz: FusionMethodDef = {
  name: 'wmnz',
  norm: 'min-max',
  missing: 'exclude',
  weighted: true,
  scores: (q) => {
    const w = weightsFor(q, 'wmnz');
    return scoreBased(q, (v, _present, runs) => sumOf(v) * runs.reduce((a, i) => a + (w[i] as number), 0));
  },
};
