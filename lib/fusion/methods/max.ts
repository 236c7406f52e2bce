// CombMAX: the highest score (docs/methods/fusion.md#score-based-methods).
import { scoreBased, type FusionMethodDef } from '../method.js';

/** CombMAX: the highest score. */
export const max: FusionMethodDef = {
  name: 'max',
  norm: 'min-max',
  missing: '-inf',
  scores: (q) => scoreBased(q, (v) => Math.max(...v)),
};
