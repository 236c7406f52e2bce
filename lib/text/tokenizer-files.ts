// A model directory's tokenizer, shared by the Retriever, CAME and ROM formats: vocab.txt (one token per line) and
// tokenizer.json (the normalization settings). A directory without tokenizer.json was written before the settings
// existed and loads with BERT's normalization alone, the one its model was trained with. A tokenizer.json in Hugging
// Face's format (hf-tokenizer.ts) is read as well, so that a directory a user assembled by hand still loads.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { QuorumError } from '../errors.js';
import { readJsonFile, writeFileAtomic } from '../data/files.js';
import { mustBeString } from '../validate.js';
import { WordPieceTokenizer, type TokenizerOptions } from './tokenizer.js';
import { hfTokenizerSpec, isHfTokenizerJson } from './hf-tokenizer.js';
import type { NormalizeOptions } from './normalize.js';

/** What tokenizer.json holds: the normalization (fields other than `nfkc` may be absent: BERT's uncased defaults). */
export interface TokenizerSettings extends NormalizeOptions {
  /** Compatibility characters folded (NFKC) before BERT's normalization. */
  nfkc: boolean;
  /** Words longer than this many characters become [UNK] (default 100). */
  maxWordChars?: number;
}

const SETTING_FLAGS = ['lowercase', 'stripAccents', 'chineseChars', 'cleanText'] as const;

/**
 * Writes `tokenizer` into `dir` (which must exist): vocab.txt and tokenizer.json, each atomically.
 *
 * @example
 * writeTokenizerFiles('models/taser', tokenizer);
 * const again = await readTokenizerFiles('models/taser');   // same vocabulary, same normalization
 */
export function writeTokenizerFiles(dir: string, tokenizer: WordPieceTokenizer): void {
  mustBeString(dir, 'directory');
  if (!(tokenizer instanceof WordPieceTokenizer)) throw new QuorumError('ERR_ARG', 'tokenizer must be a WordPieceTokenizer');
  writeFileAtomic(join(dir, 'vocab.txt'), Buffer.from(tokenizer.vocabulary.join('\n') + '\n'));
  const n = tokenizer.normalization;
  const settings: TokenizerSettings = { nfkc: n.nfkc };
  // Only settings that differ from BERT's uncased defaults are written, so that files of uncased models stay as
  // they were before cased checkpoints loaded.
  if (!n.lowercase) settings.lowercase = false;
  if (n.stripAccents !== n.lowercase) settings.stripAccents = n.stripAccents;
  if (!n.chineseChars) settings.chineseChars = false;
  if (!n.cleanText) settings.cleanText = false;
  if (tokenizer.maxWordChars !== 100) settings.maxWordChars = tokenizer.maxWordChars;
  writeFileAtomic(join(dir, 'tokenizer.json'), Buffer.from(JSON.stringify(settings, null, 2) + '\n'));
}

/**
 * Reads {@link writeTokenizerFiles}'s files. ERR_FORMAT when vocab.txt is missing or tokenizer.json is not an object
 * with a boolean `nfkc` (or a Hugging Face tokenizer.json); without tokenizer.json, BERT's normalization alone.
 *
 * @example
 * const tokenizer = await readTokenizerFiles('data/models/default');
 * tokenizer.nfkc;   // true: the shipped model folds ligatures
 */
export async function readTokenizerFiles(dir: string): Promise<WordPieceTokenizer> {
  mustBeString(dir, 'directory');
  const vocab = join(dir, 'vocab.txt');
  const path = join(dir, 'tokenizer.json');
  const json = existsSync(path) ? readJsonFile(path) : undefined;
  if (isHfTokenizerJson(json)) {
    const spec = hfTokenizerSpec(json, path);
    return new WordPieceTokenizer(spec.vocabulary, spec.options);
  }
  if (!existsSync(vocab)) throw new QuorumError('ERR_FORMAT', `${dir} has no vocab.txt`);
  const options: TokenizerOptions = { nfkc: false };
  if (json !== undefined) {
    const s = json as Partial<TokenizerSettings> | null;
    if (s === null || typeof s !== 'object' || Array.isArray(s) || typeof s.nfkc !== 'boolean')
      throw new QuorumError('ERR_FORMAT', `${path}: expected { "nfkc": true | false } or a Hugging Face tokenizer.json`);
    options.nfkc = s.nfkc;
    for (const k of SETTING_FLAGS) {
      if (s[k] === undefined) continue;
      if (typeof s[k] !== 'boolean') throw new QuorumError('ERR_FORMAT', `${path}: ${k} must be true or false`);
      options[k] = s[k];
    }
    if (s.maxWordChars !== undefined) {
      if (!Number.isInteger(s.maxWordChars) || s.maxWordChars < 1)
        throw new QuorumError('ERR_FORMAT', `${path}: maxWordChars must be a positive integer`);
      options.maxWordChars = s.maxWordChars;
    }
  }
  return WordPieceTokenizer.load(vocab, options);
}
