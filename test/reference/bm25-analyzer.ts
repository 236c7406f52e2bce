// The BM25 analyzer as it was before the fast path (lib/bm25/analyzer.ts, docs/api.md#sparse-index-bm25-hybrid): every word
// from Intl.Segmenter (UAX #29, whitespace-cut pieces), then lowercase, possessive 's dropped, Lucene's stopwords,
// Porter stemming, with no cache. test/bm25.test.ts and bench/bm25-analyzer.ts check the analyzer against it.
import { stemmer } from 'stemmer';

import { luceneEnglishStopwords, wordSegments } from '../../lib/bm25/analyzer.js';

/** Terms of `text`, as the Intl.Segmenter analyzer gives them. */
export function referenceEnglishTerms(text: string): string[] {
  const out: string[] = [];
  for (const s of wordSegments(text)) {
    if (!s.isWordLike) continue;
    let t = s.segment.toLowerCase();
    if (t.endsWith("'s") || t.endsWith('\u2019s')) t = t.slice(0, -2);
    if (t.length === 0 || luceneEnglishStopwords.has(t)) continue;
    out.push(stemmer(t));
  }
  return out;
}

/** The word-like segments of one Intl.Segmenter call over `text`. */
export function referenceWords(text: string): string[] {
  const out: string[] = [];
  for (const s of new Intl.Segmenter('en', { granularity: 'word' }).segment(text)) if (s.isWordLike) out.push(s.segment);
  return out;
}
