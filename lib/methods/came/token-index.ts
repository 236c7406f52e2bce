// The local expert's index, ColBERT's pipeline: every passage token vector in a faiss index (candidate generation:
// each question token's nearest passage tokens name candidate passages), then exact MaxSim over the candidates'
// full token vectors with Quorum's kernel. With `candidates: 'all'` every passage is re-scored (brute force).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { makeDirs, writeFileAtomic } from '../../data/files.js';
import { DenseIndex } from '../../dense-index.js';
import { readSafetensors, writeSafetensors, type TensorToWrite } from '../../io/safetensors.js';
import { QuorumError } from '../../errors.js';
import { maxSim } from '../../maxsim.js';
import { Tensor } from '../../tensor.js';
import { checkOptions, mustBeObject, optionKeys } from '../../validate.js';
import type { CameEncoding } from './encode.js';
import type { Hit } from './fusion.js';
import { padTokens } from './scores.js';

/** Options of {@link TokenIndex.build}. */
export interface TokenIndexOptions {
  /**
   * faiss factory of the token index (default: "Flat" up to 200,000 tokens, else "IVF<4 sqrt(n)>,Flat" trained on
   * the tokens themselves).
   */
  factory?: string;
  /** IVF lists searched per question token (default 32). */
  nprobe?: number;
}

const buildKeys = optionKeys<TokenIndexOptions>()(['factory', 'nprobe']);
const searchKeys = optionKeys<TokenSearchOptions>()(['candidates', 'rows']);

/** Options of {@link TokenIndex.search}. */
export interface TokenSearchOptions {
  /** Nearest passage tokens per question token that nominate candidates (default 64), or 'all' (brute force). */
  candidates?: number | 'all';
  /** Only these passages (rows, ascending) can be returned: candidates outside them are dropped before MaxSim. */
  rows?: Int32Array;
}

/**
 * CAME's local (ColBERT) expert index: candidates from each question token's nearest passage tokens in a faiss
 * index, then exact MaxSim over the candidates' token vectors. Saved as a directory (faiss index and token vectors).
 *
 * @example
 * const index = await TokenIndex.build(passageEncoding.local!, { factory: 'Flat' });
 * const hits = await index.search(questionEncoding.local!, 100, { candidates: 64 });   // per question: { id, score }[]
 * await index.save('came-index/local');
 */
export class TokenIndex {
  private constructor(
    /** Every passage's unit token vectors, packed, and each passage's first token row. */
    private readonly vectors: Float32Array,
    private readonly lengths: Int32Array,
    private readonly starts: Int32Array,
    private readonly tokenPassage: Int32Array,
    readonly dim: number,
    private readonly ann: DenseIndex,
  ) {}

  /**
   * Indexes the local expert's passage encoding (row i = passage i).
   *
   * @example
   * const index = await TokenIndex.build(passageEncoding.local!);
   * const top = await index.search(questionEncoding.local!, 100);
   */
  static async build(local: NonNullable<CameEncoding['local']>, options: TokenIndexOptions = {}): Promise<TokenIndex> {
    mustBeObject(local, 'local token vectors');
    checkOptions(options, buildKeys, 'TokenIndex.build options');
    const { vectors, lengths, dim } = local;
    const total = vectors.length / dim;
    const { starts, tokenPassage } = layout(lengths, total);
    const factory = options.factory ?? (total <= 200_000 ? 'Flat' : `IVF${Math.max(64, Math.round(4 * Math.sqrt(total)))},Flat`);
    const ann = DenseIndex.create({ dim, factory, ...(factory.startsWith('IVF') ? { nprobe: options.nprobe ?? 32 } : {}) });
    const all = Tensor.wrap(vectors, [total, dim], 'f32');
    if (!ann.info.trained) await ann.train(all);
    await ann.add(all, Array.from({ length: total }, (_, i) => i));
    return new TokenIndex(vectors, lengths, starts, tokenPassage, dim, ann);
  }

  /** The faiss index and the packed token vectors, as two files under `dir`. */
  async save(dir: string): Promise<void> {
    makeDirs(dir);
    await this.ann.save(join(dir, 'tokens.faiss'));
    writeFileAtomic(
      join(dir, 'tokens.safetensors'),
      writeSafetensors(
        new Map<string, TensorToWrite>([
          ['vectors', { shape: [this.tokens, this.dim], data: this.vectors, dtype: 'F32' }],
          ['lengths', { shape: [this.lengths.length], data: Float32Array.from(this.lengths), dtype: 'F32' }],
        ]),
        { format: 'quorum-came-tokens' },
      ),
    );
  }

  /** {@link save}'s files; ERR_FORMAT when they disagree or are damaged. */
  static async load(dir: string): Promise<TokenIndex> {
    const path = join(dir, 'tokens.safetensors');
    let tensors;
    try {
      tensors = readSafetensors(readFileSync(path));
    } catch (e) {
      throw new QuorumError((e as NodeJS.ErrnoException).code === 'ENOENT' ? 'ERR_IO' : 'ERR_FORMAT', `${path}: ${(e as Error).message}`, { cause: e });
    }
    const v = tensors.get('vectors');
    const l = tensors.get('lengths');
    if (!v || !l || v.shape.length !== 2 || l.shape.length !== 1) throw new QuorumError('ERR_FORMAT', `${path} is not a CAME token index`);
    const lengths = Int32Array.from(l.data);
    const dim = v.shape[1]!;
    const total = v.shape[0]!;
    if (lengths.some((n) => !Number.isInteger(n) || n < 0) || lengths.reduce((a, b) => a + b, 0) !== total)
      throw new QuorumError('ERR_FORMAT', `${path}: the lengths do not add up to the ${total} token vectors`);
    const ann = await DenseIndex.load(join(dir, 'tokens.faiss'));
    if (ann.size !== total || ann.dim !== dim) throw new QuorumError('ERR_FORMAT', `${dir}: the faiss index holds ${ann.size} vectors of ${ann.dim}, the table ${total} of ${dim}`);
    const { starts, tokenPassage } = layout(lengths, total);
    return new TokenIndex(v.data, lengths, starts, tokenPassage, dim, ann);
  }

