// The typed front of the native libtorch Retriever: construction from a preset, encoding, the two halves of a
// training step (accumulate gradients, apply the update), parameters and checkpoints.
import { QuorumError, awaitNative, callNative } from '../errors.js';
import { torchBindings, type NativeRetriever, type StepStats, type TokenBatchArg, type TrainBatchArg } from '../bindings/torch_addon.js';
import type { WordPieceTokenizer } from '../text/tokenizer.js';
import type { Tensor } from '../tensor.js';
import { readTokenizerFiles } from '../text/tokenizer-files.js';
import { encodeTable } from './encode-corpus.js';
import { passageTexts, type PassageText } from '../data/examples.js';
import { loadWeights, modelDir, queryTask, readModelCard, saveModelDir, type ModelCard, type SaveModelOptions } from './model-dir.js';
import { isHfModelDir, loadPretrainedWeights, pretrainedText, readPretrained, type PretrainedOptions } from './hf.js';
import { TrainableTable, groupOf, type OptimizerOptions } from './parameter-table.js';
import type { ProcessGroup } from './process-group.js';
import { TokenTable } from './token-table.js';
import { checkOptions, mustBeArray, mustBeString, optionKeys } from '../validate.js';
import {
  checkEncoderOverrides,
  defaultEncoderConfig,
  type EncoderConfig,
  type RetrieverConfig,
  type RetrieverPreset,
  type TaserConfig,
} from './config.js';
import { brandClass } from '../brand.js';

export type { OptimizerOptions, StepStats, TokenBatchArg, TrainBatchArg };

/** What {@link Retriever.load} attaches: the model directory's card and tokenizer. */
export interface LoadedModel {
  /** The directory's model.json. */
  card: ModelCard;
  /** The directory's tokenizer (vocab.txt and tokenizer.json). */
  tokenizer: WordPieceTokenizer;
}

/** Options of {@link Retriever.create}: a preset plus any encoder fields to override. */
export interface RetrieverOptions {
  /** How question and passage encoders are arranged: `'taser'`, `'bi-encoder'` or `'siamese'`. */
  preset: RetrieverPreset;
  /** Encoder fields that override the defaults (`hiddenSize`, `layers`, `pooling`, ...). */
  encoder?: Partial<EncoderConfig>;
  /** TASER structure (taser preset only); default: every 2nd block, 2 experts, Det-R. */
  taser?: Partial<TaserConfig>;
  /** Task names, for task markers and per-task question encoders (Maillard et al.). */
  tasks?: string[];
  /** One question encoder per task over a shared passage encoder (bi-encoder preset only). */
  perTaskQueryEncoders?: boolean;
}

/** Options of {@link Retriever.encode}. */
export interface EncodeOptions {
  /** Task index, for per-task question encoders. */
  task?: number;
  /** Where to write the rows (its length must be rows x width). */
  out?: Float32Array;
  /** Return the pooled states (width hiddenSize) instead of the embeddings. */
  pooledState?: boolean;
}

const retrieverKeys = optionKeys<RetrieverOptions>()(['preset', 'encoder', 'taser', 'tasks', 'perTaskQueryEncoders']);
const encodeKeys = optionKeys<EncodeOptions>()(['task', 'out', 'pooledState']);
const queryKeys = optionKeys<{ task?: string }>()(['task']);
const passageKeys = optionKeys<{ onProgress?: unknown }>()(['onProgress']);

/**
 * The full configuration a preset expands to.
 *
 * @example
 * const c = retrieverConfig({ preset: 'taser', encoder: { layers: 2, hiddenSize: 100 } });
 * c.encoder.taser;     // { every: 2, experts: 2, routing: 'det' }
 * c.encoder.pooling;   // 'mean'
 */
