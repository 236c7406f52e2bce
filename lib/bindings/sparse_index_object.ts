// The TypeScript side of native/napi/sparse_index_object.cc: the native inverted index (lib/sparse-index.ts's
// SparseIndex and, through it, BM25 and CAME's lexical expert).
import { coreAddon, type NativeTensorHandle } from '../native.js';

/** One native SparseIndex object. */
export interface NativeSparseIndex {
  add(ids: NativeTensorHandle, o: NativeTensorHandle, i: NativeTensorHandle, v: NativeTensorHandle, async: boolean): unknown;
  remove(ids: NativeTensorHandle, async: boolean): unknown;
  relabel(from: NativeTensorHandle, to: NativeTensorHandle): void;
  search(
    o: NativeTensorHandle,
    i: NativeTensorHandle,
    v: NativeTensorHandle,
    k: number,
    async: boolean,
    algorithm: string,
    allowed: NativeTensorHandle | null,
  ): unknown;
  save(path: string, async: boolean): unknown;
  load(path: string, async: boolean): unknown;
  toBuffer(): Uint8Array;
  fromBuffer(bytes: Uint8Array): void;
  readonly size: number;
  readonly postings: number;
  readonly vocab: number;
  dispose(): void;
  isDisposed(): boolean;
}

/** sparse_index_object.cc's constructor. */
export interface SparseIndexObjectBindings {
  SparseIndex: new () => NativeSparseIndex;
}

/** sparse_index_object.cc's exports in quorum_core.node. */
export function sparseIndexObject(): SparseIndexObjectBindings {
  return coreAddon() as SparseIndexObjectBindings;
}
