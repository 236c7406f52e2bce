// `quorum train`: a dense retriever trained on any BEIR-layout dataset's train split (dev split for checkpoint
// selection when present), initialised from GloVe, a Hugging Face checkpoint or a Quorum model directory, written as
// a model directory (Retriever.load reads it).
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { POOLINGS, type EncoderConfig, type Pooling, type RetrieverPreset } from '../models/config.js';
import { isHfModelDir, loadPretrainedWeights, readPretrained, type PretrainedBert } from '../models/hf.js';
import { prepareTraining } from '../train/prepare.js';
import { fitPoolingToCorpus, initFromGlove } from '../train/init.js';
import { Retriever } from '../models/retriever.js';
import { modelDir, weightStorageOption } from '../models/model-dir.js';
import { trainRetriever } from '../train/trainer.js';
import { QuorumError } from '../errors.js';
import { check } from '../validate.js';
import { tuneModelHybrid } from './eval.js';
import { SHARED_TRAINING_DEFAULTS } from './args.js';
import { asRanks } from './launch.js';
import type { ProcessGroup } from '../models/process-group.js';

export const PRESETS: readonly RetrieverPreset[] = ['taser', 'bi-encoder', 'siamese'];

/** `quorum train`'s defaults (its options in lib/cli/main.ts; `quorum demo`'s experts start from them). */
export const TRAIN_DEFAULTS = {
  ...SHARED_TRAINING_DEFAULTS,
  batch: 32,
  hidden: 100,
  layers: 2,
  epochs: 8,
  hardNegatives: 1,
  maxQueryLength: 32,
  maxPassageLength: 192,
  glove: true,
  wordVocab: true,
  fitPooling: true,
} as const;
export { POOLINGS } from '../models/config.js';

export interface TrainCommandOptions {
  data: string;
  preset: string;
  out: string;
  tasks?: string[];
  /** mean, max or cls (default: mean; with `init`, the checkpoint's sentence-transformers pooling, else cls). */
  pooling?: string;
  /**
   * A Hugging Face BERT-family directory to start from (its shape, tokenizer and weights; no GloVe), or a Quorum model
   * directory (model.json: its configuration, tokenizer, fitted pooling and weights).
   */
  init?: string;
  layers: number;
  hidden: number;
  epochs: number;
  batch: number;
  lr: number;
  temperature?: number;
  hardNegatives: number;
  maxQueryLength: number;
  maxPassageLength: number;
  /** Self-attention within windows of this many tokens (0: over the whole sequence). */
  attentionWindow?: number;
  seed: number;
  /** GloVe token embeddings (default) or a random start. */
  glove: boolean;
  /** Add the corpus's whole words that GloVe has to the WordPiece vocabulary (default with GloVe). */
  wordVocab: boolean;
  /** Fold compatibility characters (NFKC: PDF ligatures) before BERT's normalization (default true). */
  nfkc?: boolean;
  /** IDF-initialised token weights and corpus centring for mean pooling (default on with mean pooling). */
  fitPooling: boolean;
  dtype: string;
  /** Width of a linear head after pooling (0: none); square, it starts as the identity. */
  projection?: number;
  resume?: boolean;
  budget?: number;
  /** Parameters not trained: names containing any of these strings (e.g. `word_embeddings`). */
  freeze?: string[];
  /** Prepend each task's marker to its questions (default: when training on several tasks). */
  taskMarkers?: boolean;
  /** Which lengths the command line gave: the others come from an --init Quorum model's card (default: both given). */
  givenLengths?: { query: boolean; passage: boolean };
  /** Train as this many local ranks of one data-parallel group (docs/guides/distributed.md). */
  nproc?: number;
  /** Tune the hybrid's alpha on dev and store it in the model's card (default true). */
  hybrid?: boolean;
}

/** Validates every option before any work, so a typo costs no minutes of training. */
function checkOptions(o: TrainCommandOptions): void {
  check(PRESETS.includes(o.preset as RetrieverPreset), 'ERR_ARG', `unknown preset '${o.preset}': use ${PRESETS.join(', ')}`);
  if (o.pooling !== undefined)
    check(POOLINGS.includes(o.pooling as Pooling), 'ERR_ARG', `unknown pooling '${o.pooling}': use ${POOLINGS.join(', ')}`);
  for (const [name, v, min] of [
    ['--layers', o.layers, 0],
    ['--hidden', o.hidden, 1],
    ['--epochs', o.epochs, 1],
    ['--batch', o.batch, 1],
    ['--hard-negatives', o.hardNegatives, 0],
    ['--max-query-length', o.maxQueryLength, 3],
    ['--max-passage-length', o.maxPassageLength, 3],
    ['--attention-window', o.attentionWindow ?? 0, 0],
    ['--projection', o.projection ?? 0, 0],
  ] as const)
    check(Number.isInteger(v) && v >= min, 'ERR_RANGE', `${name} must be an integer >= ${min}, got ${v}`);
  check(o.lr > 0 && Number.isFinite(o.lr), 'ERR_RANGE', `--lr must be > 0, got ${o.lr}`);
  if (o.temperature !== undefined)
    check(o.temperature > 0 && Number.isFinite(o.temperature), 'ERR_RANGE', `--temperature must be > 0, got ${o.temperature}`);
  if (o.init !== undefined) return;
  check(o.layers === 0 || o.hidden % 4 === 0, 'ERR_ARG', `--hidden ${o.hidden} must be a multiple of the 4 attention heads`);
  check(o.layers > 0 || o.pooling !== 'cls', 'ERR_ARG', 'cls pooling needs --layers >= 1 (use mean or max for an embeddings-only model)');
  if (o.freeze !== undefined)
    check(o.freeze.length > 0, 'ERR_ARG', '--freeze needs at least one parameter name part, e.g. word_embeddings');
}

