import { type AnyTypedArray, type Dtype, type TypedArrayOf, dtypeCode, dtypeNames, dtypeOfArray, isDtype, viewOf } from './dtype.js';
import { QuorumError, awaitNative, callNative } from './errors.js';
import { cudaBindings } from './bindings/cuda_addon.js';
import { type NativeTensorHandle } from './native.js';
import { tensorFileBindings } from './bindings/tensor_file_bindings.js';
import { tensorObject } from './bindings/tensor_object.js';
import { denseBindings } from './bindings/dense_bindings.js';
import { int64 } from './validate.js';
import { elementCount } from './shape.js';
import { brandClass } from './brand.js';

/**
 * Where a tensor's memory lives: 'cpu' (native memory, zero-copy `data`) or 'cuda' (GPU memory, read through
 * `.to('cpu')`). Kernels run where their operands are.
 */
export type Device = 'cpu' | 'cuda';

const isDevice = (x: unknown): x is Device => x === 'cpu' || x === 'cuda';

const INT_RANGE: Partial<Record<Dtype, [number, number]>> = { i32: [-(2 ** 31), 2 ** 31 - 1], u8: [0, 255] };

/**
 * Values of another type than the dtype's own typed array, checked (a typed array's set() would turn a string
 * into NaN, truncate 1.7 to 1 and wrap 2^32 + 3 to 3) and, for i64, converted to bigints.
 */
function checkedValues(values: ArrayLike<unknown>, dtype: Dtype): ArrayLike<number | bigint> {
  const range = INT_RANGE[dtype];
  if (dtype === 'i64') return Array.from({ length: values.length }, (_, i) => int64(values[i], `value ${i}`));
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'number') throw new QuorumError('ERR_ARG', `value ${i} must be a number, got ${typeof v}`);
    if (range && !(Number.isInteger(v) && v >= range[0] && v <= range[1]))
      throw new QuorumError('ERR_RANGE', `value ${i} (${v}) is not an integer in [${range[0]}, ${range[1]}] for ${dtype}`);
  }
  return values as ArrayLike<number>;
}

/**
 * An n-dimensional array in native memory (64-byte aligned), or borrowing a JS typed array without a copy.
 * `data` is a zero-copy typed-array view. Free it early with `dispose()` (or `using`); otherwise GC frees it.
 *
 * @example
 * const corpus = Tensor.from(vectors, [n, 768]);          // copies once into native memory
 * const half = corpus.to('bf16');                         // half the bytes, half the memory traffic
 * const q = Tensor.wrap(new Float32Array(768), [1, 768]); // borrows, no copy
 * corpus.data[0] = 1.5;                                   // writes straight into native memory
 * const gpu = await half.toAsync('cuda');                 // a copy in GPU memory (where a GPU is present)
 * corpus.dispose();
 */
export class Tensor<D extends Dtype = Dtype> {
  /** @internal */
  readonly handle: NativeTensorHandle;
  /** Element type: 'f32', 'bf16', 'f16', 'i32', 'i64' or 'u8'. */
  readonly dtype: D;
  /** Dimensions, outermost first (frozen). */
  readonly shape: readonly number[];
  #view: TypedArrayOf[D] | undefined;
  readonly #size: number;

  /** @internal Use the static factories. */
  constructor(handle: NativeTensorHandle) {
    this.handle = handle;
    this.dtype = dtypeNames[handle.dtype] as D;
    this.shape = Object.freeze(handle.shape.slice());
    this.#size = elementCount(this.shape);
  }

  /** A zero-filled tensor in native memory. */
  static zeros<D extends Dtype = 'f32'>(shape: readonly number[], dtype: D = 'f32' as D): Tensor<D> {
    checkDtype(dtype);
    const core = tensorObject();
    return new Tensor<D>(callNative(() => new core.NativeTensor(dtypeCode[dtype], shape)));
  }

