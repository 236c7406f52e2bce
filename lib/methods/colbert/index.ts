// The ColBERT index (docs/methods/colbert.md#the-compressed-index): token vectors stored as a centroid id and a 1- or
// 2-bit residual per dimension (ColBERTv2), searched by PLAID's stages, natively and off the event loop
// (native/kernels/plaid_index.h). Building needs the faiss module (k-means); adding, searching, saving and loading
// only the core.
import { join } from 'node:path';

import { awaitNative, callNative, QuorumError } from '../../errors.js';
import { replaceDirectory } from '../../data/files.js';
import { checkCard, readSavedCard, savedFile, writeSavedCard, type SavedFormat } from '../../io/saved-dir.js';
import { kmeans } from '../../dense-index.js';
import { scoreTopK } from '../../dense.js';
import { checkK, filterRows } from '../../search-request.js';
import { dtypeCode } from '../../dtype.js';
import { Tensor } from '../../tensor.js';
import { allFinite, checkOptions, mustBeObject, optionKeys, z } from '../../validate.js';
import { plaidIndexObject, type NativePlaidIndex } from '../../bindings/plaid_index_object.js';

/** Token vectors of a set of texts: row i's `lengths[i]` unit vectors, packed `[sum of lengths, dim]`. */
export interface TokenVectors {
  /** `[sum of lengths, dim]`, row-major. */
  vectors: Float32Array;
  /** Tokens per text. */
  lengths: Int32Array;
  /** Width of a token vector. */
  dim: number;
}

/** Options of {@link ColbertIndex.build}. */
export interface ColbertIndexOptions {
  /** Bits per dimension of a token's residual: 2 (default; 32 bytes a 128-d token) or 1 (16 bytes). */
  nbits?: 1 | 2;
  /** Centroids (default ColBERTv2's: the power of two at or below 16 sqrt(tokens), at most the tokens). */
  centroids?: number;
  /** Token vectors k-means trains on, drawn evenly (default min(tokens, 32 x centroids)). */
  sample?: number;
  /** k-means iterations (default 10). */
  niter?: number;
  /** Seed of k-means and of the sample (default 1234). */
  seed?: number;
  /** Who made the vectors (a model's name or fingerprint): searches and adds that name another model are ERR_ARG. */
  model?: string;
  /**
   * Keep the full token vectors too, for the exact last stage (default 'f16': 2 bytes a dimension, saved beside the
   * compressed form and mapped with it, read only for the final few passages of each search); 'none' keeps the
   * compressed form alone (the answer is then MaxSim over the decoded tokens).
   */
  vectors?: 'f16' | 'f32' | 'none';
}

/** Options of {@link ColbertIndex.search}; the defaults follow ColBERTv2's searcher, by k (docs/methods/colbert.md). */
export interface ColbertSearchOptions {
  /** Centroids per question token whose passages are candidates (k <= 10: 1, k <= 100: 2, else 4). */
  ncells?: number;
  /** Stage 1 scores a passage only by tokens whose centroid scores at least this against some question token (0.5, 0.45, 0.4). */
  centroidScoreThreshold?: number;
  /** Passages kept after stage 1; stage 2 keeps a quarter of them (1024, 4096, max(16k, 16384)). */
  ndocs?: number;
  /**
   * Where the full vectors are kept: the passages re-scored by exact MaxSim over them (default 4k; at least k); 0
   * skips that stage (the answer is then MaxSim over the decoded tokens, as without the full vectors).
   */
  exact?: number;
  /** Only these passages (rows, ascending) can be returned; every one of them is a candidate. */
  rows?: Int32Array | readonly number[];
  /** The model the questions come from, checked against the index's (see {@link ColbertIndexOptions.model}). */
  model?: string;
}

/** One hit: a passage row and its MaxSim score over the stored (decoded) token vectors. */
export interface ColbertHit {
  /** The passage's row (in order of adding). */
  id: number;
  /** MaxSim of the question against the passage's tokens (full vectors after the exact stage, else decoded ones). */
  score: number;
}