export function retrieverConfig(o: RetrieverOptions): RetrieverConfig {
  if (o === null || typeof o !== 'object')
    throw new QuorumError('ERR_ARG', 'Retriever options must be an object ({ preset, encoder, ... })');
  if (o.encoder !== undefined && (o.encoder === null || typeof o.encoder !== 'object'))
    throw new QuorumError('ERR_ARG', 'encoder options must be an object');
  checkOptions(o, retrieverKeys, 'Retriever options');
  checkEncoderOverrides(o.encoder, o.taser, 'Retriever options');
  const encoder: EncoderConfig = { ...defaultEncoderConfig, ...o.encoder };
  if (o.encoder?.embeddingSize === undefined) encoder.embeddingSize = encoder.hiddenSize;
  if (o.preset === 'taser') encoder.taser = { every: 2, experts: 2, routing: 'det', ...o.taser };
  else if (o.taser) throw new QuorumError('ERR_ARG', `taser options need the taser preset, not '${o.preset}'`);
  return { preset: o.preset, encoder, tasks: o.tasks ?? [], perTaskQueryEncoders: o.perTaskQueryEncoders ?? false };
}

/**
 * A dual-encoder retriever in libtorch (CPU): a bi-encoder (separate question and passage encoders, DPR), a
 * Siamese encoder (one for both), or TASER (one encoder whose specialized blocks route by side or by a learned
 * router). Embeddings pool the last layer (`pooling`: mean over non-pad tokens by default, `cls` or `max`), with
 * optional token weights, centre and projection; with `normalize` (the default) they are unit vectors, so the dot
 * product that ranks passages is a cosine.
 *
 * @example
 * const model = Retriever.create({ preset: 'taser', encoder: { layers: 4, hiddenSize: 128 } });
 * console.log(model.parameterCount);
 * const q = tokenizer.encode(['who wrote hamlet?'], { maxLength: 32 });
 * const emb = await model.encode(q, 'query'); // Float32Array [1, model.dim]
 */
export class Retriever extends TrainableTable {
  /** Its training step takes a ProcessGroup (data-parallel training, docs/guides/distributed.md). */
  readonly dataParallel = true;
  /** The full configuration, as model.json stores it. */
  readonly config: RetrieverConfig;
  /** Embedding width. */
  readonly dim: number;
  /** Set by {@link Retriever.load}: the model directory's card (text settings, training record) and tokenizer. */
  loaded?: LoadedModel;
  protected readonly native: NativeRetriever;

  private constructor(config: RetrieverConfig) {
    super();
    this.config = config;
    const addon = torchBindings();
    this.native = callNative(() => new addon.Retriever(config));
    this.dim = this.native.info().outDim;
  }

  /**
   * A new model with freshly initialised weights: the preset's configuration with `options.encoder` fields
   * overriding {@link defaultEncoderConfig} (see {@link retrieverConfig}). ERR_ARG for bad options,
   * ERR_BACKEND_UNAVAILABLE where the torch module is not built.
   *
   * @example
   * const model = Retriever.create({ preset: 'siamese', encoder: { vocabSize: tokenizer.size, layers: 0, hiddenSize: 100 } });
   * await initFromGlove(model, tokenizer.vocabulary);
   */
  static create(options: RetrieverOptions): Retriever {
    return new Retriever(retrieverConfig(options));
  }

  /**
   * A new model from a full configuration as {@link retrieverConfig} returns it (or a model card's `config`),
   * with no defaults filled in.
   *
   * @example
   * const twin = Retriever.fromConfig(model.config);   // same shapes, fresh weights
   */
  static fromConfig(config: RetrieverConfig): Retriever {
    return new Retriever(config);
  }

