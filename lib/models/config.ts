// Encoder and retriever configuration shared by the TypeScript API, the native torch module (which receives it as
// JSON) and the plain TypeScript reference forward (test/reference/bert.ts).
import { checkOptions, count, finite, mustBeObject, optionKeys, positiveInt, z } from '../validate.js';

/** How a TASER specialized block picks its expert (docs/methods/training.md#taser-specialized-blocks). */
export type Routing = 'det' | 'seq' | 'tok';

/** TASER structure: which Transformer blocks have routed (per-expert) FFNs, and how inputs are routed. */
export interface TaserConfig {
  /**
   * Every T-th block is specialized, shared at the bottom: layer l (0-based) is specialized iff (l + 1) % every == 0
   * (TASER's `mod2` is every = 2, giving layers 1, 3, 5, ...; `mod3` gives 2, 5, 8, ...).
   */
  every: number;
  /** Experts per specialized block (2 in the paper). */
  experts: number;
  /**
   * 'det': questions go to experts [0, experts/2), passages to [experts/2, experts) (random within the side while
   * training when a side has more than one, its first expert at inference). 'seq': a Gumbel-softmax router over the
   * [CLS] state at each specialized block's input. 'tok': the same router per token (pad tokens are masked).
   */
  routing: Routing;
  /** Seq-R / Tok-R: one gate per specialized block (true) or one shared by all of them (false, TASER's default). */
  perLayerGate?: boolean;
  /** beta: the loss gets beta * mean(sum_e p_e log p_e) (negative entropy), so beta > 0 raises router entropy. */
  entropyWeight?: number;
}

/** A BERT-style Transformer encoder. Parameter names follow Hugging Face's BertModel (see {@link parameterNames}). */
export interface EncoderConfig {
  /** Rows of the token embedding table (the tokenizer's vocabulary size). */
  vocabSize: number;
  /** Width of the token states (100 for the GloVe presets). */
  hiddenSize: number;
  /** Transformer blocks; 0 gives embeddings and pooling alone (the fastest encoder). */
  layers: number;
  /** Attention heads per block (hiddenSize must divide by it). */
  heads: number;
  /** Width of each block's feed-forward layer. */
  ffnSize: number;
  /** Rows of the position embedding table: the longest sequence it reads. */
  maxPositions: number;
  /** Token type (segment) ids: 2 in BERT. */
  typeVocabSize: number;
  /**
   * Width of the token embedding table. When it differs from hiddenSize (e.g. 100 for GloVe vectors), the table is
   * followed by a learned projection `embeddings.projection` to hiddenSize, applied before the embedding LayerNorm.
   */
  embeddingSize: number;
  /** Dropout on embeddings, attention probabilities and block outputs while training (0.1 in BERT). */
  dropout: number;
  /** Epsilon of every LayerNorm (1e-12 in BERT). */
  layerNormEps: number;
  /**
   * How token states become one vector: 'cls' takes the [CLS] state (BERT, DPR); 'mean' and 'max' take the mean or
   * per-dimension max over the sequence's real tokens ([CLS] and [SEP] included, padding never).
   */
  pooling: Pooling;
  /** Output width of an optional projection after pooling (`projection.*`); 0 for none. */
  projectionDim: number;
  /**
   * Hidden width of an MLP head (`projection.hidden.*`, GELU, then `projection.*`); 0 keeps the projection linear.
   * Needs projectionDim > 0.
   */
  projectionHidden?: number;
  /** L2-normalise the output, so that dot products are cosines (train with a temperature, e.g. 0.05). */
  normalize?: boolean;
  /**
   * Mean pooling weighted per vocabulary entry: token t weighs exp(u[id_t]), u = `embeddings.token_weights.weight`
   * (zeros: the plain mean; {@link fitPoolingToCorpus} sets ln IDF). Needs pooling 'mean'.
   */
  tokenWeights?: boolean;
  /** Subtract a learned vector `pooler.center` from the pooled state ({@link fitPoolingToCorpus}: the corpus mean). */
  center?: boolean;
  /**
   * Self-attention within consecutive windows of this many tokens, each window encoded as a sequence of its own
   * (positions stay absolute), so that a long passage costs time linear in its length; 0 or absent: attention over
   * the whole sequence. Pooling still reads every token. Seq-R routes each window by its first token.
   */
  attentionWindow?: number;
  /** Present for a TASER encoder; absent for a plain BERT. */
  taser?: TaserConfig;
}

