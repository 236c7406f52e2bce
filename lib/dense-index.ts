// A dense vector index over faiss (quorum_faiss.node), ranked by inner product, with 64-bit ids. Contract:
// native/index/dense_index.h.
import { QuorumError, awaitNative, callNative } from './errors.js';
import { faissBindings, type NativeDenseIndex } from './bindings/faiss_addon.js';
import { idsOf, whilePinned, Operands } from './operand.js';
import { type SearchResult, searchResult } from './search-result.js';
import { Tensor } from './tensor.js';
import { checkOptions, mustBeObject, optionKeys } from './validate.js';
import { NativeResource, type NativeDisposable } from './native-resource.js';

/**
 * How an index ranks by inner product:
 * - `'inner-product'`: faiss's own inner-product metric;
 * - `'l2'`: DPR's reduction to L2 search (docs/methods/kernels.md#mips-as-l2-search): stored vectors get an extra component
 *   sqrt(phi - |c|^2), queries a 0, so L2 order equals inner-product order. `phi` (the largest squared norm)
 *   is fixed by the first `train` or `add` unless given; a later vector with a larger norm is ERR_RANGE.
 */
export type Mips = 'inner-product' | 'l2';

/** Options of {@link DenseIndex.create}: the dimension, the faiss structure and its search parameters. */
export interface DenseIndexOptions {
  /** Vector dimension. */
  dim: number;
  /**
   * A faiss factory string without "IDMap": "Flat" (exact, the default), "HNSW32", "IVF1024,Flat",
   * "IVF256,PQ32", "PCA128,Flat", ... IVF, PQ and PCA stages need {@link DenseIndex.train} before adding.
   */
  factory?: string;
  /**
   * See {@link Mips}. Default `'inner-product'`: at the same efSearch it gave HNSW the better recall in our
   * measurements (docs/results/indexes.md), and it takes incremental adds of any norm.
   */
  mips?: Mips;
  /** `'l2'` only: the largest squared norm to expect (default: taken from the first train or add). */
  phi?: number;
  /** HNSW: candidate list size while building (faiss default 40). */
  efConstruction?: number;
  /**
   * HNSW: the candidate list size searches use (faiss default 16; at least k is always used). Set it here for
   * concurrent searches: a per-call efSearch that differs from it makes that search exclusive (faiss 1.7.3
   * only honours the index's own value in full).
   */
  efSearch?: number;
  /** IVF: default number of lists searched (faiss default 1). */
  nprobe?: number;
  /**
   * Vectors held as codes (docs/methods/quantization.md); inner product only.
   * - `'int8'`: 8-bit codes, a quarter of the bytes. With factory "Flat" the index is faiss's "SQ8" (per-dimension
   *   min / max, fitted by {@link DenseIndex.train} on a sample before the first add) searched exactly by Quorum's
   *   int8 kernels; with "HNSW<M>" it is faiss's "HNSW<M>,SQ8" (the graph over int8 codes; remove is ERR_UNSUPPORTED
   *   there).
   * - `'binary'`: factory "Flat" only (the index reports factory "BinaryFlat"). The f32 vectors are kept and 1-bit
   *   codes of them (centred on the mean of the {@link DenseIndex.train} sample, rotated) are held beside them; a
   *   search scans the codes for 4 x k candidates and returns their exact f32 scores. In RAM that is the f32 index
   *   plus 3 %: the saving comes with {@link DenseIndex.map}, where the f32 vectors stay in the file's pages (read only
   *   for the candidates) and the codes, built when it is mapped, are the process's own memory.
   */
  quantization?: 'int8' | 'binary';
}

