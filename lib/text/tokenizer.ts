// BERT WordPiece tokenization: Unicode normalization in TypeScript (normalize.ts), segmentation and framing in
// native code (native/text/wordpiece.h). The default vocabulary is bert-base-uncased's, shipped in data/vocab.
import { join } from 'node:path';

import { QuorumError, awaitNative, callNative } from '../errors.js';
import { readTextFile } from '../data/files.js';
import { packageRoot } from '../native.js';
import { tokenizerObject, type NativeWordPiece } from '../bindings/tokenizer_object.js';
import { normalizeBert, normalizeSettings, normalizeWith, type NormalizeOptions } from './normalize.js';
import { checkOptions, mustBeString, optionKeys } from '../validate.js';
import { brandClass } from '../brand.js';

/** Options of {@link WordPieceTokenizer.encode}. */
export interface EncodeOptions {
  /** Longest row, counting [CLS], [SEP] and the marker (default 256, DPR's). Longer text is truncated. */
  maxLength?: number;
  /** Second segments (e.g. passage text after its title): rows become "[CLS] first [SEP] second [SEP]". */
  pairs?: readonly string[];
  /** A task marker (Maillard et al.): the id of `[unused<marker>]`, placed right after [CLS]. */
  marker?: number;
  /** Pad every row to maxLength; by default rows are padded to the longest row of the batch. */
  padToMax?: boolean;
}

/** An encoded batch: `rows` x `seqLen` row-major ids, padded with [PAD]. */
export interface EncodedBatch {
  /** Token ids, `rows * seqLen`, row-major. */
  ids: Int32Array;
  /** 0 for the first segment (with [CLS], the marker and its [SEP]), 1 for the second segment and its [SEP]. */
  typeIds: Int32Array;
  /** Tokens per row, framing included; positions at or beyond it are padding. */
  lengths: Int32Array;
  /** Number of texts encoded. */
  rows: number;
  /** Columns per row: the longest row's length, or `maxLength` with `padToMax`. */
  seqLen: number;
}

/** Where the bundled bert-base-uncased vocabulary (30,522 tokens, Apache-2.0) lives. */
export const defaultVocabPath: string = join(packageRoot, 'data', 'vocab', 'bert-base-uncased-vocab.txt');

/** Options of the {@link WordPieceTokenizer} constructor and {@link WordPieceTokenizer.load}. */
export interface TokenizerOptions extends NormalizeOptions {
  /** Words longer than this many characters become [UNK] (BERT: 100). */
  maxWordChars?: number;
}

const tokenizerKeys = optionKeys<TokenizerOptions>()(['nfkc', 'lowercase', 'stripAccents', 'chineseChars', 'cleanText', 'maxWordChars']);
const encodeKeys = optionKeys<EncodeOptions>()(['maxLength', 'pairs', 'marker', 'padToMax']);

/**
 * BERT WordPiece tokenizer. Text is normalized as BERT's BasicTokenizer does (by default uncased: lower case, accents
 * stripped, punctuation split; cased with `lowercase: false`; with `nfkc`, compatibility characters such as ligatures
 * folded first), then segmented greedily into the longest vocabulary pieces.
 *
 * @example
 * const tok = await WordPieceTokenizer.load();
 * tok.tokenize('Unaffable!');                     // ['una', '##ffa', '##ble', '!']
 * const q = tok.encode(['who wrote it?'], { marker: tok.markerId(1) });
 * const p = await tok.encodeAsync(['Hamlet'], { pairs: ['A play by Shakespeare.'], maxLength: 128 });
 */
export class WordPieceTokenizer {
  /** The tokens; token i has id i. */
  readonly vocabulary: readonly string[];
  /** Id of [PAD]. */
  readonly padId: number;
  /** Id of [UNK], what a word with no vocabulary pieces becomes. */
  readonly unkId: number;
  /** Id of [CLS], first in every row. */
  readonly clsId: number;
  /** Id of [SEP], which closes each segment. */
  readonly sepId: number;
  /** Whether compatibility characters are folded (NFKC) before BERT's normalization. */
  readonly nfkc: boolean;
  /** The normalization, every setting filled in (what tokenizer files store). */
  readonly normalization: Readonly<Required<NormalizeOptions>>;
  /** Words longer than this many characters become [UNK]. */
  readonly maxWordChars: number;
  private readonly native: NativeWordPiece;

