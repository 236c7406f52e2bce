// Hugging Face's tokenizer files for the BERT family, read and written: tokenizer.json (the `tokenizers` library's
// serialization: a WordPiece model, a BertNormalizer, a BertPreTokenizer, the [CLS] A [SEP] B [SEP] template) and
// the older vocab.txt + tokenizer_config.json. Only what Quorum's WordPieceTokenizer computes the same way is read;
// anything else (BPE, Unigram, a normalizer or pre-tokenizer it does not have) is refused with the file named, because
// a tokenizer that splits text differently from the checkpoint's silently ruins every vector.
// docs/guides/bring-your-own-model.md says which checkpoints this covers.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { QuorumError } from '../errors.js';
import { readJsonFile, readTextFile } from '../data/files.js';
import type { NormalizeOptions } from './normalize.js';
import { mustBeString } from '../validate.js';
import { WordPieceTokenizer, type TokenizerOptions } from './tokenizer.js';

/** A vocabulary and the options that rebuild its tokenizer, as read from a file. */
export interface TokenizerSpec {
  /** The tokens; token i has id i. */
  vocabulary: string[];
  /** The normalization and word length limit, for the WordPieceTokenizer constructor. */
  options: TokenizerOptions;
}

// The tokens Quorum's segmenter and framing need by these names.
const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] as const;

const bad = (path: string, message: string) => new QuorumError('ERR_FORMAT', `${path}: ${message}`);

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Whether a parsed tokenizer.json is Hugging Face's (it has a `model`), not Quorum's own settings file. */
export function isHfTokenizerJson(json: unknown): boolean {
  return isObject(json) && isObject(json.model);
}

function normalizerOptions(n: unknown, path: string): NormalizeOptions {
  if (n === null || n === undefined) return { lowercase: false, stripAccents: false, chineseChars: false, cleanText: false };
  if (!isObject(n)) throw bad(path, 'normalizer is not an object');
  if (n.type === 'Sequence' && Array.isArray(n.normalizers)) {
    const parts = n.normalizers as unknown[];
    const types = parts.map((p) => (isObject(p) ? p.type : undefined));
    // NFKC then BERT's normalizer is what Quorum's own models write (`nfkc: true`).
    if (types.length === 2 && types[0] === 'NFKC' && types[1] === 'BertNormalizer')
      return { ...normalizerOptions(parts[1], path), nfkc: true };
    if (types.length === 1) return normalizerOptions(parts[0], path);
    throw bad(path, `normalizer Sequence [${types.join(', ')}] is not supported (BertNormalizer, optionally after NFKC)`);
  }
  if (n.type !== 'BertNormalizer')
    throw bad(path, `normalizer ${String(n.type)} is not supported: Quorum reads BERT-family tokenizers (BertNormalizer)`);
  const flag = (key: string, fallback: boolean | undefined) => {
    const v = n[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'boolean') throw bad(path, `normalizer.${key} must be true, false or null`);
    return v;
  };
  const lowercase = flag('lowercase', true) as boolean;
  return {
    lowercase,
    // null: follow lowercase, as BertNormalizer does.
    stripAccents: flag('strip_accents', lowercase) as boolean,
    chineseChars: flag('handle_chinese_chars', true) as boolean,
    cleanText: flag('clean_text', true) as boolean,
  };
}

/**
 * A tokenizer from a parsed Hugging Face tokenizer.json: WordPiece with `##` continuation pieces and an `[UNK]`
 * token, BertNormalizer (optionally after NFKC), BertPreTokenizer. ERR_FORMAT naming the file and the part otherwise:
 * a BPE or Unigram model (RoBERTa, GPT-2, T5, XLM-R: not BERT-family), another normalizer or pre-tokenizer, a vocabulary
 * whose ids are not 0..n-1, or one without [PAD], [UNK], [CLS] and [SEP].
 */
export function hfTokenizerSpec(json: unknown, path: string): TokenizerSpec {
  mustBeString(path, 'tokenizer.json path');
  if (!isHfTokenizerJson(json)) throw bad(path, 'not a Hugging Face tokenizer.json (no "model")');
  const j = json as Json;
  const model = j.model as Json;
  if (model.type !== 'WordPiece')
    throw bad(
      path,
      `a ${String(model.type)} tokenizer: Quorum reads WordPiece (BERT-family) tokenizers only; BPE and Unigram models (RoBERTa, GPT, T5, XLM-R) are not supported`,
    );
  if ((model.continuing_subword_prefix ?? '##') !== '##')
    throw bad(path, `continuing_subword_prefix '${String(model.continuing_subword_prefix)}' is not supported (only ##)`);
  if ((model.unk_token ?? '[UNK]') !== '[UNK]') throw bad(path, `unk_token '${String(model.unk_token)}' is not supported (only [UNK])`);
  const maxWordChars = model.max_input_chars_per_word ?? 100;
  if (!Number.isInteger(maxWordChars) || (maxWordChars as number) < 1)
    throw bad(path, 'max_input_chars_per_word must be a positive integer');
  const pre = j.pre_tokenizer;
  if (pre !== null && pre !== undefined && !(isObject(pre) && pre.type === 'BertPreTokenizer'))
    throw bad(path, `pre_tokenizer ${isObject(pre) ? String(pre.type) : typeof pre} is not supported (only BertPreTokenizer)`);
  if (!isObject(model.vocab)) throw bad(path, 'model.vocab must map each token to its id');
  const vocabulary = vocabularyById(model.vocab, path);
  return { vocabulary, options: { ...normalizerOptions(j.normalizer, path), maxWordChars: maxWordChars as number } };
}

