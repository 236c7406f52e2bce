// An inverted index over sparse vectors (SPLADE term weights, BM25 weights). Contract:
// native/kernels/sparse_index.h.
import { QuorumError, callNative } from './errors.js';
import { type NativeTensorHandle } from './native.js';
import { sparseIndexObject, type NativeSparseIndex } from './bindings/sparse_index_object.js';
import { idsOf, runAsync, runSync, Operands } from './operand.js';
import { type SearchResult, searchResult } from './search-result.js';
import { type SparseVectors, sparseTensors, sparseVectors } from './splade.js';
import { Tensor } from './tensor.js';
import { checkOptions, optionKeys } from './validate.js';
import { NativeResource, type NativeDisposable } from './native-resource.js';

/** Top-k of each query row; slots no document reached hold id -1. */
export type SparseSearchResult = SearchResult;

/**
 * How a search walks the postings; both return the same top-k (up to f32 summation order):
 * - `'taat'`: term at a time into accumulators, touching every posting of every query term;
 * - `'maxscore'`: document at a time with MaxScore pruning, skipping documents that cannot reach the top-k.
 * `'auto'` (the default) picks per query by the measurement in docs/results/indexes.md: MaxScore for queries of at
 * most 8 terms with k <= 100 on indexes of 50,000 documents or more, term at a time otherwise.
 */
export type SparseAlgorithm = 'taat' | 'maxscore' | 'auto';

/** Options of a sparse search. */
export interface SparseSearchOptions {
  /** How postings are walked (default `'auto'`); every choice returns the same top-k. */
  algorithm?: SparseAlgorithm;
  /**
   * A filter inside the search: only these ids can be returned (ids not held are ignored): exactly the filtered
   * top-k of the documents a query term reaches (docs/methods/kernels.md#filtered-search).
   */
  allowedIds?: BigInt64Array | ArrayLike<number | bigint>;
}

/** The keys of {@link SparseSearchOptions}. */
const sparseSearchKeys = optionKeys<SparseSearchOptions>()(['algorithm', 'allowedIds']);

/** Sparse rows as `SparseVectors`, or as arrays of `{ index, value }` entries (any order). */
export type SparseRowsInput = SparseVectors | ReadonlyArray<ReadonlyArray<{ index: number; value: number }>>;

const MAX_TERM = 2 ** 31 - 1;

/** Rows of `{ index, value }` entries as SparseVectors; every entry checked (an Int32Array would wrap 2^32 + 3). */
function asVectors(rows: SparseRowsInput): SparseVectors {
  if (!Array.isArray(rows)) {
    if (rows && typeof rows === 'object' && 'offsets' in rows && 'indices' in rows && 'values' in rows) return rows as SparseVectors;
    throw new QuorumError('ERR_ARG', 'sparse rows must be SparseVectors or an array of arrays of { index, value }');
  }
  const list = rows as ReadonlyArray<ReadonlyArray<{ index: number; value: number }>>;
  const offsets = new BigInt64Array(list.length + 1);
  let nnz = 0;
  list.forEach((r, i) => {
    if (!Array.isArray(r)) throw new QuorumError('ERR_ARG', `sparse row ${i} must be an array of { index, value }`);
    nnz += r.length;
    offsets[i + 1] = BigInt(nnz);
  });
  const indices = new Int32Array(nnz);
  const values = new Float32Array(nnz);
  let e = 0;
  list.forEach((r, i) => {
    for (const entry of r) {
      const { index, value } = (entry ?? {}) as { index?: unknown; value?: unknown };
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > MAX_TERM)
        throw new QuorumError(
          typeof index === 'number' ? 'ERR_RANGE' : 'ERR_ARG',
          `sparse row ${i}: index must be an integer in [0, 2^31 - 1], got ${String(index)}`,
        );
      if (typeof value !== 'number') throw new QuorumError('ERR_ARG', `sparse row ${i}: value must be a number, got ${typeof value}`);
      indices[e] = index;
      values[e++] = value;
    }
  });
  return sparseVectors(offsets, indices, values);
}

