// The TypeScript side of native/napi/plaid_index_object.cc: the ColBERT index's native object
// (lib/methods/colbert/index.ts) and the residual codec's fit.
import { coreAddon, type NativeTensorHandle } from '../native.js';

/** What PlaidIndex.info() reports. */
export interface NativePlaidInfo {
  passages: number;
  tokens: number;
  removed: number;
  storedBytes: number;
  codeBytes: number;
  centroids: number;
  dim: number;
  nbits: number;
  /** The full vectors' dtype code (lib/dtype.ts), or -1 when not kept. */
  vectors: number;
}

/** One native PlaidIndex (native/kernels/plaid_index.h). The last argument of each method: run off the main thread. */
export interface NativePlaidIndex {
  add(tokens: NativeTensorHandle, codes: NativeTensorHandle, lengths: NativeTensorHandle, async: true): Promise<void>;
  remove(rows: NativeTensorHandle): number;
  save(dir: string, async: true): Promise<void>;
  open(dir: string, map: boolean, async: true): Promise<void>;
  search(
    questions: NativeTensorHandle,
    lengths: NativeTensorHandle,
    k: number,
    ncells: number,
    threshold: number,
    ndocs: number,
    exact: number,
    allowed: NativeTensorHandle | null,
    async: true,
  ): Promise<{ ids: NativeTensorHandle; scores: NativeTensorHandle; counts: NativeTensorHandle }>;
  decode(row: number): NativeTensorHandle;
  info(): NativePlaidInfo;
  dispose(): void;
  isDisposed(): boolean;
}

/** plaid_index_object.cc's exports in quorum_core.node. */
export interface PlaidIndexObjectBindings {
  /**
   * centroids f32 [c, dim] (unit rows), bits per dimension, the 2^nbits - 1 cut-offs and 2^nbits weights, and the
   * dtype code the full vectors are kept in (f32, f16; u8: not kept).
   */
  PlaidIndex: new (
    centroids: NativeTensorHandle,
    nbits: number,
    cutoffs: NativeTensorHandle,
    weights: NativeTensorHandle,
    full: number,
  ) => NativePlaidIndex;
  /** The residual buckets' cut-offs and weights at ColBERTv2's quantiles of residuals [n, dim]. */
  plaidFitCodec(residuals: NativeTensorHandle, nbits: number): { cutoffs: NativeTensorHandle; weights: NativeTensorHandle };
}

/** plaid_index_object.cc's exports in quorum_core.node. */
export function plaidIndexObject(): PlaidIndexObjectBindings {
  return coreAddon() as PlaidIndexObjectBindings;
}