/** The factory string of a quantized index (DenseIndexOptions.quantization). */
function quantizedFactory(factory: string, quantization: unknown, mips: Mips): string {
  if (quantization !== 'int8' && quantization !== 'binary')
    throw new QuorumError('ERR_ARG', `quantization must be 'int8' or 'binary', got ${JSON.stringify(quantization)}`);
  if (mips !== 'inner-product')
    throw new QuorumError('ERR_ARG', `quantization '${quantization}' ranks by inner product: leave mips 'inner-product'`);
  if (quantization === 'binary') {
    if (factory === 'Flat') return 'BinaryFlat';
    throw new QuorumError('ERR_ARG', `quantization 'binary' applies to factory 'Flat', got ${JSON.stringify(factory)}`);
  }
  if (factory === 'Flat') return 'SQ8';
  if (typeof factory === 'string' && /^HNSW\d+$/.test(factory)) return `${factory},SQ8`;
  throw new QuorumError('ERR_ARG', `quantization 'int8' applies to factory 'Flat' or 'HNSW<M>', got ${JSON.stringify(factory)}`);
}

/** Per-search settings; omitted ones use the index's own. */
export interface DenseSearchOptions {
  /** HNSW only (ERR_ARG otherwise). A value other than the index's own makes this search exclusive. */
  efSearch?: number;
  /** IVF only (ERR_ARG otherwise). */
  nprobe?: number;
  /**
   * A filter inside the search: only these ids can be returned (faiss's ID selectors; ids not in the index are
   * ignored). Flat indexes give exactly the filtered top-k, scanning the allowed vectors only; HNSW and IVF walk their
   * graph or lists as usual and skip what is not allowed (docs/methods/kernels.md#filtered-search).
   */
  allowedIds?: VectorIdsInput;
  /**
   * HNSW with `allowedIds`: scan the allowed vectors exactly (in the graph's flat storage) when at most this many are
   * in the index; above it the graph walk skips the others. Default: at most 50,000 or under a tenth of the index
   * (a walk keeps little recall when most of the graph is filtered out); 0 always walks.
   */
  filterScanBelow?: number;
}

const mapKeys = optionKeys<{ verify?: boolean }>()(['verify']);
const createKeys = optionKeys<DenseIndexOptions>()([
  'dim',
  'factory',
  'mips',
  'phi',
  'efConstruction',
  'efSearch',
  'nprobe',
  'quantization',
]);
const searchKeys = optionKeys<DenseSearchOptions>()(['efSearch', 'nprobe', 'allowedIds', 'filterScanBelow']);

/** Vectors: a row-major Float32Array of n x dim, an f32 Tensor [n, dim] (zero-copy), or rows of numbers. */
export type VectorsInput = Float32Array | Tensor<'f32'> | ReadonlyArray<ArrayLike<number>>;

/** Ids: one per vector, >= 0. */
export type VectorIdsInput = BigInt64Array | ArrayLike<number | bigint>;

/** What the index is and holds. */
export interface DenseIndexInfo {
  /** Vector dimension. */
  dim: number;
  /** Number of vectors stored. */
  size: number;
  /** Whether the index can take vectors: false for IVF or PQ until `train`. */
  trained: boolean;
  /** The faiss factory string it was built from (e.g. `'Flat'`, `'HNSW32'`, `'IVF100,Flat'`). */
  factory: string;
  /** How it searches by inner product: `'inner-product'` or the `'l2'` reduction. */
  mips: Mips;
  /** `'l2'`: the largest squared norm the stored vectors assume (0 until fixed). */
  phi: number;
  /** false for HNSW over PQ or SQ codes (HNSW with flat storage removes through tombstones and compaction) and a mapped index. */
  supportsRemove: boolean;
  /** Opened by {@link DenseIndex.map}: read-only, its vectors in a shared file mapping. */
  mapped: boolean;
  /** HNSW: the index's own efSearch. */
  efSearch?: number;
  /** IVF: the index's own nprobe. */
  nprobe?: number;
}

