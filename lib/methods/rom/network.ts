// ROM's network (Fun, Gandhi, Ravi; native/torch/rom_model.h): the typed front of the native RomModel. One Transformer
// for questions, passages and the extractive reader, with a linear head per retrieval task (retrieval, ICT,
// PhraseICT) and the reader's span and relevance logits.
import { QuorumError, awaitNative, callNative } from '../../errors.js';
import { type MaybeAsync } from '../../native.js';
import { torchBindings, type StepStats, type TokenBatchArg, type TrainBatchArg } from '../../bindings/torch_addon.js';
import { checkEncoderOverrides, defaultEncoderConfig, type EncoderConfig } from '../../models/config.js';
import type { TableEncoder } from '../../models/encode-corpus.js';
import { TrainableTable, groupOf, type OptimizerOptions } from '../../models/parameter-table.js';
import type { ProcessGroup } from '../../models/process-group.js';
import { checkOptions, count, mustBeObject, optionKeys, parse, z } from '../../validate.js';
import { romMarksMatches, type ReaderLogits, type RomConfig } from './format.js';

/** One of {@link ROM_HEADS}. */
export type RomHead = 'retrieval' | 'ict' | 'phrase_ict';
/** ROM's three contrastive heads on the shared encoder (the reader is separate). */
export const ROM_HEADS: readonly RomHead[] = ['retrieval', 'ict', 'phrase_ict'];

/**
 * The reader's batch: row `q * passages + j` of `inputs` is "[CLS] question q [SEP] its passage j [SEP]" (type 1
 * on the passage and its [SEP]); `start` / `end` are the answer's first and last token in row
 * `q * passages + positive[q]`.
 */
export interface ReaderBatchArg {
  /** The question-passage rows, `questions * passages` of them. */
  inputs: TokenBatchArg;
  /** Passages per question. */
  passages: number;
  /** Per question, the index (within its passages) of the one holding the answer. */
  positive: Int32Array;
  /** Per question, the answer's first token in its positive row. */
  start: Int32Array;
  /** Per question, the answer's last token in its positive row (inclusive). */
  end: Int32Array;
  /** lambda (and 1 / accumulation steps); default 1. */
  lossScale?: number;
  /** Divide the loss by a uniform guess's loss on this batch (default true). */
  normalize?: boolean;
}

/** One batch's training figures of {@link RomNetwork.accumulate} or {@link RomNetwork.accumulateReader}. */
export interface RomStepStats extends StepStats {
  /** The loss of a uniform guess on this batch (what normalization divides by). */
  chance: number;
  /** Reader: questions whose positive passage ranked first (`correct`: passage and span both). */
  passageCorrect: number;
  /** Reader: questions whose exact span ranked first in their positive passage. */
  spanCorrect: number;
}

interface NativeRomModel {
  dispose(): void;
  isDisposed(): boolean;
  info(): { parameterCount: number; optimizerSteps: number; outDim: number };
  parameters(): { name: string; shape: number[] }[];
  getParameter(name: string): Float32Array;
  setParameter(name: string, values: Float32Array): void;
  setOptimizer(o: OptimizerOptions): void;
  encode(batch: TokenBatchArg, side: 'query' | 'passage', head: RomHead, async: boolean): MaybeAsync<{ vectors: Float32Array }>;
  read(inputs: TokenBatchArg, async: boolean): MaybeAsync<ReaderLogits>;
  accumulate(batch: TrainBatchArg, head: RomHead, normalize: boolean, async: boolean, group?: unknown): MaybeAsync<RomStepStats>;
  accumulateReader(batch: ReaderBatchArg, async: boolean, group?: unknown): MaybeAsync<RomStepStats>;
  step(lr: number, clip: number, async: boolean, group?: unknown): MaybeAsync<{ gradNorm: number }>;
  broadcastParameters(group: unknown, root: number, async: boolean): MaybeAsync<void>;
  save(path: string, async: boolean): MaybeAsync<object>;
  load(path: string, async: boolean): MaybeAsync<object>;
}