  /**
   * A tensor in native memory holding a copy of `values`. Without `dtype`, a typed array keeps its own
   * (Int32Array is i32, BigInt64Array i64, Uint8Array u8, Uint16Array raw bf16 bits, as in {@link Tensor.wrap});
   * numbers and Float32Array / Float64Array give f32. For bf16 and f16, numbers (or a Float32Array) are
   * rounded to nearest even; a Uint16Array is taken as raw bit patterns.
   *
   * @example
   * const positives = Tensor.from(Int32Array.of(0, 2, 4), [3]);  // i32
   * const q = Tensor.from([0.1, 0.2, 0.3, 0.4], [2, 2]);          // f32
   * const h = Tensor.from(q.data, [2, 2], 'f16');                 // rounded to f16
   */
  static from(values: Int32Array, shape: readonly number[]): Tensor<'i32'>;
  static from(values: BigInt64Array, shape: readonly number[]): Tensor<'i64'>;
  static from(values: Uint8Array, shape: readonly number[]): Tensor<'u8'>;
  static from(values: Uint16Array, shape: readonly number[]): Tensor<'bf16'>;
  static from<D extends Dtype = 'f32'>(
    values: ArrayLike<number> | ArrayLike<bigint> | AnyTypedArray,
    shape: readonly number[],
    dtype?: D,
  ): Tensor<D>;
  static from<D extends Dtype>(
    values: ArrayLike<number> | ArrayLike<bigint> | AnyTypedArray,
    shape: readonly number[],
    dtypeArg?: D,
  ): Tensor<D> {
    if (values === null || typeof values !== 'object' || typeof (values as { length?: unknown }).length !== 'number')
      throw new QuorumError('ERR_ARG', 'Tensor.from needs an array or a typed array of values');
    const own = ArrayBuffer.isView(values) ? dtypeOfArray(values) : undefined; // undefined for Float64Array
    const dtype = (dtypeArg ?? own ?? 'f32') as D;
    checkDtype(dtype);
    if (own !== dtype) values = checkedValues(values, dtype) as ArrayLike<number>;
    // The count first: a shape of 2^31 rows over 4 values would allocate (and zero) gigabytes before the refusal.
    if (Array.isArray(shape) && shape.every((d) => Number.isSafeInteger(d) && d >= 0) && elementCount(shape) !== values.length)
      throw new QuorumError('ERR_SHAPE', `${values.length} values given, shape [${shape.join(', ')}] needs ${elementCount(shape)}`);
    const half = dtype === 'bf16' || dtype === 'f16';
    if (half && !(values instanceof Uint16Array)) {
      const f32 = values instanceof Float32Array ? values : Float32Array.from(values as ArrayLike<number>);
      const src = Tensor.wrap(f32, shape, 'f32');
      try {
        return src.to(dtype);
      } finally {
        src.dispose();
      }
    }
    const t = Tensor.zeros(shape, dtype);
    if (values.length !== t.size) {
      t.dispose();
      throw new QuorumError('ERR_SHAPE', `${values.length} values given, shape [${shape.join(', ')}] needs ${t.size}`);
    }
    (t.data as unknown as { set(a: ArrayLike<number | bigint>): void }).set(values);
    return t;
  }

  /**
   * A tensor that borrows `data` (no copy): kernels read and write the typed array's memory directly. The
   * array stays referenced for as long as the tensor lives. Uint16Array is bf16 unless `dtype` says 'f16'.
   * Do not transfer or detach the array's buffer while a Promise call uses the tensor (the API's own operands are
   * copied for Promise calls; a tensor you wrap yourself is not): use {@link Tensor.from} to copy once instead.
   */
  static wrap<D extends Dtype>(data: TypedArrayOf[D], shape: readonly number[], dtype?: D): Tensor<D> {
    const dt = dtype ?? (dtypeOfArray(data) as D | undefined);
    if (!dt)
      throw new QuorumError('ERR_DTYPE', 'unsupported typed array: use Float32Array, Uint16Array, Int32Array, BigInt64Array or Uint8Array');
    checkDtype(dt);
    const core = tensorObject();
    return new Tensor<D>(callNative(() => new core.NativeTensor(dtypeCode[dt], shape, data)));
  }

  /** @internal Wraps a handle returned by a kernel. */
  static fromHandle<D extends Dtype>(handle: NativeTensorHandle): Tensor<D> {
    return new Tensor<D>(handle);
  }

