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

/**
 * A BM25 index over a fixed document collection (built once: BM25's statistics are corpus-wide).
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
  /** Number of documents indexed. */
  readonly documents: number;
  /** Mean document length in terms (after analysis), as BM25's `avgdl`. */
  readonly averageLength: number;
  /** How document lengths are stored: Lucene's one-byte rounding or exact. */
  readonly lengthNorm: 'lucene' | 'exact';
  private readonly analyzer: Analyzer;
  /** 'english' when built with the default analyzer (so a saved index can rebuild it), else 'custom'. */
  private readonly analyzerName: 'english' | 'custom';
  private readonly vocab: Map<string, number>;
  private readonly df: Int32Array;
  private readonly ids: string[];
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
    this.documents = fields.ids.length;
    this.averageLength = fields.averageLength;
  }

  /** Analyzes and indexes the documents. Ids must be unique. */
  static async build(docs: ReadonlyArray<{ id: string; text: string }>, options: Bm25Options = {}): Promise<Bm25Index> {
    parse(bm25OptionsSchema, options, 'BM25 options');
    if (!Array.isArray(docs)) throw new QuorumError('ERR_ARG', 'BM25 needs an array of { id, text } documents');
    docs.forEach((d, i) => {
      if (d === null || typeof d !== 'object' || typeof d.id !== 'string' || typeof d.text !== 'string')
        throw new QuorumError('ERR_ARG', `document ${i} must be { id: string, text: string }`);
    });
    const k1 = options.k1 ?? 0.9;
    const b = options.b ?? 0.4;
    const analyzer = options.analyzer ?? englishAnalyzer();
    const vocab = new Map<string, number>();
    const seen = new Set<string>();
    const perDoc: Array<Map<number, number>> = [];
    const lengths: number[] = [];
    let total = 0;
    // The analysis is JavaScript on the calling thread: it yields to the event loop every few milliseconds, so that a
    // server building an index (a swap, docs/api.md#swapping-a-live-index) keeps answering meanwhile.
    let slice = performance.now();
    for (const d of docs) {
      if (performance.now() - slice > YIELD_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        slice = performance.now();
      }
      if (seen.has(d.id)) throw new QuorumError('ERR_ARG', `duplicate document id ${d.id}`);
      seen.add(d.id);
      const tf = new Map<number, number>();
      const terms = analyzer(d.text);
      for (const t of terms) {
        let id = vocab.get(t);
        if (id === undefined) vocab.set(t, (id = vocab.size));
        tf.set(id, (tf.get(id) ?? 0) + 1);
      }
      perDoc.push(tf);
      lengths.push(terms.length);
      total += terms.length;
    }
    const avgdl = docs.length ? total / docs.length : 0;
    const df = new Int32Array(vocab.size);
    for (const tf of perDoc) for (const t of tf.keys()) df[t]! += 1;
    // Document-side weights: tf / (tf + k1 * (1 - b + b * dl / avgdl)); the idf goes on the query side. Written as
    // CSR rows straight away (an object per posting cost a pause of ~90 ms on 3,000 passages).
    let nnz = 0;
    for (const tf of perDoc) nnz += tf.size;
    const offsets = new BigInt64Array(perDoc.length + 1);
    const indices = new Int32Array(nnz);
    const values = new Float32Array(nnz);
    let e = 0;
    perDoc.forEach((tf, i) => {
      const dl = options.lengthNorm === 'exact' ? (lengths[i] as number) : luceneQuantizedLength(lengths[i] as number);
      const norm = k1 * (1 - b + (avgdl > 0 ? (b * dl) / avgdl : 0));
      for (const [t, f] of tf) {
        indices[e] = t;
        values[e++] = f / (f + norm);
      }
      offsets[i + 1] = BigInt(e);
    });
    const index = new SparseIndex();
    await index.add(BigInt64Array.from(perDoc, (_, i) => BigInt(i)), sparseVectors(offsets, indices, values));
    return new Bm25Index({
      k1,
      b,
      lengthNorm: options.lengthNorm ?? 'lucene',
      analyzer,
      analyzerName: options.analyzer ? 'custom' : 'english',
      vocab,
      df,
      ids: docs.map((d) => d.id),
      index,
      averageLength: avgdl,
    });
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
        df: Array.from(this.df),
        ids: this.ids,
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
    let meta: { k1: number; b: number; lengthNorm: 'lucene' | 'exact'; averageLength: number; analyzer: 'english' | 'custom'; vocab: string[]; df: number[]; ids: string[] };
    try {
      meta = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + jsonLen)));
    } catch {
      throw bad('header is not JSON');
    }
    if (meta.analyzer === 'custom' && !options.analyzer)
      throw new QuorumError('ERR_ARG', 'this BM25 index was built with a custom analyzer: pass the same one as options.analyzer');
    const index = SparseIndex.fromBuffer(bytes.subarray(20 + jsonLen, 20 + jsonLen + sparseLen));
    if (index.size !== meta.ids.length || meta.df.length !== meta.vocab.length) throw bad('header and postings disagree');
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
      if (typeof q !== 'string') throw new QuorumError('ERR_ARG', `BM25 query ${i} must be a string, got ${q === null ? 'null' : typeof q}`);
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
    if (rows === null || typeof rows !== 'object' || typeof (rows as { length?: unknown }).length !== 'number') throw new QuorumError('ERR_ARG', 'rows must be an Int32Array or an array of document rows');
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
