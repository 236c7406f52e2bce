// CAME's model (Cai et al.; native/torch/came_model.h): the typed front of the native CameModel. One Transformer
// shared by questions and passages, a shared bottom, and per expert its own upper blocks and head: lexical (SPLADE
// over an MLM head tied to the embeddings), local (ColBERT token vectors, MaxSim) and global (one pooled vector).
import { QuorumError, awaitNative, callNative } from '../../errors.js';
import { type MaybeAsync } from '../../native.js';
import { torchBindings, type StepStats, type TokenBatchArg, type TrainBatchArg } from '../../bindings/torch_addon.js';
import { checkEncoderOverrides, defaultEncoderConfig, type EncoderConfig } from '../../models/config.js';
import { TrainableTable, groupOf, type OptimizerOptions } from '../../models/parameter-table.js';
import type { ProcessGroup } from '../../models/process-group.js';
import { checkOptions, count, mustBeObject, optionKeys, parse, positiveInt, z } from '../../validate.js';
import { brandClass } from '../../brand.js';
import { CAME_EXPERTS, type CameConfig, type CameEncoded, type CameExpertName } from './format.js';

/** How the next training steps run: the stage and its hyper-parameters. */
export interface CameTraining {
  /** false: the standardized stage (sum of the experts' losses); true: the specialized stage (competitive weights). */
  competitive: boolean;
  /** The competition's temperature: w_e = softmax_e((1 / rank_e) / tau); the paper uses 0.5 (MS MARCO), 2 (NQ). */
  tau: number;
  /** FLOPS weight of the question SPLADE vectors (paper: 0.01). */
  flopsQuery: number;
  /** FLOPS weight of the passage SPLADE vectors (paper: 0.01). */
  flopsPassage: number;
  /** Steps over which the FLOPS weights ramp up quadratically (SPLADE's scheduler); 0 = full weight at once. */
  flopsRamp: number;
  /** Each expert's scores are divided by its temperature before its softmax. */
  temperatures: Record<CameExpertName, number>;
}

/** One batch's training figures of {@link CameModel.accumulate}. */
export interface CameStepStats extends StepStats {
  /** The FLOPS regularizer at this step (unweighted). */
  flops: number;
  /** The FLOPS ramp factor at this step, in [0, 1]. */
  flopsLambda: number;
  /** Per expert: mean NLL, mean weight in the loss (1 in the standardized stage), questions ranked first. */
  experts: Partial<Record<CameExpertName, { loss: number; weight: number; correct: number }>>;
}

interface NativeCameModel {
  dispose(): void;
  isDisposed(): boolean;
  info(): {
    parameterCount: number;
    optimizerSteps: number;
    experts: CameExpertName[];
    vocabSize: number;
    globalDim: number;
    localDim: number;
    training: CameTraining;
  };
  parameters(): { name: string; shape: number[] }[];
  getParameter(name: string): Float32Array;
  setParameter(name: string, values: Float32Array): void;
  setOptimizer(o: OptimizerOptions): void;
  setTraining(t: Partial<CameTraining>): void;
  encode(batch: TokenBatchArg, side: 'query' | 'passage', experts: CameExpertName[], async: boolean): MaybeAsync<CameEncoded>;
  accumulate(batch: TrainBatchArg, async: boolean, group?: unknown): MaybeAsync<CameStepStats>;
  step(lr: number, clip: number, async: boolean, group?: unknown): MaybeAsync<{ gradNorm: number }>;
  broadcastParameters(group: unknown, root: number, async: boolean): MaybeAsync<void>;
  save(path: string, async: boolean): MaybeAsync<object>;
  load(path: string, async: boolean): MaybeAsync<object>;
}

/** Options of {@link CameModel.create}: any fields to override. */
export interface CameModelOptions {
  /** Fields of the shared encoder to override (see {@link cameConfig}'s defaults). */
  encoder?: Partial<EncoderConfig>;
  /** Private blocks per expert (default 1). */
  expertLayers?: number;
  /** Which experts to build (default all three). */
  experts?: CameExpertName[];
  /** Width of the local expert's token vectors (default 128). */
  localDim?: number;
  /** Use libtorch's own MaxSim and SPLADE pooling instead of Quorum's kernels (a benchmark reference). */
  referenceOps?: boolean;
}

const cameModelKeys = optionKeys<CameModelOptions>()(['encoder', 'expertLayers', 'experts', 'localDim', 'referenceOps']);
const trainingValues = z.object({
  competitive: z.boolean().optional(),
  tau: z.number().finite().positive().optional(),
  flopsQuery: z.number().finite().nonnegative().optional(),
  flopsPassage: z.number().finite().nonnegative().optional(),
  flopsRamp: count.optional(),
  temperatures: z.record(z.string(), z.number().finite().positive()).optional(),
});
// The values of the options beside the encoder's (checked by checkEncoderOverrides): null is not "the default".
const cameOptionValues = z
  .object({
    expertLayers: count.optional(),
    localDim: positiveInt.optional(),
    referenceOps: z.boolean().optional(),
  })
  .passthrough();
const trainingKeys = optionKeys<CameTraining>()(['competitive', 'tau', 'flopsQuery', 'flopsPassage', 'flopsRamp', 'temperatures']);

/**
 * CAME's defaults in small: GloVe-sized embeddings (100), one shared block and one block per expert of hidden 100,
 * mean pooling with unit vectors for the global expert ([CLS] pooling over fresh layers starts collapsed:
 * docs/methods/training.md#why-training-did-not-learn-issue-20-and-the-glove-average-baseline).
 *
 * @example
 * const c = cameConfig({ experts: ['lexical', 'global'], encoder: { vocabSize: tokenizer.size } });
 * c.encoder.layers;   // 1 shared block
 * c.expertLayers;     // 1 block per expert
 */
