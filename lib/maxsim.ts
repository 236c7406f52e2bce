// MaxSim late interaction (ColBERT), docs/methods/kernels.md#maxsim. See native/kernels/maxsim.h for the contract.
import { auxOperand, backendOf, cpuOnly } from './cuda.js';
import { QuorumError } from './errors.js';
import { type NativeTensorHandle } from './native.js';
import { maxsimBindings } from './bindings/maxsim_bindings.js';
import { type Int32Input, type MaskInput, type TensorInput, handleOf, runAsync, runSync, Operands } from './operand.js';
import { Tensor } from './tensor.js';
import { checkOptions, optionKeys } from './validate.js';

/** Documents as runs of token vectors. */
export interface TokenDocuments {
  /** Token vectors, f32, bf16 or f16: packed `[sum of lengths, dim]` or padded `[N, Ld, dim]`. */
  tokens: TensorInput;
  /** Tokens per document, `[N]`. Packed: they must sum to the number of rows. Padded: each at most Ld. */
  lengths: Int32Input;
  /** One entry per token row (e.g. ColBERT's punctuation mask): a masked token never wins a max. */
  tokenMask?: MaskInput;
  /**
   * Score only these documents (indices into `lengths`, in this order; repeats allowed): the scores are
   * `[nq, select.length]`. A first stage's candidates are scored in place, without packing their tokens (CPU only).
   */
  select?: Int32Input;
}

/** Options of {@link maxSim} (and, for `queryMask`, {@link maxSimBackward}). */
export interface MaxSimOptions {
  /** One entry per query token (`nq * Lq`): a masked query token contributes nothing. */
  queryMask?: MaskInput;
  /**
   * Clamp each query token's max at 0, as ColBERT's CPU segmented kernel does. Off by default: the GPU and
   * training path (-inf padding, no clamp).
   */
  clampZero?: boolean;
  /** Also return, per query token, the index (within its document) of the token that won the max. */
  argmax?: boolean;
}

/** What {@link maxSim} returns: native Tensors the caller disposes. */
export interface MaxSimResult {
  /** `[nq, N]`: `sum_q max_t dot(Q[q], D[t])`. A document with no usable token scores -Infinity (0 with clampZero). */
  scores: Tensor<'f32'>;
  /** `[nq, N, Lq]` token index within the document, -1 for a masked (or clamped) query token. */
  argmax?: Tensor<'i32'>;
}

const documentKeys = optionKeys<TokenDocuments>()(['tokens', 'lengths', 'tokenMask', 'select']);
const maxSimKeys = optionKeys<MaxSimOptions>()(['queryMask', 'clampZero', 'argmax']);
const backwardKeys = optionKeys<Pick<MaxSimOptions, 'queryMask'>>()(['queryMask']);

type RawScores = { scores: NativeTensorHandle; argmax?: NativeTensorHandle };

function call(ops: Operands, queries: TensorInput, docs: TokenDocuments, o: MaxSimOptions) {
  checkOptions(o, maxSimKeys, 'maxSim options');
  const q = ops.tensor(queries, 'queries');
  if (docs === null || typeof docs !== 'object') throw new QuorumError('ERR_ARG', 'documents must be { tokens, lengths, tokenMask? }');
  checkOptions(docs, documentKeys, 'maxSim documents');
  const d = ops.tensor(docs.tokens, 'documents');
  const lengths = ops.int32(docs.lengths, 'lengths');
  const qm = ops.mask(o.queryMask, 'queryMask');
  const tm = ops.mask(docs.tokenMask, 'tokenMask');
  const select = docs.select === undefined ? undefined : ops.int32(docs.select, 'select');
  if (select) cpuOnly([q, d], 'maxSim with select');
  const be = backendOf([q, d], ['queries', 'documents']);
  const aux = (t: Tensor | undefined, what: string) => auxOperand(be, t, what);
  return (async: boolean) =>
    be.maxSim(
      q.handle,
      aux(qm, 'queryMask'),
      d.handle,
      aux(lengths, 'lengths')!,
      aux(tm, 'tokenMask'),
      o.clampZero === true,
      o.argmax === true,
      async,
      select?.handle ?? null,
    );
}

function wrap(r: RawScores): MaxSimResult {
  const out: MaxSimResult = { scores: Tensor.fromHandle<'f32'>(r.scores) };
  if (r.argmax) out.argmax = Tensor.fromHandle<'i32'>(r.argmax);
  return out;
}

