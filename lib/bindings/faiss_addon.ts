// The TypeScript side of native/napi/faiss_addon.cc: quorum_faiss.node's DenseIndex objects, k-means and threads
// (lib/dense-index.ts).
import { faissAddon, loadedFaissAddon, type MaybeAsync } from '../native.js';

/** One DenseIndex object of quorum_faiss.node (native/napi/faiss_addon.cc). */
export interface NativeDenseIndex {
  train(x: Float32Array, async: boolean): MaybeAsync<object>;
  add(x: Float32Array, ids: BigInt64Array, async: boolean): MaybeAsync<object>;
  remove(ids: BigInt64Array, async: boolean): MaybeAsync<{ removed: number }>;
  compact(async: boolean): MaybeAsync<{ removed: number }>;
  search(
    q: Float32Array,
    k: number,
    efSearch: number | undefined,
    nprobe: number | undefined,
    async: boolean,
    allowed?: BigInt64Array,
    filterScanBelow?: number,
  ): MaybeAsync<{ ids: BigInt64Array; scores: Float32Array; rows: number; k: number }>;
  reconstruct(ids: BigInt64Array, async: boolean): MaybeAsync<{ vectors: Float32Array }>;
  save(path: string, async: boolean): MaybeAsync<object>;
  load(path: string, async: boolean): MaybeAsync<object>;
  map(path: string, verify: boolean, async: boolean): MaybeAsync<object>;
  toBuffer(): Uint8Array;
  fromBuffer(bytes: Uint8Array): void;
  setSearchDefaults(efSearch: number | undefined, nprobe: number | undefined): void;
  dispose(): void;
  isDisposed(): boolean;
  info(): {
    dim: number;
    size: number;
    trained: boolean;
    factory: string;
    mips: 'inner-product' | 'l2';
    phi: number;
    supportsRemove: boolean;
    mapped: boolean;
    efSearch?: number;
    nprobe?: number;
  };
}

/** quorum_faiss.node's exports. */
export interface FaissAddonBindings {
  DenseIndex: new (options?: object) => NativeDenseIndex;
  kmeans(
    vectors: Float32Array,
    dim: number,
    k: number,
    niter: number,
    seed: number,
    spherical: boolean,
    async: boolean,
  ): MaybeAsync<{ centroids: Float32Array }>;
  setThreads(n: number): void;
  threads(): number;
}

/** faiss_addon.cc's exports (quorum_faiss.node, loaded on first use). */
export function faissBindings(): FaissAddonBindings {
  return faissAddon() as FaissAddonBindings;
}

/** The faiss module's exports if something already loaded it. */
export function loadedFaissBindings(): FaissAddonBindings | undefined {
  return loadedFaissAddon() as FaissAddonBindings | undefined;
}
