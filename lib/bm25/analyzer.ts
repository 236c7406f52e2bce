// Text analysis for BM25, modelled on Lucene's EnglishAnalyzer (which Anserini's BM25 baselines use):
// Unicode word segmentation (UAX #29, as Lucene's StandardTokenizer), possessive 's removal, lowercasing,
// optional English stopwords and Porter stemming.
import { stemmer } from 'stemmer';
import { checkOptions, optionKeys } from '../validate.js';

/** Lucene's default English stopword set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET). */
export const luceneEnglishStopwords: ReadonlySet<string> = new Set([
  'a', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'for', 'if', 'in', 'into', 'is', 'it', 'no', 'not', 'of',
  'on', 'or', 'such', 'that', 'the', 'their', 'then', 'there', 'these', 'they', 'this', 'to', 'was', 'will', 'with',
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

/**
 * An analyzer like Lucene's EnglishAnalyzer.
 *
 * @example
 * englishAnalyzer()("The system's operating systems") // ['system', 'oper', 'system']
 */
export function englishAnalyzer(options: AnalyzerOptions = {}): Analyzer {
  checkOptions(options, analyzerKeys, 'analyzer options');
  const stop = options.stopwords === false ? undefined : options.stopwords === true || options.stopwords === undefined ? luceneEnglishStopwords : options.stopwords;
  const stem = options.stem !== false;
  return (text: string) => {
    const out: string[] = [];
    for (const s of wordSegments(text)) {
      if (!s.isWordLike) continue;
      let t = s.segment.toLowerCase();
      if (t.endsWith("'s") || t.endsWith('\u2019s')) t = t.slice(0, -2);
      if (t.length === 0 || (stop && stop.has(t))) continue;
      out.push(stem ? stemmer(t) : t);
    }
    return out;
  };
}