  /** Where the elements live: 'cpu', or 'cuda' after {@link Tensor.to | to('cuda')}. */
  get device(): Device {
    return this.handle.device as Device;
  }

  /** Number of elements. */
  get size(): number {
    return this.#size;
  }

  /** True after {@link Tensor.dispose}; any use then throws ERR_DISPOSED. */
  get disposed(): boolean {
    return this.handle.disposed;
  }

  /**
   * Zero-copy view of the elements. Throws ERR_DISPOSED after dispose(). Cheap to call in a loop: after the
   * first call it is a field read (disposing detaches native memory, so a live view is never a freed one).
   */
  get data(): TypedArrayOf[D] {
    const v = this.#view;
    if (v !== undefined && v.length !== 0) return v;
    if (this.handle.disposed) throw new QuorumError('ERR_DISPOSED', 'tensor was disposed');
    if (!this.#view) {
      const b = callNative(() => this.handle.buffer());
      this.#view = (ArrayBuffer.isView(b) ? b : viewOf(this.dtype, b)) as TypedArrayOf[D];
    }
    return this.#view;
  }

  /** Elements as plain numbers (bf16 and f16 decoded), copied. */
  toArray(): number[] {
    if (this.device !== 'cpu') {
      const host = this.to('cpu');
      try {
        return host.toArray();
      } finally {
        host.dispose();
      }
    }
    if (this.dtype === 'bf16' || this.dtype === 'f16') {
      const f = this.to('f32');
      try {
        return Array.from(f.data as Float32Array);
      } finally {
        f.dispose();
      }
    }
    return Array.from(this.data as ArrayLike<number | bigint>, Number);
  }

  /**
   * A new tensor converted to `dtype` (f32, bf16, f16; round to nearest even), or copied to `device` ('cpu' or
   * 'cuda'; ERR_BACKEND_UNAVAILABLE where there is no usable GPU). Always a new tensor, even when nothing changes.
   *
   * @example
   * const onGpu = corpus.to('cuda');
   * const back = onGpu.to('cpu');
   */
  to<T extends Dtype>(dtype: T): Tensor<T>;
  to(device: Device): Tensor<D>;
  to(target: Dtype | Device): Tensor {
    return this.#to(target, false) as Tensor;
  }

  /** {@link Tensor.to} off the main thread. */
  async toAsync<T extends Dtype>(dtype: T): Promise<Tensor<T>>;
  async toAsync(device: Device): Promise<Tensor<D>>;
  async toAsync(target: Dtype | Device): Promise<Tensor> {
    return this.#to(target, true);
  }

