/**
 * `quorum-retrieval/fusion`: the fusion methods (a registry of ranx's 25 and the hybrid, and the parts to define
 * one), one query's fusion over string or numeric ids, normalizations, defaults, training, and the parameter search.
 *
 * @packageDocumentation
 */
export { HYBRID_ALPHA_GRID, WIDE_ALPHA_GRID, gainOverBaseline, searchAlpha, type AlphaSearch, type GainOverBaseline } from '../hybrid.js';
export { defaultMissing, defaultNormalization, fuseQuery, fusionMethod } from '../fusion/fuse.js';
export { type FusionMethodDef, type FusionQuery, type TrainedFusion, type TrainingHits } from '../fusion/method.js';
export { FUSION_METHODS } from '../fusion/methods/index.js';
export { compareIds, normalizeLists, sortList, type FusionId, type Normalization, type RankedList } from '../fusion/normalize.js';
export { optimizeFusion, trainFusion, weightGrid, type FusionSearch } from '../fusion/train.js';
