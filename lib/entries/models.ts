/**
 * `quorum-retrieval/models`: trained retrievers' configuration, parameters, saved directories and corpus encoding;
 * GloVe vectors and the GloVe-average baseline; safetensors files.
 *
 * @packageDocumentation
 */
export {
  defaultEncoderConfig,
  isSpecialized,
  parameterNames,
  type EncoderConfig,
  type Pooling,
  type RetrieverConfig,
  type RetrieverPreset,
  type Routing,
  type TaserConfig,
} from '../models/config.js';
export { parameterCount, parameterShapes } from '../models/parameters.js';
export {
  retrieverConfig,
  type OptimizerOptions,
  type RetrieverOptions,
  type StepStats,
  type TokenBatchArg,
  type TrainBatchArg,
} from '../models/retriever.js';
export { type ModelCard, type SaveModelOptions, type TextSettings, type WeightStorage } from '../models/model-dir.js';
export { TokenTable } from '../models/token-table.js';
export { encodeTable, indexTable, type EncodeTableOptions, type TableEncoder } from '../models/encode-corpus.js';
export { type PassageText } from '../data/examples.js';
export { gloveForVocab, loadGloveVectors, type GloveVectors, type VocabEmbeddings } from '../models/glove.js';
export { GloveAverageEncoder, type GloveAverageOptions } from '../encoders/glove-average.js';
export {
  loadSafetensors,
  readSafetensors,
  writeSafetensors,
  type SafetensorsTensor,
  type TensorToWrite,
} from '../io/safetensors.js';
