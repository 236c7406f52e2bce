// A trained retriever as one directory: model.json (format version, configuration, text settings, training record),
// vocab.txt and tokenizer.json (the tokenizer's vocabulary and normalization) and weights.safetensors (every parameter,
// f32, bf16 or int8 rows). Checkpoints with
// optimizer state stay in the trainer's own files; this is what a user ships, loads and serves.

import { join } from 'node:path';

import { replaceDirectorySync, readFileBytes, writeFileAtomic } from '../data/files.js';
import { QuorumError } from '../errors.js';
import { packageRoot } from '../native.js';
import { dequantizeRowsInt8, quantizeRowsInt8 } from '../io/int8-rows.js';
import {
  elementBytes,
  readSafetensors,
  safetensorsMetadata,
  writeSafetensors,
  type SafetensorsTensor,
  type TensorToWrite,
} from '../io/safetensors.js';
import { checkCard, readSavedCard, savedFile, writeSavedCard, type SavedFormat } from '../io/saved-dir.js';
import { WordPieceTokenizer } from '../text/tokenizer.js';
import { writeTokenizerFiles } from '../text/tokenizer-files.js';
import { allFinite, checkOptions, count, finite, mustBeObject, optionKeys, parse, positiveInt, z } from '../validate.js';
import { retrieverConfigSchema, retrieverEncoderNames, type RetrieverConfig } from './config.js';
import { parameterShapes, type ParameterAccess } from './parameters.js';

/** Where the package's shipped model lives (trained by scripts/train-default-model.sh). */
const defaultModelDir: string = join(packageRoot, 'data', 'models', 'default');

/** A model directory path, or the shipped model for the name 'default'. */
export function modelDir(nameOrPath: string): string {
  return nameOrPath === 'default' ? defaultModelDir : nameOrPath;
}

export const modelFormat = {
  card: 'model.json',
  format: 'quorum-retriever',
  version: 1,
  what: 'a model directory',
} as const satisfies SavedFormat;

/** How texts become token ids for this model. */
export interface TextSettings {
  /** Tokens per question, framing and marker included. */
  maxQueryLength: number;
  /** Tokens per passage, title and framing included. */
  maxPassageLength: number;
  /** Questions of task i start with the marker [unused<i+1>] (multi-task models). */
  taskMarkers: boolean;
}

/** model.json. */
export interface ModelCard {
  /** Always 'quorum-retriever'. */
  format: typeof modelFormat.format;
  /** The format version; another one is ERR_FORMAT on load. */
  version: typeof modelFormat.version;
  /** The retriever's full configuration. */
  config: RetrieverConfig;
  /** How texts become token ids for it. */
  text: TextSettings;
  /** The weights file, in the directory, and how it stores them. */
  weights: { file: string; dtype: WeightStorage };
  /** Free-form: the training options, the per-epoch record, the data it was trained on. */
  training?: Record<string, unknown>;
  /** The dense + BM25 hybrid's weight, tuned on a dev split (see {@link StoredHybrid}). */
  hybrid?: StoredHybrid;
}

/**
 * The dense + BM25 hybrid's alpha (the BM25 side's weight on normalized scores, docs/methods/fusion.md) tuned for
 * this model on a dataset's dev split, with the one-standard-error rule: `null` where the dense side's gain over
 * BM25 alone did not reach one standard error (serve BM25 alone). Servers and `quorum eval` on data without a dev
 * split use it instead of a fixed 1.
 */
export interface StoredHybrid {
  /** The alpha over all questions, or null for BM25 alone. */
  alpha: number | null;
  /** Per task, where the dev split had questions of two or more tasks. */
  byTask?: Record<string, number | null>;
  /** The dataset whose dev split it was tuned on, and how many dev questions that split has. */
  tunedOn: { data: string; questions: number };
}

/**
 * Sets the hybrid entry of a model directory's model.json (rewritten atomically; the rest of the card unchanged).
 *
 * @example
 * storeHybrid('models/taser', { alpha: 2.3, tunedOn: { data: 'data/multidomain-mini', questions: 200 } });
 */
