// BM25 over the native SparseIndex. Lucene's formula (as Anserini uses it), so scores compare with Anserini:
//   score(q, d) = sum over query terms t of  qtf(t) * idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))
//   idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))
// with dl rounded as Lucene stores it (see length-norm.ts) unless `lengthNorm: 'exact'`. A repeated query term
// counts once per occurrence (Anserini's bag-of-words query boosts each term by its count).
import { fnv1a32, readFileBytes, writeFileAtomic } from '../data/files.js';
import { QuorumError } from '../errors.js';
import { SparseIndex, type SparseSearchOptions, type SparseSearchResult } from '../sparse-index.js';
import { sparseVectors } from '../splade.js';
import { type Analyzer, englishAnalyzer } from './analyzer.js';
import { luceneQuantizedLength } from './length-norm.js';
import { checkOptions, finite, optionKeys, parse, z } from '../validate.js';
import { NativeResource, type NativeDisposable } from '../native-resource.js';

// Longest stretch of analysis between two yields to the event loop.
const YIELD_MS = 8;
const loadKeys = optionKeys<{ analyzer?: Analyzer }>()(['analyzer']);

const BM25_MAGIC = Array.from('QBM25V01', (c) => c.charCodeAt(0));

const bm25OptionsSchema = z
  .object({
    k1: finite.nonnegative().optional(),
    b: finite.min(0).max(1).optional(),
    analyzer: z.function().optional(),
    lengthNorm: z.enum(['lucene', 'exact']).optional(),
  })
  .strict();

/** BM25's parameters (defaults Anserini's: k1 0.9, b 0.4) and the text analysis of documents and queries. */
export interface Bm25Options {
  /** Term-frequency saturation (default 0.9). */
  k1?: number;
  /** Length normalization, 0 (none) to 1 (full) (default 0.4). */
  b?: number;
  /** How text becomes terms (default: Lucene's English analyzer: lower case, stop words, Porter stemming). */
  analyzer?: Analyzer;
  /** 'lucene' (default): Lucene's one-byte length rounding; 'exact': true lengths. */
  lengthNorm?: 'lucene' | 'exact';
}

/** Options of {@link Bm25Index.search}. */
export interface Bm25SearchOptions {
  /** How postings are walked (default `'auto'`); every choice returns the same top-k. */
  algorithm?: SparseSearchOptions['algorithm'];
  /** Only these documents can be returned: their rows in build order (a metadata filter's, {@link compileFilter}). */
  rows?: ArrayLike<number>;
}

const bm25SearchKeys = optionKeys<Bm25SearchOptions>()(['algorithm', 'rows']);

/** One result of {@link Bm25Index.search}. */
export interface Bm25Hit {
  /** The document's id, as given to `build`. */
  id: string;
  /** Its BM25 score. */
  score: number;
}

/** ERR_ARG unless `docs` are { id, text } with ids new to `held` and to each other. */
function checkDocs(docs: ReadonlyArray<{ id: string; text: string }>, held: { has(id: string): boolean }): void {
  if (!Array.isArray(docs)) throw new QuorumError('ERR_ARG', 'BM25 needs an array of { id, text } documents');
  const seen = new Set<string>();
  docs.forEach((d, i) => {
    if (d === null || typeof d !== 'object' || typeof d.id !== 'string' || typeof d.text !== 'string')
      throw new QuorumError('ERR_ARG', `document ${i} must be { id: string, text: string }`);
    if (d.id === '') throw new QuorumError('ERR_ARG', `document ${i} has an empty id`);
    if (seen.has(d.id) || held.has(d.id)) throw new QuorumError('ERR_ARG', `duplicate document id ${d.id}`);
    seen.add(d.id);
  });
}

/**
 * Each document's term frequencies (term ids from `vocab`, which grows with new terms) and length. The analysis is
 * JavaScript on the calling thread: it yields to the event loop every few milliseconds, so that a server building an
 * index (a swap, docs/api.md#swapping-a-live-index) keeps answering meanwhile.
 */