  /** Number of passages indexed. */
  get size(): number {
    return this.lengths.length;
  }

  /** Frees the faiss copy of the token vectors now (or when the search in flight ends); a later search is ERR_DISPOSED. */
  dispose(): void {
    this.ann.dispose();
    this.#table?.dispose();
  }

  /** Token vectors held (faiss holds a second copy). */
  get tokens(): number {
    return this.tokenPassage.length;
  }

  /** The packed token table as MaxSim's documents (a Tensor over the held vectors: read in place, never copied). */
  private table(): { tokens: Tensor<'f32'>; lengths: Int32Array } {
    this.#table ??= Tensor.wrap(this.vectors, [this.tokens, this.dim], 'f32');
    return { tokens: this.#table, lengths: this.lengths };
  }

  #table: Tensor<'f32'> | undefined;

  /** Each question's top `k` passages by exact MaxSim over its candidates. */
  async search(questions: NonNullable<CameEncoding['local']>, k: number, options: TokenSearchOptions = {}): Promise<Hit[][]> {
    checkOptions(options, searchKeys, 'TokenIndex.search options');
    if (questions.dim !== this.dim) throw new QuorumError('ERR_SHAPE', `question tokens are ${questions.dim}-d, the index ${this.dim}-d`);
    if (!Number.isInteger(k) || k < 1) throw new QuorumError('ERR_RANGE', `k must be a positive integer, got ${k}`);
    const per = options.candidates ?? 64;
    const { tokens, mask, maxLength } = padTokens(questions);
    const out: Hit[][] = [];
    const rows = options.rows;
    // A selective filter: its passages scored exactly (nominating candidates from the whole index could leave none).
    if (per === 'all' || (rows && rows.length <= EXACT_FILTER_PASSAGES)) {
      // Brute force over every passage, or over the allowed ones (MaxSim's select).
      const n = rows ? rows.length : this.size;
      const s = n ? (await maxSim(tokens, { ...this.table(), ...(rows ? { select: rows } : {}) }, { queryMask: mask })).scores.data : new Float32Array(0);
      for (let q = 0; q < questions.lengths.length; q++) out.push(top(s.subarray(q * n, (q + 1) * n), (i) => (rows ? rows[i]! : i), k));
      return out;
    }
    let allowed: Uint8Array | undefined;
    if (rows) {
      allowed = new Uint8Array(this.size);
      for (const r of rows) allowed[r] = 1;
    }
    if (!Number.isInteger(per) || per < 1) throw new QuorumError('ERR_RANGE', `candidates must be a positive integer or 'all', got ${per}`);
    const qTokens = questions.vectors;
    const near = await this.ann.search(Tensor.wrap(qTokens, [qTokens.length / this.dim, this.dim], 'f32'), Math.min(per, this.tokens));
    const { ids: nearIds, k: width } = near;
    const seen = new Uint8Array(this.size);
    let row = 0;
    for (let q = 0; q < questions.lengths.length; q++) {
      const n = questions.lengths[q] as number;
      const ids: number[] = [];
      for (const end = (row + n) * width; row * width < end; row++)
        for (let j = row * width; j < (row + 1) * width; j++) {
          const id = Number(nearIds[j]);
          if (id < 0) continue;  // faiss pads a short list with -1
          const p = this.tokenPassage[id] as number;
          if (!seen[p] && (!allowed || allowed[p])) {
            seen[p] = 1;
            ids.push(p);
          }
        }
      for (const p of ids) seen[p] = 0;
      // The candidates are scored where they lie in the packed table (select): no copy of their tokens.
      const one = Tensor.wrap(tokens.data.subarray(q * maxLength * this.dim, (q + 1) * maxLength * this.dim), [1, maxLength, this.dim], 'f32');
      const s = ids.length ? (await maxSim(one, { ...this.table(), select: Int32Array.from(ids) }, { queryMask: mask.subarray(q * maxLength, (q + 1) * maxLength) })).scores.data : new Float32Array(0);
      out.push(top(s, (i) => ids[i]!, k));
    }
    return out;
  }
}

/** A filter allowing at most this many passages scores them all exactly (a few ms of MaxSim) instead of nominating. */
const EXACT_FILTER_PASSAGES = 1000;

/** Each passage's first token row, and each token row's passage. */
function layout(lengths: Int32Array, total: number): { starts: Int32Array; tokenPassage: Int32Array } {
  const starts = new Int32Array(lengths.length + 1);
  const tokenPassage = new Int32Array(total);
  for (let r = 0; r < lengths.length; r++) {
    starts[r + 1] = (starts[r] as number) + (lengths[r] as number);
    tokenPassage.fill(r, starts[r] as number, starts[r + 1] as number);
  }
  return { starts, tokenPassage };
}

/** The k best of `scores` (ties to the lower passage id) as hits with ids idOf(i). */
function top(scores: Float32Array, idOf: (i: number) => number, k: number): Hit[] {
  return Array.from(scores, (score, i) => ({ id: idOf(i), score }))
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, k);
}