function wrapResult(r: { ids: NativeTensorHandle; scores: NativeTensorHandle }): SparseSearchResult {
  const ids = Tensor.fromHandle<'i64'>(r.ids);
  const [rows = 0, k = 0] = ids.shape;
  return searchResult(ids.data, Tensor.fromHandle<'f32'>(r.scores).data, rows, k);
}

let nativeOf: (index: SparseIndex) => NativeSparseIndex;

/**
 * @internal The native object of an index, for a native call that takes several indexes at once (CAME's search
 * stage, lib/methods/came/stage.ts); the call itself checks it and keeps it alive while it runs.
 */
export function nativeSparseIndex(index: SparseIndex): unknown {
  return nativeOf(index);
}

/**
 * An inverted index over sparse vectors, searched by sparse dot product. Searches may run concurrently;
 * adds are exclusive. Documents no query term reaches are never returned.
 *
 * @example
 * const index = new SparseIndex();
 * await index.add([10n, 11n], [[{ index: 3, value: 1.5 }], [{ index: 3, value: 0.5 }, { index: 9, value: 2 }]]);
 * const top = await index.search([[{ index: 3, value: 1 }]], 10);
 * top.hits(0); // [{ id: 10n, score: 1.5 }, { id: 11n, score: 0.5 }]
 */
export class SparseIndex extends NativeResource {
  readonly #native: NativeSparseIndex;

  static {
    nativeOf = (index) => index.#native;
  }

  constructor() {
    super();
    const core = sparseIndexObject();
    this.#native = new core.SparseIndex();
  }