// The typed array to hand to the faiss addon (a plain one borrowed or copied as `ops` says), and the tensor to pin
// while an async call reads it.
function floatsOf(ops: Operands, x: VectorsInput, dim: number, what: string): { data: Float32Array; tensor?: Tensor } {
  if (x instanceof Float32Array) return { data: ops.plain(x) };
  if (x instanceof Tensor) {
    if (x.dtype !== 'f32') throw new QuorumError('ERR_DTYPE', `${what} must be f32 for faiss, got ${x.dtype} (convert with .to('f32'))`);
    const last = x.shape[x.shape.length - 1];
    if (x.shape.length > 2 || last !== dim)
      throw new QuorumError('ERR_SHAPE', `${what} must have shape [n, ${dim}] or [${dim}], got [${x.shape.join(', ')}]`);
    return { data: x.data as Float32Array, tensor: x };
  }
  if (Array.isArray(x)) {
    const out = new Float32Array(x.length * dim);
    x.forEach((row: ArrayLike<number>, i: number) => {
      if (row === null || typeof row !== 'object' || typeof row.length !== 'number')
        throw new QuorumError('ERR_ARG', `${what} row ${i} must be an array of numbers`);
      if (row.length !== dim) throw new QuorumError('ERR_SHAPE', `${what} row ${i} has ${row.length} values, expected ${dim}`);
      out.set(row, i * dim);
    });
    return { data: out };
  }
  throw new QuorumError('ERR_ARG', `${what} must be a Float32Array, an f32 Tensor or an array of rows`);
}

function idArray(ops: Operands, ids: VectorIdsInput | bigint | number): BigInt64Array {
  if (typeof ids === 'bigint' || typeof ids === 'number') return idsOf([ids], 1);
  if (ids === null || typeof ids !== 'object')
    throw new QuorumError('ERR_ARG', 'ids must be a BigInt64Array, an array of integers or one id');
  return ids instanceof BigInt64Array ? ops.plain(ids) : idsOf(ids, ids.length);
}

/** A faiss call from one definition: `build(ops)` makes the operands, the Tensor to pin, and the call. */
type FaissCall = (ops: Operands) => { pin?: Tensor | undefined; call: (async: boolean) => unknown };

type RawSearch = { ids: BigInt64Array; scores: Float32Array; rows: number; k: number };

const resultOf = (r: RawSearch): SearchResult => searchResult(r.ids, r.scores, r.rows, r.k);

/**
 * A dense vector index over faiss: exact or approximate top-k by inner product, with your own 64-bit ids.
 * Searches may run concurrently; train, add and remove are exclusive. faiss's OpenMP threads follow
 * {@link setThreads}. Every heavy method has a Promise form (off the main thread) and a Sync form.
 *
 * @example
 * const index = DenseIndex.create({ dim: 768, factory: 'HNSW32', efSearch: 64 });
 * await index.add(passageVectors, passageIds);           // Float32Array n x 768, BigInt64Array n
 * const top = await index.search(queryVectors, 10);
 * top.hits(0);                                           // [{ id: 42n, score: 71.3 }, ...]
 * await index.save('passages.qdx');
 * const again = await DenseIndex.load('passages.qdx');
 */
export class DenseIndex extends NativeResource {
  readonly #native: NativeDenseIndex;

  /** Use {@link DenseIndex.create} (or `load` / `fromBuffer`). */
  constructor(native: NativeDenseIndex) {
    super();
    this.#native = native;
  }

  /** A new, empty index. ERR_ARG for a factory string faiss cannot build. */
  static create(options: DenseIndexOptions): DenseIndex {
    if (!options || typeof options !== 'object') throw new QuorumError('ERR_ARG', 'DenseIndex.create needs { dim, factory? }');
    checkOptions(options, createKeys, 'DenseIndex.create options');
    const mips = options.mips ?? 'inner-product';
    const { quantization, ...rest } = options;
    const factory =
      quantization === undefined ? (options.factory ?? 'Flat') : quantizedFactory(options.factory ?? 'Flat', quantization, mips);
    const { DenseIndex: Native } = faissBindings();
    return new DenseIndex(callNative(() => new Native({ ...rest, factory, mips })));
  }