/** Options of {@link RomNetwork.create}: any fields to override. */
export interface RomNetworkOptions {
  /** Encoder fields to override (see {@link romConfig}'s defaults). */
  encoder?: Partial<EncoderConfig>;
  /** Width of the heads' vectors (default 0: the hidden width, identity at step 0). */
  headDim?: number;
}

const networkKeys = optionKeys<RomNetworkOptions>()(['encoder', 'headDim']);
const accumulateKeys = optionKeys<{ normalize?: boolean; group?: ProcessGroup }>()(['normalize', 'group']);

/**
 * ROM's defaults in small: GloVe-sized embeddings and hidden width (100), two blocks, mean pooling with unit vectors
 * (issue 20: [CLS] pooling over fresh layers starts collapsed), heads of the hidden width (identity at step 0), and
 * three token types so that reader rows can mark the passage tokens that occur in the question.
 *
 * @example
 * const c = romConfig({ encoder: { vocabSize: tokenizer.size } });
 * c.encoder.layers;          // 2
 * c.encoder.typeVocabSize;   // 3: question, passage, passage word also in the question
 */
export function romConfig(o: RomNetworkOptions = {}): RomConfig {
  mustBeObject(o, 'ROM options');
  if (o.encoder !== undefined) mustBeObject(o.encoder, 'encoder options');
  checkOptions(o, networkKeys, 'ROM network options');
  parse(z.object({ headDim: count.optional() }).passthrough(), o, 'ROM network options');
  checkEncoderOverrides(o.encoder, undefined, 'ROM network options');
  const encoder: EncoderConfig = {
    ...defaultEncoderConfig,
    hiddenSize: 100,
    embeddingSize: 100,
    layers: 2,
    heads: 4,
    ffnSize: 400,
    maxPositions: 256,
    pooling: 'mean',
    normalize: true,
    // Question, passage, and a passage token that also occurs in the question (the reader's exact-match feature).
    typeVocabSize: 3,
    ...o.encoder,
  };
  if (o.encoder?.embeddingSize === undefined) encoder.embeddingSize = encoder.hiddenSize;
  return { encoder, headDim: o.headDim ?? 0 };
}

/**
 * ROM's one-encoder model in libtorch (CPU). Parameter names: `encoder.<BERT name>`, `<head>.weight|bias` for the
 * retrieval, ICT and PhraseICT heads, `reader.span.*` ([2, hidden]: start, end) and `reader.relevance.*`.
 *
 * @example
 * const model = RomNetwork.create({ encoder: { vocabSize: tokenizer.size } });
 * await model.accumulate({ ...ictBatch, lossScale: 0.5 }, 'ict');
 * await model.accumulateReader(readerBatch);
 * await model.step(1e-3, 2);
 */
export class RomNetwork extends TrainableTable {
  /** The full configuration. */
  readonly config: RomConfig;
  protected readonly native: NativeRomModel;

  private constructor(config: RomConfig) {
    super();
    this.config = config;
    const addon = torchBindings();
    this.native = callNative(() => new addon.RomModel(config) as NativeRomModel);
  }

  /** A new network with fresh weights; options override the defaults as {@link romConfig} fills them in. */
  static create(options: RomNetworkOptions = {}): RomNetwork {
    return new RomNetwork(romConfig(options));
  }

  /** A new network from a full configuration (a saved model's), with fresh weights. */
  static fromConfig(config: RomConfig): RomNetwork {
    mustBeObject(config, 'ROM config');
    return new RomNetwork(config);
  }

  /** Whether reader rows mark passage tokens that occur in the question (type 2): the encoder has three types. */
  get marksMatches(): boolean {
    return romMarksMatches(this.config);
  }

  /** Width of the heads' vectors. */
  get dim(): number {
    return callNative(() => this.native.info().outDim);
  }

