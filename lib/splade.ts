// SPLADE max pooling, its regularizers and sparse vectors, docs/methods/kernels.md#splade-pooling-and-regularizers.
// Contract: native/kernels/splade.h.
import { auxOperand, backendOf } from './cuda.js';
import { QuorumError } from './errors.js';
import { type NativeTensorHandle } from './native.js';
import { spladeBindings } from './bindings/splade_bindings.js';
import { type MaskInput, type TensorInput, runAsync, runSync, Operands } from './operand.js';
import { Tensor } from './tensor.js';
import { checkOptions, optionKeys } from './validate.js';

/** What {@link spladePool} returns: native Tensors the caller disposes. */
export interface SpladePoolResult {
  /** `[B, V]`: `max_t log1p(relu(logits[b, t, v]))` over unmasked tokens. */
  weights: Tensor<'f32'>;
  /** `[B, V]`: the token that holds each max (lowest on ties), -1 where the weight is 0. */
  argmax?: Tensor<'i32'>;
}

/** Options of {@link spladePool}. */
export interface SpladePoolOptions {
  /** `[B * L]` attention mask: nonzero = token used. */
  mask?: MaskInput;
  /** Return the arg-max tokens (needed by {@link spladePoolBackward}). */
  argmax?: boolean;
}

const poolKeys = optionKeys<SpladePoolOptions>()(['mask', 'argmax']);

type RawPool = { weights: NativeTensorHandle; argmax?: NativeTensorHandle };

function poolCall(ops: Operands, logits: TensorInput, o: SpladePoolOptions) {
  checkOptions(o, poolKeys, 'spladePool options');
  const x = ops.tensor(logits, 'logits');
  const mask = ops.mask(o.mask, 'mask');
  const be = backendOf([x], ['logits']);
  return (async: boolean) => be.spladePool(x.handle, auxOperand(be, mask, 'mask'), o.argmax === true, async);
}

function wrapPool(r: RawPool): SpladePoolResult {
  const out: SpladePoolResult = { weights: Tensor.fromHandle<'f32'>(r.weights) };
  if (r.argmax) out.argmax = Tensor.fromHandle<'i32'>(r.argmax);
  return out;
}

/**
 * SPLADE max pooling of MLM logits `[B, L, V]` (f32, bf16 or f16) into term weights `[B, V]`, in one
 * streaming pass over the logits.
 *
 * @example
 * const { weights } = await spladePool(logits, { mask: attentionMask });
 * const sparse = toSparseSync(weights, { topK: 256 });
 */
export async function spladePool(logits: TensorInput, options: SpladePoolOptions = {}): Promise<SpladePoolResult> {
  return runAsync((ops) => poolCall(ops, logits, options), wrapPool);
}

/**
 * {@link spladePool} on the calling thread.
 *
 * @example
 * const { weights } = spladePoolSync(logits, { mask: attentionMask });   // Tensor f32 [B, V]
 */
export function spladePoolSync(logits: TensorInput, options: SpladePoolOptions = {}): SpladePoolResult {
  return runSync((ops) => poolCall(ops, logits, options), wrapPool);
}

function backwardCall(ops: Operands, logits: TensorInput, argmax: Tensor<'i32'>, grad: TensorInput) {
  const x = ops.tensor(logits, 'logits');
  const g = ops.tensor(grad, 'grad');
  const be = backendOf([x, argmax, g], ['logits', 'argmax', 'grad']);
  return (async: boolean) => be.spladePoolBackward(x.handle, argmax.handle, g.handle, async);
}

/**
 * Gradient of the pooling with respect to the logits `[B, L, V]`: `grad[b, v] / (1 + x)` at the arg-max token,
 * 0 elsewhere and wherever the weight is 0.
 *
 * @example
 * const logits = Tensor.from(new Float32Array([1, -1, 0.5, 2]), [1, 2, 2]);   // B = 1, L = 2, V = 2
 * const { argmax } = await spladePool(logits, { argmax: true });            // argmax: [0, 1]
 * const d = await spladePoolBackward(logits, argmax!, Tensor.from(new Float32Array([1, 1]), [1, 2]));
 * d.data;   // [0.5, 0, 0, 0.333...]: 1 / (1 + 1) and 1 / (1 + 2) at the winning tokens
 */