/** How an encoder turns its token states into one vector. */
export type Pooling = 'cls' | 'mean' | 'max';

/** Every pooling, in the order the command line lists them. */
export const POOLINGS: readonly Pooling[] = ['mean', 'max', 'cls'];

/** How question and passage encoders are arranged. */
export type RetrieverPreset = 'bi-encoder' | 'siamese' | 'taser';

/** A retriever's full configuration, as {@link retrieverConfig} fills it in and model.json stores it. */
export interface RetrieverConfig {
  /** How question and passage encoders are arranged. */
  preset: RetrieverPreset;
  /** Each encoder's structure (a bi-encoder has two of these). */
  encoder: EncoderConfig;
  /**
   * Task names (Maillard et al.). With `perTaskQueryEncoders`, each task gets its own question encoder over one
   * shared passage encoder (bi-encoder preset only).
   */
  tasks: string[];
  /** One question encoder per task over a shared passage encoder (bi-encoder only). */
  perTaskQueryEncoders: boolean;
}

/**
 * Defaults: a small BERT that trains on two CPU cores in minutes. Mean pooling and unit-length outputs, because
 * [CLS] pooling over freshly initialised layers gives every text nearly the same vector (mean pairwise cosine 0.9997
 * on the multi-domain passages) and un-normalised means rank by norm (docs/results/training.md, "What set the defaults").
 */
export const defaultEncoderConfig: EncoderConfig = {
  vocabSize: 30522,
  hiddenSize: 128,
  layers: 4,
  heads: 4,
  ffnSize: 512,
  maxPositions: 512,
  typeVocabSize: 2,
  embeddingSize: 128,
  dropout: 0.1,
  layerNormEps: 1e-12,
  pooling: 'mean',
  projectionDim: 0,
  normalize: true,
};

/** A saved {@link TaserConfig}, every field checked (model cards). */
const taserConfigSchema = z
  .object({
    every: positiveInt,
    experts: positiveInt,
    routing: z.enum(['det', 'seq', 'tok']),
    perLayerGate: z.boolean().optional(),
    entropyWeight: finite.optional(),
  })
  .strict();

/** A saved {@link EncoderConfig}, every field checked (model cards, CAME's and ROM's); unknown keys are refused. */
export const encoderConfigSchema = z
  .object({
    vocabSize: positiveInt,
    hiddenSize: positiveInt,
    layers: count,
    heads: positiveInt,
    ffnSize: positiveInt,
    maxPositions: positiveInt,
    typeVocabSize: positiveInt,
    embeddingSize: positiveInt,
    dropout: z.number().min(0).max(1),
    layerNormEps: z.number().positive().finite(),
    pooling: z.enum(POOLINGS as [Pooling, ...Pooling[]]),
    projectionDim: count,
    projectionHidden: count.optional(),
    normalize: z.boolean().optional(),
    tokenWeights: z.boolean().optional(),
    center: z.boolean().optional(),
    attentionWindow: count.optional(),
    taser: taserConfigSchema.optional(),
  })
  .strict();

/** A saved {@link RetrieverConfig} (model.json's `config`): task names distinct and non-empty. */
export const retrieverConfigSchema = z
  .object({
    preset: z.enum(['bi-encoder', 'siamese', 'taser']),
    encoder: encoderConfigSchema,
    tasks: z.array(z.string().min(1)).refine((t) => new Set(t).size === t.length, 'a task is listed twice'),
    perTaskQueryEncoders: z.boolean(),
  })
  .strict();

const encoderKeys = optionKeys<EncoderConfig>()([
  'vocabSize',
  'hiddenSize',
  'layers',
  'heads',
  'ffnSize',
  'maxPositions',
  'typeVocabSize',
  'embeddingSize',
  'dropout',
  'layerNormEps',
  'pooling',
  'projectionDim',
  'projectionHidden',
  'normalize',
  'tokenWeights',
  'center',
  'attentionWindow',
  'taser',
]);
const taserKeys = optionKeys<TaserConfig>()(['every', 'experts', 'routing', 'perLayerGate', 'entropyWeight']);

/**
 * ERR_ARG for an encoder override (`Retriever.create`'s, CAME's or ROM's `encoder`) or TASER structure with a key
 * the configuration does not have: `{ hiddensize: 128 }` must not build a model of the default width.
 */
