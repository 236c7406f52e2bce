/**
 * Quorum: native-accelerated multi-expert dense retrieval for Node.js.
 *
 * @example
 * import { Tensor, scoreTopK, capabilities } from 'quorum-retrieval';
 * const corpus = Tensor.from(vectors, [n, 768], 'bf16');
 * const top = await scoreTopK(query, corpus, 10);
 */
export { QuorumError, type ErrorCode } from './errors.js';
export { type Dtype, type TypedArrayOf } from './dtype.js';
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