export async function spladePoolBackward(logits: TensorInput, argmax: Tensor<'i32'>, grad: TensorInput): Promise<Tensor<'f32'>> {
  return runAsync(
    (ops) => backwardCall(ops, logits, argmax, grad),
    (h: NativeTensorHandle) => Tensor.fromHandle<'f32'>(h),
  );
}

/**
 * {@link spladePoolBackward} on the calling thread.
 *
 * @example
 * const dLogits = spladePoolBackwardSync(logits, argmax, dWeights);   // Tensor f32 [B, L, V]
 */
export function spladePoolBackwardSync(logits: TensorInput, argmax: Tensor<'i32'>, grad: TensorInput): Tensor<'f32'> {
  return runSync(
    (ops) => backwardCall(ops, logits, argmax, grad),
    (h: NativeTensorHandle) => Tensor.fromHandle<'f32'>(h),
  );
}

/** Which regularizer: FLOPS `sum_v (mean_b |w_bv|)^2` (over the batch) or L1 `mean_b sum_v |w_bv|`. */
export type SparseRegularizer = 'flops' | 'l1';

/** What {@link regularizer} returns. */
export interface RegularizerResult {
  /** The regularizer's value (summed in f64). */
  value: number;
  /** Same shape as the weights, when asked for. */
  grad?: Tensor<'f32'>;
}

const regularizerKeys = optionKeys<{ grad?: boolean }>()(['grad']);

function regCall(ops: Operands, weights: TensorInput, kind: SparseRegularizer, grad: boolean) {
  const core = spladeBindings();
  const w = ops.tensor(weights, 'weights');
  return (async: boolean) => core.spladeRegularizer(w.handle, kind, grad, async);
}

function wrapReg(r: { value: number; grad?: NativeTensorHandle }): RegularizerResult {
  return r.grad ? { value: r.value, grad: Tensor.fromHandle<'f32'>(r.grad) } : { value: r.value };
}

/**
 * The FLOPS or L1 regularizer of a batch of SPLADE weights `[B, V]` (f64 sums), with its gradient on request.
 * FLOPS is defined over the batch: it cannot be computed one example at a time.
 *
 * @example
 * const w = Tensor.from(new Float32Array([0, 1, 2, 0, 3, 0]), [2, 3]);
 * const { value, grad } = await regularizer(w, 'flops', { grad: true });
 * value;       // 5: column means 0, 2, 1, squared and summed
 * grad!.data;  // [0, 2, 1, 0, 2, 0]
 * (await regularizer(w, 'l1')).value;   // 3: (3 + 3) / 2
 */
export async function regularizer(
  weights: TensorInput,
  kind: SparseRegularizer,
  options: { grad?: boolean } = {},
): Promise<RegularizerResult> {
  checkOptions(options, regularizerKeys, 'regularizer options');
  return runAsync((ops) => regCall(ops, weights, kind, options.grad === true), wrapReg);
}

/**
 * {@link regularizer} on the calling thread.
 *
 * @example
 * regularizerSync(Tensor.from(new Float32Array([0, 1, 2, 0, 3, 0]), [2, 3]), 'flops').value;   // 5
 */
export function regularizerSync(weights: TensorInput, kind: SparseRegularizer, options: { grad?: boolean } = {}): RegularizerResult {
  checkOptions(options, regularizerKeys, 'regularizer options');
  return runSync((ops) => regCall(ops, weights, kind, options.grad === true), wrapReg);
}

/**
 * SPLADE's quadratic warm-up of a regularization weight (`RegWeightScheduler`): each {@link step} increments t
 * (capped at T) and sets `lambda_t = lambda * (t / T)^2`. Starts at 0; call `step()` once per training
 * iteration, before computing the loss.
 *
 * @example
 * const flops = new RegWeightScheduler(0.1, 4);   // reach 0.1 after 4 steps
 * flops.step();   // 0.00625
 * flops.step();   // 0.025
 */