  #to(target: Dtype | Device, async: boolean): Tensor | Promise<Tensor> {
    if (isDevice(target)) return this.#move(target, async);
    checkDtype(target);
    const m = this.device === 'cuda' ? cudaBindings() : denseBindings();
    const h = callNative(() => m.convert(this.handle, dtypeCode[target], async));
    return h instanceof Promise ? awaitNative(h).then((x) => new Tensor(x)) : new Tensor(h);
  }

  #move(device: Device, async: boolean): Tensor | Promise<Tensor> {
    if (this.handle.disposed) throw new QuorumError('ERR_DISPOSED', 'tensor was disposed');
    if (device === 'cuda') {
      const m = cudaBindings();
      if (this.device === 'cuda') return this.#to(this.dtype, async);
      if (!async) return new Tensor(callNative(() => m.upload(dtypeCode[this.dtype], this.shape, this.data, false)) as NativeTensorHandle);
      // The copy reads this tensor's memory off the main thread: pinned, a dispose() meanwhile defers the free.
      this.handle.pin();
      let h: Promise<NativeTensorHandle>;
      try {
        h = callNative(() => m.upload(dtypeCode[this.dtype], this.shape, this.data, true)) as Promise<NativeTensorHandle>;
      } catch (e) {
        this.handle.unpin();
        throw e;
      }
      return awaitNative(h)
        .then((x) => new Tensor(x))
        .finally(() => this.handle.unpin());
    }
    const host = Tensor.zeros(this.shape, this.dtype);
    if (this.device === 'cpu') {
      (host.data as unknown as { set(a: ArrayLike<number | bigint>): void }).set(this.data as ArrayLike<number | bigint>);
      return host;
    }
    const m = cudaBindings();
    let done: unknown;
    try {
      done = callNative(() => m.download(this.handle, host.data, async));
    } catch (e) {
      host.dispose();
      throw e;
    }
    return done instanceof Promise
      ? awaitNative(done).then(
          () => host,
          (e: unknown) => {
            host.dispose();
            throw e;
          },
        )
      : host;
  }

  /**
   * Writes the tensor to a file that {@link Tensor.map} opens without reading it (docs/api.md#mapped-tensor-files):
   * a header with the dtype, the shape and a checksum, then the data at a page boundary. Written atomically off the
   * main thread (a temporary file, fsync, rename), so a process that maps the old file keeps it intact. ERR_IO on
   * failure.
   *
   * @example
   * await corpus.save('corpus.qtns');
   */
  async save(path: string): Promise<void> {
    if (typeof path !== 'string' || path.length === 0) throw new QuorumError('ERR_ARG', 'save needs a file path');
    if (this.device !== 'cpu') throw new QuorumError('ERR_UNSUPPORTED', "save a cpu tensor: move it with .to('cpu') first");
    const core = tensorFileBindings();
    await awaitNative(callNative(() => core.saveTensorFile(this.handle, path, true)) as Promise<object>);
  }

  /**
   * A tensor over a file from {@link Tensor.save}, mapped rather than read: opening costs a header read whatever the
   * size, pages load as they are first touched, and every process that maps the file shares one copy of it in the
   * page cache (N server workers, one corpus in memory). The mapping is copy-on-write: a write through `data` stays in
   * this process, the file never changes. The header is checked (ERR_FORMAT for a foreign, corrupt, truncated or
   * extended file); the data only with `verify: true`, which reads all of it off the main thread. dispose() unmaps it.
   * The file must not be modified in place while mapped (Tensor.save replaces it by rename, which is safe).
   *
   * @example
   * const corpus = await Tensor.map('corpus.qtns');
   * const { ids } = await scoreTopK(queries, corpus, 10);
   */
  static async map(path: string, options: { verify?: boolean } = {}): Promise<Tensor> {
    if (typeof path !== 'string' || path.length === 0) throw new QuorumError('ERR_ARG', 'map needs a file path');
    if (options === null || typeof options !== 'object') throw new QuorumError('ERR_ARG', 'map options must be an object');
    for (const key of Object.keys(options))
      if (key !== 'verify') throw new QuorumError('ERR_ARG', `unknown map option '${key}': use verify`);
    if (options.verify !== undefined && typeof options.verify !== 'boolean') throw new QuorumError('ERR_ARG', 'verify must be a boolean');
    const core = tensorFileBindings();
    const { tensor, checksum } = callNative(() => core.mapTensorFile(path));
    const t = new Tensor(tensor);
    if (options.verify) {
      try {
        const { hash } = await awaitNative(callNative(() => core.tensorWordHash(tensor, true)) as Promise<{ hash: bigint }>);
        if (hash !== checksum) throw new QuorumError('ERR_FORMAT', `${path}: the data fails its checksum`);
      } catch (e) {
        t.dispose();
        throw e;
      }
    }
    return t;
  }

  /**
   * Frees the native memory now. Every `data` view becomes empty. If an async kernel is still using the
   * tensor, the memory is freed when it finishes. Calling it twice is harmless.
   */
  dispose(): void {
    this.#view = undefined;
    this.handle.dispose();
  }

  /** Same as {@link Tensor.dispose}, for `using t = Tensor.zeros(...)`. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}

function checkDtype(d: unknown): asserts d is Dtype {
  if (!isDtype(d))
    throw new QuorumError('ERR_DTYPE', `unknown dtype ${String(d)}: expected one of ${dtypeNames.join(', ')} (or a device: cpu, cuda)`);
}
// `x instanceof Tensor` holds for the Tensors of the package's other copy too (ESM and CommonJS in one process).
brandClass(Tensor, 'Tensor');
