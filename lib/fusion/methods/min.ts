// CombMIN: the lowest score (docs/methods/fusion.md#score-based-methods).
import { scoreBased, type FusionMethodDef } from '../method.js';

/** CombMIN: the lowest score. */
export const min: FusionMethodDef = {
  name: 'min',
  norm: 'min-max',
  missing: '+inf',
  scores: (q) => scoreBased(q, (v) => Math.min(...v)),
};