export class RegWeightScheduler {
  private t = 0;
  constructor(
    readonly lambda: number,
    readonly T: number,
  ) {
    if (!(lambda >= 0) || !Number.isFinite(lambda)) throw new QuorumError('ERR_RANGE', 'lambda must be finite and >= 0');
    if (!Number.isInteger(T) || T < 1) throw new QuorumError('ERR_RANGE', 'T must be a positive integer');
  }
  /** The current weight. */
  get value(): number {
    return this.lambda * (this.t / this.T) ** 2;
  }
  /** Advances t by one (up to T) and returns the new weight. */
  step(): number {
    this.t = Math.min(this.t + 1, this.T);
    return this.value;
  }
}

/** Rows of sparse vectors (CSR): row r holds entries `offsets[r] .. offsets[r + 1]`, term ids ascending. */
export interface SparseVectors {
  /** `rows + 1` row starts into `indices` / `values`. */
  offsets: BigInt64Array;
  /** Term ids, ascending within a row. */
  indices: Int32Array;
  /** The weight of each term id. */
  values: Float32Array;
  /** Number of rows (`offsets.length - 1`). */
  readonly rows: number;
  /** Row r as `{ index, value }` pairs. */
  row(r: number): Array<{ index: number; value: number }>;
}

/** ERR_ARG unless `s` holds the three typed arrays of sparse vectors. */
function checkSparseVectors(s: unknown): void {
  const v = s as Partial<SparseVectors> | null;
  if (
    v === null ||
    typeof v !== 'object' ||
    !(v.offsets instanceof BigInt64Array) ||
    !(v.indices instanceof Int32Array) ||
    !(v.values instanceof Float32Array)
  )
    throw new QuorumError(
      'ERR_ARG',
      'sparse vectors need offsets: BigInt64Array, indices: Int32Array, values: Float32Array (see sparseVectors)',
    );
}

/**
 * Wraps CSR arrays as {@link SparseVectors} (no copy). ERR_ARG for arrays of the wrong types.
 *
 * @example
 * const v = sparseVectors(new BigInt64Array([0n, 2n]), new Int32Array([3, 17]), new Float32Array([0.5, 1.25]));
 * v.row(0);   // [{ index: 3, value: 0.5 }, { index: 17, value: 1.25 }]
 */
export function sparseVectors(offsets: BigInt64Array, indices: Int32Array, values: Float32Array): SparseVectors {
  checkSparseVectors({ offsets, indices, values });
  const rows = Math.max(0, offsets.length - 1);
  return {
    offsets,
    indices,
    values,
    rows,
    row(r: number) {
      if (!Number.isInteger(r) || r < 0 || r >= rows) throw new QuorumError('ERR_RANGE', `row ${r} is outside [0, ${rows})`);
      const out: Array<{ index: number; value: number }> = [];
      for (let i = Number(offsets[r]); i < Number(offsets[r + 1]); i++)
        out.push({ index: indices[i] as number, value: values[i] as number });
      return out;
    },
  };
}

/** Options of {@link toSparse}: threshold first, then top-k. */
export interface ToSparseOptions {
  /** Keep entries strictly above this value (default 0: every nonzero weight). */
  threshold?: number;
  /** Then keep only the topK largest per row (ties by lower term id); 0 = all. */
  topK?: number;
}

const toSparseKeys = optionKeys<ToSparseOptions>()(['threshold', 'topK']);

type RawSparse = { offsets: NativeTensorHandle; indices: NativeTensorHandle; values: NativeTensorHandle };

function sparseCall(ops: Operands, weights: TensorInput, o: ToSparseOptions) {
  checkOptions(o, toSparseKeys, 'toSparse options');
  const core = spladeBindings();
  const w = ops.tensor(weights, 'weights');
  return (async: boolean) => core.toSparse(w.handle, o.threshold ?? 0, o.topK ?? 0, async);
}

function wrapSparse(r: RawSparse): SparseVectors {
  return sparseVectors(
    Tensor.fromHandle<'i64'>(r.offsets).data,
    Tensor.fromHandle<'i32'>(r.indices).data,
    Tensor.fromHandle<'f32'>(r.values).data,
  );
}

