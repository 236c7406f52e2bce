// BERT's basic tokenization (uncased), done with V8's Unicode tables: the output is words separated by single ASCII
// spaces, ready for the native WordPiece segmenter. Steps, in BERT's order:
//   0. (option `nfkc`, not BERT's) compatibility characters folded (NFKC): PDF ligatures such as "ﬁ" and "ﬂ" become
//      "fi" and "fl", which BERT would read as pieces that break the word ("inﬂuenza" -> "in", "##ﬂ", ...);
//   1. drop NUL, U+FFFD and control characters (Unicode category C, except tab / newline / carriage return);
//   2. every whitespace character becomes a space;
//   3. CJK ideographs become words of their own;
//   4. lower-case, decompose (NFD) and drop combining marks (category Mn): "Café" -> "cafe";
//   5. every punctuation character (Unicode category P, plus the ASCII symbols BERT counts as punctuation:
//      $ + < = > ^ ` | ~) becomes a word of its own.
// Text is never scanned for special tokens: "[SEP]" in a passage is three words, not a separator.
import { checkOptions, mustBeString, optionKeys } from '../validate.js';


const CONTROL = /[\0\uFFFD]|(?![\t\n\r])\p{C}/gu;
const WHITESPACE = /\s+/gu;
// The CJK Unified Ideographs blocks BERT lists (`_is_chinese_char`).
const CJK =
  /([\u{4E00}-\u{9FFF}\u{3400}-\u{4DBF}\u{20000}-\u{2A6DF}\u{2A700}-\u{2B73F}\u{2B740}-\u{2B81F}\u{2B820}-\u{2CEAF}\u{F900}-\u{FAFF}\u{2F800}-\u{2FA1F}])/gu;
const MARKS = /\p{Mn}/gu;
const PUNCT = /([\p{P}!-/:-@[-`{-~])/gu;

/** Options of {@link normalizeBert}. */
export interface NormalizeOptions {
  /**
   * Fold compatibility characters first (Unicode NFKC): ligatures, full-width forms, superscripts, the micro sign.
   * Not part of BERT (default false, so ids match a BERT checkpoint's tokenizer); Quorum's own models turn it on.
   */
  nfkc?: boolean;
}

const normalizeKeys = optionKeys<NormalizeOptions>()(['nfkc']);

/**
 * Normalizes text the way BERT's uncased BasicTokenizer does, returning space-separated words.
 *
 * @example
 * normalizeBert("Héllo, World!")                    // "hello , world !"
 * normalizeBert('Inﬂuenza', { nfkc: true })          // "influenza" (without nfkc: "inﬂuenza", ligature kept)
 */
export function normalizeBert(text: string, options: NormalizeOptions = {}): string {
  mustBeString(text, 'text');
  checkOptions(options, normalizeKeys, 'normalizeBert options');
  return (options.nfkc ? text.normalize('NFKC') : text)
    .replace(CONTROL, '')
    .replace(CJK, ' $1 ')
    .toLowerCase()
    .normalize('NFD')
    .replace(MARKS, '')
    .replace(PUNCT, ' $1 ')
    .replace(WHITESPACE, ' ')
    .trim();
}