export function checkEncoderOverrides(encoder: unknown, taser: unknown, what: string): void {
  checkOptions(encoder, encoderKeys, `${what} encoder`);
  if (encoder !== undefined) checkOptions((encoder as { taser?: unknown }).taser, taserKeys, `${what} encoder.taser`);
  checkOptions(taser, taserKeys, `${what} taser`);
}

/**
 * Layer l is a TASER specialized block.
 *
 * @example
 * const { encoder } = retrieverConfig({ preset: 'taser', encoder: { layers: 4 } });
 * isSpecialized(encoder, 1);   // true: every second block, 1 and 3
 * isSpecialized(encoder, 0);   // false
 */
export function isSpecialized(config: EncoderConfig, layer: number): boolean {
  mustBeObject(config, 'encoder config');
  return config.taser !== undefined && (layer + 1) % config.taser.every === 0;
}

/**
 * The parameter names of one encoder, in Hugging Face BertModel naming so that a BERT checkpoint loads by name.
 * Additions: `embeddings.projection.*` (factorized embeddings), `projection.*` (output projection, after
 * `projection.hidden.*` for an MLP head), and for a
 * specialized block `encoder.layer.L.experts.E.{intermediate.dense,output.dense,output.LayerNorm}.*` in place of the
 * block's FFN, plus the router `encoder.layer.L.gate.*` (per-layer gate) or `encoder.gate.*` (shared gate).
 *
 * @example
 * parameterNames(retrieverConfig({ preset: 'siamese', encoder: { layers: 0, hiddenSize: 100 } }).encoder);
 * // ['embeddings.word_embeddings.weight', 'embeddings.position_embeddings.weight',
 * //  'embeddings.token_type_embeddings.weight', 'embeddings.LayerNorm.weight', 'embeddings.LayerNorm.bias']
 */
export function parameterNames(config: EncoderConfig): string[] {
  mustBeObject(config, 'encoder config');
  const names: string[] = [];
  const linear = (p: string) => names.push(`${p}.weight`, `${p}.bias`);
  names.push('embeddings.word_embeddings.weight');
  if (config.embeddingSize !== config.hiddenSize) linear('embeddings.projection');
  names.push('embeddings.position_embeddings.weight', 'embeddings.token_type_embeddings.weight');
  linear('embeddings.LayerNorm');
  if (config.tokenWeights) names.push('embeddings.token_weights.weight');
  const routed = config.taser !== undefined && config.taser.routing !== 'det';
  if (routed && !config.taser!.perLayerGate) linear('encoder.gate');
  for (let l = 0; l < config.layers; l++) {
    const p = `encoder.layer.${l}`;
    for (const m of ['query', 'key', 'value']) linear(`${p}.attention.self.${m}`);
    linear(`${p}.attention.output.dense`);
    linear(`${p}.attention.output.LayerNorm`);
    const ffn = (q: string) => {
      linear(`${q}.intermediate.dense`);
      linear(`${q}.output.dense`);
      linear(`${q}.output.LayerNorm`);
    };
    if (isSpecialized(config, l)) {
      for (let e = 0; e < config.taser!.experts; e++) ffn(`${p}.experts.${e}`);
      if (routed && config.taser!.perLayerGate) linear(`${p}.gate`);
    } else {
      ffn(p);
    }
  }
  if (config.center) names.push('pooler.center');
  if ((config.projectionHidden ?? 0) > 0) linear('projection.hidden');
  if (config.projectionDim > 0) linear('projection');
  return names;
}

/**
 * The encoders of a retriever, as the native Retriever names them (its parameters are `<encoder>.<BERT name>`): a
 * bi-encoder's `query` (or `query.<task>` per task) and `passage`, a Siamese or TASER model's one `encoder`.
 *
 * @example
 * retrieverEncoderNames(retrieverConfig({ preset: 'bi-encoder', tasks: ['a', 'b'], perTaskQueryEncoders: true }));
 * // ['query.a', 'query.b', 'passage']
 */
export function retrieverEncoderNames(config: RetrieverConfig): string[] {
  mustBeObject(config, 'retriever config');
  if (config.preset !== 'bi-encoder') return ['encoder'];
  return [...(config.perTaskQueryEncoders ? config.tasks.map((t) => `query.${t}`) : ['query']), 'passage'];
}
