/**
 * `quorum-retrieval/text`: tokenizer files and vocabulary (Quorum's and Hugging Face's), BERT's text normalization,
 * and the BM25 analyzer.
 *
 * @packageDocumentation
 */
export { englishAnalyzer, luceneEnglishStopwords, type Analyzer, type AnalyzerOptions } from '../bm25/analyzer.js';
export { luceneQuantizedLength } from '../bm25/length-norm.js';
export { defaultVocabPath, extendVocabulary, type TokenizerOptions } from '../text/tokenizer.js';
export { readTokenizerFiles, writeTokenizerFiles, type TokenizerSettings } from '../text/tokenizer-files.js';
export { normalizeBert, normalizeSettings, type NormalizeOptions } from '../text/normalize.js';
export {
  hfTokenizerJson,
  hfTokenizerSpec,
  isHfTokenizerJson,
  readHfTokenizer,
  readHfTokenizerSpec,
  type TokenizerSpec,
} from '../text/hf-tokenizer.js';