  /** Dimension, size, factory, metric handling and capabilities. */
  get info(): DenseIndexInfo {
    return callNative(() => this.#native.info());
  }
  /** Vector dimension (fixed for the index's life: read once, since every add and search checks against it). */
  get dim(): number {
    this.#dim ??= this.info.dim;
    return this.#dim;
  }
  #dim: number | undefined;
  /** Vectors held. */
  get size(): number {
    return this.info.size;
  }

  /** The faiss index object (what {@link NativeResource.dispose} frees). */
  protected nativeResource(): NativeDisposable {
    return this.#native;
  }

  // Each heavy method is one definition, a FaissCall, run in its two forms: the Sync form borrows plain typed arrays
  // and calls on this thread; the Promise form copies them, pins a Tensor operand while faiss reads it, and queues
  // the call off the main thread.
  static #runSync<R>(build: FaissCall): R {
    const c = build(Operands.borrowed);
    return callNative(() => c.call(false)) as R;
  }

  static async #runAsync<R>(build: FaissCall): Promise<R> {
    const c = build(Operands.copied);
    return whilePinned([c.pin], () => awaitNative(callNative(() => c.call(true)) as Promise<R>));
  }

  #train(vectors: VectorsInput): FaissCall {
    return (ops) => {
      const x = floatsOf(ops, vectors, this.dim, 'vectors');
      return { pin: x.tensor, call: (async) => this.#native.train(x.data, async) };
    };
  }

  #add(vectors: VectorsInput, ids: VectorIdsInput): FaissCall {
    return (ops) => {
      const x = floatsOf(ops, vectors, this.dim, 'vectors');
      const i = idArray(ops, ids);
      return { pin: x.tensor, call: (async) => this.#native.add(x.data, i, async) };
    };
  }

  #remove(ids: VectorIdsInput | bigint | number): FaissCall {
    return (ops) => {
      const i = idArray(ops, ids);
      return { call: (async) => this.#native.remove(i, async) };
    };
  }

  #search(queries: VectorsInput, k: number, options: DenseSearchOptions): FaissCall {
    return (ops) => {
      checkOptions(options, searchKeys, 'DenseIndex.search options');
      const q = floatsOf(ops, queries, this.dim, 'queries');
      const allowed = options.allowedIds === undefined ? undefined : idArray(ops, options.allowedIds);
      if (options.filterScanBelow !== undefined && !allowed)
        throw new QuorumError('ERR_ARG', 'filterScanBelow applies to a search with allowedIds');
      return {
        pin: q.tensor,
        call: (async) => this.#native.search(q.data, k, options.efSearch, options.nprobe, async, allowed, options.filterScanBelow),
      };
    };
  }

  #reconstruct(ids: VectorIdsInput | bigint | number): FaissCall {
    return (ops) => {
      const i = idArray(ops, ids);
      return { call: (async) => this.#native.reconstruct(i, async) };
    };
  }

  /**
   * Sets the index's own search settings (what searches use when they name none; they are saved with it).
   * Searches at the index's own efSearch run concurrently.
   */
  setSearchDefaults(options: DenseSearchOptions): void {
    if (options === undefined || options === null) throw new QuorumError('ERR_ARG', 'setSearchDefaults needs { efSearch?, nprobe? }');
    checkOptions(options, searchKeys, 'setSearchDefaults options');
    callNative(() => this.#native.setSearchDefaults(options.efSearch, options.nprobe));
  }

  /** Trains IVF / PQ / PCA stages (ERR_STATE if already trained). Use a sample like the data you will add. */
  async train(vectors: VectorsInput): Promise<void> {
    await DenseIndex.#runAsync(this.#train(vectors));
  }

  /** {@link train} on the calling thread. */
  trainSync(vectors: VectorsInput): void {
    DenseIndex.#runSync(this.#train(vectors));
  }

  /**
   * Adds vectors with their ids. ERR_STATE before training where the factory needs it, ERR_DUPLICATE_ID for an
   * id already held or repeated, ERR_NONFINITE for NaN / infinity; a failed batch adds nothing.
   */
  async add(vectors: VectorsInput, ids: VectorIdsInput): Promise<void> {
    await DenseIndex.#runAsync(this.#add(vectors, ids));
  }

  /** {@link add} on the calling thread. */
  addSync(vectors: VectorsInput, ids: VectorIdsInput): void {
    DenseIndex.#runSync(this.#add(vectors, ids));
  }

  /**
   * Removes ids (unknown ones are skipped); resolves to how many went. A removed id can be added again (an update is
   * a remove and an add). HNSW keeps a removed vector's node as a tombstone that no search returns and `size` does
   * not count, until compaction rebuilds the graph from the live vectors: on its own once tombstones pass a quarter
   * of the nodes, before every save, or with {@link compact} (docs/api.md#dense-index-faiss). ERR_UNSUPPORTED for
   * HNSW over PQ or SQ codes.
   */
  async remove(ids: VectorIdsInput | bigint | number): Promise<number> {
    return (await DenseIndex.#runAsync<{ removed: number }>(this.#remove(ids))).removed;
  }

  /** {@link remove} on the calling thread. */
  removeSync(ids: VectorIdsInput | bigint | number): number {
    return DenseIndex.#runSync<{ removed: number }>(this.#remove(ids)).removed;
  }

  /** Rebuilds an HNSW graph without its tombstones now (off the main thread); resolves to how many went (0 otherwise). */
  async compact(): Promise<number> {
    return (await DenseIndex.#runAsync<{ removed: number }>(() => ({ call: (async) => this.#native.compact(async) }))).removed;
  }

  /**
   * The k best vectors for each query row by inner product, best first (ties by id). Slots beyond what the
   * index can return hold id -1 and score -Infinity.
   */
  async search(queries: VectorsInput, k: number, options: DenseSearchOptions = {}): Promise<SearchResult> {
    return resultOf(await DenseIndex.#runAsync<RawSearch>(this.#search(queries, k, options)));
  }

  /** {@link search} on the calling thread. */
  searchSync(queries: VectorsInput, k: number, options: DenseSearchOptions = {}): SearchResult {
    return resultOf(DenseIndex.#runSync<RawSearch>(this.#search(queries, k, options)));
  }

  /** The stored vectors of `ids`, n x dim (approximate for PQ / SQ / PCA). ERR_NOT_FOUND for an id not held. */
  async reconstruct(ids: VectorIdsInput | bigint | number): Promise<Float32Array> {
    return (await DenseIndex.#runAsync<{ vectors: Float32Array }>(this.#reconstruct(ids))).vectors;
  }

  /** {@link reconstruct} on the calling thread. */
  reconstructSync(ids: VectorIdsInput | bigint | number): Float32Array {
    return DenseIndex.#runSync<{ vectors: Float32Array }>(this.#reconstruct(ids)).vectors;
  }

  /**
   * Writes the index to `path` atomically (a temporary file beside it, fsync, rename), streamed without an extra
   * in-memory copy: versioned header, faiss's own serialization, checksum. ERR_IO on failure.
   */
  async save(path: string): Promise<void> {
    await DenseIndex.#runAsync(() => ({ call: (async) => this.#native.save(path, async) }));
  }

  /** {@link save} on the calling thread. */
  saveSync(path: string): void {
    DenseIndex.#runSync(() => ({ call: (async) => this.#native.save(path, async) }));
  }

  /** Reads an index written by {@link save}: ERR_FORMAT for a corrupt, truncated or foreign file, ERR_IO for a missing one. */
  static async load(path: string): Promise<DenseIndex> {
    const native = new (faissBindings().DenseIndex)();
    await DenseIndex.#runAsync(() => ({ call: (async) => native.load(path, async) }));
    return new DenseIndex(native);
  }

  /**
   * Opens a saved Flat inner-product index (or a `quantization: 'binary'` one, its codes built from the mapped vectors
   * as it opens) by mapping its file read-only instead of reading it (docs/api.md#mapping-a-saved-index): N worker
   * processes serving one large index share one copy of its vectors in the page cache, and opening costs the header,
   * the ids and an mmap whatever the size. It searches (filters
   * too), reconstructs and reports `info` (`mapped: true`) as a loaded index; add, remove, train, save and
   * toBuffer are ERR_UNSUPPORTED (load a copy to change it). Another factory or mips mode is ERR_UNSUPPORTED;
   * `verify` hashes the whole file against its checksum first (a read of every page: ERR_FORMAT on a mismatch),
   * otherwise the header, sizes and ids are checked. ERR_IO when the file cannot be opened or mapped.
   *
   * @example
   * const index = await DenseIndex.map('corpus.faiss');   // in each node:cluster worker
   * const top = await index.search(queries, 10);
   */
  static async map(path: string, options: { verify?: boolean } = {}): Promise<DenseIndex> {
    mustBeObject(options, 'DenseIndex.map options');
    checkOptions(options, mapKeys, 'DenseIndex.map options');
    if (options.verify !== undefined && typeof options.verify !== 'boolean') throw new QuorumError('ERR_ARG', 'verify must be a boolean');
    const native = new (faissBindings().DenseIndex)();
    await DenseIndex.#runAsync(() => ({ call: (async) => native.map(path, options.verify === true, async) }));
    return new DenseIndex(native);
  }

  /** {@link DenseIndex.load} on the calling thread. */
  static loadSync(path: string): DenseIndex {
    const native = new (faissBindings().DenseIndex)();
    DenseIndex.#runSync(() => ({ call: (async) => native.load(path, async) }));
    return new DenseIndex(native);
  }

  /** The index as bytes (the file format of {@link save}). */
  toBuffer(): Uint8Array {
    return callNative(() => this.#native.toBuffer());
  }

  /** An index from {@link toBuffer}'s bytes; ERR_FORMAT if they are not a complete, intact index. */
  static fromBuffer(bytes: Uint8Array): DenseIndex {
    const native = new (faissBindings().DenseIndex)();
    callNative(() => native.fromBuffer(bytes));
    return new DenseIndex(native);
  }
}

/** Options of {@link kmeans}. */
export interface KmeansOptions {
  /** Iterations of Lloyd's algorithm (default 10). */
  niter?: number;
  /** Seed of the initial centroids' draw (default 1234). */
  seed?: number;
  /** Unit-length centroids after each iteration, for inner-product search over unit vectors (default false). */
  spherical?: boolean;
}

const kmeansKeys = optionKeys<KmeansOptions>()(['niter', 'seed', 'spherical']);

/**
 * `k` centroids of the rows of `vectors` by faiss's k-means, off the main thread (it samples at most 256 rows per
 * centroid). ERR_RANGE unless 1 <= k <= rows; ERR_NONFINITE for NaN or infinity.
 *
 * @example
 * const centroids = await kmeans(tokenVectors, 1024, { spherical: true });   // Tensor [1024, dim]
 */
export async function kmeans(vectors: Tensor<'f32'>, k: number, options: KmeansOptions = {}): Promise<Tensor<'f32'>> {
  if (!(vectors instanceof Tensor) || vectors.dtype !== 'f32' || vectors.shape.length !== 2)
    throw new QuorumError('ERR_ARG', 'kmeans needs an f32 Tensor of shape [n, dim]');
  checkOptions(options, kmeansKeys, 'kmeans options');
  const dim = vectors.shape[1]!;
  const x = floatsOf(Operands.copied, vectors, dim, 'vectors');
  const int = (v: unknown, what: string, min: number) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > 2 ** 24)
      throw new QuorumError('ERR_RANGE', `${what} must be an integer in [${min}, 2^24], got ${String(v)}`);
    return v;
  };
  const centroids = int(k, 'k', 1);
  const niter = int(options.niter ?? 10, 'niter', 1);
  const seed = int(options.seed ?? 1234, 'seed', 0);
  const r = await whilePinned([x.tensor], () =>
    awaitNative(
      callNative(() => faissBindings().kmeans(x.data, dim, centroids, niter, seed, options.spherical === true, true)) as Promise<{
        centroids: Float32Array;
      }>,
    ),
  );
  return Tensor.wrap(r.centroids, [centroids, dim], 'f32');
}