  /**
   * Loads a model directory written by {@link saveModel} (or `quorum train`): configuration, tokenizer and weights;
   * `'default'` is the model shipped in the package (data/models/default). A Hugging Face BERT-family directory
   * (config.json, safetensors weights, tokenizer.json or vocab.txt) loads too, through {@link fromPretrained}, with
   * `options` choosing its pooling and normalization. ERR_IO when the directory or a file is missing; ERR_FORMAT for
   * another format version, a damaged model.json, or a truncated or mismatched weights file.
   *
   * @example
   * const model = await Retriever.load('models/taser');
   * const q = await model.encodeQueries(['who wrote hamlet?']);   // f32 Tensor [1, model.dim]
   * const bge = await Retriever.load('checkpoints/bge-small-en-v1.5');   // pooling from its 1_Pooling/config.json
   */
  static async load(nameOrDir: string, options: PretrainedOptions = {}): Promise<Retriever> {
    mustBeString(nameOrDir, 'model directory');
    const dir = modelDir(nameOrDir);
    if (isHfModelDir(dir)) return Retriever.fromPretrained(dir, options);
    if (Object.keys(options ?? {}).length)
      throw new QuorumError(
        'ERR_ARG',
        `${dir} is a Quorum model directory: its pooling and normalization are its own (options are for Hugging Face directories)`,
      );
    const card = readModelCard(dir);
    let model: Retriever;
    try {
      model = new Retriever(card.config);
    } catch (e) {
      if (e instanceof QuorumError && e.code !== 'ERR_BACKEND_UNAVAILABLE')
        throw new QuorumError('ERR_FORMAT', `${dir}/model.json: bad configuration: ${e.message}`, { cause: e });
      throw e;
    }
    const tokenizer = await readTokenizerFiles(dir);
    if (tokenizer.vocabulary.length > card.config.encoder.vocabSize)
      throw new QuorumError(
        'ERR_FORMAT',
        `${dir}: the tokenizer has ${tokenizer.vocabulary.length} tokens, the model ${card.config.encoder.vocabSize}`,
      );
    loadWeights(model, dir, card);
    model.loaded = { card, tokenizer };
    return model;
  }

  /**
   * A Siamese retriever from a Hugging Face BERT-family directory (BERT, MiniLM, BGE, E5, GTE-style `BertModel`
   * checkpoints; see docs/guides/bring-your-own-model.md), ready to encode: every weight must be in the checkpoint
   * (ERR_FORMAT names the first one missing). Pooling comes from `options.pooling`, else the sentence-transformers
   * 1_Pooling/config.json, else [CLS]; questions are cut at 64 tokens and passages at sentence-transformers'
   * max_seq_length (else 256), within the position table.
   *
   * @example
   * const e5 = await Retriever.fromPretrained('checkpoints/e5-small-v2', { pooling: 'mean', normalize: true });
   */
  static async fromPretrained(dir: string, options: PretrainedOptions = {}): Promise<Retriever> {
    const bert = readPretrained(dir, options);
    let model: Retriever;
    try {
      model = new Retriever({ preset: 'siamese', encoder: bert.encoder, tasks: [], perTaskQueryEncoders: false });
    } catch (e) {
      if (e instanceof QuorumError && e.code !== 'ERR_BACKEND_UNAVAILABLE')
        throw new QuorumError('ERR_FORMAT', `${dir}/config.json: ${e.message}`, { cause: e });
      throw e;
    }
    loadPretrainedWeights(model, bert, { strict: true });
    const card: ModelCard = {
      format: 'quorum-retriever',
      version: 1,
      config: model.config,
      text: pretrainedText(bert),
      weights: { file: 'model.safetensors', dtype: 'F32' },
      training: { pretrained: dir, pooling: bert.poolingSource },
    };
    model.loaded = { card, tokenizer: bert.tokenizer };
    return model;
  }

  /**
   * Writes this model as a model directory (model.json, vocab.txt, weights.safetensors), loadable by
   * {@link Retriever.load}.
   *
   * @example
   * model.saveModel('models/taser', { tokenizer: tok, dtype: 'BF16', training: { epochs: result.epochs } });
   */
  saveModel(dir: string, options: SaveModelOptions): ModelCard {
    return saveModelDir(this, dir, options);
  }

  private requireLoaded(): LoadedModel {
    if (!this.loaded) throw new QuorumError('ERR_STATE', 'encodeQueries / encodePassages need a model from Retriever.load(dir)');
    return this.loaded;
  }

  /**
   * Embeds questions as the model was trained to (its tokenizer, length limit and task marker), off the main thread.
   * `task` names one of the model's tasks; without it (or for a task it was not trained on) no marker is added.
   */
  async encodeQueries(texts: readonly string[], options: { task?: string } = {}): Promise<Tensor<'f32'>> {
    checkOptions(options, queryKeys, 'encodeQueries options');
    mustBeArray(texts, 'questions');
    texts.forEach((t, i) => mustBeString(t, `questions[${i}]`));
    const { card, tokenizer } = this.requireLoaded();
    const { index: t, marker } = queryTask(this.config.tasks, card.text, tokenizer, options.task);
    const table = await TokenTable.build(tokenizer, texts, { maxLength: card.text.maxQueryLength, marker });
    return encodeTable(this, table, { side: 'query', task: Math.max(t, 0) });
  }

