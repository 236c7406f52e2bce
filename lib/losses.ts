// InfoNCE with in-batch and hard negatives (DPR form), docs/methods/kernels.md#infonce. Contract: native/kernels/infonce.h.
import { auxOperand, backendOf } from './cuda.js';
import type { LossBindings } from './bindings/loss_bindings.js';
import { type Int32Input, type TensorInput, runAsync, runSync, Operands } from './operand.js';
import { Tensor } from './tensor.js';
import { checkOptions, optionKeys } from './validate.js';

/** Options of {@link infoNce}. */
export interface InfoNceOptions {
  /** Divides the scores (DPR: 1; TASER cosine: 0.01). Default 1. */
  temperature?: number;
  /** Score with cosine similarity (rows L2-normalised as F.normalize, eps 1e-12) instead of the dot product. */
  cosine?: boolean;
  /** Per-row loss weights `[B]` (CAME's specialized loss): `L = (1/B) sum_i w_i l_i`. */
  weights?: Tensor<'f32'> | Float32Array | readonly number[];
  /** Compute dQ and dP (default true). */
  grad?: boolean;
}

/** What {@link infoNce} returns: the Tensors are native and the caller disposes them. */
export interface InfoNceResult {
  /** Mean (weighted) loss. */
  loss: number;
  /** Fraction of rows whose positive ranks first. */
  accuracy: number;
  /** Per-row loss `logsumexp_j a_ij - a_i,pos` (unweighted), `[B]`. */
  rowLoss: Tensor<'f32'>;
  /** Rank of each row's positive, 1 = best: `1 + #{j : a_ij > a_i,pos}` (ties count in the positive's favour). */
  rank: Tensor<'i32'>;
  /** dL/dQ `[B, D]`, unless `grad: false`. */
  dQ?: Tensor<'f32'>;
  /** dL/dP `[M, D]`, unless `grad: false`. */
  dP?: Tensor<'f32'>;
}

type Raw = Awaited<ReturnType<LossBindings['infoNce']>>;

const infoNceKeys = optionKeys<InfoNceOptions>()(['temperature', 'cosine', 'weights', 'grad']);

function call(ops: Operands, queries: TensorInput, passages: TensorInput, positives: Int32Input, o: InfoNceOptions) {
  checkOptions(o, infoNceKeys, 'infoNce options');
  const q = ops.tensor(queries, 'queries');
  const p = ops.tensor(passages, 'passages');
  const pos = ops.int32(positives, 'positives');
  const w = o.weights === undefined ? undefined : ops.f32Vector(o.weights, 'weights');
  const be = backendOf([q, p], ['queries', 'passages']);
  return (async: boolean) =>
    be.infoNce(
      q.handle,
      p.handle,
      auxOperand(be, pos, 'positives')!,
      auxOperand(be, w, 'weights'),
      o.temperature ?? 1,
      o.cosine === true,
      o.grad !== false,
      async,
    );
}

function wrap(r: Raw): InfoNceResult {
  const out: InfoNceResult = {
    loss: r.loss,
    accuracy: r.accuracy,
    rowLoss: Tensor.fromHandle<'f32'>(r.rowLoss),
    rank: Tensor.fromHandle<'i32'>(r.rank),
  };
  if (r.dQ) out.dQ = Tensor.fromHandle<'f32'>(r.dQ);
  if (r.dP) out.dP = Tensor.fromHandle<'f32'>(r.dP);
  return out;
}

/**
 * The DPR contrastive loss of queries `[B, D]` against passages `[M, D]` (every passage is a candidate for
 * every query: in-batch and hard negatives), with its gradients. `positives[i]` is the index of row i's
 * positive passage: always explicit, never an assumed stride.
 *
 * @example
 * // passages = [pos_0, hard_0, pos_1, hard_1, ...]
 * const r = await infoNce(q, p, Int32Array.from({ length: B }, (_, i) => 2 * i));
 * r.loss; r.dQ; r.dP;
 */
export async function infoNce(
  queries: TensorInput,
  passages: TensorInput,
  positives: Int32Input,
  options: InfoNceOptions = {},
): Promise<InfoNceResult> {
  return runAsync((ops) => call(ops, queries, passages, positives, options), wrap);
}

/**
 * {@link infoNce} on the calling thread.
 *
 * @example
 * const { loss, accuracy } = infoNceSync(q, p, Int32Array.from({ length: B }, (_, i) => 2 * i), { grad: false });
 */
export function infoNceSync(
  queries: TensorInput,
  passages: TensorInput,
  positives: Int32Input,
  options: InfoNceOptions = {},
): InfoNceResult {
  return runSync((ops) => call(ops, queries, passages, positives, options), wrap);
}