/**
 * ColBERT MaxSim scores of one or several queries against variable-length documents. Runs on the native
 * pool, off the main thread.
 *
 * @param queries f32 token vectors `[Lq, dim]` or `[nq, Lq, dim]`
 * @example
 * const { scores } = await maxSim(queryTokens, { tokens: docTokens, lengths: docLengths });
 * scores.data[n] // score of document n
 */
export async function maxSim(queries: TensorInput, docs: TokenDocuments, options: MaxSimOptions = {}): Promise<MaxSimResult> {
  return runAsync((ops) => call(ops, queries, docs, options), wrap);
}

/**
 * {@link maxSim} on the calling thread.
 *
 * @example
 * const { scores } = maxSimSync(queryTokens, { tokens: docTokens, lengths });   // scores: Tensor f32 [nq, N]
 */
export function maxSimSync(queries: TensorInput, docs: TokenDocuments, options: MaxSimOptions = {}): MaxSimResult {
  return runSync((ops) => call(ops, queries, docs, options), wrap);
}

/** What {@link maxSimBackward} returns: f32 Tensors the caller disposes. */
export interface MaxSimGradients {
  /** Same shape as the queries. */
  dQueries: Tensor<'f32'>;
  /** Same shape as the document tokens (f32 whatever their storage); rows that won no max are 0. */
  dDocuments: Tensor<'f32'>;
}

type RawGrads = { dQueries: NativeTensorHandle; dDocuments: NativeTensorHandle };

function backwardCall(
  ops: Operands,
  queries: TensorInput,
  docs: TokenDocuments,
  argmax: Tensor,
  grad: Tensor<'f32'> | Float32Array,
  o: Pick<MaxSimOptions, 'queryMask'>,
) {
  checkOptions(o, backwardKeys, 'maxSimBackward options');
  const core = maxsimBindings();
  const q = ops.tensor(queries, 'queries');
  if (docs === null || typeof docs !== 'object') throw new QuorumError('ERR_ARG', 'documents must be { tokens, lengths, tokenMask? }');
  checkOptions(docs, documentKeys, 'maxSimBackward documents');
  const d = ops.tensor(docs.tokens, 'documents');
  cpuOnly([q, d], 'maxSimBackward');
  const lengths = ops.int32(docs.lengths, 'lengths');
  const g = grad instanceof Tensor ? grad : ops.typed(grad, [q.shape.length === 3 ? (q.shape[0] ?? 0) : 1, lengths.size], 'f32');
  const qm = ops.mask(o.queryMask, 'queryMask');
  const tm = ops.mask(docs.tokenMask, 'tokenMask');
  return (async: boolean) =>
    core.maxSimBackward(q.handle, handleOf(qm), d.handle, lengths.handle, handleOf(tm), argmax.handle, g.handle, async);
}

function wrapGrads(r: RawGrads): MaxSimGradients {
  return { dQueries: Tensor.fromHandle<'f32'>(r.dQueries), dDocuments: Tensor.fromHandle<'f32'>(r.dDocuments) };
}

/**
 * Gradients of `sum grad[b, n] * scores[b, n]` with respect to the query and document token vectors, given the
 * forward's `argmax` (run {@link maxSim} with `argmax: true`). Each query token's gradient flows to the
 * document token that won its max, as in CAME's local expert.
 *
 * @param grad upstream gradient `[nq, N]`
 *
 * @example
 * const fwd = await maxSim(q, docs, { argmax: true });
 * const { dQueries, dDocuments } = await maxSimBackward(q, docs, fwd.argmax!, upstream);   // upstream: [nq, N]
 */
export function maxSimBackward(
  queries: TensorInput,
  docs: TokenDocuments,
  argmax: Tensor<'i32'>,
  grad: Tensor<'f32'> | Float32Array,
  options: Pick<MaxSimOptions, 'queryMask'> = {},
): Promise<MaxSimGradients> {
  return runAsync((ops) => backwardCall(ops, queries, docs, argmax, grad, options), wrapGrads);
}

/**
 * {@link maxSimBackward} on the calling thread.
 *
 * @example
 * const { dQueries, dDocuments } = maxSimBackwardSync(q, docs, fwd.argmax!, upstream);
 */
export function maxSimBackwardSync(
  queries: TensorInput,
  docs: TokenDocuments,
  argmax: Tensor<'i32'>,
  grad: Tensor<'f32'> | Float32Array,
  options: Pick<MaxSimOptions, 'queryMask'> = {},
): MaxSimGradients {
  return runSync((ops) => backwardCall(ops, queries, docs, argmax, grad, options), wrapGrads);
}
