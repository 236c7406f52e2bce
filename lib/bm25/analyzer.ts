// Text analysis for BM25, modelled on Lucene's EnglishAnalyzer (which Anserini's BM25 baselines use):
// Unicode word segmentation (UAX #29, as Lucene's StandardTokenizer), possessive 's removal, lowercasing,
// optional English stopwords and Porter stemming.
import { stemmer } from 'stemmer';
import { checkOptions, optionKeys } from '../validate.js';

/** Lucene's default English stopword set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET). */
export const luceneEnglishStopwords: ReadonlySet<string> = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'but',
  'by',
  'for',
  'if',
  'in',
  'into',
  'is',
  'it',
  'no',
  'not',
  'of',
  'on',
  'or',
  'such',
  'that',
  'the',
  'their',
  'then',
  'there',
  'these',
  'they',
  'this',
  'to',
  'was',
  'will',
  'with',
]);

/** Options of {@link englishAnalyzer}. */
export interface AnalyzerOptions {
  /** Drop Lucene's English stopwords (default true), or a custom set. */
  stopwords?: boolean | ReadonlySet<string>;
  /** Porter stemming (default true). */
  stem?: boolean;
}

const analyzerKeys = optionKeys<AnalyzerOptions>()(['stopwords', 'stem']);

/** Turns text into index terms. */
export type Analyzer = (text: string) => string[];

const segmenter = new Intl.Segmenter('en', { granularity: 'word' });

// Intl.Segmenter's cost grows much faster than the text (40,000 words took 42 s in one call, 16,000 words 2.6 s):
// the text is segmented in pieces of about this many characters, each cut just before a whitespace character,
// which UAX #29 always breaks before, so the words are the same as one call's.
const SEGMENT_CHUNK = 1024;

/**
 * @internal The word segments of `text` (UAX #29), computed piecewise: pieces end before a whitespace character at
 * least `chunk` characters in; a piece with no whitespace in twice that is cut there (a pathological run of
 * non-space text, which may then split one word).
 */
export function* wordSegments(text: string, chunk = SEGMENT_CHUNK): Generator<Intl.SegmentData> {
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + chunk);
    if (end < text.length) {
      const limit = Math.min(text.length, end + chunk);
      while (end < limit && !/\s/.test(text[end]!)) end++;
      // A hard cut must not split a surrogate pair.
      if (end < text.length && /[\uDC00-\uDFFF]/.test(text[end]!)) end++;
    }
    yield* segmenter.segment(text.slice(start, end));
    start = end;
  }
}

// Text in the common Latin alphabet takes a fast path: UAX #29's word rules for those characters, as one regular
// expression (Intl.Segmenter makes an object per segment: ~180k words/s here; docs/api.md#sparse-index-bm25-hybrid). There,
// letters (ASCII and Latin-1 / Latin Extended-A and -B letters), digits and '_' form words: letters and digits join
// each other (WB5, WB8-10), '_' joins anything next to it (WB13a/b); '.', the apostrophes (' U+2018 U+2019), ':' and
// U+00B7 join two letters (WB6/7: ':' is MidLetter in the ICU Node ships), '.', the apostrophes, ',' and ';' two digits
// (WB11/12). A word of a single '_' is not word-like in ICU, '__' is. Every other character of the fast alphabet
// (ASCII punctuation and controls, the Latin-1 signs below, dashes, double quotes, the ellipsis) stands alone. Checked
// against Intl.Segmenter on random strings of the alphabet and on the corpora (test/bm25.test.ts, bench/bm25.ts).
const LETTER = 'A-Za-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u024F';
const FAST_WORD = new RegExp(
  `(?:[${LETTER}0-9_]|(?<=[${LETTER}])[.'\u2018\u2019:\u00B7](?=[${LETTER}])|(?<=[0-9])[.,;'\u2018\u2019](?=[0-9]))+`,
  'g',
);
// Outside the fast alphabet: U+00AA, U+00B5, U+00BA and U+00B8 are letters to ICU, U+00AD is a format character
// (WB4: ignored inside a word), and everything beyond U+024F but a few punctuation marks is left to Intl.Segmenter.
const SLOW = /[^\x00-\x7f\u00A0-\u00A9\u00AB\u00AC\u00AE-\u00B4\u00B6\u00B7\u00B9\u00BB-\u024F\u2013\u2014\u2018\u2019\u201C\u201D\u2026]/;
// ASCII whitespace always ends a word in UAX #29 (no rule joins across it); other characters JS calls whitespace
// (U+00A0, U+FEFF, ...) may not, so pieces are cut at ASCII whitespace only.
const PIECE = /[^ \t\n\r\f\v]+/g;

/** @internal Calls `emit` with each word-like segment of `text` (UAX #29), in order: the same words as Intl.Segmenter. */
export function forEachWord(text: string, emit: (word: string) => void): void {
  if (!SLOW.test(text)) return fastWords(text, emit);
  // Mixed text: pieces in the fast alphabet by the rules above; each stretch of pieces with other characters by
  // Intl.Segmenter.
  let from = -1;
  let to = -1;
  for (const m of text.matchAll(PIECE)) {
    if (SLOW.test(m[0])) {
      if (from < 0) from = m.index;
      to = m.index + m[0].length;
      continue;
    }
    if (from >= 0) segmenterWords(text.slice(from, to), emit);
    from = -1;
    fastWords(m[0], emit);
  }
  if (from >= 0) segmenterWords(text.slice(from, to), emit);
}

function fastWords(text: string, emit: (word: string) => void): void {
  const words = text.match(FAST_WORD);
  if (words) for (const w of words) if (w !== '_') emit(w);
}

function segmenterWords(text: string, emit: (word: string) => void): void {
  for (const s of wordSegments(text)) if (s.isWordLike) emit(s.segment);
}

// The term of each word seen (null: none), per analyzer: word frequencies are Zipfian, so most words are lowercased,
// checked and stemmed once.
const TERM_CACHE = 200_000;

/**
 * An analyzer like Lucene's EnglishAnalyzer.
 *
 * @example
 * englishAnalyzer()("The system's operating systems") // ['system', 'oper', 'system']
 */
export function englishAnalyzer(options: AnalyzerOptions = {}): Analyzer {
  checkOptions(options, analyzerKeys, 'analyzer options');
  const stop =
    options.stopwords === false
      ? undefined
      : options.stopwords === true || options.stopwords === undefined
        ? luceneEnglishStopwords
        : options.stopwords;
  const stem = options.stem !== false;
  const terms = new Map<string, string | null>();
  const termOf = (w: string): string | null => {
    let t = w.toLowerCase();
    if (t.endsWith("'s") || t.endsWith('\u2019s')) t = t.slice(0, -2);
    if (t.length === 0 || (stop && stop.has(t))) return null;
    return stem ? stemmer(t) : t;
  };
  return (text: string) => {
    const out: string[] = [];
    forEachWord(text, (w) => {
      let t = terms.get(w);
      if (t === undefined) {
        t = termOf(w);
        if (terms.size >= TERM_CACHE) terms.clear();
        terms.set(w, t);
      }
      if (t !== null) out.push(t);
    });
    return out;
  };
}