export function cameConfig(o: CameModelOptions = {}): CameConfig {
  mustBeObject(o, 'CAME options');
  if (o.encoder !== undefined) mustBeObject(o.encoder, 'encoder options');
  checkOptions(o, cameModelKeys, 'CAME model options');
  parse(cameOptionValues, o, 'CAME model options');
  checkEncoderOverrides(o.encoder, undefined, 'CAME model options');
  const encoder: EncoderConfig = {
    ...defaultEncoderConfig,
    hiddenSize: 100,
    embeddingSize: 100,
    layers: 1,
    heads: 4,
    ffnSize: 400,
    maxPositions: 256,
    ...o.encoder,
  };
  if (o.encoder?.embeddingSize === undefined) encoder.embeddingSize = encoder.hiddenSize;
  if (o.experts !== undefined && (!Array.isArray(o.experts) || o.experts.length === 0))
    throw new QuorumError('ERR_ARG', 'experts must be a non-empty array of lexical, local and global');
  const experts = o.experts ?? [...CAME_EXPERTS];
  for (const e of experts)
    if (!CAME_EXPERTS.includes(e)) throw new QuorumError('ERR_ARG', `a CAME expert is 'lexical', 'local' or 'global', got '${String(e)}'`);
  return {
    encoder,
    expertLayers: o.expertLayers ?? 1,
    experts: CAME_EXPERTS.filter((e) => experts.includes(e)),
    localDim: o.localDim ?? 128,
    ...(o.referenceOps ? { referenceOps: true } : {}),
  };
}

/**
 * CAME's three-expert model in libtorch (CPU). Parameter names: `bottom.<BERT name>` for the shared part,
 * `<expert>.encoder.layer.<l>.*` for an expert's own blocks, `lexical.head.*` and `local.head.*` for the heads (the
 * lexical decoder is tied to `bottom.embeddings.word_embeddings.weight`).
 *
 * @example
 * const model = CameModel.create({ encoder: { vocabSize: tokenizer.size } });
 * model.setTraining({ competitive: true, tau: 0.5 });
 * const stats = await model.accumulate(batch);  // per-expert losses and competitive weights
 * await model.step(1e-3, 2);
 */
export class CameModel extends TrainableTable {
  /** Its training step takes a ProcessGroup (data-parallel training, docs/guides/distributed.md). */
  readonly dataParallel = true;
  /** The full configuration. */
  readonly config: CameConfig;
  protected readonly native: NativeCameModel;

  private constructor(config: CameConfig) {
    super();
    this.config = config;
    const addon = torchBindings();
    this.native = callNative(() => new addon.CameModel(config) as NativeCameModel);
  }

  /** A new model with random weights from {@link cameConfig}'s defaults and `options`. */
  static create(options: CameModelOptions = {}): CameModel {
    return new CameModel(cameConfig(options));
  }

  /** A new model with random weights from a full configuration (e.g. a saved came.json's). */
  static fromConfig(config: CameConfig): CameModel {
    mustBeObject(config, 'CAME config');
    return new CameModel(config);
  }

  /** The experts this model holds, in lexical, local, global order. */
  get experts(): CameExpertName[] {
    return callNative(() => this.native.info().experts);
  }

  /** Width of the global expert's vectors (the hidden size). */
  get globalDim(): number {
    return this.config.encoder.hiddenSize;
  }

  /** Width of the lexical expert's SPLADE vectors (the vocabulary size). */
  get vocabSize(): number {
    return this.config.encoder.vocabSize;
  }

  /** The prefix of the token embedding table's name (for initFromGlove). */
  encoderNames(): string[] {
    return ['bottom'];
  }

  /** The current training stage and its settings. */
  get training(): CameTraining {
    return callNative(() => this.native.info().training);
  }

  /** Changes how the next steps train (fields left out keep their value). */
  setTraining(t: Partial<CameTraining>): void {
    mustBeObject(t, 'CAME training settings');
    checkOptions(t, trainingKeys, 'CAME training settings');
    parse(trainingValues, t, 'CAME training settings'); // competitive: 'yes' was read as true
    callNative(() => this.native.setTraining(t));
  }

  /** The asked-for experts' representations of a tokenized batch, without gradients, off the main thread. */
  async encode(batch: TokenBatchArg, side: 'query' | 'passage', experts: readonly CameExpertName[] = this.experts): Promise<CameEncoded> {
    return awaitNative(callNative(() => this.native.encode(batch, side, [...experts], true)) as Promise<CameEncoded>);
  }

  /** {@link CameModel.encode} on the calling thread. */
  encodeSync(batch: TokenBatchArg, side: 'query' | 'passage', experts: readonly CameExpertName[] = this.experts): CameEncoded {
    return callNative(() => this.native.encode(batch, side, [...experts], false) as CameEncoded);
  }

  /**
   * Forward and backward of one batch with the current {@link training} settings; gradients add up until step. With
   * a `group`, `batch` is this rank's part of the global batch: every expert's representations are gathered, so the
   * losses, the competitive weights and FLOPS are the global batch's (docs/guides/distributed.md).
   */
  async accumulate(batch: TrainBatchArg, options: { group?: ProcessGroup } = {}): Promise<CameStepStats> {
    const group = groupOf(options);
    return awaitNative(callNative(() => this.native.accumulate(batch, true, group)) as Promise<CameStepStats>);
  }

  /** {@link CameModel.accumulate} on the calling thread. */
  accumulateSync(batch: TrainBatchArg): CameStepStats {
    return callNative(() => this.native.accumulate(batch, false) as CameStepStats);
  }
}

// `instanceof CameModel` holds for the other package copy's instances too (ESM and CommonJS in one process: lib/brand.ts).
brandClass(CameModel, 'CameModel');
