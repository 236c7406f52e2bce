// Reciprocal rank fusion: the sum over lists of 1 / (k + rank) (docs/methods/fusion.md#rank-based-methods).
import { range, rankSum, type FusionMethodDef } from '../method.js';

/** Reciprocal rank fusion, k = 60 unless `rrfK` says otherwise. */
export const rrf: FusionMethodDef = {
  name: 'rrf',
  norm: 'min-max',
  missing: 'exclude',
  grid: (fixed) => range(10, 100, 10).map((rrfK) => ({ ...fixed, rrfK })),
  scores: (q) => {
    const k = q.options.rrfK ?? 60;
    return rankSum(q, (_list, r) => 1 / (k + r + 1));
  },
};
