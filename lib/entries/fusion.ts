/**
 * `quorum-retrieval/fusion`: the fusion methods' normalizations, defaults and training, and the dense + BM25 hybrid's
 * parameter search.
 *
 * @packageDocumentation
 */
export { HYBRID_ALPHA_GRID, WIDE_ALPHA_GRID, gainOverBaseline, searchAlpha, type AlphaSearch, type GainOverBaseline } from '../hybrid.js';
export { defaultMissing, defaultNormalization, type TrainedFusion } from '../fusion/fuse.js';
export { normalizeLists, sortList, type Normalization, type RankedList } from '../fusion/normalize.js';
export { optimizeFusion, trainFusion, weightGrid, type FusionSearch } from '../fusion/train.js';
