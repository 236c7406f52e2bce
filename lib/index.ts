/**
 * Quorum: native-accelerated multi-expert dense retrieval for Node.js.
 *
 * @example
 * import { Tensor, scoreTopK, capabilities } from 'quorum-retrieval';
 * const corpus = Tensor.from(vectors, [n, 768], 'bf16');
 * const top = await scoreTopK(query, corpus, 10);
 */
export { QuorumError, type ErrorCode } from './errors.js';
export { type AnyTypedArray, type Dtype, type TypedArrayOf } from './dtype.js';
export { Tensor, type Device } from './tensor.js';
export {
  scoreTopK,
  scoreTopKSync,
  score,
  scoreSync,
  gatherScores,
  gatherScoresSync,
  type DenseOptions,
  type IdsInput,
  type MatrixInput,
  type QueryInput,
  type TopKResult,
} from './dense.js';
export { capabilities, setThreads, setIsa, type Capabilities, type Isa } from './runtime.js';
export { cudaEmptyCache, cudaInfo, cudaMemoryStats, type CudaDeviceInfo, type CudaMemoryStats } from './cuda.js';
/** The installed package's root directory (its embedded data is under `data/`). */
export { packageRoot } from './native.js';
export {
  maxSim,
  maxSimSync,
  maxSimBackward,
  maxSimBackwardSync,
  type MaxSimGradients,
  type MaxSimOptions,
  type MaxSimResult,
  type TokenDocuments,
} from './maxsim.js';
export {
  spladePool,
  spladePoolSync,
  spladePoolBackward,
  spladePoolBackwardSync,
  regularizer,
  regularizerSync,
  RegWeightScheduler,
  toSparse,
  toSparseSync,
  sparseVectors,
  sparseScores,
  sparseScoresSync,
  sparseDenseScores,
  sparseDenseScoresSync,
  type RegularizerResult,
  type SparseRegularizer,
  type SparseVectors,
  type SpladePoolOptions,
  type SpladePoolResult,
  type ToSparseOptions,
} from './splade.js';
export { infoNce, infoNceSync, type InfoNceOptions, type InfoNceResult } from './losses.js';
export {
  ensembleMI,
  ensembleMISync,
  ece,
  calibrateTemperature,
  mufTemperatureGrid,
  type CalibrationSplit,
  type EnsembleMIOptions,
  type EnsembleMIResult,
  type TemperatureSearch,
} from './uncertainty.js';
export { type Int32Input, type MaskInput, type TensorInput } from './operand.js';
export {
  SparseIndex,
  type SparseAlgorithm,
  type SparseRowsInput,
  type SparseSearchOptions,
  type SparseSearchResult,
} from './sparse-index.js';
export {
  DenseIndex,
  type DenseIndexInfo,
  type DenseIndexOptions,
  type DenseSearchOptions,
  type VectorIdsInput,
  type Mips,
  type VectorsInput,
} from './dense-index.js';
export { type SearchResult } from './search-result.js';
export { Bm25Index, type Bm25Hit, type Bm25Options } from './bm25/bm25.js';
export type { NativeDisposable, NativeResource } from './native-resource.js';
export { englishAnalyzer, luceneEnglishStopwords, type Analyzer, type AnalyzerOptions } from './bm25/analyzer.js';
export { luceneQuantizedLength } from './bm25/length-norm.js';
export { gainOverBaseline, hybridFuse, searchAlpha, type AlphaSearch, type GainOverBaseline, type HybridOptions, type RankedHit } from './hybrid.js';
export {
  averagePrecision,
  evaluate,
  groupMeans,
  hitRate,
  metricFn,
  ndcg,
  precision,
  rPrecision,
  rankDocs,
  recall,
  reciprocalRank,
  type EvaluateOptions,
  type Evaluation,
  type MetricFn,
  type Qrels,
  rankedRun,
  type MetricName,
  type Run,
  type ScoredDoc,
  type TieOrder,
} from './eval/ranking.js';
export { answerMatcher, averageRank, dprTokens, goldRank, topKAccuracy, type AnswerMatcher } from './eval/answers.js';
export { kiltRPrecision, provenanceId } from './eval/kilt.js';
export { incompleteBeta, pairedTTest, randomizationTest, studentTwoTailed, type PairedTest } from './eval/significance.js';
export {
  defaultMissing,
  defaultNormalization,
  fuse,
  type FuseOptions,
  type FusionMethod,
  type MissingPolicy,
  type TrainedFusion,
} from './fusion/fuse.js';
export { normalizeLists, sortList, type Normalization, type RankedList } from './fusion/normalize.js';
export { optimizeFusion, trainFusion, weightGrid, type FusionSearch } from './fusion/train.js';
export { readLines, readJsonLines, readJsonArray, lineError } from './data/lines.js';
export {
  formatRun,
  formatTrecTopics,
  parseQrels,
  parseTrecTopics,
  readQrels,
  readRun,
  writeQrels,
  writeRun,
  type TrecTopic,
} from './data/trec-files.js';
export { readSquad, writeSquad, readDpr, streamDpr, writeDpr, type DprExample } from './data/qa-formats.js';
export { loadBeir, loadBeirCorpus, readBeir, readBeirCorpus, writeBeir, type BeirDataset, type Passage, type Query } from './data/beir.js';
export {
  TASKS,
  TASK_SOURCES,
  buildMultiDomain,
  writeMultiDomain,
  type MultiDomainBenchmark,
  type MultiDomainOptions,
  type Split,
  type TaskName,
} from './data/multidomain.js';
// Tokenization and the libtorch encoders (quorum_torch.node is loaded on first use of Retriever).
export { WordPieceTokenizer, defaultVocabPath, extendVocabulary, type EncodeOptions, type EncodedBatch, type TokenizerOptions } from './text/tokenizer.js';
export { readTokenizerFiles, writeTokenizerFiles, type TokenizerSettings } from './text/tokenizer-files.js';
export { normalizeBert, type NormalizeOptions } from './text/normalize.js';
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
} from './train/config.js';
export { parameterCount, parameterShapes } from './train/parameters.js';
export {
  Retriever,
  retrieverConfig,
  type EncodeOptions as RetrieverEncodeOptions,
  type LoadedModel,
  type OptimizerOptions,
  type RetrieverOptions,
  type StepStats,
  type TokenBatchArg,
  type TrainBatchArg,
} from './train/retriever.js';
export { type ModelCard, type SaveModelOptions, type TextSettings, type WeightStorage } from './train/model-dir.js';
export { TokenTable } from './train/token-table.js';
export { encodeTable, indexTable, type EncodeTableOptions, type TableEncoder } from './train/encode-corpus.js';
export { addBm25Negatives, examplesFromQrels, type PassageText, type TrainingExample } from './train/examples.js';
export { homogeneousBatches, linearSchedule, type TaskBatch } from './train/schedule.js';
export {
  composeBatch,
  mineHardNegatives,
  trainRetriever,
  type EpochStats,
  type TrainableModel,
  type TrainOptions,
  type TrainResult,
  type TrainingData,
} from './train/trainer.js';
export { validate, validationPool, type ValidationResult } from './train/validate.js';
export { fitPoolingToCorpus, initFromBertCheckpoint, initFromGlove } from './train/init.js';
export { gloveForVocab, loadGloveVectors, type GloveVectors, type VocabEmbeddings } from './train/glove.js';
export { GloveAverageEncoder, type GloveAverageOptions } from './encoders/glove-average.js';
export { mapBertCheckpoint, type MappedCheckpoint } from './train/checkpoint-map.js';
export { loadSafetensors, readSafetensors, writeSafetensors, type SafetensorsTensor, type TensorToWrite } from './io/safetensors.js';
// DPR-MUF (lib/methods/muf): per-task experts, ensemble heads, calibrated confidence, fused retrieval.
export {
  MlpEnsemble,
  type EnsembleConfig,
  type EnsembleEpoch,
  type EnsembleTrainData,
  type EnsembleTrainOptions,
} from './methods/muf/ensemble.js';
export {
  MUF_TEMPERATURE_GRID,
  MufRetriever,
  type ExpertCalibration,
  type MufAllRuns,
  type MufExpertSpec,
  type MufFusion,
  type MufHits,
  type MufJudgedQuery,
  type MufOptions,
  type MufPassage,
  type MufSearchOptions,
  type MufTimings,
  type MufTrainData,
} from './methods/muf/retriever.js';
// CAME (lib/methods/came): lexical, local and global experts on a shared bottom, competitive learning, fused retrieval.
export {
  CAME_EXPERTS,
  CameModel,
  cameConfig,
  type CameConfig,
  type CameEncoded,
  type CameExpertName,
  type CameModelOptions,
  type CameStepStats,
  type CameTraining,
} from './methods/came/model.js';
export {
  CameRetriever,
  type CameIndexOptions,
  type CameRetrieverOptions,
  type CameSearchOptions,
  type CameSearchResult,
  type CameTextSettings,
} from './methods/came/retriever.js';
export { fitCameLinear, initCame, trainCame, type CameStageRecord, type CameTrainOptions, type CameTrainRecord } from './methods/came/train.js';
export { CAME_FUSIONS, fitLinearFusion, fuseExperts, type CameFusion, type Hit, type LinearFusion } from './methods/came/fusion.js';
export { encodeCame, fitLexicalBias, type CameEncodeOptions, type CameEncoding } from './methods/came/encode.js';
export { expertScores } from './methods/came/scores.js';
export { TokenIndex, type TokenIndexOptions, type TokenSearchOptions } from './methods/came/token-index.js';
export { rbo } from './eval/rbo.js';
export { prepareTraining, type PreparedData } from './train/prepare.js';
export { rankAgainstPool, type PoolScores, type ValidationInput } from './train/validate.js';
// ROM (lib/methods/rom): one encoder for retrieval and reading, ICT / PhraseICT, learning schedules, index refresh.
export { RomNetwork, ROM_HEADS, romConfig, type ReaderBatchArg, type ReaderLogits, type RomConfig, type RomHead, type RomNetworkOptions, type RomStepStats } from './methods/rom/network.js';
export { RomModel, defaultRomText, type RomAnswer, type RomRetrievalSide, type RomTextSettings } from './methods/rom/model.js';
export { trainRom, type RomEpochRecord, type RomTrainingData, type RomTrainOptions, type RomTrainRecord } from './methods/rom/train.js';
export { ROM_SCHEDULES, retrievalWeight, type RomSchedule, type ScheduleOptions } from './methods/rom/schedule.js';
export { TermIdf, drawSpan, ictExamples, phraseIctExamples, splitSentences, words, type IctOptions, type PhraseIctOptions, type SelfSupervisedExample } from './methods/rom/self-supervised.js';
export { bestSpans, type Span } from './methods/rom/spans.js';
export { exactMatch, f1Score, normalizeAnswer, squadEvaluate, squadScores } from './methods/rom/squad.js';
export { IndexRefresh, type RefreshEvent, type RefreshHooks } from './methods/rom/refresh.js';
export { findAnswer, passagePieces, readerRows, spanText, type PassagePieces, type ReaderRows } from './methods/rom/reader-inputs.js';
