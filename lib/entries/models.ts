/**
 * `quorum-retrieval/models`: trained retrievers' configuration, parameters, saved directories and corpus encoding;
 * Hugging Face checkpoints in (docs/guides/bring-your-own-model.md) and out (Hugging Face, ONNX); GloVe vectors and
 * the GloVe-average baseline; safetensors files.
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
export { loadSafetensors, readSafetensors, writeSafetensors, type SafetensorsTensor, type TensorToWrite } from '../io/safetensors.js';
export {
  isHfModelDir,
  loadPretrainedWeights,
  pretrainedShape,
  readPretrained,
  type PretrainedBert,
  type PretrainedOptions,
  type PretrainedTarget,
} from '../models/hf.js';
export {
  exportHf,
  exportOnnx,
  writeHfTokenizerFiles,
  writeOnnxCard,
  type ExportResult,
  type OnnxCardHead,
  type ExportSource,
  type OnnxExportCard,
} from '../models/export.js';
export {
  cameOnnx,
  encoderOnnx,
  mufHeadsOnnx,
  romOnnx,
  type CameGraphConfig,
  type EncoderOnnxOptions,
  type MufHeadsGraphConfig,
  type ParameterSource,
  type RomGraphConfig,
} from '../models/onnx-export.js';