async function analyze(docs: ReadonlyArray<{ text: string }>, analyzer: Analyzer, vocab: Map<string, number>) {
  const perDoc: Array<Map<number, number>> = [];
  const lengths: number[] = [];
  let slice = performance.now();
  for (const d of docs) {
    if (performance.now() - slice > YIELD_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      slice = performance.now();
    }
    const tf = new Map<number, number>();
    const terms = analyzer(d.text);
    for (const t of terms) {
      let id = vocab.get(t);
      if (id === undefined) vocab.set(t, (id = vocab.size));
      tf.set(id, (tf.get(id) ?? 0) + 1);
    }
    perDoc.push(tf);
    lengths.push(terms.length);
  }
  return { perDoc, lengths };
}

/**
 * Document-side weights tf / (tf + k1 * (1 - b + b * dl / avgdl)) as CSR rows (the idf goes on the query side;
 * an object per posting cost a pause of ~90 ms on 3,000 passages).
 */
function documentWeights(
  perDoc: ReadonlyArray<Map<number, number>>,
  lengths: readonly number[],
  p: { k1: number; b: number; lengthNorm: 'lucene' | 'exact'; avgdl: number },
) {
  let nnz = 0;
  for (const tf of perDoc) nnz += tf.size;
  const offsets = new BigInt64Array(perDoc.length + 1);
  const indices = new Int32Array(nnz);
  const values = new Float32Array(nnz);
  let e = 0;
  perDoc.forEach((tf, i) => {
    const dl = p.lengthNorm === 'exact' ? (lengths[i] as number) : luceneQuantizedLength(lengths[i] as number);
    const norm = p.k1 * (1 - p.b + (p.avgdl > 0 ? (p.b * dl) / p.avgdl : 0));
    for (const [t, f] of tf) {
      indices[e] = t;
      values[e++] = f / (f + norm);
    }
    offsets[i + 1] = BigInt(e);
  });
  return sparseVectors(offsets, indices, values);
}

/**
 * A BM25 index over a document collection: built once (BM25's statistics are corpus-wide), then documents can be
 * added and removed with Lucene's statistics between merges (see {@link Bm25Index.add}).
 *
 * @example
 * const bm25 = await Bm25Index.build(docs.map((d) => ({ id: d.id, text: d.contents })), { k1: 0.9, b: 0.4 });
 * const hits = await bm25.search(['operating systems for IBM computers'], 1000);
 */
export class Bm25Index extends NativeResource {
  /** Term-frequency saturation (Anserini's default 0.9). */
  readonly k1: number;
  /** Length normalization (Anserini's default 0.4). */
  readonly b: number;
  /** N in BM25's idf: documents built and added (removed ones count until a rebuild, as in Lucene). */
  get documents(): number {
    return this.ids.length;
  }
  /** Mean document length in terms (after analysis), as BM25's `avgdl`. */
  readonly averageLength: number;
  /** How document lengths are stored: Lucene's one-byte rounding or exact. */
  readonly lengthNorm: 'lucene' | 'exact';
  private readonly analyzer: Analyzer;
  /** 'english' when built with the default analyzer (so a saved index can rebuild it), else 'custom'. */
  private readonly analyzerName: 'english' | 'custom';
  private readonly vocab: Map<string, number>;
  private df: Int32Array;
  private readonly ids: string[];
  /** Live document ids -> rows. */
  private readonly rowOf: Map<string, number>;
  private readonly removedRows: Set<number>;
  private readonly index: SparseIndex;

  private constructor(fields: {
    k1: number;
    b: number;
    lengthNorm: 'lucene' | 'exact';
    analyzer: Analyzer;
    analyzerName: 'english' | 'custom';
    vocab: Map<string, number>;
    df: Int32Array;
    ids: string[];
    index: SparseIndex;
    averageLength: number;
    removed: readonly number[];
  }) {
    super();
    this.k1 = fields.k1;
    this.b = fields.b;
    this.lengthNorm = fields.lengthNorm;
    this.analyzer = fields.analyzer;
    this.analyzerName = fields.analyzerName;
    this.vocab = fields.vocab;
    this.df = fields.df;
    this.ids = fields.ids;
    this.index = fields.index;
    this.averageLength = fields.averageLength;
    this.removedRows = new Set(fields.removed);
    this.rowOf = new Map();
    fields.ids.forEach((id, row) => {
      if (!this.removedRows.has(row)) this.rowOf.set(id, row);
    });
  }