export function storeHybrid(dir: string, hybrid: StoredHybrid): ModelCard {
  mustBeObject(hybrid, 'hybrid');
  const ok = (a: unknown) => a === null || (typeof a === 'number' && Number.isFinite(a) && a >= 0);
  if (!ok(hybrid.alpha) || Object.values(hybrid.byTask ?? {}).some((a) => !ok(a)))
    throw new QuorumError('ERR_RANGE', 'a stored hybrid alpha is a finite number >= 0 or null (BM25 alone)');
  const { format, version, ...rest } = readModelCard(dir);
  return writeSavedCard(dir, modelFormat, { ...rest, hybrid });
}

/**
 * How weights are stored: F32; BF16 (half the size, each weight rounded to 8 significant bits); Q8 (every embedding
 * table, `*.embeddings.*_embeddings.weight`, as int8 codes with one f32 scale per row, a quarter of F32; every other
 * weight as BF16). Q8 refuses a non-finite weight when saving (ERR_ARG); F32 and BF16 store it, and loading refuses it.
 */
export type WeightStorage = 'F32' | 'BF16' | 'Q8';

/**
 * A question's task as the model reads it: the task's index among `tasks` (-1 for none or an unknown one) and, when
 * the text settings use task markers, the marker's token id (`[unused<index + 1>]`).
 */
/**
 * The task to encode a dataset's question of task `task` with: the task itself when the model was trained on it, else
 * none (no marker). Evaluation calls it, since a dataset may hold tasks a model never saw; encodeQueries itself refuses
 * a task its model does not know.
 */
export function taskIfKnown(tasks: readonly string[], task: string | undefined): string | undefined {
  return task !== undefined && tasks.includes(task) ? task : undefined;
}

export function queryTask(
  tasks: readonly string[],
  text: TextSettings,
  tokenizer: WordPieceTokenizer,
  task: string | undefined,
): { index: number; marker?: number } {
  // A task the model does not know would encode without its marker, as another task's question would be: refused.
  // A model trained without tasks takes any (MUF names each expert's task, whatever its model).
  if (task !== undefined && typeof task !== 'string')
    throw new QuorumError('ERR_ARG', `task must be a string, got ${task === null ? 'null' : typeof task}`);
  if (task !== undefined && tasks.length > 0 && !tasks.includes(task))
    throw new QuorumError('ERR_ARG', `task '${task}' is not one of the model's tasks (${tasks.join(', ')})`);
  const index = task === undefined ? -1 : tasks.indexOf(task);
  return text.taskMarkers && index >= 0 ? { index, marker: tokenizer.markerId(index + 1) } : { index };
}

/** A command line's `--dtype` (f32, bf16 or q8, any case) as a {@link WeightStorage}; ERR_ARG otherwise. */
export function weightStorageOption(value: string): WeightStorage {
  const upper = typeof value === 'string' ? value.toUpperCase() : '';
  if (upper !== 'F32' && upper !== 'BF16' && upper !== 'Q8')
    throw new QuorumError('ERR_ARG', `--dtype must be f32, bf16 or q8, got '${String(value)}'`);
  return upper;
}

/**
 * Options of {@link Retriever.saveModel}: the tokenizer, the text settings (defaults 32 / 128 tokens, markers when
 * multi-task), the storage.
 */
export interface SaveModelOptions extends Partial<TextSettings> {
  /** The tokenizer the model was trained with (written as vocab.txt and tokenizer.json). */
  tokenizer: WordPieceTokenizer;
  /** Weight storage (default F32). */
  dtype?: WeightStorage;
  /** Free-form training record kept in model.json. */
  training?: Record<string, unknown>;
}

const saveKeys = optionKeys<SaveModelOptions>()(['tokenizer', 'dtype', 'training', 'maxQueryLength', 'maxPassageLength', 'taskMarkers']);
const saveValues = z
  .object({
    dtype: z.enum(['F32', 'BF16', 'Q8']).optional(),
    maxQueryLength: positiveInt.optional(),
    maxPassageLength: positiveInt.optional(),
    taskMarkers: z.boolean().optional(),
    training: z.record(z.string(), z.unknown()).optional(),
  })
  .passthrough();

