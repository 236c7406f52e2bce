// The local expert's index (docs/methods/came.md#the-local-experts-index): PLAID's pipeline (Santhanam et al.,
// 2022). Every passage token is coded by its nearest centroid (k-means over the tokens); a question scores passages
// approximately from the centroids alone (MaxSim with each token moved to its centroid, native: CentroidIndex), and
// only the best few are re-scored exactly by MaxSim over their real token vectors, where they lie.
import { join } from 'node:path';

import { checkKeptRows } from '../../data/corpus-change.js';
import { makeDirs, readFileBytes, writeFileAtomic } from '../../data/files.js';
import { scoreTopK } from '../../dense.js';
import { kmeans } from '../../dense-index.js';
import { floatTensor, readSafetensors, writeSafetensors, type TensorToWrite } from '../../io/safetensors.js';
import { QuorumError, callNative } from '../../errors.js';
import { type NativeTensorHandle } from '../../native.js';
import { centroidIndexObject, type NativeCentroidIndex } from '../../bindings/centroid_index_object.js';
import { checkK, filterRows } from '../../search-request.js';
import { Tensor } from '../../tensor.js';
import { checkOptions, mustBeObject, optionKeys } from '../../validate.js';
import type { CameEncoding } from './encode.js';
import type { Hit } from './fusion.js';
import { cameSearch, type LocalOptions, type StagePart } from './stage.js';

/** Options of {@link TokenIndex.build}. */
export interface TokenIndexOptions {
  /** Centroids the tokens are coded by (default the power of two nearest 4 sqrt(tokens), at most the tokens). */
  centroids?: number;
  /** k-means iterations (default 10). */
  niter?: number;
}

const buildKeys = optionKeys<TokenIndexOptions>()(['centroids', 'niter']);
const searchKeys = optionKeys<TokenSearchOptions>()(['candidates', 'nprobe', 'rows']);

/** Options of {@link TokenIndex.search}. */
export interface TokenSearchOptions {
  /**
   * Passages re-scored exactly by MaxSim after the centroid approximation (default 256; at least k), or 'all'
   * (every passage, exactly: brute force).
   */
  candidates?: number | 'all';
  /**
   * Centroids per question token whose passages are approximated (default 4); 0 approximates every passage. PLAID's
   * nprobe.
   */
  nprobe?: number;
  /** Only these passages (rows, ascending) can be returned. */
  rows?: Int32Array;
}

/** Default of {@link TokenSearchOptions.candidates}. */
const DEFAULT_CANDIDATES = 256;
/** Default of {@link TokenSearchOptions.nprobe}. */
const DEFAULT_NPROBE = 4;

/** kernels::CentroidIndex (native/kernels/centroid_index.h) as the core addon exposes it. */
/**
 * CAME's local (ColBERT) expert index: passages approximated from their tokens' centroids, the best re-scored by
 * exact MaxSim over their token vectors. Saved as one safetensors file (token vectors, lengths, centroids, codes);
 * building needs the faiss module (k-means), searching only the core.
 *
 * @example
 * const index = await TokenIndex.build(passageEncoding.local!);
 * const hits = await index.search(questionEncoding.local!, 100);   // per question: { id, score }[]
 * await index.save('came-index/local');
 */
export class TokenIndex {
  readonly #native: NativeCentroidIndex;
  /** The token vectors as MaxSim's documents (read in place). */
  readonly #tokens: Tensor<'f32'>;

