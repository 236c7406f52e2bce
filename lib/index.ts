/**
 * Quorum: native-accelerated multi-expert dense retrieval for Node.js. The root export is what a server needs:
 * tensors, the dense kernels, the indexes, the tokenizer, a trained retriever, fusion of result lists. The rest is
 * behind subpath exports (docs/api.md, "Entry points"): `quorum-retrieval/kernels`, `/text`, `/eval`, `/fusion`,
 * `/data`, `/models`, `/train` and `/methods/muf`, `/methods/came`, `/methods/rom`.
 *
 * @example
 * import { Tensor, scoreTopK, capabilities } from 'quorum-retrieval';
 * const corpus = Tensor.from(vectors, [n, 768], 'bf16');
 * const top = await scoreTopK(query, corpus, 10);
 *
 * @packageDocumentation
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
  type ScoreTopKOptions,
  type TopKResult,
} from './dense.js';
export { QuantizedTensor } from './quantized.js';
export { MetadataTable, compileFilter, type Filter, type PassageMetadata } from './filter.js';
export { abstains, checkAbstain, checkK, filterRows } from './search-request.js';
export { capabilities, setThreads, setIsa, type Capabilities, type Isa } from './runtime.js';
export { packageRoot } from './native.js';
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
export { Bm25Index, type Bm25Hit, type Bm25Options, type Bm25SearchOptions } from './bm25/bm25.js';
export { type NativeDisposable, type NativeResource } from './native-resource.js';
export { hybridFuse, type HybridOptions, type RankedHit } from './hybrid.js';
export { RequestBatcher, type BatcherOptions, type BatcherStats } from './batcher.js';
export { Live, type LiveOptions, type LiveStats } from './live.js';
export { ServingEncoder, type ServingEncoderOptions } from './models/serving-encoder.js';
export { type Qrels, type Run, type ScoredDoc } from './data/runs.js';
export { fuse, type FuseOptions, type FusionMethod, type MissingPolicy } from './fusion/fuse.js';
export { WordPieceTokenizer, type EncodeOptions, type EncodedBatch } from './text/tokenizer.js';
export { Retriever, type EncodeOptions as RetrieverEncodeOptions, type LoadedModel } from './models/retriever.js';