  /** Embeds passages (title and text as a pair), off the main thread. */
  async encodePassages(
    passages: readonly PassageText[],
    options: { onProgress?: (done: number, total: number) => void } = {},
  ): Promise<Tensor<'f32'>> {
    checkOptions(options, passageKeys, 'encodePassages options');
    const texts = passageTexts(passages);
    const { card, tokenizer } = this.requireLoaded();
    const table = await TokenTable.passages(tokenizer, texts, card.text.maxPassageLength);
    return encodeTable(this, table, { side: 'passage', onProgress: options.onProgress });
  }

  /** Seeds libtorch's generator (initialization, dropout, Gumbel noise, Det-R draws) for reproducible runs. */
  static seed(seed: number): void {
    callNative(() => torchBindings().manualSeed(seed));
  }

  /** The encoder names of this preset ("query", "passage", "query.<task>", "encoder"). */
  encoderNames(): string[] {
    return callNative(() => this.native.info().encoders);
  }

  /**
   * Embeds a tokenized batch ([rows, dim] row-major) without gradients, off the main thread. With `pooledState`, the
   * rows are the pooled states ([rows, hiddenSize]) before the centre, the head and the normalization.
   */
  async encode(batch: TokenBatchArg, side: 'query' | 'passage', options: EncodeOptions = {}): Promise<Float32Array> {
    checkOptions(options, encodeKeys, 'encode options');
    const out = options.out;
    if (out !== undefined && !(out instanceof Float32Array)) throw new QuorumError('ERR_ARG', 'out must be a Float32Array');
    // The rows are written off the main thread: into the addon's own array, then copied into `out` here, so that a
    // transfer of `out` meanwhile cannot have the worker write into freed memory.
    const rows = await awaitNative(
      callNative(() => this.native.encode(batch, side, options.task ?? 0, null, true, options.pooledState)) as Promise<Float32Array>,
    );
    if (out === undefined) return rows;
    if (out.length !== rows.length) {
      throw out.length === 0 && rows.length > 0
        ? new QuorumError('ERR_DISPOSED', 'out was transferred or detached while the batch was encoded')
        : new QuorumError('ERR_SHAPE', `out holds ${out.length} floats, the batch needs ${rows.length}`);
    }
    out.set(rows);
    return out;
  }

  /** {@link encode} on the calling thread. */
  encodeSync(batch: TokenBatchArg, side: 'query' | 'passage', options: EncodeOptions = {}): Float32Array {
    checkOptions(options, encodeKeys, 'encode options');
    return callNative(
      () => this.native.encode(batch, side, options.task ?? 0, options.out ?? null, false, options.pooledState) as Float32Array,
    );
  }

  /**
   * Forward and backward of one batch; gradients add up until {@link step}. With a `group`, `batch` is this rank's
   * part of the global batch: every rank's question and passage vectors are gathered, each question is scored
   * against all of the global batch's passages, and loss, correct and questions are the global batch's
   * (docs/guides/distributed.md). Every rank must call it for each batch.
   */
  async accumulate(batch: TrainBatchArg, options: { group?: ProcessGroup } = {}): Promise<StepStats> {
    const group = groupOf(options);
    return awaitNative(callNative(() => this.native.accumulate(batch, true, group)) as Promise<StepStats>);
  }

  /** {@link accumulate} on the calling thread. */
  accumulateSync(batch: TrainBatchArg): StepStats {
    return callNative(() => this.native.accumulate(batch, false) as StepStats);
  }

  /**
   * @internal Runs the given steps in one native loop (benchmark baseline for the TypeScript trainer's overhead).
   */
  async trainLoopNative(batches: TrainBatchArg[], lrs: Float64Array, clip: number, accumulation = 1) {
    return awaitNative(
      callNative(() => this.native.trainLoop(batches, lrs, clip, accumulation, true)) as Promise<StepStats & { ms: number }>,
    );
  }
}

// `instanceof Retriever` holds for the other package copy's instances too (ESM and CommonJS in one process: lib/brand.ts).
brandClass(Retriever, 'Retriever');