/**
 * The encoder the options describe, over a vocabulary of `vocabSize` tokens; with a checkpoint, the checkpoint's
 * encoder (its pooling unless --pooling says otherwise) with the options that do not change its weights' shapes.
 */
function encoderConfig(o: TrainCommandOptions, vocabSize: number, bert?: PretrainedBert): Partial<EncoderConfig> {
  if (bert) {
    const longest = Math.max(o.maxQueryLength, o.maxPassageLength);
    check(
      longest <= bert.encoder.maxPositions,
      'ERR_RANGE',
      `--max-passage-length / --max-query-length ${longest} exceed the checkpoint's ${bert.encoder.maxPositions} positions`,
    );
    return { ...bert.encoder, attentionWindow: o.attentionWindow ?? 0, projectionDim: o.projection ?? 0 };
  }
  const pooling = (o.pooling ?? 'mean') as Pooling;
  const fit = o.fitPooling && pooling === 'mean';
  return {
    vocabSize,
    hiddenSize: o.hidden,
    embeddingSize: o.glove ? 100 : o.hidden,
    layers: o.layers,
    heads: 4,
    ffnSize: 4 * o.hidden,
    maxPositions: Math.max(o.maxQueryLength, o.maxPassageLength),
    attentionWindow: o.attentionWindow ?? 0,
    projectionDim: o.projection ?? 0,
    pooling,
    tokenWeights: fit,
    center: fit,
  };
}

/**
 * The Quorum model directory --init names (model.json there, or 'default'), loaded, or undefined for a Hugging Face
 * checkpoint. ERR_ARG when its preset is not --preset or the options would change its shape.
 */
async function quorumInit(o: TrainCommandOptions): Promise<Retriever | undefined> {
  const dir = modelDir(o.init!);
  if (isHfModelDir(dir)) return undefined;
  if (!existsSync(join(dir, 'model.json')))
    throw new QuorumError(
      'ERR_IO',
      `--init ${o.init}: neither a Quorum model directory (model.json) nor a Hugging Face checkpoint (config.json)`,
    );
  const model = await Retriever.load(dir);
  check(
    model.config.preset === o.preset,
    'ERR_ARG',
    `--init ${o.init} is a ${model.config.preset} model: give --preset ${model.config.preset}`,
  );
  check(
    o.pooling === undefined || o.pooling === model.config.encoder.pooling,
    'ERR_ARG',
    `--init ${o.init} pools by ${model.config.encoder.pooling}: --pooling cannot change a trained model`,
  );
  check(
    !o.projection && !o.attentionWindow,
    'ERR_ARG',
    `--projection and --attention-window cannot change a trained model (--init ${o.init})`,
  );
  return model;
}

/**
 * `quorum train`: resolves to the trained model (in the process that wrote it), or undefined in a launcher of
 * `--nproc` ranks and in ranks other than 0.
 */
export async function trainCommand(o: TrainCommandOptions, logLine: (line: string) => void = console.log): Promise<Retriever | undefined> {
  checkOptions(o);
  // As ranks of a group (--nproc, or on each machine with WORLD_SIZE and RANK set): rank 0 logs and writes.
  return asRanks(o.nproc, logLine, (group, log) => train(o, log, group));
}