  /** The prefix of the token embedding table's name (for initFromGlove). */
  encoderNames(): string[] {
    return ['encoder'];
  }

  /** A head's vectors `[rows, dim]` of a tokenized batch, without gradients, off the main thread. */
  async encode(batch: TokenBatchArg, side: 'query' | 'passage', head: RomHead = 'retrieval'): Promise<Float32Array> {
    return (await awaitNative(callNative(() => this.native.encode(batch, side, head, true)) as Promise<{ vectors: Float32Array }>)).vectors;
  }

  /** {@link encode} on the calling thread. */
  encodeSync(batch: TokenBatchArg, side: 'query' | 'passage', head: RomHead = 'retrieval'): Float32Array {
    return callNative(() => (this.native.encode(batch, side, head, false) as { vectors: Float32Array }).vectors);
  }

  /** The reader's logits for "[CLS] question [SEP] passage [SEP]" rows, off the main thread. */
  async read(inputs: TokenBatchArg): Promise<ReaderLogits> {
    return awaitNative(callNative(() => this.native.read(inputs, true)) as Promise<ReaderLogits>);
  }

  /** {@link read} on the calling thread. */
  readSync(inputs: TokenBatchArg): ReaderLogits {
    return callNative(() => this.native.read(inputs, false) as ReaderLogits);
  }

  /**
   * One head as a {@link TableEncoder}, for encodeTable / indexTable / validate.
   *
   * @example
   * const table = await TokenTable.passages(tokenizer, passages, 256);
   * const { index } = await indexTable(network.head('retrieval'), table);
   */
  head(head: RomHead): TableEncoder {
    if (!ROM_HEADS.includes(head)) throw new QuorumError('ERR_ARG', `a ROM head is ${ROM_HEADS.join(', ')}, got ${String(head)}`);
    const dim = this.dim;
    return {
      dim,
      config: this.config,
      encode: async (batch, side, options = {}) => {
        if (options.pooledState) throw new QuorumError('ERR_ARG', "ROM's heads have no pooled-state output");
        const v = await this.encode(batch, side, head);
        if (!options.out) return v;
        options.out.set(v);
        return options.out;
      },
    };
  }

  /**
   * Forward and backward of a contrastive batch through one head; gradients add up until {@link step}. With a
   * `group`, `batch` is this rank's part of the global batch, scored whole (docs/guides/distributed.md).
   */
  async accumulate(
    batch: TrainBatchArg,
    head: RomHead = 'retrieval',
    options: { normalize?: boolean; group?: ProcessGroup } = {},
  ): Promise<RomStepStats> {
    checkOptions(options, accumulateKeys, 'accumulate options');
    const group = groupOf(options);
    return awaitNative(
      callNative(() => this.native.accumulate(batch, head, options.normalize ?? true, true, group)) as Promise<RomStepStats>,
    );
  }

  /** {@link accumulate} on the calling thread. */
  accumulateSync(batch: TrainBatchArg, head: RomHead = 'retrieval', options: { normalize?: boolean } = {}): RomStepStats {
    checkOptions(options, accumulateKeys, 'accumulate options');
    return callNative(() => this.native.accumulate(batch, head, options.normalize ?? true, false) as RomStepStats);
  }

  /** Forward and backward of a reader batch (with a `group`: this rank's questions, the loss the global batch's). */
  async accumulateReader(batch: ReaderBatchArg, options: { group?: ProcessGroup } = {}): Promise<RomStepStats> {
    const group = groupOf(options);
    return awaitNative(callNative(() => this.native.accumulateReader(batch, true, group)) as Promise<RomStepStats>);
  }

  /** {@link accumulateReader} on the calling thread. */
  accumulateReaderSync(batch: ReaderBatchArg): RomStepStats {
    return callNative(() => this.native.accumulateReader(batch, false) as RomStepStats);
  }
}
