// ProbFuse: each list cut into `segments` equal segments; a document adds its segment's probability of relevance
// (learned from qrels) divided by the segment's number (docs/methods/fusion.md#supervised-methods).
import { QuorumError } from '../../errors.js';
import { type FusionMethodDef, mean, range, rankSum, trainedFor } from '../method.js';

/** ProbFuse with `segments` segments, the number it was trained with (trainFusion first). */
export const probfuse: FusionMethodDef = {
  name: 'probfuse',
  norm: 'min-max',
  missing: 'exclude',
  train: ({ hits, segments: n }) => {
    if (!n || !Number.isInteger(n) || n < 1) throw new QuorumError('ERR_ARG', "probfuse needs 'segments' (a positive integer)");
    return {
      tables: hits.map((perQuery) =>
        Array.from({ length: n }, (_, k) =>
          mean(
            perQuery.map((h) => {
              const size = Math.ceil(h.length / n);
              const seg = h.slice(k * size, (k + 1) * size);
              return size > 0 && seg.length ? seg.reduce((x, y) => x + y, 0) / size : 0; // empty segments add 0
            }),
          ),
        ),
      ),
    };
  },
  grid: (fixed, data) =>
    range(1, 100, 1).map((segments) => ({
      ...fixed,
      segments,
      trained: { method: 'probfuse', ...probfuse.train!({ ...data, segments }) },
    })),
  scores: (q) => {
    const t = trainedFor(q, 'probfuse');
    return rankSum(q, (i, r) => {
      const table = t.tables[i] as number[];
      const size = Math.ceil(q.lists[i]!.ids.length / table.length);
      const seg = Math.floor(r / size);
      return seg < table.length ? (table[seg] as number) / (seg + 1) : 0;
    });
  },
};
