// PosFuse: the sum over lists of the probability of relevance at the document's position, learned from qrels
// (docs/methods/fusion.md#supervised-methods).
import { type FusionMethodDef, positionProbabilities, rankSum, trainedFor } from '../method.js';

/** PosFuse (trainFusion first). */
export const posfuse: FusionMethodDef = {
  name: 'posfuse',
  norm: 'min-max',
  missing: 'exclude',
  train: ({ hits }) => ({ tables: hits.map(positionProbabilities) }),
  scores: (q) => {
    const t = trainedFor(q, 'posfuse');
    return rankSum(q, (i, r) => {
      const table = t.tables[i] as number[];
      return r < table.length ? (table[r] as number) : 0;
    });
  },
};