  /** Documents held. */
  get size(): number {
    return callNative(() => this.#native.size);
  }
  /** Postings held (distinct (term, document) pairs). */
  get postings(): number {
    return callNative(() => this.#native.postings);
  }
  /** 1 + the largest term id seen. */
  get vocab(): number {
    return callNative(() => this.#native.vocab);
  }

  /** The native index (what {@link NativeResource.dispose} frees). */
  protected nativeResource(): NativeDisposable {
    return this.#native;
  }

  #addCall(ops: Operands, ids: BigInt64Array | ArrayLike<number | bigint>, docs: SparseRowsInput) {
    const v = asVectors(docs);
    const idt = ops.typed(idsOf(ids, v.rows), [v.rows], 'i64');
    const [o, i, w] = sparseTensors(ops, v);
    return (async: boolean) => this.#native.add(idt.handle, o.handle, i.handle, w.handle, async);
  }

  /** Adds documents with the given ids. Term ids must be >= 0 and weights finite; a bad batch adds nothing. */
  async add(ids: BigInt64Array | ArrayLike<number | bigint>, docs: SparseRowsInput): Promise<void> {
    return runAsync(
      (ops) => this.#addCall(ops, ids, docs),
      () => undefined,
    );
  }

  /** {@link add} on the calling thread. */
  addSync(ids: BigInt64Array | ArrayLike<number | bigint>, docs: SparseRowsInput): void {
    runSync(
      (ops) => this.#addCall(ops, ids, docs),
      () => undefined,
    );
  }

  #removeCall(ops: Operands, ids: BigInt64Array | ArrayLike<number | bigint>) {
    // idsOf refuses what is not an array of ids before the length matters.
    const n = (ids as { length?: number } | null)?.length ?? -1;
    const idt = ops.typed(idsOf(ids, n), [n], 'i64');
    return (async: boolean) => this.#native.remove(idt.handle, async);
  }

  /**
   * Removes the documents with these ids (unknown ones are skipped); resolves to how many went. Searches skip them
   * at once, their ids can be added again (an update is a remove and an add), and once removed documents pass a
   * quarter of the index its postings are rebuilt without them; a save writes the live documents only.
   */
  async remove(ids: BigInt64Array | ArrayLike<number | bigint>): Promise<number> {
    return runAsync(
      (ops) => this.#removeCall(ops, ids),
      (r) => (r as { removed: number }).removed,
    );
  }

  /** {@link remove} on the calling thread. */
  removeSync(ids: BigInt64Array | ArrayLike<number | bigint>): number {
    return runSync(
      (ops) => this.#removeCall(ops, ids),
      (r) => (r as { removed: number }).removed,
    );
  }

  /**
   * Gives the documents held as `from[i]` the ids `to[i]`: a renumbering, e.g. after removals from an index whose ids
   * are corpus rows. ERR_ARG for an id not held or listed twice, ERR_RANGE for a negative id, ERR_DUPLICATE_ID when
   * two documents would share an id; nothing changes then.
   *
   * @example
   * await index.remove([1n]);
   * index.relabel([2n, 3n], [1n, 2n]);   // rows 0, 2, 3 -> 0, 1, 2
   */
  relabel(from: BigInt64Array | ArrayLike<number | bigint>, to: BigInt64Array | ArrayLike<number | bigint>): void {
    const n = (from as { length?: number } | null)?.length ?? -1;
    const m = (to as { length?: number } | null)?.length ?? -1;
    const f = Tensor.wrap(idsOf(from, n), [n], 'i64');
    const t = Tensor.wrap(idsOf(to, m), [m], 'i64');
    callNative(() => this.#native.relabel(f.handle, t.handle));
  }

  #searchCall(ops: Operands, queries: SparseRowsInput, k: number, options: SparseSearchOptions) {
    checkOptions(options, sparseSearchKeys, 'sparse search options');
    const [o, i, w] = sparseTensors(ops, asVectors(queries));
    const algorithm = options.algorithm ?? 'auto';
    const a = options.allowedIds;
    const allowed =
      a === undefined ? undefined : ops.typed(idsOf(a, (a as { length: number }).length ?? -1), [(a as { length: number }).length], 'i64');
    return (async: boolean) => this.#native.search(o.handle, i.handle, w.handle, k, async, algorithm, allowed?.handle ?? null);
  }

  /**
   * Writes the index to `path` atomically (a temporary file beside it, fsync, rename): a crash leaves either the
   * old file or the new one. Versioned header and checksum. ERR_IO on failure.
   */
  async save(path: string): Promise<void> {
    return runAsync(
      () => (async) => this.#native.save(path, async),
      () => undefined,
    );
  }

  /** {@link save} on the calling thread. */
  saveSync(path: string): void {
    runSync(
      () => (async) => this.#native.save(path, async),
      () => undefined,
    );
  }

  /** Reads an index written by {@link save}. A corrupt, truncated or foreign file is ERR_FORMAT; a missing one ERR_IO. */
  static async load(path: string): Promise<SparseIndex> {
    const index = new SparseIndex();
    await runAsync(
      () => (async) => index.#native.load(path, async),
      () => undefined,
    );
    return index;
  }

  /** {@link SparseIndex.load} on the calling thread. */
  static loadSync(path: string): SparseIndex {
    const index = new SparseIndex();
    runSync(
      () => (async) => index.#native.load(path, async),
      () => undefined,
    );
    return index;
  }

  /** The index as bytes (the file format of {@link save}). */
  toBuffer(): Uint8Array {
    return callNative(() => this.#native.toBuffer());
  }

  /** An index from {@link toBuffer}'s bytes; ERR_FORMAT if they are not a complete, intact index. */
  static fromBuffer(bytes: Uint8Array): SparseIndex {
    const index = new SparseIndex();
    callNative(() => index.#native.fromBuffer(bytes));
    return index;
  }

  /** The k best documents for each query row. */
  async search(queries: SparseRowsInput, k: number, options: SparseSearchOptions = {}): Promise<SparseSearchResult> {
    return runAsync((ops) => this.#searchCall(ops, queries, k, options), wrapResult);
  }

  /** {@link search} on the calling thread. */
  searchSync(queries: SparseRowsInput, k: number, options: SparseSearchOptions = {}): SparseSearchResult {
    return runSync((ops) => this.#searchCall(ops, queries, k, options), wrapResult);
  }
}
