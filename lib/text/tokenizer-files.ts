// A model directory's tokenizer, shared by the Retriever, CAME and ROM formats: vocab.txt (one token per line) and
// tokenizer.json (the normalization settings). A directory without tokenizer.json was written before the settings
// existed and loads with BERT's normalization alone, the one its model was trained with.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { QuorumError } from '../errors.js';
import { readJsonFile, writeFileAtomic } from '../data/files.js';
import { mustBeString } from '../validate.js';
import { WordPieceTokenizer } from './tokenizer.js';

/** What tokenizer.json holds. */
export interface TokenizerSettings {
  /** Compatibility characters folded (NFKC) before BERT's normalization. */
  nfkc: boolean;
}

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
  const settings: TokenizerSettings = { nfkc: tokenizer.nfkc };
  writeFileAtomic(join(dir, 'tokenizer.json'), Buffer.from(JSON.stringify(settings, null, 2) + '\n'));
}

/**
 * Reads {@link writeTokenizerFiles}'s files. ERR_FORMAT when vocab.txt is missing or tokenizer.json is not an object
 * with a boolean `nfkc`; without tokenizer.json, BERT's normalization alone.
 *
 * @example
 * const tokenizer = await readTokenizerFiles('data/models/default');
 * tokenizer.nfkc;   // true: the shipped model folds ligatures
 */
export async function readTokenizerFiles(dir: string): Promise<WordPieceTokenizer> {
  mustBeString(dir, 'directory');
  const vocab = join(dir, 'vocab.txt');
  if (!existsSync(vocab)) throw new QuorumError('ERR_FORMAT', `${dir} has no vocab.txt`);
  const path = join(dir, 'tokenizer.json');
  let nfkc = false;
  if (existsSync(path)) {
    const s = readJsonFile(path) as Partial<TokenizerSettings> | null;
    if (s === null || typeof s !== 'object' || Array.isArray(s) || typeof s.nfkc !== 'boolean')
      throw new QuorumError('ERR_FORMAT', `${path}: expected { "nfkc": true | false }`);
    nfkc = s.nfkc;
  }
  return WordPieceTokenizer.load(vocab, { nfkc });
}
