// SegFuse: fixed segments of growing length; a document adds its segment's probability of relevance (learned from
// qrels) times (its score + 1) (docs/methods/fusion.md#supervised-methods).
import { type FusionMethodDef, mean, rankSum, trainedFor } from '../method.js';

/** SegFuse's segment edges: [0, 5), [5, 15), [15, 35), ... each twice as long as the one before. */
const SEGFUSE_EDGES: readonly number[] = [0, 5, 15, 35, 75, 155, 315, 635, 1275, 2555, 5115];

/** SegFuse (trainFusion first). */
export const segfuse: FusionMethodDef = {
  name: 'segfuse',
  norm: 'min-max',
  missing: 'exclude',
  train: ({ hits }) => ({
    tables: hits.map((perQuery) =>
      SEGFUSE_EDGES.slice(0, -1).map((a, k) => {
        const b = SEGFUSE_EDGES[k + 1] as number;
        return mean(perQuery.map((h) => h.slice(a, b).reduce((x, y) => x + y, 0) / (b - a)));
      }),
    ),
  }),
  scores: (q) => {
    const t = trainedFor(q, 'segfuse');
    return rankSum(q, (i, r) => {
      const seg = SEGFUSE_EDGES.findIndex((e, j) => j + 1 < SEGFUSE_EDGES.length && r >= e && r < (SEGFUSE_EDGES[j + 1] as number));
      return seg < 0 ? 0 : (t.tables[i] as number[])[seg]! * ((q.lists[i]!.scores[r] as number) + 1);
    });
  },
};
