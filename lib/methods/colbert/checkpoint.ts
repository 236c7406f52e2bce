// Users' ColBERT checkpoints (docs/methods/colbert.md#checkpoints), in the two published layouts, and ColBERT's
// framing of questions and passages as token ids. The formulas follow the reference implementations (the ColBERT
// repository's modeling/colbert.py and tokenization/*, PyLate's models/colbert.py); the code is Quorum's.
//
// ColBERT repository: config.json (architectures HF_ColBERT) and BERT weights under `bert.`, the projection
// `linear.weight` [dim, hidden] without bias at the top level, artifact.metadata (its ColBERTConfig as flat JSON;
// older ones nest it under "config"). PyLate: a sentence-transformers directory, the Transformer at the root and a
// pylate Dense module (1_Dense/config.json, 1_Dense/model.safetensors `linear.weight`), its settings in
// config_sentence_transformers.json, the "[Q] " / "[D] " prefixes added to the tokenizer as tokens of their own.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { QuorumError } from '../../errors.js';
import { readFileBytes, readJsonFile } from '../../data/files.js';
import { readSafetensors } from '../../io/safetensors.js';
import { readPretrained, type PretrainedBert } from '../../models/hf.js';
import { type EncodedBatch } from '../../text/tokenizer.js';
import { mustBeString } from '../../validate.js';

/** How a checkpoint frames its texts (read from artifact.metadata or config_sentence_transformers.json). */
export interface ColbertSettings {
  /** Which published layout the directory has. */
  layout: 'colbert' | 'pylate';
  /** Width of the token vectors (the projection's rows). */
  dim: number;
  /** Question rows: exactly this many tokens with query expansion (query_maxlen, query_length). */
  queryLength: number;
  /** Passage rows: at most this many tokens (doc_maxlen, document_length). */
  documentLength: number;
  /** The token id inserted after [CLS] in questions ([unused0], or PyLate's "[Q] "). */
  queryMarker: number;
  /** The token id inserted after [CLS] in passages ([unused1], or PyLate's "[D] "). */
  documentMarker: number;
  /** Questions padded with [MASK] to queryLength, every position a vector (ColBERT always; PyLate's do_query_expansion). */
  queryExpansion: boolean;
  /** Whether the [MASK] padding is attended to (attend_to_mask_tokens, attend_to_expansion_tokens). */
  attendToExpansion: boolean;
  /** Token ids whose passage vectors are dropped (punctuation), ascending. */
  skiplist: Int32Array;
}

/** A ColBERT checkpoint as read: the BERT encoder, the projection and the settings. */
export interface ColbertCheckpoint {
  /** The directory read. */
  dir: string;
  /** The BERT encoder, weights and tokenizer (pooling unused). */
  bert: PretrainedBert;
  /** `[dim, hidden]` row-major, no bias. */
  projection: Float32Array;
  /** How the checkpoint frames its texts. */
  settings: ColbertSettings;
}

type Json = Record<string, unknown>;
const bad = (path: string, message: string) => new QuorumError('ERR_FORMAT', `${path}: ${message}`);

// Python's string.punctuation: the ColBERT repository's document skiplist and PyLate's default skiplist_words.
const PUNCTUATION = [...'!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'];

/** Whether `dir` holds a ColBERT checkpoint in either layout. */
export function isColbertDir(dir: string): boolean {
  return (
    typeof dir === 'string' &&
    (existsSync(join(dir, 'artifact.metadata')) || existsSync(join(dir, 'config_sentence_transformers.json'))) &&
    existsSync(join(dir, 'config.json'))
  );
}

function object(path: string): Json {
  if (!existsSync(path)) throw new QuorumError('ERR_IO', `${path} is missing`);
  const v = readJsonFile(path);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw bad(path, 'not a JSON object');
  return v as Json;
}

function positive(c: Json, key: string, path: string, fallback: number): number {
  const v = c[key] ?? fallback;
  if (!Number.isInteger(v) || (v as number) < 3) throw bad(path, `${key} must be an integer of at least 3, got ${JSON.stringify(c[key])}`);
  return v as number;
}

