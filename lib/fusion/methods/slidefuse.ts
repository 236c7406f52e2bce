// SlideFuse: the sum over lists of the mean probability of relevance over a window of positions around the
// document's, learned as PosFuse's (docs/methods/fusion.md#supervised-methods).
import { type FusionMethodDef, need, positionProbabilities, range, rankSum, trainedFor } from '../method.js';

/** SlideFuse with half window `window` (trainFusion first). */
export const slidefuse: FusionMethodDef = {
  name: 'slidefuse',
  norm: 'min-max',
  missing: 'exclude',
  train: ({ hits }) => ({ tables: hits.map(positionProbabilities) }),
  grid: (fixed, data) => {
    const trained = { method: 'slidefuse', ...slidefuse.train!(data) };
    return range(1, 100, 1).map((window) => ({ ...fixed, window, trained }));
  },
  scores: (q) => {
    const t = trainedFor(q, 'slidefuse');
    return rankSum(q, (i, r) => {
      const w = need(q.options.window, 'window', 'slidefuse');
      const table = t.tables[i] as number[];
      const n = q.lists[i]!.ids.length;
      // The mean over the window's positions that the table covers (ranx divides by the full window even where
      // its table is shorter).
      const vals = table.slice(Math.max(r - w, 0), Math.min(r + w, n - 1) + 1);
      return vals.length ? vals.reduce((x, y) => x + y, 0) / vals.length : 0;
    });
  },
};