/**
 * Sparse (index, value) rows from dense weights `[B, V]` by threshold and/or top-k.
 *
 * @example
 * const s = await toSparse(Tensor.from(new Float32Array([0, 0.2, 1.5, 0.7]), [1, 4]), { threshold: 0.1, topK: 2 });
 * s.row(0);   // [{ index: 2, value: 1.5 }, { index: 3, value: 0.7 }]
 */
export async function toSparse(weights: TensorInput, options: ToSparseOptions = {}): Promise<SparseVectors> {
  return runAsync((ops) => sparseCall(ops, weights, options), wrapSparse);
}

/**
 * {@link toSparse} on the calling thread.
 *
 * @example
 * toSparseSync(Tensor.from(new Float32Array([0, 0.2, 1.5, 0.7]), [1, 4]), { topK: 1 }).row(0);   // [{ index: 2, value: 1.5 }]
 */
export function toSparseSync(weights: TensorInput, options: ToSparseOptions = {}): SparseVectors {
  return runSync((ops) => sparseCall(ops, weights, options), wrapSparse);
}

/** @internal The three arrays of sparse rows as operand Tensors (offsets i64, indices i32, values f32). */
export function sparseTensors(ops: Operands, s: SparseVectors): [Tensor, Tensor, Tensor] {
  checkSparseVectors(s);
  return [
    ops.typed(s.offsets, [s.offsets.length], 'i64'),
    ops.typed(s.indices, [s.indices.length], 'i32'),
    ops.typed(s.values, [s.values.length], 'f32'),
  ];
}

function sparseScoresCall(ops: Operands, a: SparseVectors, b: SparseVectors) {
  const core = spladeBindings();
  const [ao, ai, av] = sparseTensors(ops, a);
  const [bo, bi, bv] = sparseTensors(ops, b);
  return (async: boolean) => core.sparseScores(ao.handle, ai.handle, av.handle, bo.handle, bi.handle, bv.handle, async);
}

const asF32 = (h: NativeTensorHandle) => Tensor.fromHandle<'f32'>(h);

/**
 * Dot products of every row of `a` with every row of `b`: `[a.rows, b.rows]`.
 *
 * @example
 * const a = await toSparse(Tensor.from(new Float32Array([1, 0, 2]), [1, 3]));
 * const b = await toSparse(Tensor.from(new Float32Array([0, 0, 1, 3, 0, 0.5]), [2, 3]));
 * (await sparseScores(a, b)).data;   // [2, 4]
 */
export async function sparseScores(a: SparseVectors, b: SparseVectors): Promise<Tensor<'f32'>> {
  return runAsync((ops) => sparseScoresCall(ops, a, b), asF32);
}

/**
 * {@link sparseScores} on the calling thread.
 *
 * @example
 * sparseScoresSync(a, b).data;   // [a.rows * b.rows] dot products
 */
export function sparseScoresSync(a: SparseVectors, b: SparseVectors): Tensor<'f32'> {
  return runSync((ops) => sparseScoresCall(ops, a, b), asF32);
}

function sparseDenseCall(ops: Operands, a: SparseVectors, dense: TensorInput) {
  const core = spladeBindings();
  const [ao, ai, av] = sparseTensors(ops, a);
  const d = ops.tensor(dense, 'dense');
  return (async: boolean) => core.sparseDenseScores(ao.handle, ai.handle, av.handle, d.handle, async);
}

/**
 * Dot products of sparse rows with dense rows `[N, V]` (f32): `[a.rows, N]`.
 *
 * @example
 * const a = await toSparse(Tensor.from(new Float32Array([1, 0, 2]), [1, 3]));
 * (await sparseDenseScores(a, Tensor.from(new Float32Array([0, 0, 1, 3, 0, 0.5]), [2, 3]))).data;   // [2, 4]
 */
export async function sparseDenseScores(a: SparseVectors, dense: TensorInput): Promise<Tensor<'f32'>> {
  return runAsync((ops) => sparseDenseCall(ops, a, dense), asF32);
}

/**
 * {@link sparseDenseScores} on the calling thread.
 *
 * @example
 * sparseDenseScoresSync(a, denseRows).data;   // [a.rows * N] dot products
 */
export function sparseDenseScoresSync(a: SparseVectors, dense: TensorInput): Tensor<'f32'> {
  return runSync((ops) => sparseDenseCall(ops, a, dense), asF32);
}