function flag(c: Json, key: string, path: string, fallback: boolean): boolean {
  const v = c[key] ?? fallback;
  if (typeof v !== 'boolean') throw bad(path, `${key} must be true or false, got ${JSON.stringify(c[key])}`);
  return v;
}

/** The projection tensor `linear.weight` [dim, hidden] of a weights map: ERR_FORMAT when missing or misshapen. */
function projectionOf(
  tensor: { shape: number[]; data: Float32Array } | undefined,
  where: string,
  hidden: number,
): { dim: number; values: Float32Array } {
  if (!tensor) throw bad(where, 'has no linear.weight: a ColBERT checkpoint needs its projection to token vectors');
  if (tensor.shape.length !== 2 || tensor.shape[1] !== hidden || tensor.shape[0]! < 1)
    throw bad(where, `linear.weight is [${tensor.shape.join(', ')}], expected [dim, ${hidden}]`);
  return { dim: tensor.shape[0]!, values: tensor.data };
}

/**
 * Reads a ColBERT checkpoint directory in either layout. ERR_IO for a missing directory or file; ERR_FORMAT for what
 * does not make a ColBERT model: no projection, a projection of another width than the encoder's, a `dim` in
 * artifact.metadata that disagrees with it, a Dense module with a bias or an activation, markers the tokenizer lacks.
 *
 * @example
 * const ckpt = readColbertCheckpoint('models/colbertv2.0');
 * ckpt.settings.queryLength;   // 32
 */
