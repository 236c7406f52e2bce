/**
 * `quorum-retrieval/methods/muf`: DPR-MUF (docs/methods/muf.md): per-task experts, ensemble heads, calibrated
 * confidence, fused retrieval.
 *
 * @packageDocumentation
 */
export {
  MlpEnsemble,
  type EnsembleConfig,
  type EnsembleEpoch,
  type EnsembleTrainData,
  type EnsembleTrainOptions,
} from '../../methods/muf/ensemble.js';
export { type ExpertCalibration, type ExpertTraining, type MufFusion, type MufHits } from '../../methods/muf/format.js';
export { trainMufHeads } from '../../methods/muf/train.js';
export {
  MufRetriever,
  type MufAllRuns,
  type MufExpertSpec,
  type MufJudgedQuery,
  type MufOptions,
  type MufPassage,
  type MufSearchOptions,
  type MufTimings,
  type MufTrainData,
} from '../../methods/muf/retriever.js';
export { mufFusion, mufSparseFusion, type MufFuseOptions } from '../../methods/muf/fusion.js';
export { mufExportOnnx, type MufOnnxCard } from '../../methods/muf/export.js';
export {
  MufServer,
  mufConfidence,
  type MufConfidenceExpert,
  type MufConfidenceResult,
  type MufConfidenceFuse,
  type MufServerOptions,
  type MufServerSearchOptions,
} from '../../methods/muf/serve.js';
export { FAMILIARITY_K, FamiliarityBank, type FamiliarityCalibration } from '../../methods/muf/familiarity.js';
export { updateMufPassages, type MufPassageChanges, type MufPassageUpdate } from '../../methods/muf/passages.js';