/**
 * Writes a model directory (created if needed), swapped in whole: a crash leaves the old directory or the new one
 * (other files in it stay: replaceDirectory's keepOthers).
 *
 * @example
 * await saveModelDir(model, 'models/taser', { tokenizer: tok, dtype: 'BF16', training: { epochs: result.epochs } });
 */
export function saveModelDir(model: ParameterAccess & { readonly config: RetrieverConfig }, dir: string, o: SaveModelOptions): ModelCard {
  mustBeObject(o, 'saveModel options');
  checkOptions(o, saveKeys, 'saveModel options');
  // Checked as the card's reader will check it: maxQueryLength 0 was written, and the directory never loaded again.
  parse(saveValues, o, 'saveModel options');
  const dtype = o.dtype ?? 'F32';
  return replaceDirectorySync(dir, (tmp) => writeModelFiles(model, tmp, o, dtype), { keepOthers: true, kind: modelFormat });
}

function writeModelFiles(
  model: ParameterAccess & { readonly config: RetrieverConfig },
  dir: string,
  o: SaveModelOptions,
  dtype: WeightStorage,
): ModelCard {
  writeWeights(model, join(dir, 'weights.safetensors'), dtype, modelFormat.format);
  writeTokenizerFiles(dir, o.tokenizer);
  return writeSavedCard(dir, modelFormat, {
    config: model.config,
    text: {
      maxQueryLength: o.maxQueryLength ?? 32,
      maxPassageLength: o.maxPassageLength ?? 128,
      taskMarkers: o.taskMarkers ?? model.config.tasks.length > 1,
    },
    weights: { file: 'weights.safetensors', dtype },
    ...(o.training ? { training: o.training } : {}),
  });
}

/** model.json, every field (issue 48: a card with normalize "yes", tasks as a string or unknown keys loaded and changed results). */
const modelCardSchema = z
  .object({
    format: z.literal(modelFormat.format),
    version: z.literal(modelFormat.version),
    config: retrieverConfigSchema,
    text: z.object({ maxQueryLength: positiveInt, maxPassageLength: positiveInt, taskMarkers: z.boolean() }).strict(),
    weights: z.object({ file: z.string(), dtype: z.enum(['F32', 'BF16', 'Q8']) }).strict(),
    training: z.record(z.unknown()).optional(),
    hybrid: z
      .object({
        alpha: finite.nullable(),
        byTask: z.record(finite.nullable()).optional(),
        tunedOn: z.object({ data: z.string(), questions: count }).strict(),
      })
      .strict()
      .optional(),
  })
  .strict();

/** Reads and checks model.json, every field: ERR_IO when missing, ERR_FORMAT naming the field when malformed. */
export function readModelCard(dir: string): ModelCard {
  const { card, path } = readSavedCard<ModelCard>(dir, modelFormat);
  const checked = checkCard(modelCardSchema, card, path) as ModelCard;
  savedFile(dir, checked.weights.file, path, 'weights');
  return checked;
}

/**
 * Loads the weights of a model directory into `model` (built from the card's config), checking that the file holds
 * every parameter with its shape; a bad file changes nothing (ERR_FORMAT).
 */
export function loadWeights(model: ParameterAccess, dir: string, card: ModelCard): void {
  readWeights(model, savedFile(dir, card.weights.file, join(dir, 'model.json'), 'weights'), card.weights.dtype, modelFormat.format);
}

// A Q8 matrix's row scales are stored beside it under this suffix ('#' occurs in no parameter name).
const SCALE_SUFFIX = '#scale';
// Q8 takes the lookup tables only: their rows are read one at a time, so a scale per row fits each, and they are
// most of a small model's bytes. A linear map keeps bf16: a trained head near the identity has many off-diagonal
// weights within a step or two of zero (a step is max|row| / 127), and with every matrix as int8 rows a 0-layer
// model with such a head lost 0.009 MRR@10 on SelQA's dev split against f32 (0.005 with the tables only).
const EMBEDDING_TABLE = /(^|\.)embeddings\.[a-z_]+_embeddings\.weight$/;