export function readColbertCheckpoint(dir: string): ColbertCheckpoint {
  mustBeString(dir, 'ColBERT checkpoint directory');
  if (!existsSync(join(dir, 'config.json'))) throw new QuorumError('ERR_IO', `${dir} has no config.json: not a ColBERT checkpoint`);
  const pylate = existsSync(join(dir, 'config_sentence_transformers.json')) && !existsSync(join(dir, 'artifact.metadata'));
  const bert = readPretrained(dir, { pooling: 'cls', normalize: false, sentenceTransformers: false });
  const tok = bert.tokenizer;
  const hidden = bert.encoder.hiddenSize;
  const mask = tok.idOf('[MASK]');
  if (mask < 0) throw bad(dir, 'the tokenizer has no [MASK] token (ColBERT pads questions with it)');
  if (!pylate) {
    const path = join(dir, 'artifact.metadata');
    if (!existsSync(path)) throw bad(dir, 'has neither artifact.metadata (ColBERT) nor config_sentence_transformers.json (PyLate)');
    let c = object(path);
    if (c.config && typeof c.config === 'object' && !Array.isArray(c.config)) c = c.config as Json;
    const w = bert.weights.get('linear.weight');
    const p = projectionOf(w ? { shape: w.shape, data: floats(w, dir) } : undefined, join(dir, 'model.safetensors'), hidden);
    bert.weights.delete('linear.weight');
    const dim = c.dim ?? 128;
    if (dim !== p.dim) throw bad(path, `dim is ${JSON.stringify(c.dim)}, the projection linear.weight has ${p.dim} rows`);
    const marker = (key: string, fallback: string) => {
      const name = c[key] ?? fallback;
      const id = typeof name === 'string' ? tok.idOf(name) : -1;
      if (id < 0) throw bad(path, `${key} ${JSON.stringify(name)} is not a token of the vocabulary`);
      return id;
    };
    const maskPunctuation = flag(c, 'mask_punctuation', path, true);
    // encode(symbol, add_special_tokens=False)[0] for each punctuation character (colbert.py's skiplist).
    const skip = maskPunctuation ? PUNCTUATION.map((ch) => tok.ids(ch)[0]).filter((id): id is number => id !== undefined) : [];
    return {
      dir,
      bert,
      projection: p.values,
      settings: {
        layout: 'colbert',
        dim: p.dim,
        queryLength: positive(c, 'query_maxlen', path, 32),
        documentLength: positive(c, 'doc_maxlen', path, 220),
        queryMarker: marker('query_token_id', '[unused0]'),
        documentMarker: marker('doc_token_id', '[unused1]'),
        queryExpansion: true,
        attendToExpansion: flag(c, 'attend_to_mask_tokens', path, false),
        skiplist: Int32Array.from(new Set(skip)).sort(),
      },
    };
  }
  const stPath = join(dir, 'config_sentence_transformers.json');
  const c = object(stPath);
  const modulesPath = join(dir, 'modules.json');
  const modules = existsSync(modulesPath) ? readJsonFile(modulesPath) : null;
  if (!Array.isArray(modules)) throw bad(modulesPath, 'a PyLate checkpoint lists its modules (a Transformer and a Dense)');
  const dense = (modules as Json[]).filter((m) => String(m?.type ?? '').endsWith('.Dense'));
  if (dense.length !== 1)
    throw bad(modulesPath, `${dense.length} Dense modules: Quorum reads PyLate checkpoints with one projection (Transformer, Dense)`);
  const rel = String(dense[0]!.path ?? '');
  if (!rel || rel.split(/[\\/]/).includes('..') || rel.startsWith('/'))
    throw bad(modulesPath, `the Dense module's path ${JSON.stringify(rel)} leaves the directory`);
  const denseDir = join(dir, rel);
  const dc = object(join(denseDir, 'config.json'));
  if (dc.bias === true)
    throw bad(join(denseDir, 'config.json'), 'a Dense projection with a bias is not supported (PyLate saves bias false)');
  const act = String(dc.activation_function ?? 'torch.nn.modules.linear.Identity');
  if (!act.endsWith('Identity')) throw bad(join(denseDir, 'config.json'), `activation ${act} is not supported (PyLate saves Identity)`);
  if (dc.use_residual === true) throw bad(join(denseDir, 'config.json'), 'a Dense module with use_residual is not supported');
  const wPath = join(denseDir, 'model.safetensors');
  if (!existsSync(wPath)) throw new QuorumError('ERR_IO', `${wPath} is missing (only safetensors weights are read)`);
  let wt;
  try {
    wt = readSafetensors(readFileBytes(wPath)).get('linear.weight');
  } catch (e) {
    throw new QuorumError('ERR_FORMAT', `${wPath}: ${(e as Error).message}`, { cause: e });
  }
  const p = projectionOf(wt ? { shape: wt.shape, data: floats(wt, wPath) } : undefined, wPath, hidden);
  if (dc.out_features !== undefined && dc.out_features !== p.dim)
    throw bad(join(denseDir, 'config.json'), `out_features is ${JSON.stringify(dc.out_features)}, linear.weight has ${p.dim} rows`);
  const added = addedTokens(dir);
  const prefix = (key: string, fallback: string) => {
    const text = c[key] ?? fallback;
    if (typeof text !== 'string') throw bad(stPath, `${key} must be a string`);
    const id = added.get(text) ?? tok.idOf(text);
    if (id < 0) throw bad(stPath, `${key} ${JSON.stringify(text)} is not a token of the tokenizer`);
    return id;
  };
  const words = c.skiplist_words ?? PUNCTUATION;
  if (!Array.isArray(words) || words.some((x) => typeof x !== 'string')) throw bad(stPath, 'skiplist_words must be a list of strings');
  // convert_tokens_to_ids: a word outside the vocabulary is [UNK] (so PyLate then skips [UNK] tokens too).
  const unk = tok.idOf('[UNK]');
  const skip = (words as string[]).map((w) => ((added.get(w) ?? tok.idOf(w)) >= 0 ? (added.get(w) ?? tok.idOf(w)) : unk));
  const expansion = flag(c, 'do_query_expansion', stPath, true);
  return {
    dir,
    bert,
    projection: p.values,
    settings: {
      layout: 'pylate',
      dim: p.dim,
      queryLength: positive(c, 'query_length', stPath, 32),
      documentLength: positive(c, 'document_length', stPath, 180),
      queryMarker: prefix('query_prefix', '[Q] '),
      documentMarker: prefix('document_prefix', '[D] '),
      queryExpansion: expansion,
      attendToExpansion: expansion && flag(c, 'attend_to_expansion_tokens', stPath, false),
      skiplist: Int32Array.from(new Set(skip.filter((id) => id >= 0))).sort(),
    },
  };
}

