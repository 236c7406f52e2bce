// Turns the inputs the public API accepts (Tensors, typed arrays with a shape, plain arrays for small index
// and mask vectors) into Tensors for the native calls. The Sync forms borrow typed arrays; the Promise forms copy
// them (see launchAsync); masks given in another type than Uint8Array are converted (one byte per entry).
import { type AnyTypedArray, type Dtype } from './dtype.js';
import { QuorumError, awaitNative, callNative } from './errors.js';
import { type NativeTensorHandle } from './native.js';
import { Tensor } from './tensor.js';
import { int64 } from './validate.js';

/** A tensor operand: a {@link Tensor}, or a typed array with its shape (and dtype for 16-bit floats). */
export type TensorInput = Tensor | { data: AnyTypedArray; shape: readonly number[]; dtype?: Dtype };

/** A per-entry mask: nonzero (or true) = use the entry. */
export type MaskInput = Tensor<'u8'> | Uint8Array | ArrayLike<number | boolean>;

/** Small i32 vectors (positives, lengths): an Int32Array, a number array or an i32 Tensor. */
export type Int32Input = Tensor<'i32'> | Int32Array | readonly number[];

// Promise forms read their operands off the main thread. A plain typed array's memory can be taken from under
// them there: its buffer transferred (postMessage, structuredClone) and the new owner collected, and the worker
// would read freed memory. So while a Promise form builds its operands, plain typed arrays are copied into native
// memory. A Tensor is read in place: it is pinned, and a dispose() meanwhile waits for the work to end.
let asyncDepth = 0;

/** Runs `launch`, which builds a Promise form's operands and queues its work, with plain typed arrays copied. */
export function launchAsync<T>(launch: () => T): T {
  asyncDepth++;
  try {
    return launch();
  } finally {
    asyncDepth--;
  }
}

/** A typed array as an operand Tensor: borrowed by the Sync forms, copied inside {@link launchAsync}. */
export function operandOf(data: AnyTypedArray, shape: readonly number[], dtype?: Dtype): Tensor {
  return asyncDepth > 0 ? Tensor.from(data as never, shape, dtype as never) : Tensor.wrap(data as never, shape, dtype as never);
}

/**
 * Awaits `run` (a call another addon, faiss or libtorch, makes off the main thread on `tensors`' memory) with those
 * Tensors pinned, so that a dispose() meanwhile frees them only after the call.
 */
export async function whilePinned<R>(tensors: ReadonlyArray<Tensor | undefined>, run: () => Promise<R>): Promise<R> {
  const pinned: Tensor[] = [];
  try {
    for (const t of tensors) {
      if (!t) continue;
      callNative(() => t.handle.pin());
      pinned.push(t);
    }
    return await run();
  } finally {
    for (const t of pinned) t.handle.unpin();
  }
}

/** A typed array another addon reads as is (faiss, libtorch): itself, or a copy inside {@link launchAsync}. */
export function plainOperand<A extends AnyTypedArray>(data: A): A {
  return asyncDepth > 0 ? (data.slice() as A) : data;
}

export function tensorOf(input: TensorInput, what: string): Tensor {
  if (input instanceof Tensor) return input;
  if (input && typeof input === 'object' && 'data' in input && 'shape' in input) {
    return operandOf(input.data, input.shape, input.dtype);
  }
  throw new QuorumError('ERR_ARG', `${what} must be a Tensor or { data, shape }`);
}

export function f32VectorOf(input: Tensor<'f32'> | Float32Array | readonly number[], what: string): Tensor {
  if (input instanceof Tensor) return input;
  if (input instanceof Float32Array) return operandOf(input, [input.length], 'f32');
  if (Array.isArray(input)) return Tensor.from(input, [input.length], 'f32');
  throw new QuorumError('ERR_ARG', `${what} must be a Float32Array, a number array or an f32 Tensor`);
}

