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
    for (const s of segmenter.segment(text)) {
      if (!s.isWordLike) continue;
      let t = s.segment.toLowerCase();
      if (t.endsWith("'s") || t.endsWith('\u2019s')) t = t.slice(0, -2);
      if (t.length === 0 || (stop && stop.has(t))) continue;
      out.push(stem ? stemmer(t) : t);
    }
    return out;
  };
}