  /** Analyzes and indexes the documents. Ids must be unique. */
  static async build(docs: ReadonlyArray<{ id: string; text: string }>, options: Bm25Options = {}): Promise<Bm25Index> {
    parse(bm25OptionsSchema, options, 'BM25 options');
    checkDocs(docs, new Set());
    const k1 = options.k1 ?? 0.9;
    const b = options.b ?? 0.4;
    const lengthNorm = options.lengthNorm ?? 'lucene';
    const analyzer = options.analyzer ?? englishAnalyzer();
    const vocab = new Map<string, number>();
    const { perDoc, lengths } = await analyze(docs, analyzer, vocab);
    const avgdl = docs.length ? lengths.reduce((a, l) => a + l, 0) / docs.length : 0;
    const df = new Int32Array(vocab.size);
    for (const tf of perDoc) for (const t of tf.keys()) df[t]! += 1;
    const index = new SparseIndex();
    await index.add(
      BigInt64Array.from(perDoc, (_, i) => BigInt(i)),
      documentWeights(perDoc, lengths, { k1, b, lengthNorm, avgdl }),
    );
    return new Bm25Index({
      k1,
      b,
      lengthNorm,
      analyzer,
      analyzerName: options.analyzer ? 'custom' : 'english',
      vocab,
      df,
      ids: docs.map((d) => d.id),
      index,
      averageLength: avgdl,
      removed: [],
    });
  }

  /**
   * Adds documents to a built index; their ids must be new (a removed id may come back: an update is a remove and an
   * add). Statistics as Lucene keeps them between merges: the new documents count in N and in the document
   * frequencies (idf is computed at query time), their weights use the average length of the build, and removed
   * documents still count until the index is built again. An index that changed much should be rebuilt for exact
   * BM25 (docs/api.md#sparse-index-bm25-hybrid).
   */
  async add(docs: ReadonlyArray<{ id: string; text: string }>): Promise<void> {
    checkDocs(docs, this.rowOf);
    const vocab = new Map(this.vocab);
    const { perDoc, lengths } = await analyze(docs, this.analyzer, vocab);
    const first = this.ids.length;
    await this.index.add(
      BigInt64Array.from(perDoc, (_, i) => BigInt(first + i)),
      documentWeights(perDoc, lengths, { k1: this.k1, b: this.b, lengthNorm: this.lengthNorm, avgdl: this.averageLength }),
    );
    // Only once the postings are in: a failed add leaves the index as it was.
    for (const [t, id] of vocab) if (!this.vocab.has(t)) this.vocab.set(t, id);
    if (this.vocab.size > this.df.length) {
      const grown = new Int32Array(Math.max(this.vocab.size, this.df.length * 2));
      grown.set(this.df);
      this.df = grown;
    }
    for (const tf of perDoc) for (const t of tf.keys()) this.df[t]! += 1;
    docs.forEach((d, i) => {
      this.ids.push(d.id);
      this.rowOf.set(d.id, first + i);
    });
    this.termCache = undefined;
  }

  /**
   * Removes documents by id (unknown ids are skipped); resolves to how many went. Searches skip them at once; their
   * rows keep their place in {@link documentIds} (so that row filters stay valid); statistics as in {@link add}.
   */
  async remove(ids: readonly string[]): Promise<number> {
    if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string'))
      throw new QuorumError('ERR_ARG', 'remove needs an array of document ids');
    const rows = [...new Set(ids)].map((id) => this.rowOf.get(id)).filter((r): r is number => r !== undefined);
    if (!rows.length) return 0;
    const removed = await this.index.remove(BigInt64Array.from(rows, (r) => BigInt(r)));
    for (const r of rows) {
      this.rowOf.delete(this.ids[r]!);
      this.removedRows.add(r);
    }
    return removed;
  }

