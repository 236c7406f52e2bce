// A Hugging Face BERT-family model directory read as Quorum's encoder: config.json (BertModel's fields), the
// weights (model.safetensors, or shards listed by model.safetensors.index.json), the tokenizer (tokenizer.json or
// vocab.txt) and, for a sentence-transformers directory, its pooling and normalization (modules.json,
// 1_Pooling/config.json). docs/guides/bring-your-own-model.md lists what loads and what does not.
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';

import { QuorumError } from '../errors.js';
import { readFileBytes, readJsonFile } from '../data/files.js';
import { readSafetensors, type SafetensorsTensor } from '../io/safetensors.js';
import { readHfTokenizerSpec } from '../text/hf-tokenizer.js';
import { WordPieceTokenizer } from '../text/tokenizer.js';
import { allFinite, checkOptions, mustBeMap, mustBeModelLike, mustBeObject, mustBeString, optionKeys } from '../validate.js';
import { POOLINGS, type EncoderConfig, type Pooling } from './config.js';
import { mapBertCheckpoint, type MappedCheckpoint } from './checkpoint-map.js';
import type { TextSettings } from './model-dir.js';

/** What {@link readPretrained} found in a directory. */
export interface PretrainedBert {
  /** The directory. */
  dir: string;
  /** The encoder config.json describes, with the pooling and normalization chosen (see {@link PretrainedOptions}). */
  encoder: EncoderConfig;
  /** Every tensor of the weights file(s), by its name in the file (`bert.` prefix and pooler included). */
  weights: Map<string, SafetensorsTensor>;
  /** The checkpoint's tokenizer. */
  tokenizer: WordPieceTokenizer;
  /** Where the pooling came from: the caller, the sentence-transformers config, or BERT's default ([CLS]). */
  poolingSource: 'option' | 'sentence-transformers' | 'default';
  /** sentence-transformers' max_seq_length (sentence_bert_config.json), when present. */
  maxSeqLength?: number;
}

/** Options of {@link readPretrained}. */
export interface PretrainedOptions {
  /** How token states become one vector; default: the directory's 1_Pooling/config.json, else 'cls' (BERT, DPR). */
  pooling?: Pooling;
  /** L2-normalise the outputs; default: whether the sentence-transformers pipeline has a Normalize module. */
  normalize?: boolean;
  /**
   * Read modules.json's pipeline (pooling, Dense, Normalize; default true). false reads the Transformer alone: a
   * checkpoint whose modules are not a sentence embedder's (a PyLate ColBERT model, lib/methods/colbert).
   */
  sentenceTransformers?: boolean;
}

const pretrainedKeys = optionKeys<PretrainedOptions>()(['pooling', 'normalize', 'sentenceTransformers']);

type Json = Record<string, unknown>;
const bad = (path: string, message: string) => new QuorumError('ERR_FORMAT', `${path}: ${message}`);

/** Whether `dir` looks like a Hugging Face model directory (config.json and no Quorum card). */
export function isHfModelDir(dir: string): boolean {
  return typeof dir === 'string' && existsSync(join(dir, 'config.json')) && !existsSync(join(dir, 'model.json'));
}

function readObject(path: string): Json {
  const v = readJsonFile(path);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw bad(path, 'not a JSON object');
  return v as Json;
}

/**
 * config.json as an encoder. ERR_FORMAT naming the file for what Quorum's encoder does not compute: another
 * `model_type` (RoBERTa, DistilBERT, XLM-R, ...), an activation other than exact GELU, relative position embeddings.
 */
