/**
 * `quorum-retrieval/methods/came`: CAME (docs/methods/came.md): lexical, local and global experts on a shared
 * bottom, competitive learning, fused retrieval.
 *
 * @packageDocumentation
 */
export { CAME_EXPERTS, type CameConfig, type CameEncoded, type CameExpertName, type CameTextSettings } from '../../methods/came/format.js';
export { type CameSearchOptions, type CameSearchResult } from '../../methods/came/search.js';
export { CameModel, cameConfig, type CameModelOptions, type CameStepStats, type CameTraining } from '../../methods/came/model.js';
export { CameRetriever, type CameIndexOptions, type CameRetrieverOptions } from '../../methods/came/retriever.js';
export {
  fitCameLinear,
  initCame,
  initCameFromPretrained,
  trainCame,
  fitLexicalBias,
  type CameStageRecord,
  type CameTrainOptions,
  type CameTrainRecord,
} from '../../methods/came/train.js';
export {
  CAME_FUSIONS,
  fitLinearFusion,
  fuseExperts,
  type CameFusion,
  type Hit,
  type LinearFusion,
  CAME_FUSION_METHODS,
} from '../../methods/came/fusion.js';
export { encodeCame, type CameEncodeOptions, type CameEncoderModel, type CameEncoding } from '../../methods/came/encode.js';
export { expertScores } from '../../methods/came/scores.js';
export { TokenIndex, type TokenIndexOptions, type TokenSearchOptions } from '../../methods/came/token-index.js';
export { cameExportOnnx, type CameOnnxCard } from '../../methods/came/export.js';
export { CameServer } from '../../methods/came/serve.js';
export { updateCamePassages, type CamePassageChanges, type CamePassageUpdate } from '../../methods/came/passages.js';