/** tokenizer.json's added tokens (content -> id): where PyLate's prefixes get their ids. */
function addedTokens(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  const path = join(dir, 'tokenizer.json');
  if (!existsSync(path)) return out;
  const j = readJsonFile(path) as Json | null;
  const list = j && Array.isArray(j.added_tokens) ? (j.added_tokens as Json[]) : [];
  for (const t of list) if (typeof t?.content === 'string' && Number.isInteger(t.id)) out.set(t.content, t.id as number);
  return out;
}

/** A weight's values (decoded to f32 by the reader); an integer tensor is not a weight. */
function floats(t: { dtype: string; data: Float32Array }, where: string): Float32Array {
  if (/^[IU]\d/.test(t.dtype)) throw bad(where, `linear.weight is ${t.dtype}; only floating-point (unquantized) checkpoints load`);
  return t.data;
}

/** A framed batch: ids, token types, attention lengths, and which positions give vectors. */
export interface ColbertBatch extends Pick<EncodedBatch, 'ids' | 'typeIds' | 'rows' | 'seqLen'> {
  /** Attended tokens per row (a prefix of the row: [CLS], the marker, the text, [SEP], and the [MASK]s where attended). */
  lengths: Int32Array;
  /** Per row and position: 1 where the position's vector is kept (questions: every position with expansion). */
  keep: Uint8Array;
}

/**
 * Questions as ColBERT frames them: "[CLS] marker text [SEP]" cut at queryLength, then, with query expansion, padded
 * to queryLength with [MASK] (attended only with attendToExpansion) and every position kept; without it, the
 * attended tokens only.
 */
export function colbertQueries(ckpt: ColbertCheckpoint, texts: readonly string[]): ColbertBatch {
  const s = ckpt.settings;
  const tok = ckpt.bert.tokenizer;
  const b = tok.encode(texts, { maxLength: s.queryLength, marker: 0, padToMax: s.queryExpansion });
  const mask = tok.idOf('[MASK]');
  const lengths = b.lengths.slice();
  const keep = new Uint8Array(b.rows * b.seqLen);
  for (let r = 0; r < b.rows; r++) {
    b.ids[r * b.seqLen + 1] = s.queryMarker;
    for (let t = 0; t < b.seqLen; t++) {
      const real = t < b.lengths[r]!;
      if (!real && s.queryExpansion) b.ids[r * b.seqLen + t] = mask;
      keep[r * b.seqLen + t] = real || s.queryExpansion ? 1 : 0;
    }
    if (s.queryExpansion && s.attendToExpansion) lengths[r] = b.seqLen;
  }
  return { ids: b.ids, typeIds: b.typeIds, rows: b.rows, seqLen: b.seqLen, lengths, keep };
}

/** Passages as ColBERT frames them: "[CLS] marker text [SEP]" cut at documentLength; punctuation's vectors dropped. */
export function colbertDocuments(ckpt: ColbertCheckpoint, texts: readonly string[]): ColbertBatch {
  const s = ckpt.settings;
  const b = ckpt.bert.tokenizer.encode(texts, { maxLength: s.documentLength, marker: 0 });
  const skip = new Set(s.skiplist);
  const keep = new Uint8Array(b.rows * b.seqLen);
  for (let r = 0; r < b.rows; r++) {
    b.ids[r * b.seqLen + 1] = s.documentMarker;
    for (let t = 0; t < b.lengths[r]!; t++) keep[r * b.seqLen + t] = skip.has(b.ids[r * b.seqLen + t]!) ? 0 : 1;
  }
  return { ids: b.ids, typeIds: b.typeIds, rows: b.rows, seqLen: b.seqLen, lengths: b.lengths, keep };
}