  /** From a token list: token i has id i. Needs [PAD], [UNK], [CLS] and [SEP]; tokens must be unique. */
  constructor(vocabulary: readonly string[], options: TokenizerOptions = {}) {
    const Ctor = tokenizerObject().WordPiece;
    if (options === null || typeof options !== 'object') throw new QuorumError('ERR_ARG', 'tokenizer options must be an object');
    checkOptions(options, tokenizerKeys, 'tokenizer options');
    const { maxWordChars = 100, ...normalization } = options;
    this.normalization = Object.freeze(normalizeSettings(normalization));
    this.native = callNative(() => new Ctor([...vocabulary], maxWordChars));
    this.vocabulary = vocabulary;
    this.nfkc = this.normalization.nfkc;
    this.maxWordChars = maxWordChars;
    this.padId = this.native.idOf('[PAD]');
    this.unkId = this.native.idOf('[UNK]');
    this.clsId = this.native.idOf('[CLS]');
    this.sepId = this.native.idOf('[SEP]');
  }

  /** Reads a vocabulary file, one token per line (default: the bundled bert-base-uncased vocabulary). */
  static async load(path: string = defaultVocabPath, options: TokenizerOptions = {}): Promise<WordPieceTokenizer> {
    const text = readTextFile(path);
    const tokens = text.split('\n');
    if (tokens.at(-1) === '') tokens.pop();
    return new WordPieceTokenizer(
      tokens.map((t) => t.replace(/\r$/, '')),
      options,
    );
  }

  /** This tokenizer's normalization of a text: the words the segmenter reads. */
  normalize(text: string): string {
    mustBeString(text, 'text');
    return normalizeWith(text, this.normalization);
  }

  /** Number of tokens in the vocabulary. */
  get size(): number {
    return this.vocabulary.length;
  }

  /** The id of a token, or -1. */
  idOf(token: string): number {
    if (typeof token !== 'string') throw new QuorumError('ERR_ARG', 'token must be a string');
    return callNative(() => this.native.idOf(token));
  }

  /** The id of the task marker `[unused<i>]` (BERT's vocabulary has [unused0] .. [unused993]). */
  markerId(i: number): number {
    const id = this.native.idOf(`[unused${i}]`);
    if (id < 0) throw new QuorumError('ERR_RANGE', `the vocabulary has no [unused${i}] token for a task marker`);
    return id;
  }

  /** The WordPiece tokens of a text, without framing. */
  tokenize(text: string): string[] {
    return Array.from(this.ids(text), (id) => this.vocabulary[id]!);
  }

  /** The WordPiece ids of a text, without framing. */
  ids(text: string): Int32Array {
    if (typeof text !== 'string') throw new QuorumError('ERR_ARG', `text must be a string, got ${text === null ? 'null' : typeof text}`);
    return callNative(() => this.native.pieces(this.normalize(text)));
  }

  /** Joins ids back into text: framing and padding dropped, "##" pieces glued to the piece before. */
  decode(ids: ArrayLike<number>): string {
    if (ids === null || typeof ids !== 'object' || typeof (ids as { length?: unknown }).length !== 'number')
      throw new QuorumError('ERR_ARG', 'ids must be an array or typed array of token ids');
    const out: string[] = [];
    for (const id of Array.from(ids)) {
      if (id === this.padId || id === this.clsId || id === this.sepId) continue;
      const t = this.vocabulary[id];
      if (t === undefined) throw new QuorumError('ERR_RANGE', `token id ${id} outside the vocabulary of ${this.size}`);
      if (t.startsWith('##') && out.length > 0) out[out.length - 1] += t.slice(2);
      else out.push(t);
    }
    return out.join(' ');
  }

  /** Encodes a batch on the calling thread. */
  encode(texts: readonly string[], options: EncodeOptions = {}): EncodedBatch {
    const a = this.args(texts, options);
    return callNative(() => this.native.encode(a[0], a[1], a[2], a[3], a[4], false) as EncodedBatch);
  }

  /** Encodes a batch with the segmentation off the main thread (normalization stays on it). */
  async encodeAsync(texts: readonly string[], options: EncodeOptions = {}): Promise<EncodedBatch> {
    const a = this.args(texts, options);
    return awaitNative(callNative(() => this.native.encode(a[0], a[1], a[2], a[3], a[4], true)) as Promise<EncodedBatch>);
  }