export function int32Of(input: Int32Input, what: string): Tensor {
  if (input instanceof Tensor) return input;
  if (input instanceof Int32Array) return operandOf(input, [input.length], 'i32');
  if (Array.isArray(input)) return Tensor.from(input, [input.length], 'i32');
  throw new QuorumError('ERR_ARG', `${what} must be an Int32Array, a number array or an i32 Tensor`);
}

export function maskOf(mask: MaskInput | undefined, what: string): Tensor | undefined {
  if (mask === undefined) return undefined;
  if (mask instanceof Tensor) return mask;
  if (mask instanceof Uint8Array) return operandOf(mask, [mask.length], 'u8');
  if (mask && typeof mask === 'object' && 'length' in mask) {
    const out = new Uint8Array(mask.length);
    for (let i = 0; i < mask.length; i++) out[i] = mask[i] ? 1 : 0;
    return Tensor.wrap(out, [out.length], 'u8');
  }
  throw new QuorumError('ERR_ARG', `${what} must be a Uint8Array, an array of numbers or booleans, or a u8 Tensor`);
}

/**
 * Ids for n items as a BigInt64Array (borrowed when it already is one); ERR_SHAPE when the count differs.
 * Every entry must be an integer that fits a signed 64-bit id: a safe-integer number or a bigint. Anything else
 * is an error rather than a silent conversion (BigInt64Array.from wraps 2^64 + 5 to 5; BigInt(1.7) throws a
 * RangeError).
 */
export function idsOf(ids: BigInt64Array | ArrayLike<number | bigint>, n: number): BigInt64Array {
  let out: BigInt64Array;
  if (ids instanceof BigInt64Array) {
    out = ids;
  } else {
    if (ids === null || typeof ids !== 'object' || typeof (ids as { length?: unknown }).length !== 'number')
      throw new QuorumError('ERR_ARG', 'ids must be a BigInt64Array or an array of integers');
    out = new BigInt64Array(ids.length);
    for (let i = 0; i < ids.length; i++) out[i] = int64(ids[i], `ids[${i}]`);
  }
  if (out.length !== n) throw new QuorumError('ERR_SHAPE', `${out.length} ids for ${n} items`);
  return out;
}

/**
 * Runs one native kernel call in its Sync or Promise form. `call(async)` makes the native call; `wrap` turns
 * its raw result into the public one.
 */
export function runSync<R>(call: (async: boolean) => unknown, wrap: (raw: never) => R): R {
  return wrap(callNative(() => call(false)) as never);
}

/**
 * The Promise form: `operands()` builds the call inside {@link launchAsync} (plain typed arrays copied), then it is
 * queued off the main thread.
 */
export async function runAsync<R>(operands: () => (async: boolean) => unknown, wrap: (raw: never) => R): Promise<R> {
  const p = launchAsync(() => callNative(() => operands()(true))) as Promise<unknown>;
  return wrap((await awaitNative(p)) as never);
}

/**
 * Row `row` of a padded `[rows, k]` top-k result as `{ id, score }` pairs, best first, stopping at the first
 * padding slot (id < 0). Out-of-range rows are ERR_RANGE.
 */
export function rowHits<I extends number | bigint>(
  ids: ArrayLike<I>,
  scores: ArrayLike<number>,
  rows: number,
  k: number,
  row: number,
): Array<{ id: I; score: number }> {
  if (!Number.isInteger(row) || row < 0 || row >= rows) throw new QuorumError('ERR_RANGE', `row ${row} is outside [0, ${rows})`);
  const out: Array<{ id: I; score: number }> = [];
  for (let j = 0; j < k; j++) {
    const id = ids[row * k + j] as I;
    if (id < 0) break;
    out.push({ id, score: scores[row * k + j] as number });
  }
  return out;
}

export function handleOf(t: Tensor | undefined): NativeTensorHandle | null {
  return t ? t.handle : null;
}