/** Every parameter of `model` to one safetensors file (written atomically), as `dtype` says ({@link WeightStorage}). */
export function writeWeights(model: ParameterAccess, path: string, dtype: WeightStorage, format: string): void {
  if (dtype !== 'F32' && dtype !== 'BF16' && dtype !== 'Q8')
    throw new QuorumError('ERR_ARG', `weight storage must be F32, BF16 or Q8, got ${String(dtype)}`);
  const tensors: Array<[string, TensorToWrite]> = [];
  for (const { name, shape } of model.parameters()) {
    const data = model.getParameter(name);
    if (dtype === 'Q8' && shape.length === 2 && EMBEDDING_TABLE.test(name)) {
      let q;
      try {
        q = quantizeRowsInt8(data, shape[0]!, shape[1]!);
      } catch (e) {
        throw new QuorumError((e as QuorumError).code ?? 'ERR_ARG', `${name}: ${(e as Error).message}`, { cause: e });
      }
      tensors.push(
        [name, { shape, data: q.codes, dtype: 'I8' }],
        [name + SCALE_SUFFIX, { shape: [shape[0]!], data: q.scales, dtype: 'F32' }],
      );
    } else tensors.push([name, { shape, data, dtype: dtype === 'Q8' ? 'BF16' : dtype }]);
  }
  // Wider elements first (f32, then bf16, then int8; stable within each), so that every tensor starts aligned to
  // its element size and readers can view it in place.
  const width = (t: TensorToWrite) => elementBytes[t.dtype ?? 'F32'];
  tensors.sort((a, b) => width(b[1]) - width(a[1]));
  writeFileAtomic(path, writeSafetensors(new Map(tensors), { format }));
}

/**
 * Reads {@link writeWeights}'s file into `model`, checking first that it holds every parameter with its shape and
 * finite values: a bad file changes nothing (ERR_FORMAT; ERR_IO when unreadable).
 */
export function readWeights(model: ParameterAccess, path: string, storage: WeightStorage | 'any' = 'any', format?: string): void {
  const params = model.parameters();
  const values = readWeightTensors(path, params, safetensorsAt(path, format), storage);
  for (const { name } of params) model.setParameter(name, values.get(name)!);
}

/**
 * A model directory's parameters as float32 arrays by name, without building the model (no libtorch): what the
 * serving path (ServingEncoder) reads. Checked as {@link readWeights} checks them.
 */
export function readModelParameters(dir: string, card: ModelCard): Map<string, Float32Array> {
  const shapes = parameterShapes(card.config.encoder);
  const expected = retrieverEncoderNames(card.config).flatMap((e) => [...shapes].map(([name, shape]) => ({ name: `${e}.${name}`, shape })));
  const path = savedFile(dir, card.weights.file, join(dir, 'model.json'), 'weights');
  return readWeightTensors(path, expected, safetensorsAt(path, modelFormat.format), card.weights.dtype);
}

/**
 * Every parameter of {@link writeWeights}'s file as float32 (int8 rows dequantized, finite values checked), named as
 * the model names them, without the model: serving builds its graphs from them (CameServer). The graph builder
 * checks the shapes it needs.
 */
export function readWeightFile(path: string, format?: string): Map<string, Float32Array> {
  const tensors = safetensorsAt(path, format);
  const params = [...tensors].filter(([name]) => !name.endsWith(SCALE_SUFFIX)).map(([name, t]) => ({ name, shape: t.shape }));
  return readWeightTensors(path, params, tensors);
}

/** Parameters by name as a graph builder reads them (onnx-export.ts's ParameterSource); ERR_FORMAT naming `where` for a missing one. */
export function parameterSource(params: ReadonlyMap<string, Float32Array>, where: string): { getParameter(name: string): Float32Array } {
  return {
    getParameter: (name) => {
      const v = params.get(name);
      if (!v) throw new QuorumError('ERR_FORMAT', `${where}: no parameter ${name}`);
      return v;
    },
  };
}