function vocabularyById(vocab: Json, path: string): string[] {
  const entries = Object.entries(vocab);
  const out: string[] = new Array(entries.length);
  for (const [token, id] of entries) {
    if (!Number.isInteger(id) || (id as number) < 0 || (id as number) >= entries.length || out[id as number] !== undefined)
      throw bad(
        path,
        `model.vocab: ids must be 0..${entries.length - 1}, each once (token ${JSON.stringify(token)} has ${JSON.stringify(id)})`,
      );
    out[id as number] = token;
  }
  for (const s of SPECIALS.slice(0, 4)) if (!(s in vocab)) throw bad(path, `the vocabulary has no ${s}`);
  return out;
}

/**
 * The tokenizer of a Hugging Face model directory: tokenizer.json when it has one, else vocab.txt with
 * tokenizer_config.json's `do_lower_case`, `strip_accents` and `tokenize_chinese_chars` (BERT's defaults without it).
 * ERR_FORMAT when neither file is there or one cannot be read as a BERT-family tokenizer.
 */
export function readHfTokenizerSpec(dir: string): TokenizerSpec {
  mustBeString(dir, 'tokenizer directory');
  const json = join(dir, 'tokenizer.json');
  if (existsSync(json)) return hfTokenizerSpec(readJsonFile(json), json);
  const vocabPath = join(dir, 'vocab.txt');
  if (!existsSync(vocabPath)) throw new QuorumError('ERR_FORMAT', `${dir} has neither tokenizer.json nor vocab.txt`);
  const lines = readTextFile(vocabPath).split('\n');
  if (lines.at(-1) === '') lines.pop();
  const vocabulary = lines.map((t) => t.replace(/\r$/, ''));
  for (const s of SPECIALS.slice(0, 4)) if (!vocabulary.includes(s)) throw bad(vocabPath, `the vocabulary has no ${s}`);
  const configPath = join(dir, 'tokenizer_config.json');
  const options: TokenizerOptions = {};
  if (existsSync(configPath)) {
    const c = readJsonFile(configPath);
    if (!isObject(c)) throw bad(configPath, 'not a JSON object');
    const flag = (key: string): boolean | undefined => {
      const v = c[key];
      if (v === undefined || v === null) return undefined;
      if (typeof v !== 'boolean') throw bad(configPath, `${key} must be true, false or null`);
      return v;
    };
    const lowercase = flag('do_lower_case');
    const strip = flag('strip_accents');
    const chinese = flag('tokenize_chinese_chars');
    if (lowercase !== undefined) options.lowercase = lowercase;
    if (strip !== undefined) options.stripAccents = strip;
    if (chinese !== undefined) options.chineseChars = chinese;
  }
  return { vocabulary, options };
}

/** {@link readHfTokenizerSpec} as a tokenizer. */
export function readHfTokenizer(dir: string): WordPieceTokenizer {
  const { vocabulary, options } = readHfTokenizerSpec(dir);
  return new WordPieceTokenizer(vocabulary, options);
}

/**
 * A tokenizer as Hugging Face's tokenizer.json (the `tokenizers` library and transformers.js load it): WordPiece,
 * BertNormalizer (after NFKC when the tokenizer folds compatibility characters), BertPreTokenizer, BERT's
 * [CLS] A [SEP] / [CLS] A [SEP] B [SEP] template. With `markers` n, the task markers [unused1] .. [unused<n>] are
 * added tokens, so that a question written "[unused1] who wrote hamlet?" gets the marker's id there as Quorum's
 * `encode(..., { marker })` gives it.
 */
export function hfTokenizerJson(tokenizer: WordPieceTokenizer, options: { markers?: number } = {}): Json {
  if (!(tokenizer instanceof WordPieceTokenizer)) throw new QuorumError('ERR_ARG', 'tokenizer must be a WordPieceTokenizer');
  if (options === null || typeof options !== 'object') throw new QuorumError('ERR_ARG', 'options must be an object');
  if (options.markers !== undefined && (!Number.isInteger(options.markers) || options.markers < 0))
    throw new QuorumError('ERR_RANGE', 'markers must be an integer >= 0');
  const n = tokenizer.normalization;
  const vocab: Record<string, number> = {};
  tokenizer.vocabulary.forEach((t, i) => (vocab[t] = i));
  const bert = {
    type: 'BertNormalizer',
    clean_text: n.cleanText,
    handle_chinese_chars: n.chineseChars,
    strip_accents: n.stripAccents,
    lowercase: n.lowercase,
  };
  const special = (t: string, typeId: number) => ({ SpecialToken: { id: t, type_id: typeId } });
  const seq = (id: string, typeId: number) => ({ Sequence: { id, type_id: typeId } });
  const markers = Array.from({ length: options.markers ?? 0 }, (_, i) => `[unused${i + 1}]`);
  for (const m of markers)
    if (tokenizer.idOf(m) < 0) throw new QuorumError('ERR_RANGE', `the vocabulary has no ${m} token for a task marker`);
  const specials = [...SPECIALS.filter((t) => tokenizer.idOf(t) >= 0), ...markers];
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specials.map((t) => ({
      id: tokenizer.idOf(t),
      content: t,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: n.nfkc ? { type: 'Sequence', normalizers: [{ type: 'NFKC' }, bert] } : bert,
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [special('[CLS]', 0), seq('A', 0), special('[SEP]', 0)],
      pair: [special('[CLS]', 0), seq('A', 0), special('[SEP]', 0), seq('B', 1), special('[SEP]', 1)],
      special_tokens: Object.fromEntries(['[CLS]', '[SEP]'].map((t) => [t, { id: t, ids: [tokenizer.idOf(t)], tokens: [t] }])),
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: tokenizer.maxWordChars,
      vocab,
    },
  };
}
