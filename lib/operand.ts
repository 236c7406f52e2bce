// Turns the inputs the public API accepts (Tensors, typed arrays with a shape, plain arrays for small index
// and mask vectors) into Tensors for the native calls. Whether plain typed arrays are borrowed or copied is the
// calling form's (Operands); masks given in another type than Uint8Array are converted (one byte per entry).
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

/**
 * How a call takes plain typed arrays, decided by its calling form and passed to the code that builds its operands.
 * A Sync form borrows them ({@link Operands.borrowed}): the caller's thread is the one reading. A Promise form reads
 * them off the main thread, where a plain typed array's memory can be taken from under it (its buffer transferred
 * by postMessage or structuredClone, the new owner collected), so it copies them into native memory
 * ({@link Operands.copied}). A Tensor is read in place either way: it is pinned, and a dispose() meanwhile waits
 * for the work to end. {@link runSync} and {@link runAsync} hand the builder the right one; a call that builds its
 * operands itself names it.
 */
export class Operands {
  private constructor(
    /** Whether plain typed arrays are copied. */
    readonly copy: boolean,
  ) {}

  /** The Sync forms': plain typed arrays borrowed. */
  static readonly borrowed = new Operands(false);
  /** The Promise forms': plain typed arrays copied. */
  static readonly copied = new Operands(true);

  /** A typed array as an operand Tensor (borrowed or copied). */
  typed(data: AnyTypedArray, shape: readonly number[], dtype?: Dtype): Tensor {
    return this.copy ? Tensor.from(data as never, shape, dtype as never) : Tensor.wrap(data as never, shape, dtype as never);
  }

  /** A typed array another addon reads as is (faiss, libtorch): itself, or a copy. */
  plain<A extends AnyTypedArray>(data: A): A {
    return this.copy ? (data.slice() as A) : data;
  }

  /** A {@link TensorInput} as a Tensor. */
  tensor(input: TensorInput, what: string): Tensor {
    if (input instanceof Tensor) return input;
    if (input && typeof input === 'object' && 'data' in input && 'shape' in input) return this.typed(input.data, input.shape, input.dtype);
    throw new QuorumError('ERR_ARG', `${what} must be a Tensor or { data, shape }`);
  }

  /** An f32 vector: an f32 Tensor, a Float32Array or a number array. */
  f32Vector(input: Tensor<'f32'> | Float32Array | readonly number[], what: string): Tensor {
    if (input instanceof Tensor) return input;
    if (input instanceof Float32Array) return this.typed(input, [input.length], 'f32');
    if (Array.isArray(input)) return Tensor.from(input, [input.length], 'f32');
    throw new QuorumError('ERR_ARG', `${what} must be a Float32Array, a number array or an f32 Tensor`);
  }

  /** A small i32 vector (positives, lengths). */
  int32(input: Int32Input, what: string): Tensor {
    if (input instanceof Tensor) return input;
    if (input instanceof Int32Array) return this.typed(input, [input.length], 'i32');
    if (Array.isArray(input)) return Tensor.from(input, [input.length], 'i32');
    throw new QuorumError('ERR_ARG', `${what} must be an Int32Array, a number array or an i32 Tensor`);
  }

  /** A per-entry mask; other types than Uint8Array are converted (one byte per entry). */
  mask(mask: MaskInput | undefined, what: string): Tensor | undefined {
    if (mask === undefined) return undefined;
    if (mask instanceof Tensor) return mask;
    if (mask instanceof Uint8Array) return this.typed(mask, [mask.length], 'u8');
    if (mask && typeof mask === 'object' && 'length' in mask) {
      const out = new Uint8Array(mask.length);
      for (let i = 0; i < mask.length; i++) out[i] = mask[i] ? 1 : 0;
      return Tensor.wrap(out, [out.length], 'u8');
    }
    throw new QuorumError('ERR_ARG', `${what} must be a Uint8Array, an array of numbers or booleans, or a u8 Tensor`);
  }
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

/** A native call from one definition: `build(ops)` checks the arguments, makes the operands and returns the call. */
type NativeCall = (ops: Operands) => (async: boolean) => unknown;

/** The Sync form of a {@link NativeCall}: operands borrowed, run on the calling thread; `wrap` makes the result. */
export function runSync<R>(build: NativeCall, wrap: (raw: never) => R): R {
  return wrap(callNative(() => build(Operands.borrowed)(false)) as never);
}

/**
 * The Promise form of the same {@link NativeCall}: operands copied, queued off the main thread. Bad arguments reject
 * (the build runs inside the Promise).
 */
export async function runAsync<R>(build: NativeCall, wrap: (raw: never) => R): Promise<R> {
  const p = callNative(() => build(Operands.copied)(true)) as Promise<unknown>;
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