/**
 * A weights file's tensors. With `format`, the file must not be another kind of Quorum weights: writeWeights records
 * its kind ('quorum-came', 'quorum-rom', ...), and a CAME file with a retriever's names would load as one (issue 65).
 * Files without the tag (older saves, other writers) are read on their tensors alone.
 */
function safetensorsAt(path: string, format?: string): Map<string, SafetensorsTensor> {
  const bytes = readFileBytes(path);
  let tensors: Map<string, SafetensorsTensor>;
  let meta: Record<string, string>;
  try {
    tensors = readSafetensors(bytes);
    meta = safetensorsMetadata(bytes);
  } catch (e) {
    throw new QuorumError('ERR_FORMAT', `${path}: ${(e as Error).message}`, { cause: e });
  }
  const tag = meta.format;
  if (format && tag?.startsWith('quorum-') && tag !== format)
    throw new QuorumError('ERR_FORMAT', `${path} holds ${tag} weights, not ${format}`);
  return tensors;
}

// The dtypes a weights file of each storage holds (writeWeights): an integer tensor anywhere else is a relabelled float
// (issue 48: F32 weights marked I32 loaded as garbage floats).
const STORED_DTYPES: Readonly<Record<WeightStorage | 'any', readonly string[]>> = {
  F32: ['F32'],
  BF16: ['BF16'],
  Q8: ['I8', 'BF16'],
  any: ['F32', 'BF16', 'I8'],
};

/**
 * {@link writeWeights}'s file, checked to hold exactly `expected` (shapes, finite values, the dtypes of `storage`, the
 * card's), as float32 arrays.
 */
function readWeightTensors(
  path: string,
  params: ReadonlyArray<{ name: string; shape: readonly number[] }>,
  read?: Map<string, SafetensorsTensor>,
  storage: WeightStorage | 'any' = 'any',
): Map<string, Float32Array> {
  const tensors = read ?? safetensorsAt(path);
  const values = new Map<string, Float32Array>();
  let scaleTensors = 0;
  for (const { name, shape } of params) {
    const t = tensors.get(name);
    if (!t) throw new QuorumError('ERR_FORMAT', `${path} has no tensor ${name}`);
    if (!STORED_DTYPES[storage].includes(t.dtype))
      throw new QuorumError(
        'ERR_FORMAT',
        `${path}: ${name} is ${t.dtype}, which ${storage === 'any' ? 'no weights file holds' : `a ${storage} weights file (the card's dtype) does not hold`}`,
      );
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i]))
      throw new QuorumError('ERR_FORMAT', `${path}: ${name} is [${t.shape.join(', ')}], the model needs [${shape.join(', ')}]`);
    let data = t.data;
    if (t.dtype === 'I8') {
      const scales = tensors.get(name + SCALE_SUFFIX);
      if (shape.length !== 2 || !scales || scales.dtype !== 'F32' || scales.shape.length !== 1 || scales.shape[0] !== shape[0])
        throw new QuorumError('ERR_FORMAT', `${path}: ${name} is int8 without a scale per row (${name + SCALE_SUFFIX})`);
      try {
        data = dequantizeRowsInt8(t.data, scales.data, shape[1]!);
      } catch (e) {
        throw new QuorumError('ERR_FORMAT', `${path}: ${name}: ${(e as Error).message}`, { cause: e });
      }
      scaleTensors++;
    }
    if (!allFinite(data)) throw new QuorumError('ERR_FORMAT', `${path}: ${name} holds non-finite values`);
    values.set(name, data);
  }
  if (tensors.size !== params.length + scaleTensors)
    throw new QuorumError(
      'ERR_FORMAT',
      `${path} holds ${tensors.size} tensors, the model ${params.length}${scaleTensors ? ` (+ ${scaleTensors} row scales)` : ''}`,
    );
  return values;
}