/** What {@link ColbertIndex.info} reports. */
export interface ColbertIndexInfo {
  /** Passages held, removed ones included. */
  passages: number;
  /** Passages removed (their rows are never returned). */
  removed: number;
  /** Token vectors held. */
  tokens: number;
  /** Width of a token vector. */
  dim: number;
  /** Bits per dimension of a residual. */
  nbits: 1 | 2;
  /** Centroids the tokens are coded by. */
  centroids: number;
  /** Bytes of the per-token storage, the passages' lengths and the inverted lists, per token. */
  bytesPerToken: number;
  /** The model the vectors come from ({@link ColbertIndexOptions.model}), or null. */
  model: string | null;
  /** The full vectors kept for the exact stage, or 'none'. */
  vectors: 'f16' | 'f32' | 'none';
}

const buildKeys = optionKeys<ColbertIndexOptions>()(['nbits', 'centroids', 'sample', 'niter', 'seed', 'model', 'vectors']);
const searchKeys = optionKeys<ColbertSearchOptions>()(['ncells', 'centroidScoreThreshold', 'ndocs', 'exact', 'rows', 'model']);

const format: SavedFormat = { card: 'colbert-index.json', format: 'quorum-colbert-index', version: 1, what: 'a ColBERT index' };

const cardSchema = z.object({
  dim: z.number().int().positive(),
  nbits: z.union([z.literal(1), z.literal(2)]),
  centroids: z.string(),
  cutoffs: z.array(z.number()),
  weights: z.array(z.number()),
  model: z.string().nullable(),
  vectors: z.enum(['f16', 'f32', 'none']),
  passages: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative(),
});

const VECTORS: ReadonlyArray<ColbertIndexInfo['vectors']> = ['f16', 'f32', 'none'];

/** Token vectors added per native call while building (bounds the scratch of the centroid assignment). */
const ADD_CHUNK = 1 << 18;

/**
 * The search defaults by k: ColBERTv2's searcher's (colbert/searcher.py) with four times its `ndocs`, what the
 * benchmark's dev questions chose at k = 10 (the fastest setting with recall@10 >= 0.95 against exact MaxSim;
 * docs/results/colbert.md). Larger k keep the same factor, unmeasured.
 */
export function colbertSearchDefaults(k: number): Required<Pick<ColbertSearchOptions, 'ncells' | 'centroidScoreThreshold' | 'ndocs'>> {
  if (k <= 10) return { ncells: 1, centroidScoreThreshold: 0.5, ndocs: 1024 };
  if (k <= 100) return { ncells: 2, centroidScoreThreshold: 0.45, ndocs: 4096 };
  return { ncells: 4, centroidScoreThreshold: 0.4, ndocs: Math.max(16 * k, 16384) };
}

/**
 * A compressed multi-vector index over passages' token vectors (users' ColBERT models, docs/guides/colbert.md):
 * about 36 bytes a 128-d token at 2 bits instead of 512 in memory, searched by centroid interaction, pruning, MaxSim
 * over the decoded tokens of the passages left and exact MaxSim over the final few's full vectors (kept on disk,
 * `vectors`). Passages are rows in order of adding.
 *
 * @example
 * const index = await ColbertIndex.build(passageTokens, { nbits: 2 });
 * const [hits] = await index.search(questionTokens, 10);   // [{ id: row, score }, ...] per question
 * await index.save('colbert-index');
 */
export class ColbertIndex {
  readonly #native: NativePlaidIndex;

  private constructor(
    native: NativePlaidIndex,
    /** [centroids, dim], unit rows. */
    private readonly centroids: Tensor<'f32'>,
    private readonly cutoffs: Float32Array,
    private readonly weights: Float32Array,
    /** The model the vectors come from, or null. */
    readonly model: string | null,
  ) {
    this.#native = native;
  }