async function train(
  asked: TrainCommandOptions,
  log: (line: string) => void,
  group: ProcessGroup | undefined,
): Promise<Retriever | undefined> {
  // --init: a Quorum model directory is trained further as it is (its own shape, tokenizer, fitted pooling and, unless
  // the command line gives them, lengths); any other directory is read as a Hugging Face checkpoint.
  const from = asked.init !== undefined ? await quorumInit(asked) : undefined;
  const text = from?.loaded?.card.text;
  const o = {
    ...asked,
    ...(text && asked.givenLengths?.query === false ? { maxQueryLength: text.maxQueryLength } : {}),
    ...(text && asked.givenLengths?.passage === false ? { maxPassageLength: text.maxPassageLength } : {}),
  };
  // --freeze names against the parameters of the model the options describe (names do not depend on the
  // vocabulary), before the data is read: a typo costs no preparation.
  const bert =
    o.init !== undefined && !from ? readPretrained(o.init, o.pooling !== undefined ? { pooling: o.pooling as Pooling } : {}) : undefined;
  if (o.freeze)
    (from
      ? Retriever.fromConfig(from.config)
      : Retriever.create({ preset: o.preset as RetrieverPreset, encoder: { ...encoderConfig(o, 8, bert), vocabSize: 8 } })
    ).setOptimizer({ frozen: o.freeze });
  const dtype = weightStorageOption(o.dtype);
  const given = from?.loaded?.tokenizer ?? bert?.tokenizer;
  const {
    passages,
    train: trainEx,
    dev: devEx,
    tasks,
    tokenizer,
    glove,
  } = await prepareTraining(o.data, {
    ...(o.tasks ? { tasks: o.tasks } : {}),
    ...(given ? { tokenizer: given, glove: false, wordVocab: false } : { glove: o.glove, wordVocab: o.wordVocab, nfkc: o.nfkc }),
    log,
  });

  const encoder = from ? from.config.encoder : encoderConfig(o, tokenizer.size, bert);
  // IDF token weights and a centre (mean pooling with --fit-pooling) are what fitPoolingToCorpus fits; a Quorum
  // model keeps the ones it was trained with.
  const fit = !from && !!encoder.tokenWeights;
  Retriever.seed(o.seed);
  const model = from ?? Retriever.create({ preset: o.preset as RetrieverPreset, encoder, tasks });
  log(
    `${o.preset}: ${model.parameterCount.toLocaleString()} parameters, ${encoder.layers} layers, ${encoder.pooling} pooling${group ? `; ${group.size} ranks, ${o.batch} questions a batch across them` : ''}`,
  );
  if (from) log(`initialized from ${o.init} (a Quorum model directory: its configuration, tokenizer and weights)`);
  if (bert) {
    const { missing } = loadPretrainedWeights(model, bert, { strict: false });
    log(
      `initialized from ${o.init}${missing.length ? ` (${missing.length} parameters not in the checkpoint keep their initialization: ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', ...' : ''})` : ''}`,
    );
  }
  let mute: number[] = [];
  if (glove) {
    const init = await initFromGlove(model, tokenizer.vocabulary, { glove, seed: o.seed });
    mute = init.uncovered;
    log(`GloVe covers ${(init.coverage * 100).toFixed(1)}% of the vocabulary`);
  }
  if (fit) await fitPoolingToCorpus(model, tokenizer, passages, { maxPassageLength: o.maxPassageLength, mute });

  const checkpoints = join(o.out, 'checkpoints');
  const options = {
    epochs: o.epochs,
    batchSize: o.batch,
    lr: o.lr,
    hardNegatives: o.hardNegatives,
    maxQueryLength: o.maxQueryLength,
    maxPassageLength: o.maxPassageLength,
    seed: o.seed,
    layerDecay: o.preset === 'taser' ? 0.8 : 1,
    ...(o.freeze?.length ? { frozen: o.freeze } : {}),
    // commander sets taskMarkers true unless --no-task-markers: only false changes the default.
    taskMarkers: o.taskMarkers !== false && tasks.length > 1,
    ...(o.temperature !== undefined ? { temperature: o.temperature } : {}),
    ...(o.budget !== undefined ? { timeBudgetSeconds: o.budget } : {}),
  };
  const result = await trainRetriever(
    model,
    tokenizer,
    { passages, train: trainEx, dev: devEx.length ? devEx : undefined },
    { ...options, checkpointDir: checkpoints, resume: o.resume, progress: true, log, ...(group ? { group } : {}) },
  );
  if (group && group.rank !== 0) return undefined;
  if (result.best) await model.load(join(checkpoints, 'best.pt'));
  model.saveModel(o.out, {
    tokenizer,
    maxQueryLength: o.maxQueryLength,
    maxPassageLength: o.maxPassageLength,
    taskMarkers: options.taskMarkers,
    dtype,
    training: {
      data: o.data,
      ...(o.init ? { init: o.init } : {}),
      options,
      epochs: result.epochs,
      best: result.best,
      seconds: result.seconds,
    },
  });
  log(
    `wrote ${o.out} (${result.best ? `best epoch ${result.best.epoch + 1} by dev MRR` : 'last epoch: no dev split'}; ` +
      `${Math.round(result.seconds)} s, ${Math.round(result.tokensPerSecond)} tokens/s)`,
  );
  // The hybrid's alpha for this model, tuned on the same dev split and kept in its card: servers and `quorum eval`
  // on data without a dev split use it instead of a fixed 1.
  if (devEx.length && o.hybrid !== false) {
    const h = await tuneModelHybrid({ model: o.out, data: o.data });
    log(
      `hybrid alpha ${h.alpha ?? 'BM25 alone'}${
        h.byTask
          ? ` (${Object.entries(h.byTask)
              .map(([t, a]) => `${t} ${a ?? 'BM25 alone'}`)
              .join(', ')})`
          : ''
      } stored in ${join(o.out, 'model.json')}`,
    );
  }
  return model;
}