  /**
   * @internal The native segmenter and the checked, normalized arguments of an encode call, for a native call that
   * segments and embeds in one (embedTexts, lib/models/embedding-bag.ts).
   */
  nativeInputs(
    texts: readonly string[],
    options: EncodeOptions = {},
  ): { native: NativeWordPiece; first: string[]; second: string[] | null; maxLength: number; marker: number } {
    const [first, second, maxLength, marker] = this.args(texts, options);
    return { native: this.native, first, second, maxLength, marker };
  }

  private args(texts: readonly string[], o: EncodeOptions): [string[], string[] | null, number, number, boolean] {
    if (!Array.isArray(texts)) throw new QuorumError('ERR_ARG', 'texts must be an array of strings');
    checkOptions(o, encodeKeys, 'encode options');
    if (o.pairs !== undefined && o.pairs.length !== texts.length)
      throw new QuorumError('ERR_SHAPE', `${texts.length} texts but ${o.pairs.length} pairs`);
    const norm = (xs: readonly string[], what: string) =>
      xs.map((t, i) => {
        if (typeof t !== 'string') throw new QuorumError('ERR_ARG', `${what}[${i}] is not a string`);
        return this.normalize(t);
      });
    const marker = o.marker ?? -1;
    if (!Number.isInteger(marker) || marker >= this.size)
      throw new QuorumError('ERR_RANGE', `marker ${marker} is not a token id of this vocabulary`);
    return [norm(texts, 'texts'), o.pairs ? norm(o.pairs, 'pairs') : null, o.maxLength ?? 256, marker, o.padToMax ?? false];
  }
}
// `instanceof WordPieceTokenizer` holds for the other copy's tokenizers too (ESM and CommonJS in one process).
brandClass(WordPieceTokenizer, 'WordPieceTokenizer');

const extendKeys = optionKeys<NonNullable<Parameters<typeof extendVocabulary>[2]>>()([
  'keep',
  'minCount',
  'maxWords',
  'maxWordChars',
  'nfkc',
]);

/**
 * A WordPiece vocabulary extended with whole words: every word of `texts` (BERT-normalised, so lower-cased and split
 * at punctuation; with `nfkc`, compatibility characters folded first, as the tokenizer that will read it must) that
 * `keep` accepts and the vocabulary does not hold whole is appended, most frequent first (ties
 * in code-point order), up to `maxWords`. Greedy longest-match-first then reads such a word as one token instead of
 * pieces: with GloVe embeddings, "coronavirus" keeps its own vector instead of those of "corona" and "##virus".
 *
 * @example
 * const vocab = extendVocabulary(tok.vocabulary, passages.map((p) => p.text), { keep: (w) => glove.words.has(w) });
 * const wordTok = new WordPieceTokenizer(vocab);
 * // the same with ligatures folded, on both sides:
 * const nfkcTok = new WordPieceTokenizer(extendVocabulary(tok.vocabulary, texts, { nfkc: true }), { nfkc: true });
 */
export function extendVocabulary(
  vocabulary: readonly string[],
  texts: Iterable<string>,
  options: { keep?: (word: string) => boolean; minCount?: number; maxWords?: number; maxWordChars?: number; nfkc?: boolean } = {},
): string[] {
  if (!Array.isArray(vocabulary)) throw new QuorumError('ERR_ARG', 'vocabulary must be an array of tokens');
  if (texts === null || typeof (texts as Iterable<string>)?.[Symbol.iterator] !== 'function' || typeof texts === 'string')
    throw new QuorumError('ERR_ARG', 'texts must be an iterable of strings');
  checkOptions(options, extendKeys, 'extendVocabulary options');
  const have = new Set(vocabulary);
  const counts = new Map<string, number>();
  const maxChars = options.maxWordChars ?? 100;
  for (const text of texts)
    for (const word of normalizeBert(text, { nfkc: options.nfkc === true }).split(/\s+/)) {
      if (!word || have.has(word) || [...word].length > maxChars || !/^[\p{L}\p{N}]/u.test(word)) continue;
      counts.set(word, (counts.get(word) ?? 0) + 1);
    }
  const minCount = options.minCount ?? 1;
  const words = [...counts]
    .filter(([w, c]) => c >= minCount && (options.keep?.(w) ?? true))
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, options.maxWords ?? Infinity)
    .map(([w]) => w);
  return [...vocabulary, ...words];
}