  private constructor(
    readonly dim: number,
    /** [centroids, dim], unit rows. */
    private readonly centroids: Float32Array,
    /** Every passage's unit token vectors, packed [tokens, dim]. */
    private readonly vectors: Float32Array,
    private readonly lengths: Int32Array,
    /** Each token's centroid. */
    private readonly codes: Int32Array,
  ) {
    const core = centroidIndexObject();
    this.#native = callNative(
      () =>
        new core.CentroidIndex(
          Tensor.wrap(centroids, [centroids.length / dim, dim], 'f32').handle,
          Tensor.wrap(codes, [codes.length], 'i32').handle,
          Tensor.wrap(lengths, [lengths.length], 'i32').handle,
        ),
    );
    this.#tokens = Tensor.wrap(vectors, [codes.length, dim], 'f32');
  }

  /**
   * Indexes the local expert's passage encoding (row i = passage i): k-means over its token vectors, then each token's
   * nearest centroid.
   *
   * @example
   * const index = await TokenIndex.build(passageEncoding.local!);
   * const top = await index.search(questionEncoding.local!, 100);
   */
  static async build(local: NonNullable<CameEncoding['local']>, options: TokenIndexOptions = {}): Promise<TokenIndex> {
    mustBeObject(local, 'local token vectors');
    checkOptions(options, buildKeys, 'TokenIndex.build options');
    const { vectors, lengths, dim } = local;
    const total = tokenCount(local);
    if (!total) throw new QuorumError('ERR_ARG', 'no token vectors to index');
    const want = options.centroids ?? 2 ** Math.round(Math.log2(4 * Math.sqrt(total)));
    if (!Number.isInteger(want) || want < 1)
      throw new QuorumError('ERR_RANGE', `centroids must be a positive integer, got ${String(want)}`);
    const all = Tensor.wrap(vectors, [total, dim], 'f32');
    const centroids = await kmeans(all, Math.min(want, total), {
      spherical: true,
      ...(options.niter !== undefined ? { niter: options.niter } : {}),
    });
    return new TokenIndex(dim, centroids.data, vectors, lengths, await assign(all, centroids));
  }

  /**
   * The index after a corpus change, as a new TokenIndex (this one is unchanged): the passages at rows `keep`
   * (ascending, distinct; default all) renumbered 0, 1, ... in that order, then the passages of `add` (their tokens
   * coded by the same centroids: no k-means).
   *
   * @example
   * const next = await index.changed({ keep: Int32Array.of(0, 2, 3), add: newPassages.local });   // rows 0-2, then the new
   */
  async changed(change: { keep?: Int32Array; add?: NonNullable<CameEncoding['local']> }): Promise<TokenIndex> {
    mustBeObject(change, 'token index change');
    const keep = checkKeptRows(change.keep ?? Int32Array.from({ length: this.size }, (_, i) => i), this.size);
    const tokens = keep.reduce((a, r) => a + this.lengths[r]!, 0);
    const add = change.add ?? { vectors: new Float32Array(0), lengths: new Int32Array(0), dim: this.dim };
    mustBeObject(add, 'added token vectors');
    if (add.dim !== this.dim) throw new QuorumError('ERR_SHAPE', `the new passages' tokens are ${add.dim}-d, the index ${this.dim}-d`);
    const n = tokenCount(add);
    if (!keep.length && !add.lengths.length) throw new QuorumError('ERR_ARG', 'a token index needs at least one passage');
    const starts = new Int32Array(this.size + 1);
    for (let r = 0; r < this.size; r++) starts[r + 1] = starts[r]! + this.lengths[r]!;
    const vectors = new Float32Array((tokens + n) * this.dim);
    const codes = new Int32Array(tokens + n);
    let at = 0;
    for (const r of keep) {
      vectors.set(this.vectors.subarray(starts[r]! * this.dim, starts[r + 1]! * this.dim), at * this.dim);
      codes.set(this.codes.subarray(starts[r]!, starts[r + 1]!), at);
      at += this.lengths[r]!;
    }
    vectors.set(add.vectors, at * this.dim);
    if (n)
      codes.set(
        await assign(
          Tensor.wrap(add.vectors, [n, this.dim], 'f32'),
          Tensor.wrap(this.centroids, [this.centroids.length / this.dim, this.dim], 'f32'),
        ),
        at,
      );
    const lengths = new Int32Array(keep.length + add.lengths.length);
    keep.forEach((r, i) => (lengths[i] = this.lengths[r]!));
    lengths.set(add.lengths, keep.length);
    return new TokenIndex(this.dim, this.centroids, vectors, lengths, codes);
  }

  /** Writes the token vectors, lengths, centroids and codes as `tokens.safetensors` under `dir` (atomically). */
  async save(dir: string): Promise<void> {
    makeDirs(dir);
    writeFileAtomic(
      join(dir, 'tokens.safetensors'),
      writeSafetensors(
        new Map<string, TensorToWrite>([
          ['vectors', { shape: [this.codes.length, this.dim], data: this.vectors, dtype: 'F32' }],
          ['lengths', { shape: [this.lengths.length], data: Float32Array.from(this.lengths), dtype: 'F32' }],
          ['centroids', { shape: [this.centroids.length / this.dim, this.dim], data: this.centroids, dtype: 'F32' }],
          ['codes', { shape: [this.codes.length], data: Float32Array.from(this.codes), dtype: 'F32' }],
        ]),
        { format: 'quorum-came-tokens', version: '2' },
      ),
    );
  }

  /** {@link save}'s file; ERR_FORMAT when it is damaged, inconsistent or from before centroids (rebuild it). */
  static async load(dir: string): Promise<TokenIndex> {
    const path = join(dir, 'tokens.safetensors');
    const bytes = readFileBytes(path);
    let tensors;
    try {
      tensors = readSafetensors(bytes);
    } catch (e) {
      throw new QuorumError('ERR_FORMAT', `${path}: ${(e as Error).message}`, {
        cause: e,
      });
    }
    const v = floatTensor(tensors.get('vectors'), path, 'vectors');
    const l = tensors.get('lengths');
    const c = floatTensor(tensors.get('centroids'), path, 'centroids');
    const k = tensors.get('codes');
    if (!v || !l || v.shape.length !== 2 || l.shape.length !== 1) throw new QuorumError('ERR_FORMAT', `${path} is not a CAME token index`);
    if (!c || !k)
      throw new QuorumError(
        'ERR_FORMAT',
        `${path} is a token index from before centroid coding (it had tokens.faiss): rebuild it with quorum came index`,
      );
    const dim = v.shape[1]!;
    const total = v.shape[0]!;
    if (c.shape.length !== 2 || c.shape[1] !== dim || k.shape.length !== 1 || k.shape[0] !== total)
      throw new QuorumError('ERR_FORMAT', `${path}: the centroids or codes do not match the ${total} token vectors of ${dim}`);
    const lengths = Int32Array.from(l.data);
    if (lengths.some((n, i) => n !== l.data[i] || n < 0) || lengths.reduce((a, b) => a + b, 0) !== total)
      throw new QuorumError('ERR_FORMAT', `${path}: the lengths do not add up to the ${total} token vectors`);
    const codes = Int32Array.from(k.data);
    if (codes.some((n, i) => n !== k.data[i] || n < 0 || n >= c.shape[0]!))
      throw new QuorumError('ERR_FORMAT', `${path}: a code is not one of the ${c.shape[0]} centroids`);
    return new TokenIndex(dim, c.data, v.data, lengths, codes);
  }

  /** Number of passages indexed. */
  get size(): number {
    return this.lengths.length;
  }

  /** Token vectors held. */
  get tokens(): number {
    return this.codes.length;
  }

  /** Frees the native index now (or when the search in flight ends); a later search is ERR_DISPOSED. */
  dispose(): void {
    this.#native.dispose();
    this.#tokens.dispose();
  }

  /** Each question's top `k` passages by exact MaxSim over its candidates (CAME's search stage, local expert alone). */
  async search(questions: NonNullable<CameEncoding['local']>, k: number, options: TokenSearchOptions = {}): Promise<Hit[][]> {
    checkOptions(options, searchKeys, 'TokenIndex.search options');
    mustBeObject(questions, 'question tokens');
    if (!questions.lengths?.length) return [];
    const rows = options.rows === undefined ? undefined : filterRows(options.rows, this.size);
    const r = await cameSearch(
      { size: this.size, local: this },
      ['local'],
      { rows: questions.lengths.length, local: questions },
      questions.lengths.length,
      {
        k,
        expertK: k,
        fusion: 'sum',
        local: options,
        ...(rows ? { rows } : {}),
      },
    );
    return r.experts.local!;
  }

  /**
   * @internal The local expert's part of CAME's search stage (lib/methods/came/stage.ts) for encoded questions and
   * top `k`: this index's native object, token vectors and lengths, the questions' tokens, nprobe and how many
   * candidates are re-scored exactly (0: every passage).
   */
  stagePart(questions: NonNullable<CameEncoding['local']>, k: number, options: LocalOptions): StagePart {
    if (questions.dim !== this.dim) throw new QuorumError('ERR_SHAPE', `question tokens are ${questions.dim}-d, the index ${this.dim}-d`);
    checkK(k);
    const per = options.candidates ?? DEFAULT_CANDIDATES;
    if (per !== 'all' && (!Number.isInteger(per) || per < 1))
      throw new QuorumError('ERR_RANGE', `candidates must be a positive integer or 'all', got ${per}`);
    const nprobe = options.nprobe ?? DEFAULT_NPROBE;
    if (!Number.isInteger(nprobe) || nprobe < 0) throw new QuorumError('ERR_RANGE', `nprobe must be a non-negative integer, got ${nprobe}`);
    const total = tokenCount(questions);
    return {
      kind: 'local',
      index: this.#native,
      tokens: this.#tokens.handle,
      lengths: Tensor.wrap(this.lengths, [this.lengths.length], 'i32').handle,
      queries: Tensor.wrap(questions.vectors, [total, this.dim], 'f32').handle,
      queryLengths: Tensor.wrap(questions.lengths, [questions.lengths.length], 'i32').handle,
      nprobe,
      // With a filter the kernel approximates every allowed passage, or scores them all exactly when they are no
      // more than would be re-scored anyway.
      keep: per === 'all' ? 0 : Math.max(per, k),
    };
  }
}

/** The token vectors an encoding holds, checked: ERR_SHAPE unless whole rows of its dim whose count its lengths add up to. */
function tokenCount(local: NonNullable<CameEncoding['local']>): number {
  const total = local.vectors.length / local.dim;
  if (!Number.isInteger(total) || local.lengths.reduce((a, b) => a + b, 0) !== total)
    throw new QuorumError('ERR_SHAPE', `the lengths do not add up to the ${total} token vectors`);
  return total;
}

/** Each vector's nearest centroid by inner product (the centroids are unit length, as the tokens). */
async function assign(vectors: Tensor<'f32'>, centroids: Tensor<'f32'>): Promise<Int32Array> {
  const r = await scoreTopK(vectors, centroids, 1);
  return r.ids;
}
