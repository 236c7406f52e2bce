// Rank-biased centroids: the sum over lists of (1 - phi) phi^rank (docs/methods/fusion.md#rank-based-methods).
import { need, range, rankSum, type FusionMethodDef } from '../method.js';

/** Rank-biased centroids with persistence `phi` (required). */
export const rbc: FusionMethodDef = {
  name: 'rbc',
  norm: 'min-max',
  missing: 'exclude',
  grid: (fixed) => range(0.01, 1, 0.01).map((phi) => ({ ...fixed, phi })),
  scores: (q) => {
    const phi = need(q.options.phi, 'phi', 'rbc');
    return rankSum(q, (_list, r) => (1 - phi) * phi ** r);
  },
};
