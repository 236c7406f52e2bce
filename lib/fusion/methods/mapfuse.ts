// MAPFuse: the sum over lists of the run's training MAP divided by the document's rank
// (docs/methods/fusion.md#supervised-methods).
import { evaluate } from '../../eval/ranking.js';
import { type FusionMethodDef, rankSum, trainedFor } from '../method.js';

/** MAPFuse (trainFusion first). */
export const mapfuse: FusionMethodDef = {
  name: 'mapfuse',
  norm: 'min-max',
  missing: 'exclude',
  train: ({ runs, qrels, relLevel }) => ({
    tables: runs.map(() => []),
    maps: runs.map((r) => evaluate(r, qrels, ['map'], { relLevel }).mean.map as number),
  }),
  scores: (q) => {
    const t = trainedFor(q, 'mapfuse', false);
    return rankSum(q, (i, r) => ((t.maps?.[i] ?? 0) as number) / (r + 1));
  },
};