  /**
   * Indexes passages' token vectors: k-means over a sample of them (faiss), the residual buckets fitted on tokens
   * k-means did not see, then every token coded. ERR_ARG for no tokens, ERR_SHAPE when the lengths do not add up,
   * ERR_NONFINITE for NaN or Infinity.
   */
  static async build(tokens: TokenVectors, options: ColbertIndexOptions = {}): Promise<ColbertIndex> {
    checkOptions(options, buildKeys, 'ColbertIndex.build options');
    const total = checkTokens(tokens, 'passage tokens');
    if (!total) throw new QuorumError('ERR_ARG', 'no token vectors to index');
    const nbits = options.nbits ?? 2;
    if (nbits !== 1 && nbits !== 2) throw new QuorumError('ERR_RANGE', `nbits must be 1 or 2, got ${String(nbits)}`);
    if (((tokens.dim * nbits) & 7) !== 0)
      throw new QuorumError(
        'ERR_SHAPE',
        `a ${tokens.dim}-d token at ${nbits} bits is not whole bytes: the width must be a multiple of ${8 / nbits}`,
      );
    const want = options.centroids ?? 2 ** Math.floor(Math.log2(16 * Math.sqrt(total)));
    checkCount(want, 'centroids');
    const k = Math.min(want, total);
    const sample = Math.min(total, options.sample ?? 32 * k);
    checkCount(sample, 'sample');
    const seed = options.seed ?? 1234;
    if (options.model !== undefined && (typeof options.model !== 'string' || !options.model))
      throw new QuorumError('ERR_ARG', 'model must be a non-empty string');
    const { dim } = tokens;
    // An even draw of the tokens (a stride from a seeded offset); the residual buckets are fitted on up to 50,000
    // tokens between them (ColBERTv2 holds out 5% of its sample, at most 50,000).
    const pick = (n: number, shift: number) => {
      const out = new Float32Array(n * dim);
      const step = total / n;
      for (let i = 0; i < n; i++) {
        const t = Math.min(total - 1, Math.floor((i + shift) * step));
        out.set(tokens.vectors.subarray(t * dim, (t + 1) * dim), i * dim);
      }
      return out;
    };
    const offset = (seed % 997) / 997;
    const centroids = await kmeans(Tensor.wrap(pick(sample, offset * 0.5), [sample, dim], 'f32'), k, {
      spherical: true,
      seed,
      ...(options.niter !== undefined ? { niter: options.niter } : {}),
    });
    const held = Math.min(total, 50_000);
    const h = Tensor.wrap(pick(held, 0.5 + offset * 0.5), [held, dim], 'f32');
    const r = await residuals(h, centroids);
    const core = plaidIndexObject();
    const fit = callNative(() => core.plaidFitCodec(r.handle, nbits));
    const cutoffs = Tensor.fromHandle<'f32'>(fit.cutoffs).data.slice();
    const weights = Tensor.fromHandle<'f32'>(fit.weights).data.slice();
    const vectors = options.vectors ?? 'f16';
    if (!VECTORS.includes(vectors))
      throw new QuorumError('ERR_ARG', `vectors must be 'f16', 'f32' or 'none', got ${JSON.stringify(vectors)}`);
    const index = ColbertIndex.#create(centroids, nbits, cutoffs, weights, options.model ?? null, vectors);
    await index.add(tokens);
    return index;
  }

