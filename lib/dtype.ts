/** Element types of a {@link Tensor}. bf16 and f16 are stored as raw 16-bit patterns (Uint16Array views). */
export type Dtype = 'f32' | 'bf16' | 'f16' | 'i32' | 'i64' | 'u8';

/** The typed array a tensor of each dtype exposes. */
export interface TypedArrayOf {
  /** 32-bit floats. */
  f32: Float32Array;
  /** bfloat16 bit patterns (the high half of an f32). */
  bf16: Uint16Array;
  /** IEEE half-precision bit patterns. */
  f16: Uint16Array;
  /** 32-bit signed integers (ids, lengths). */
  i32: Int32Array;
  /** 64-bit signed integers (ids from torch or faiss). */
  i64: BigInt64Array;
  /** Bytes: masks (0 or 1) and q8 storage. */
  u8: Uint8Array;
}

/** Any typed array a {@link Tensor} can wrap or expose. */
export type AnyTypedArray = TypedArrayOf[Dtype];

/** Codes shared with native/common/dtype.h. */
export const dtypeCode: Readonly<Record<Dtype, number>> = { f32: 0, bf16: 1, f16: 2, i32: 3, i64: 4, u8: 5 };
export const dtypeNames: readonly Dtype[] = ['f32', 'bf16', 'f16', 'i32', 'i64', 'u8'];

export function isDtype(x: unknown): x is Dtype {
  return typeof x === 'string' && (dtypeNames as readonly string[]).includes(x);
}

/** The dtype a typed array holds by default (Uint16Array is taken as bf16). */
export function dtypeOfArray(a: ArrayBufferView): Dtype | undefined {
  if (a instanceof Float32Array) return 'f32';
  if (a instanceof Uint16Array) return 'bf16';
  if (a instanceof Int32Array) return 'i32';
  if (a instanceof BigInt64Array) return 'i64';
  if (a instanceof Uint8Array) return 'u8';
  return undefined;
}

export function viewOf<D extends Dtype>(dtype: D, buffer: ArrayBuffer): TypedArrayOf[D] {
  switch (dtype) {
    case 'f32':
      return new Float32Array(buffer) as TypedArrayOf[D];
    case 'bf16':
    case 'f16':
      return new Uint16Array(buffer) as TypedArrayOf[D];
    case 'i32':
      return new Int32Array(buffer) as TypedArrayOf[D];
    case 'i64':
      return new BigInt64Array(buffer) as TypedArrayOf[D];
    default:
      return new Uint8Array(buffer) as TypedArrayOf[D];
  }
}