  /** Documents searchable now (built and added, less removed). */
  get size(): number {
    return this.rowOf.size;
  }

  /**
   * The index as bytes: magic "QBM25V01", the parameters, vocabulary, document frequencies and ids as JSON, the
   * SparseIndex's own bytes, and an FNV-1a checksum over all of it.
   */
  toBuffer(): Uint8Array {
    const json = new TextEncoder().encode(
      JSON.stringify({
        k1: this.k1,
        b: this.b,
        lengthNorm: this.lengthNorm,
        averageLength: this.averageLength,
        analyzer: this.analyzerName,
        vocab: Array.from(this.vocab.keys()),
        df: Array.from(this.df.subarray(0, this.vocab.size)),
        ids: this.ids,
        removed: [...this.removedRows].sort((a, b) => a - b),
      }),
    );
    const sparse = this.index.toBuffer();
    const out = new Uint8Array(8 + 4 + json.length + 8 + sparse.length + 4);
    const view = new DataView(out.buffer);
    out.set(BM25_MAGIC, 0);
    view.setUint32(8, json.length, true);
    out.set(json, 12);
    view.setBigUint64(12 + json.length, BigInt(sparse.length), true);
    out.set(sparse, 20 + json.length);
    view.setUint32(out.length - 4, fnv1a32(out.subarray(0, out.length - 4)), true);
    return out;
  }