  static #create(
    centroids: Tensor<'f32'>,
    nbits: 1 | 2,
    cutoffs: Float32Array,
    weights: Float32Array,
    model: string | null,
    vectors: ColbertIndexInfo['vectors'],
  ): ColbertIndex {
    const core = plaidIndexObject();
    const native = callNative(
      () =>
        new core.PlaidIndex(
          centroids.handle,
          nbits,
          Tensor.wrap(cutoffs, [cutoffs.length], 'f32').handle,
          Tensor.wrap(weights, [weights.length], 'f32').handle,
          vectors === 'none' ? dtypeCode.u8 : dtypeCode[vectors],
        ),
    );
    return new ColbertIndex(native, centroids, cutoffs, weights, model);
  }

  /**
   * Appends passages (rows `size`, `size + 1`, ...), their tokens coded by this index's centroids and buckets: no
   * k-means. When the new passages drift far from what the index was built on, rebuild it (docs/guides/colbert.md).
   * Returns the new rows.
   */
  async add(tokens: TokenVectors, options: { model?: string } = {}): Promise<Int32Array> {
    checkOptions(options, new Set(['model']), 'ColbertIndex.add options');
    this.#checkModel(options.model);
    checkTokens(tokens, 'passage tokens');
    if (tokens.dim !== this.dim) throw new QuorumError('ERR_SHAPE', `the passages' tokens are ${tokens.dim}-d, the index ${this.dim}-d`);
    if (!tokens.lengths.length) throw new QuorumError('ERR_ARG', 'no passages to add');
    const first = this.size;
    // Whole passages per native call, about ADD_CHUNK tokens each.
    let p = 0;
    let t = 0;
    while (p < tokens.lengths.length) {
      let q = p;
      let n = 0;
      while (q < tokens.lengths.length && (n === 0 || n + tokens.lengths[q]! <= ADD_CHUNK)) n += tokens.lengths[q++]!;
      const x = Tensor.wrap(tokens.vectors.subarray(t * this.dim, (t + n) * this.dim), [n, this.dim], 'f32');
      const codes = n ? (await scoreTopK(x, this.centroids, 1)).ids : new Int32Array(0);
      await awaitNative(
        callNative(() =>
          this.#native.add(
            x.handle,
            Tensor.wrap(codes, [n], 'i32').handle,
            Tensor.wrap(tokens.lengths.slice(p, q), [q - p], 'i32').handle,
            true,
          ),
        ),
      );
      p = q;
      t += n;
    }
    return Int32Array.from({ length: tokens.lengths.length }, (_, i) => first + i);
  }

  /** Removes passages by row (they are never returned again; their rows stay taken). Returns how many were not removed before. */
  remove(rows: Int32Array | readonly number[]): number {
    const r = Int32Array.from(rows as ArrayLike<number>);
    if (r.some((v, i) => v !== (rows as ArrayLike<number>)[i])) throw new QuorumError('ERR_ARG', 'rows must be integers');
    return callNative(() => this.#native.remove(Tensor.wrap(r, [r.length], 'i32').handle));
  }

  /** Each question's top `k` passages, best first (fewer when fewer are candidates). */
  async search(questions: TokenVectors, k: number, options: ColbertSearchOptions = {}): Promise<ColbertHit[][]> {
    checkOptions(options, searchKeys, 'ColbertIndex.search options');
    this.#checkModel(options.model);
    checkK(k);
    const total = checkTokens(questions, 'question tokens');
    if (questions.dim !== this.dim) throw new QuorumError('ERR_SHAPE', `question tokens are ${questions.dim}-d, the index ${this.dim}-d`);
    if (!questions.lengths.length) throw new QuorumError('ERR_ARG', 'no questions to search');
    const d = colbertSearchDefaults(k);
    const ncells = options.ncells ?? d.ncells;
    const threshold = options.centroidScoreThreshold ?? d.centroidScoreThreshold;
    const ndocs = options.ndocs ?? d.ndocs;
    const exact = options.exact ?? 4 * k;
    checkCount(ncells, 'ncells');
    checkCount(ndocs, 'ndocs');
    if (exact !== 0) checkCount(exact, 'exact');
    if (typeof threshold !== 'number' || Number.isNaN(threshold))
      throw new QuorumError('ERR_RANGE', `centroidScoreThreshold must be a number, got ${String(threshold)}`);
    const rows = options.rows === undefined ? null : filterRows(options.rows, this.size);
    const r = await awaitNative(
      callNative(() =>
        this.#native.search(
          Tensor.wrap(questions.vectors, [total, this.dim], 'f32').handle,
          Tensor.wrap(questions.lengths, [questions.lengths.length], 'i32').handle,
          k,
          ncells,
          Math.max(-3.4e38, Math.min(3.4e38, threshold)),
          ndocs,
          exact,
          rows ? Tensor.wrap(rows, [rows.length], 'i32').handle : null,
          true,
        ),
      ),
    );
    const ids = Tensor.fromHandle<'i32'>(r.ids).data;
    const scores = Tensor.fromHandle<'f32'>(r.scores).data;
    const counts = Tensor.fromHandle<'i32'>(r.counts).data;
    return Array.from(counts, (n, b) => Array.from({ length: n }, (_, i) => ({ id: ids[b * k + i]!, score: scores[b * k + i]! })));
  }

  /** Passage `row`'s token vectors as the index stores them (decoded: centroid plus residual, unit length), `[length, dim]`. */
  decode(row: number): Float32Array {
    return Tensor.fromHandle<'f32'>(callNative(() => this.#native.decode(row))).data;
  }

  /** The codec: centroids `[centroids, dim]` (unit rows), bits per dimension, the buckets' cut-offs and weights (copies). */
  get codec(): { centroids: Float32Array; nbits: 1 | 2; cutoffs: Float32Array; weights: Float32Array } {
    return { centroids: this.centroids.data.slice(), nbits: this.info.nbits, cutoffs: this.cutoffs.slice(), weights: this.weights.slice() };
  }

  /** Passages held (removed ones included: rows are never reused). */
  get size(): number {
    return callNative(() => this.#native.info()).passages;
  }

  /** Width of a token vector. */
  get dim(): number {
    return this.centroids.shape[1]!;
  }

  /** Sizes and settings. */
  get info(): ColbertIndexInfo {
    const i = callNative(() => this.#native.info());
    return {
      passages: i.passages,
      removed: i.removed,
      tokens: i.tokens,
      dim: i.dim,
      nbits: i.nbits as 1 | 2,
      centroids: i.centroids,
      bytesPerToken: i.tokens ? i.storedBytes / i.tokens : 0,
      model: this.model,
      vectors: i.vectors === dtypeCode.f32 ? 'f32' : i.vectors === dtypeCode.f16 ? 'f16' : 'none',
    };
  }

  /**
   * Writes the index to the directory `dir`: a card (colbert-index.json), the centroids and the token arrays as mapped
   * tensor files. An earlier ColBERT index there is replaced whole; any other directory is written into, its other
   * files untouched (docs/api.md, where outputs go).
   */
  async save(dir: string): Promise<void> {
    const info = this.info;
    await replaceDirectory(
      dir,
      async (tmp) => {
        await this.centroids.save(join(tmp, 'centroids.qtns'));
        await awaitNative(callNative(() => this.#native.save(tmp, true)));
        writeSavedCard(tmp, format, {
          dim: this.dim,
          nbits: info.nbits,
          centroids: 'centroids.qtns',
          cutoffs: Array.from(this.cutoffs),
          weights: Array.from(this.weights),
          model: this.model,
          vectors: info.vectors,
          passages: info.passages,
          tokens: info.tokens,
        });
      },
      { kind: { card: format.card, format: format.format } },
    );
  }

  /**
   * Opens an index written by {@link ColbertIndex.save}: its token arrays read into memory, or with `map: true`
   * mapped in place (opening costs no read; every process that maps the directory shares one copy in the page cache).
   * ERR_IO when a file is missing; ERR_FORMAT for a card, centroid file or array that is corrupt or disagrees with the
   * rest (a centroid id outside the centroids, counts that do not add up).
   */
  static async load(dir: string, options: { map?: boolean } = {}): Promise<ColbertIndex> {
    checkOptions(options, new Set(['map']), 'ColbertIndex.load options');
    if (options.map !== undefined && typeof options.map !== 'boolean') throw new QuorumError('ERR_ARG', 'map must be a boolean');
    const { card: raw, path } = readSavedCard(dir, format);
    const card = checkCard(cardSchema, raw, path);
    const nb = 2 ** card.nbits;
    if (card.cutoffs.length !== nb - 1 || card.weights.length !== nb || !allFinite(card.cutoffs) || !allFinite(card.weights))
      throw new QuorumError('ERR_FORMAT', `${path}: the residual buckets must be ${nb - 1} finite cut-offs and ${nb} finite weights`);
    const centroids = await Tensor.map(savedFile(dir, card.centroids, path, 'centroids'), { verify: true });
    if (centroids.dtype !== 'f32' || centroids.shape.length !== 2 || centroids.shape[1] !== card.dim || !centroids.shape[0]) {
      centroids.dispose();
      throw new QuorumError('ERR_FORMAT', `${path}: the centroids are not f32 [n, ${card.dim}]`);
    }
    const index = ColbertIndex.#create(
      centroids as Tensor<'f32'>,
      card.nbits,
      Float32Array.from(card.cutoffs),
      Float32Array.from(card.weights),
      card.model,
      card.vectors,
    );
    try {
      await awaitNative(callNative(() => index.#native.open(dir, options.map === true, true)));
    } catch (e) {
      index.dispose();
      throw e;
    }
    const info = index.info;
    if (info.passages !== card.passages || info.tokens !== card.tokens) {
      index.dispose();
      throw new QuorumError(
        'ERR_FORMAT',
        `${path}: the card says ${card.passages} passages of ${card.tokens} tokens, the arrays hold ${info.passages} of ${info.tokens}`,
      );
    }
    return index;
  }

  /** Frees the native index now (a search in flight keeps it until it ends); a later call is ERR_DISPOSED. */
  dispose(): void {
    this.#native.dispose();
    this.centroids.dispose();
  }

  /** Same as {@link ColbertIndex.dispose}, for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  #checkModel(model: string | undefined): void {
    if (model === undefined || this.model === null || model === this.model) return;
    throw new QuorumError(
      'ERR_ARG',
      `this ColBERT index holds vectors of ${JSON.stringify(this.model)}, not of ${JSON.stringify(model)}: rebuild it with that model`,
    );
  }
}

/** Each vector's residual from its nearest centroid (by inner product), `[n, dim]`. */
async function residuals(x: Tensor<'f32'>, centroids: Tensor<'f32'>): Promise<Tensor<'f32'>> {
  const dim = x.shape[1]!;
  const codes = (await scoreTopK(x, centroids, 1)).ids;
  const c = centroids.data;
  const out = new Float32Array(x.data.length);
  for (let i = 0; i < codes.length; i++) {
    const at = codes[i]! * dim;
    for (let d = 0; d < dim; d++) out[i * dim + d] = x.data[i * dim + d]! - c[at + d]!;
  }
  return Tensor.wrap(out, [codes.length, dim], 'f32');
}

/** The tokens a TokenVectors holds, checked: ERR_SHAPE unless whole rows whose count its lengths add up to. */
function checkTokens(t: TokenVectors, what: string): number {
  mustBeObject(t, what);
  if (!(t.vectors instanceof Float32Array) || !(t.lengths instanceof Int32Array))
    throw new QuorumError('ERR_ARG', `${what} must be { vectors: Float32Array, lengths: Int32Array, dim }`);
  if (!Number.isInteger(t.dim) || t.dim < 1)
    throw new QuorumError('ERR_SHAPE', `${what}: dim must be a positive integer, got ${String(t.dim)}`);
  const total = t.vectors.length / t.dim;
  let sum = 0;
  for (const n of t.lengths) {
    if (n < 0) throw new QuorumError('ERR_RANGE', `${what}: a negative length`);
    sum += n;
  }
  if (!Number.isInteger(total) || sum !== total)
    throw new QuorumError('ERR_SHAPE', `${what}: the lengths add up to ${sum} tokens, the vectors hold ${t.vectors.length / t.dim}`);
  if (!allFinite(t.vectors)) throw new QuorumError('ERR_NONFINITE', `${what} hold NaN or Infinity`);
  return total;
}

function checkCount(v: unknown, what: string): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 2 ** 30)
    throw new QuorumError('ERR_RANGE', `${what} must be a positive integer, got ${String(v)}`);
}
