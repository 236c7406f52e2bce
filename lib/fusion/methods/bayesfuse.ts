// BayesFuse: the sum over lists of the log-odds of relevance at the document's position, learned per cut-off segment
// from qrels; a list that lacks the document adds log(0.001 / 0.999) (docs/methods/fusion.md#supervised-methods).
import { type FusionMethodDef, mean, rankSum, trainedFor } from '../method.js';

/** BayesFuse's cut-offs: the segments [0, 5), [5, 10), ..., [500, 1000) share one log-odds each. */
const BAYESFUSE_CUTS: readonly number[] = [0, 5, 10, 15, 20, 30, 100, 200, 500, 1000];
const BAYES_MISSING = Math.log(0.001 / 0.999);

/** BayesFuse (trainFusion first). */
export const bayesfuse: FusionMethodDef = {
  name: 'bayesfuse',
  norm: 'min-max',
  missing: 'exclude',
  train: ({ hits }) => ({
    tables: hits.map((perQuery) => {
      const table: number[] = [];
      for (let s = 0; s + 1 < BAYESFUSE_CUTS.length; s++) {
        const a = BAYESFUSE_CUTS[s] as number;
        const b = BAYESFUSE_CUTS[s + 1] as number;
        let p = mean(perQuery.map((h) => h.slice(a, b).reduce((x, y) => x + y, 0) / (b - a)));
        if (p === 0) p = 0.001;
        const q = 1 - p === 0 ? 0.001 : 1 - p;
        for (let r = a; r < b; r++) table.push(Math.log(p / q));
      }
      return table;
    }),
  }),
  scores: (q) => {
    const t = trainedFor(q, 'bayesfuse');
    return rankSum(
      q,
      (i, r) => {
        const table = t.tables[i] as number[];
        return r < table.length ? (table[r] as number) : BAYES_MISSING;
      },
      () => BAYES_MISSING,
    );
  },
};