  /**
   * An index from {@link toBuffer}'s bytes. ERR_FORMAT for anything else or a damaged copy. An index built with a
   * custom analyzer needs that analyzer again (`options.analyzer`), since functions are not saved.
   */
  static fromBuffer(bytes: Uint8Array, options: { analyzer?: Analyzer } = {}): Bm25Index {
    if (!(bytes instanceof Uint8Array)) throw new QuorumError('ERR_ARG', 'fromBuffer needs a Buffer or Uint8Array');
    checkOptions(options, loadKeys, 'Bm25Index.fromBuffer options');
    const bad = (why: string) => new QuorumError('ERR_FORMAT', `not an intact Quorum BM25 index: ${why}`);
    if (bytes.length < 24 || !BM25_MAGIC.every((c, i) => bytes[i] === c)) throw bad('wrong magic or too short');
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (view.getUint32(bytes.length - 4, true) !== fnv1a32(bytes.subarray(0, bytes.length - 4))) throw bad('checksum mismatch');
    const jsonLen = view.getUint32(8, true);
    if (12 + jsonLen + 8 + 4 > bytes.length) throw bad('sizes are corrupt');
    const sparseLen = Number(view.getBigUint64(12 + jsonLen, true));
    if (20 + jsonLen + sparseLen + 4 !== bytes.length) throw bad('sizes are corrupt');
    let meta: {
      k1: number;
      b: number;
      lengthNorm: 'lucene' | 'exact';
      averageLength: number;
      analyzer: 'english' | 'custom';
      vocab: string[];
      df: number[];
      ids: string[];
      removed?: number[];
    };
    try {
      meta = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + jsonLen)));
    } catch {
      throw bad('header is not JSON');
    }
    if (meta.analyzer === 'custom' && !options.analyzer)
      throw new QuorumError('ERR_ARG', 'this BM25 index was built with a custom analyzer: pass the same one as options.analyzer');
    const index = SparseIndex.fromBuffer(bytes.subarray(20 + jsonLen, 20 + jsonLen + sparseLen));
    const removed = meta.removed ?? [];
    if (
      !Array.isArray(removed) ||
      removed.some((r, i) => !Number.isInteger(r) || r < 0 || r >= meta.ids.length || (i > 0 && r <= removed[i - 1]!))
    )
      throw bad('removed rows are corrupt');
    if (index.size !== meta.ids.length - removed.length || meta.df.length !== meta.vocab.length) throw bad('header and postings disagree');
    return new Bm25Index({
      k1: meta.k1,
      b: meta.b,
      lengthNorm: meta.lengthNorm,
      analyzer: options.analyzer ?? englishAnalyzer(),
      analyzerName: meta.analyzer,
      vocab: new Map(meta.vocab.map((t, i) => [t, i])),
      df: Int32Array.from(meta.df),
      ids: meta.ids,
      index,
      averageLength: meta.averageLength,
      removed,
    });
  }

  /** Writes {@link toBuffer}'s bytes to `path` atomically (temporary file, fsync, rename). ERR_IO on failure. */
  save(path: string): void {
    writeFileAtomic(path, this.toBuffer());
  }

  /** Reads an index written by {@link save} (ERR_IO when the file cannot be read, ERR_FORMAT when it is not one). */
  static load(path: string, options: { analyzer?: Analyzer } = {}): Bm25Index {
    checkOptions(options, loadKeys, 'Bm25Index.load options');
    return Bm25Index.fromBuffer(readFileBytes(path), options);
  }

  /** Its postings (what {@link NativeResource.dispose} frees). */
  protected nativeResource(): NativeDisposable {
    return { dispose: () => this.index.dispose(), isDisposed: () => this.index.disposed };
  }

  /** Inverse document frequency of an analyzed term (0 for a term no document has). */
  idf(term: string): number {
    const t = this.vocab.get(term);
    if (t === undefined) return 0;
    const n = this.df[t] as number;
    return Math.log(1 + (this.documents - n + 0.5) / (n + 0.5));
  }

  private queryRows(queries: readonly string[]) {
    if (!Array.isArray(queries)) throw new QuorumError('ERR_ARG', 'BM25 queries must be an array of strings');
    return queries.map((q, i) => {
      if (typeof q !== 'string')
        throw new QuorumError('ERR_ARG', `BM25 query ${i} must be a string, got ${q === null ? 'null' : typeof q}`);
      const counts = new Map<number, number>();
      for (const term of this.analyzer(q)) {
        const t = this.vocab.get(term);
        if (t !== undefined) counts.set(t, (counts.get(t) ?? 0) + 1);
      }
      return Array.from(counts, ([index, c]) => ({ index, value: c * this.idf(this.termOf(index)) }));
    });
  }

  private termCache: string[] | undefined;
  private termOf(id: number): string {
    this.termCache ??= Array.from(this.vocab.keys());
    return this.termCache[id] as string;
  }

  /** The documents' ids, in build order (row i is `documentIds[i]`: what `rows` filters name). */
  get documentIds(): readonly string[] {
    return this.ids;
  }

  private hitsOf(r: SparseSearchResult): Bm25Hit[][] {
    return Array.from({ length: r.rows }, (_, row) => r.hits(row).map((h) => ({ id: this.ids[Number(h.id)] as string, score: h.score })));
  }

  /** The sparse index's options for a BM25 search: the documents' rows are its ids. */
  private sparseOptions(options: Bm25SearchOptions): SparseSearchOptions {
    checkOptions(options, bm25SearchKeys, 'Bm25Index.search options');
    const { rows, ...rest } = options;
    if (rows === undefined) return rest;
    if (rows === null || typeof rows !== 'object' || typeof (rows as { length?: unknown }).length !== 'number')
      throw new QuorumError('ERR_ARG', 'rows must be an Int32Array or an array of document rows');
    return { ...rest, allowedIds: Array.from(rows as ArrayLike<number>) };
  }

  /**
   * The k best documents for each query (score descending, ties by insertion order). `rows` filters inside the
   * search: only those documents (rows in build order, as compileFilter gives them) can be returned.
   */
  async search(queries: readonly string[], k: number, options: Bm25SearchOptions = {}): Promise<Bm25Hit[][]> {
    return this.hitsOf(await this.index.search(this.queryRows(queries), k, this.sparseOptions(options)));
  }

  /** {@link search} on the calling thread. */
  searchSync(queries: readonly string[], k: number, options: Bm25SearchOptions = {}): Bm25Hit[][] {
    return this.hitsOf(this.index.searchSync(this.queryRows(queries), k, this.sparseOptions(options)));
  }
}
