// The dispose protocol of the objects that hold native memory (indexes, models): one place, so that DenseIndex,
// SparseIndex, Bm25Index and the libtorch models free, report and refuse alike.
import { callNative } from './errors.js';

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
