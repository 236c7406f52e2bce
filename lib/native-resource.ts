// The dispose protocol of the objects that hold native memory (indexes, models): one place, so that DenseIndex,
// SparseIndex, Bm25Index and the libtorch models free, report and refuse alike.
import { QuorumError, callNative } from './errors.js';

/** What a native object that holds memory answers (native/napi: DenseIndexObject, SparseIndexObject, TorchObject). */
export interface NativeDisposable {
  /** Drops the native memory (queued work keeps its own reference until it ends). */
  dispose(): void;
  /** Whether `dispose` ran. */
  isDisposed(): boolean;
}

/**
 * An object whose memory lives in a native addon. `dispose()` frees it at once, or when the last call in flight on
 * the object ends (that call completes with its normal result); any later use is ERR_DISPOSED, a second dispose does
 * nothing. Without it, GC frees the memory.
 *
 * @example
 * const index = DenseIndex.create({ dim: 768, factory: 'HNSW32' });
 * // ... serve ...
 * index.dispose();   // or `using index = ...` in TypeScript
 */
export abstract class NativeResource {
  /** The native object that holds the memory. */
  protected abstract nativeResource(): NativeDisposable;

  /** Frees the native memory now, or when the last call in flight ends; later use is ERR_DISPOSED. */
  dispose(): void {
    callNative(() => this.nativeResource().dispose());
  }

  /** True after {@link NativeResource.dispose}. */
  get disposed(): boolean {
    return callNative(() => this.nativeResource().isDisposed());
  }

  /** Same as {@link NativeResource.dispose}, for TypeScript's `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}

/**
 * The same protocol for objects that release asynchronously (ONNX Runtime sessions: ServingEncoder and the method
 * servers): calls run through {@link use}, which is ERR_DISPOSED once dispose began; dispose waits for the calls in
 * flight, releases once, and a second dispose resolves with the first. (ONNX Runtime's own "Session already
 * disposed" was a plain Error, and a dispose during a call failed that call: issue 65.)
 */
export class AsyncLifetime {
  #inFlight = 0;
  #disposing: Promise<void> | undefined;
  #idle: (() => void) | undefined;

  constructor(
    private readonly what: string,
    private readonly release: () => Promise<void>,
  ) {}

  /** ERR_DISPOSED once dispose began. */
  check(): void {
    if (this.#disposing) throw new QuorumError('ERR_DISPOSED', `${this.what} was disposed`);
  }

  /** Runs `fn` as a call in flight: dispose waits for it. */
  async use<T>(fn: () => Promise<T>): Promise<T> {
    this.check();
    this.#inFlight++;
    try {
      return await fn();
    } finally {
      if (--this.#inFlight === 0) this.#idle?.();
    }
  }

  /** Releases once the calls in flight have ended; later calls are ERR_DISPOSED. */
  dispose(): Promise<void> {
    this.#disposing ??= (async () => {
      if (this.#inFlight > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
      await this.release();
    })();
    return this.#disposing;
  }

  /** True once dispose began. */
  get disposed(): boolean {
    return this.#disposing !== undefined;
  }
}
