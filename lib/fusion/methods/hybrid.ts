// The dense + BM25 hybrid (pyserini's): runs = [dense, sparse], fused by hybridFuse (docs/methods/fusion.md#bm25-hybrid).
import { QuorumError } from '../../errors.js';
import { HYBRID_ALPHA_GRID, hybridFuse } from '../../hybrid.js';
import { type FusionMethodDef } from '../method.js';

/** The hybrid: alpha * sparse + dense over the union, a missing document at its list's minimum. */
export const hybrid: FusionMethodDef = {
  name: 'hybrid',
  norm: 'none',
  missing: 'exclude',
  grid: (fixed) => HYBRID_ALPHA_GRID.map((alpha) => ({ ...fixed, alpha })),
  scores: (q) => {
    if (q.lists.length !== 2) throw new QuorumError('ERR_ARG', `hybrid fuses exactly 2 runs (dense, sparse), got ${q.lists.length}`);
    const [dense, sparse] = q.lists.map((l) => l.ids.map((id, i) => ({ id, score: l.scores[i] as number })));
    const fused = hybridFuse(dense!, sparse!, {
      alpha: q.options.alpha,
      normalization: q.options.normalization,
      weightOnDense: q.options.weightOnDense,
    });
    return new Map(fused.map((h) => [h.id, h.score]));
  },
};