function hfEncoderConfig(dir: string): EncoderConfig {
  const path = join(dir, 'config.json');
  if (!existsSync(path)) throw new QuorumError('ERR_IO', `${dir} has no config.json: not a Hugging Face model directory`);
  const c = readObject(path);
  const archs = Array.isArray(c.architectures) ? (c.architectures as unknown[]).map(String) : [];
  const type = c.model_type ?? (archs.some((a) => a.startsWith('Bert')) ? 'bert' : undefined);
  if (type !== 'bert')
    throw bad(
      path,
      `model_type ${JSON.stringify(type ?? null)} is not supported: Quorum loads BERT-family checkpoints (model_type "bert": BERT, MiniLM, BGE, E5, GTE)`,
    );
  const act = c.hidden_act ?? 'gelu';
  if (act !== 'gelu') throw bad(path, `hidden_act ${JSON.stringify(act)} is not supported (only "gelu", the exact erf GELU BERT uses)`);
  const pos = c.position_embedding_type ?? 'absolute';
  if (pos !== 'absolute') throw bad(path, `position_embedding_type ${JSON.stringify(pos)} is not supported (only "absolute")`);
  const int = (key: string, fallback?: number): number => {
    const v = c[key] ?? fallback;
    if (!Number.isInteger(v) || (v as number) < 1)
      throw bad(path, `${key} must be a positive integer, got ${JSON.stringify(c[key] ?? null)}`);
    return v as number;
  };
  const real = (key: string, fallback: number): number => {
    const v = c[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(path, `${key} must be a number`);
    return v;
  };
  // A layer norm's epsilon at or below 0 divides by zero on a constant row: all-NaN vectors (issue 65).
  const positive = (key: string, fallback: number): number => {
    const v = real(key, fallback);
    if (!(v > 0)) throw bad(path, `${key} must be a positive number, got ${v}`);
    return v;
  };
  const hiddenSize = int('hidden_size');
  const heads = int('num_attention_heads');
  if (hiddenSize % heads !== 0) throw bad(path, `hidden_size ${hiddenSize} is not a multiple of num_attention_heads ${heads}`);
  const layers = c.num_hidden_layers;
  if (!Number.isInteger(layers) || (layers as number) < 0) throw bad(path, 'num_hidden_layers must be an integer >= 0');
  return {
    vocabSize: int('vocab_size'),
    hiddenSize,
    layers: layers as number,
    heads,
    ffnSize: int('intermediate_size'),
    maxPositions: int('max_position_embeddings'),
    typeVocabSize: int('type_vocab_size', 2),
    embeddingSize: hiddenSize,
    dropout: real('hidden_dropout_prob', 0.1),
    layerNormEps: positive('layer_norm_eps', 1e-12),
    pooling: 'cls',
    projectionDim: 0,
    normalize: false,
  };
}

/**
 * Every tensor of the directory's weights: model.safetensors, or the shards model.safetensors.index.json names.
 * ERR_FORMAT for pytorch_model.bin alone (a Python pickle, which Quorum does not execute: the error says how to
 * convert it), a shard the index names that is missing, or a malformed file.
 */
function readHfWeights(dir: string): Map<string, SafetensorsTensor> {
  const single = join(dir, 'model.safetensors');
  const index = join(dir, 'model.safetensors.index.json');
  const read = (path: string) => {
    if (!existsSync(path)) throw new QuorumError('ERR_IO', `${path} is missing`);
    try {
      return readSafetensors(readFileBytes(path));
    } catch (e) {
      throw new QuorumError('ERR_FORMAT', `${path}: ${(e as Error).message}`, { cause: e });
    }
  };
  if (existsSync(single)) return read(single);
  if (existsSync(index)) {
    const map = readObject(index).weight_map;
    if (map === null || typeof map !== 'object' || Array.isArray(map)) throw bad(index, 'weight_map must map tensor names to shard files');
    const out = new Map<string, SafetensorsTensor>();
    const shards = [...new Set(Object.values(map as Json))];
    for (const shard of shards) {
      if (typeof shard !== 'string' || shard.includes('/') || shard.includes('\\'))
        throw bad(index, `bad shard name ${JSON.stringify(shard)}`);
      for (const [name, t] of read(join(dir, shard))) {
        if ((map as Json)[name] !== shard) continue;
        out.set(name, t);
      }
    }
    for (const name of Object.keys(map as Json)) if (!out.has(name)) throw bad(index, `${name} is not in ${String((map as Json)[name])}`);
    return out;
  }
  for (const pickle of ['pytorch_model.bin', 'pytorch_model.bin.index.json'])
    if (existsSync(join(dir, pickle)))
      throw bad(
        join(dir, pickle),
        'PyTorch pickle weights are not read (loading a pickle runs code from the file): convert them to safetensors first, e.g. ' +
          `python -c "from transformers import AutoModel; AutoModel.from_pretrained('${dir}').save_pretrained('${dir}', safe_serialization=True)"`,
      );
  throw new QuorumError('ERR_IO', `${dir} has no model.safetensors or model.safetensors.index.json`);
}

/** The sentence-transformers pipeline's pooling and normalization, when the directory has one. */
interface StPipeline {
  pooling?: Pooling;
  normalize: boolean;
  maxSeqLength?: number;
  /** A linear Dense module after pooling (identity activation), as `projection.*` tensors. */
  dense?: { dim: number; tensors: Map<string, SafetensorsTensor> };
}

// A sentence-transformers Dense module with an identity activation is Quorum's linear head (`projection.*`).
function denseModule(dir: string, hidden: number): NonNullable<StPipeline['dense']> {
  const path = join(dir, 'config.json');
  const c = readObject(path);
  if (c.activation_function !== 'torch.nn.modules.linear.Identity')
    throw bad(path, `Dense activation ${JSON.stringify(c.activation_function)} is not supported (only torch.nn.modules.linear.Identity)`);
  if (c.in_features !== hidden) throw bad(path, `in_features ${JSON.stringify(c.in_features)} differs from hidden_size ${hidden}`);
  if (c.bias === false) throw bad(path, 'a Dense module without bias is not supported');
  if (!Number.isInteger(c.out_features) || (c.out_features as number) < 1) throw bad(path, 'out_features must be a positive integer');
  const weights = readHfWeights(dir);
  const tensors = new Map<string, SafetensorsTensor>();
  for (const [from, to] of [
    ['linear.weight', 'projection.weight'],
    ['linear.bias', 'projection.bias'],
  ] as const) {
    const t = weights.get(from);
    if (!t) throw bad(join(dir, 'model.safetensors'), `no tensor ${from}`);
    tensors.set(to, t);
  }
  return { dim: c.out_features as number, tensors };
}

function sentenceTransformers(dir: string, hidden: number): StPipeline {
  const modulesPath = join(dir, 'modules.json');
  let poolingDir: string | undefined;
  let normalize = false;
  let dense: StPipeline['dense'];
  if (existsSync(modulesPath)) {
    const modules = readJsonFile(modulesPath);
    if (!Array.isArray(modules)) throw bad(modulesPath, 'expected a list of modules');
    for (const m of modules as Json[]) {
      const type = String(m?.type ?? '');
      // A module's folder is inside the model directory: '../x' or '/etc' would read what the user never gave.
      const rel = String(m?.path ?? '');
      if (isAbsolute(rel) || rel.split(/[\\/]/).includes('..'))
        throw bad(modulesPath, `module path ${JSON.stringify(rel)} leaves the model directory`);
      if (type.endsWith('.Transformer')) continue;
      if (type.endsWith('.Pooling')) poolingDir = join(dir, String(m.path ?? ''));
      else if (type.endsWith('.Normalize')) normalize = true;
      else if (type.endsWith('.Dense') && !dense && poolingDir !== undefined && !normalize)
        dense = denseModule(join(dir, String(m.path ?? '')), hidden);
      else
        throw bad(
          modulesPath,
          `module ${type || JSON.stringify(m)} is not supported (Transformer, Pooling, one Dense after it and Normalize are)`,
        );
    }
  } else if (existsSync(join(dir, '1_Pooling', 'config.json'))) poolingDir = join(dir, '1_Pooling');
  let pooling: Pooling | undefined;
  if (poolingDir !== undefined) {
    const path = join(poolingDir, 'config.json');
    const p = readObject(path);
    const modes = Object.entries(p)
      .filter(([k, v]) => k.startsWith('pooling_mode_') && v === true)
      .map(([k]) => k);
    const known: Record<string, Pooling> = {
      pooling_mode_cls_token: 'cls',
      pooling_mode_mean_tokens: 'mean',
      pooling_mode_max_tokens: 'max',
    };
    if (modes.length !== 1 || known[modes[0]!] === undefined)
      throw bad(path, `pooling ${modes.join(' + ') || 'none'} is not supported (exactly one of cls_token, mean_tokens, max_tokens)`);
    pooling = known[modes[0]!];
  }
  let maxSeqLength: number | undefined;
  const stConfig = join(dir, 'sentence_bert_config.json');
  if (existsSync(stConfig)) {
    const v = readObject(stConfig).max_seq_length;
    if (Number.isInteger(v) && (v as number) > 0) maxSeqLength = v as number;
  }
  return { ...(pooling ? { pooling } : {}), normalize, ...(maxSeqLength ? { maxSeqLength } : {}), ...(dense ? { dense } : {}) };
}

/**
 * Reads a Hugging Face BERT-family directory: configuration, weights, tokenizer, pooling. Nothing is built or
 * checked against the weights here: {@link loadPretrainedWeights} does that for a model.
 *
 * @example
 * const bert = readPretrained('models/bge-small-en', { pooling: 'cls' });
 * const model = Retriever.fromConfig({ preset: 'siamese', encoder: bert.encoder, tasks: [], perTaskQueryEncoders: false });
 */
export function readPretrained(dir: string, options: PretrainedOptions = {}): PretrainedBert {
  mustBeString(dir, 'model directory');
  checkOptions(options, pretrainedKeys, 'pretrained options');
  if (options.pooling !== undefined && !POOLINGS.includes(options.pooling))
    throw new QuorumError('ERR_ARG', `pooling must be ${POOLINGS.join(', ')}, got ${JSON.stringify(options.pooling)}`);
  if (options.normalize !== undefined && typeof options.normalize !== 'boolean')
    throw new QuorumError('ERR_ARG', 'normalize must be a boolean');
  const encoder = hfEncoderConfig(dir);
  if (options.sentenceTransformers !== undefined && typeof options.sentenceTransformers !== 'boolean')
    throw new QuorumError('ERR_ARG', 'sentenceTransformers must be a boolean');
  const st: StPipeline = options.sentenceTransformers === false ? { normalize: false } : sentenceTransformers(dir, encoder.hiddenSize);
  const spec = readHfTokenizerSpec(dir);
  if (spec.vocabulary.length > encoder.vocabSize)
    throw new QuorumError(
      'ERR_FORMAT',
      `${dir}: the tokenizer has ${spec.vocabulary.length} tokens, config.json's vocab_size is ${encoder.vocabSize}`,
    );
  const tokenizer = new WordPieceTokenizer(spec.vocabulary, spec.options);
  const weights = readHfWeights(dir);
  // config.json's layer count against the weights' before anything is built for it: num_hidden_layers 1e6 over a
  // 1-layer checkpoint made ServingEncoder build a million layers (issue 65).
  let stored = 0;
  for (const name of weights.keys()) {
    const m = /(?:^|\.)encoder\.layer\.(\d+)\./.exec(name);
    if (m) stored = Math.max(stored, Number(m[1]) + 1);
  }
  // (More layers stored than configured are left unread, as Hugging Face leaves them.)
  if (stored < encoder.layers)
    throw new QuorumError(
      'ERR_FORMAT',
      `${join(dir, 'config.json')}: num_hidden_layers is ${encoder.layers}, but the weights have no encoder.layer.${stored}.attention.self.query.weight (they hold ${stored} layers)`,
    );
  encoder.pooling = options.pooling ?? st.pooling ?? 'cls';
  encoder.normalize = options.normalize ?? st.normalize;
  if (st.dense) {
    encoder.projectionDim = st.dense.dim;
    for (const [name, t] of st.dense.tensors) weights.set(name, t);
  }
  if (encoder.layers === 0 && encoder.pooling === 'cls')
    throw new QuorumError('ERR_ARG', `${dir} has 0 layers, where [CLS] pooling gives every text the same vector: use mean or max pooling`);
  const poolingSource = options.pooling ? 'option' : st.pooling ? 'sentence-transformers' : 'default';
  return { dir, encoder, weights, tokenizer, poolingSource, ...(st.maxSeqLength ? { maxSeqLength: st.maxSeqLength } : {}) };
}

/** A model whose encoders are named prefixes of BERT's parameter names (Retriever, ROM's network). */
export interface PretrainedTarget {
  /** The configuration whose encoder the checkpoint's tensors must fit. */
  readonly config: { readonly encoder: EncoderConfig };
  /** The parameter-name prefixes of its encoders (`encoder`, `query`, `passage`, ...): each gets the checkpoint. */
  encoderNames(): string[];
  /** Sets one parameter by its full name. */
  setParameter(name: string, values: Float32Array): void;
}

/**
 * Sets every encoder of `model` from a checkpoint's weights (names as Hugging Face's BertModel, `bert.` prefix and
 * TF-era LayerNorm names accepted; TASER experts start as copies of their block's FFN). With `strict` (loading a
 * model to use as it is) every parameter must come from the checkpoint, else ERR_FORMAT names the first missing
 * tensor; without it (initializing a model to train) the parameters it lacks (router gates, heads) keep their
 * initialization and are returned in `missing`. Integer tensors that would become weights are refused.
 *
 * @example
 * const { missing } = loadPretrainedWeights(model, readPretrained('bert-base-uncased'), { strict: false });
 */
export function loadPretrainedWeights(
  model: PretrainedTarget,
  bert: Pick<PretrainedBert, 'dir' | 'weights'>,
  o: { strict: boolean },
): { missing: string[]; unused: string[] } {
  mustBeModelLike(model, ['encoderNames', 'setParameter'], 'model', 'encoder');
  const mapped = mapPretrained(bert, model.config.encoder, o);
  for (const e of model.encoderNames()) for (const [name, values] of mapped.tensors) model.setParameter(`${e}.${name}`, values);
  return { missing: mapped.missing, unused: mapped.unused };
}

/**
 * A checkpoint's tensors under the parameter names of `encoder` (mapBertCheckpoint), with every check a load needs:
 * shapes (ERR_FORMAT naming the directory and tensor), no integer tensor read as a weight, finite values, and with
 * `strict` no parameter missing. What {@link loadPretrainedWeights}, CAME's initialization and the serving path share.
 */
export function mapPretrained(
  bert: Pick<PretrainedBert, 'dir' | 'weights'>,
  encoder: EncoderConfig,
  o: { strict: boolean },
): MappedCheckpoint {
  mustBeObject(bert, 'checkpoint');
  mustBeMap(bert.weights, 'checkpoint weights');
  mustBeObject(o, 'options');
  if (typeof o.strict !== 'boolean') throw new QuorumError('ERR_ARG', 'options.strict must be a boolean');
  let mapped: MappedCheckpoint;
  try {
    mapped = mapBertCheckpoint(bert.weights, encoder);
  } catch (e) {
    if (e instanceof QuorumError)
      throw new QuorumError(e.code === 'ERR_SHAPE' ? 'ERR_FORMAT' : e.code, `${bert.dir}: ${e.message}`, { cause: e });
    throw e;
  }
  if (o.strict && mapped.missing.length)
    throw new QuorumError(
      'ERR_FORMAT',
      `${bert.dir}: the weights have no ${mapped.missing[0]}${mapped.missing.length > 1 ? ` (and ${mapped.missing.length - 1} more)` : ''}`,
    );
  const unused = new Set(mapped.unused);
  // Integer tensors are buffers (position ids) or quantized weights whose scales live elsewhere: read as weights,
  // their codes would train silently from garbage.
  for (const [name, t] of bert.weights)
    if (!unused.has(name) && (t.dtype === 'I8' || t.dtype === 'I32' || t.dtype === 'I64'))
      throw new QuorumError(
        'ERR_FORMAT',
        `${bert.dir}: ${name} is ${t.dtype}; only floating-point (unquantized) checkpoints load as weights`,
      );
  for (const [name, values] of mapped.tensors)
    if (!allFinite(values)) throw new QuorumError('ERR_FORMAT', `${bert.dir}: ${name} holds non-finite values`);
  return mapped;
}

/**
 * How a checkpoint's texts become ids when it is loaded as it is: questions cut at 64 tokens, passages at
 * sentence-transformers' max_seq_length (else 256), both within the position table; no task markers.
 */
export function pretrainedText(bert: Pick<PretrainedBert, 'encoder' | 'maxSeqLength'>): TextSettings {
  const positions = bert.encoder.maxPositions;
  return { maxQueryLength: Math.min(64, positions), maxPassageLength: Math.min(bert.maxSeqLength ?? 256, positions), taskMarkers: false };
}

/**
 * The fields of a checkpoint's encoder that its weights fix (widths, heads, tables, LayerNorm epsilon, dropout), to
 * spread into a method's own encoder options (CAME, ROM), which keep their pooling, heads and depth split.
 */
export function pretrainedShape(
  e: EncoderConfig,
): Pick<EncoderConfig, 'vocabSize' | 'hiddenSize' | 'embeddingSize' | 'heads' | 'ffnSize' | 'maxPositions' | 'dropout' | 'layerNormEps'> {
  mustBeObject(e, 'encoder config');
  const { vocabSize, hiddenSize, embeddingSize, heads, ffnSize, maxPositions, dropout, layerNormEps } = e;
  return { vocabSize, hiddenSize, embeddingSize, heads, ffnSize, maxPositions, dropout, layerNormEps };
}
