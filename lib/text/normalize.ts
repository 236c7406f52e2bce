// BERT's basic tokenization (uncased), done with V8's Unicode tables: the output is words separated by single ASCII
// spaces, ready for the native WordPiece segmenter. Steps, in BERT's order:
//   0. (option `nfkc`, not BERT's) compatibility characters folded (NFKC): PDF ligatures such as "ﬁ" and "ﬂ" become
//      "fi" and "fl", which BERT would read as pieces that break the word ("inﬂuenza" -> "in", "##ﬂ", ...);
//   1. drop NUL, U+FFFD and control characters (Unicode category C, except tab / newline / carriage return);
//   2. every whitespace character becomes a space;
//   3. CJK ideographs become words of their own;
//   4. lower-case, decompose (NFD) and drop combining marks (category Mn): "Café" -> "cafe" (each optional, for
//      cased checkpoints: Hugging Face's BertNormalizer `lowercase` and `strip_accents`);
//   5. every punctuation character (Unicode category P, plus the ASCII symbols BERT counts as punctuation:
//      $ + < = > ^ ` | ~) becomes a word of its own.
// Text is never scanned for special tokens: "[SEP]" in a passage is three words, not a separator.
import { QuorumError } from '../errors.js';
import { checkOptions, mustBeString, optionKeys } from '../validate.js';

const CONTROL = /[\0\uFFFD]|(?![\t\n\r])\p{C}/gu;
const WHITESPACE = /\s+/gu;
// The CJK Unified Ideographs blocks BERT lists (`_is_chinese_char`).
const CJK =
  /([\u{4E00}-\u{9FFF}\u{3400}-\u{4DBF}\u{20000}-\u{2A6DF}\u{2A700}-\u{2B73F}\u{2B740}-\u{2B81F}\u{2B820}-\u{2CEAF}\u{F900}-\u{FAFF}\u{2F800}-\u{2FA1F}])/gu;
const MARKS = /\p{Mn}/gu;
const PUNCT = /([\p{P}!-/:-@[-`{-~])/gu;

/**
 * Options of {@link normalizeBert}: Hugging Face's BertNormalizer settings (`lowercase`, `stripAccents`,
 * `chineseChars`, `cleanText`, all true by default as for uncased BERT) and Quorum's `nfkc`.
 */
export interface NormalizeOptions {
  /**
   * Fold compatibility characters first (Unicode NFKC): ligatures, full-width forms, superscripts, the micro sign.
   * Not part of BERT (default false, so ids match a BERT checkpoint's tokenizer); Quorum's own models turn it on.
   */
  nfkc?: boolean;
  /** Lower-case (default true; false for cased checkpoints such as bert-base-cased). */
  lowercase?: boolean;
  /** Decompose and drop combining marks (default: the same as `lowercase`, as BertNormalizer's `strip_accents: null`). */
  stripAccents?: boolean;
  /** Make every CJK ideograph a word of its own (default true). */
  chineseChars?: boolean;
  /** Drop control characters and turn every whitespace character into a space (default true). */
  cleanText?: boolean;
}

const normalizeKeys = optionKeys<NormalizeOptions>()(['nfkc', 'lowercase', 'stripAccents', 'chineseChars', 'cleanText']);

/** {@link NormalizeOptions} with every field filled in and checked (ERR_ARG for a non-boolean). */
export function normalizeSettings(options: NormalizeOptions = {}): Required<NormalizeOptions> {
  checkOptions(options, normalizeKeys, 'normalize options');
  for (const k of ['nfkc', 'lowercase', 'stripAccents', 'chineseChars', 'cleanText'] as const)
    if (options[k] !== undefined && typeof options[k] !== 'boolean') throw new QuorumError('ERR_ARG', `${k} must be a boolean`);
  const lowercase = options.lowercase ?? true;
  return {
    nfkc: options.nfkc ?? false,
    lowercase,
    stripAccents: options.stripAccents ?? lowercase,
    chineseChars: options.chineseChars ?? true,
    cleanText: options.cleanText ?? true,
  };
}

/**
 * Normalizes text the way BERT's BasicTokenizer does (uncased by default), returning space-separated words.
 *
 * @example
 * normalizeBert("Héllo, World!")                    // "hello , world !"
 * normalizeBert("Héllo, World!", { lowercase: false })   // "Héllo , World !" (cased: accents kept too)
 * normalizeBert('Inﬂuenza', { nfkc: true })          // "influenza" (without nfkc: "inﬂuenza", ligature kept)
 */
export function normalizeBert(text: string, options: NormalizeOptions = {}): string {
  mustBeString(text, 'text');
  return normalizeWith(text, normalizeSettings(options));
}

// Printable ASCII and tab / newline / carriage return: no step but lower-casing, punctuation and whitespace changes it
// (NFKC and NFD leave ASCII alone, it has no control, CJK or combining character, and its punctuation is PUNCT's
// ASCII part), so those two run as plain (non-Unicode) patterns. Most questions take this path: the full one was about
// 4 us a question, each expert of a MUF server normalizing every question (docs/results/serving.md#dpr-muf).
const ASCII = /^[\x20-\x7e\t\n\r]*$/;
const ASCII_PUNCT = /([!-/:-@[-`{-~])/g;
const ASCII_WHITESPACE = /\s+/g;

/** @internal normalizeBert with settings already checked (normalizeSettings): the tokenizer's per-text path. */
export function normalizeWith(text: string, o: Required<NormalizeOptions>): string {
  if (ASCII.test(text)) {
    const s = o.lowercase ? text.toLowerCase() : text;
    return s.replace(ASCII_PUNCT, ' $1 ').replace(ASCII_WHITESPACE, ' ').trim();
  }
  return normalizeUnicode(text, o);
}

/** @internal Every step of normalizeBert, whatever the text (the reference of normalizeWith's ASCII path). */
export function normalizeUnicode(text: string, o: Required<NormalizeOptions>): string {
  let s = o.nfkc ? text.normalize('NFKC') : text;
  if (o.cleanText) s = s.replace(CONTROL, '');
  if (o.chineseChars) s = s.replace(CJK, ' $1 ');
  if (o.lowercase) s = s.toLowerCase();
  if (o.stripAccents) s = s.normalize('NFD').replace(MARKS, '');
  return s.replace(PUNCT, ' $1 ').replace(WHITESPACE, ' ').trim();
}
