// Inverse square rank and its log variants: the sum over lists of 1 / rank^2, times how many lists hold the document
// (isr), its log (log_isr) or log(count + sigma) (logn_isr) (docs/methods/fusion.md#rank-based-methods).
import { type FusionId } from '../normalize.js';
import { type FusionMethodDef, type FusionQuery, listCount, range, rankSum } from '../method.js';

function isrScores<Id extends FusionId>(q: FusionQuery<Id>, factor: (count: number) => number): Map<Id, number> {
  const out = rankSum(q, (_list, r) => 1 / (r + 1) ** 2);
  for (const d of q.union) out.set(d, (out.get(d) as number) * factor(listCount(q, d)));
  return out;
}

/** ISR: the sum of 1 / rank^2 times how many lists hold the document. */
export const isr: FusionMethodDef = { name: 'isr', norm: 'min-max', missing: 'exclude', scores: (q) => isrScores(q, (c) => c) };

/** log_ISR: the sum of 1 / rank^2 times log(how many lists hold the document). */
export const log_isr: FusionMethodDef = {
  name: 'log_isr',
  norm: 'min-max',
  missing: 'exclude',
  scores: (q) => isrScores(q, (c) => Math.log(c)),
};

/** logn_ISR: the sum of 1 / rank^2 times log(count + sigma), sigma = 0.01 unless `sigma` says otherwise. */
export const logn_isr: FusionMethodDef = {
  name: 'logn_isr',
  norm: 'min-max',
  missing: 'exclude',
  grid: (fixed) => range(0.01, 1, 0.01).map((sigma) => ({ ...fixed, sigma })),
  scores: (q) => {
    const sigma = q.options.sigma ?? 0.01;
    return isrScores(q, (c) => Math.log(c + sigma));
  },
};
