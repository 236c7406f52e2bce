// The contrastive training loop (DPR, Maillard et al. multi-task, TASER) in TypeScript over native steps: the
// heavy work (forward, backward, AdamW) runs in quorum_torch off the main thread; this file decides what goes in each
// batch, the learning rate of each step, validation, checkpoints and resumption.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { type OutputKind, jsonCardIn, makeDirs, replaceDirectory, readJsonFile, writeFileAtomic } from '../data/files.js';
import { QuorumError } from '../errors.js';
import { type StepStats, type TrainBatchArg } from '../bindings/torch_addon.js';
import type { OptimizerOptions } from '../models/parameter-table.js';
import { optionalGroup, rankPart, type ProcessGroup } from '../models/process-group.js';
import type { WordPieceTokenizer } from '../text/tokenizer.js';
import { progress } from '../progress.js';
import type { PassageText, TrainingExample } from './examples.js';
import type { Retriever } from '../models/retriever.js';
import { seededRandom } from '../random.js';
import { homogeneousBatches, linearSchedule, type TaskBatch } from './schedule.js';
import { TokenTable } from '../models/token-table.js';
import { type ValidationInput, type ValidationResult, validate, validationPool } from './validate.js';
import { checkOptions, checkTrainingExamples, mustBeArray, mustBeObject, optionKeys } from '../validate.js';

/** Options of {@link trainRetriever}: schedule, batches, negatives, loss, validation and checkpoints. */
export interface TrainOptions {
  /** Passes over the training data (default 10). */
  epochs?: number;
  /** Questions per batch (default 16, DPR's per-GPU batch). */
  batchSize?: number;
  /** Hard negatives per question (default 1, DPR's); drawn at random from each question's list. */
  hardNegatives?: number;
  /** Peak learning rate (default 2e-5, DPR's; models trained from scratch want ~1e-4 to 5e-4). */
  lr?: number;
  /** Warmup steps (default: 10% of all steps). */
  warmupSteps?: number;
  /** Gradient-norm clip (default 2.0; 0 = off). */
  clip?: number;
  /** Batches per optimizer step (default 1). */
  accumulation?: number;
  /** AdamW's decoupled weight decay (default 0). */
  weightDecay?: number;
  /** TASER's layer-wise learning-rate decay (default 1 = off; TASER uses 0.8). */
  layerDecay?: number;
  /** Parameters not trained: names containing any of these strings (see OptimizerOptions.frozen). */
  frozen?: string[];
  /** Seed of the batch order, the hard-negative draws and the dev pool (default 12345). */
  seed?: number;
  /** Per-task sampling rates (Maillard et al.'s downsampling; default 1). */
  samplingRates?: Record<string, number>;
  /** Per-task loss multipliers (default 1). */
  lossScales?: Record<string, number>;
  /** Prepend task marker `[unused<i+1>]` to the questions of task i (default: when there are several tasks). */
  taskMarkers?: boolean;
  /** Tokens per question, framing and marker included (default 32). */
  maxQueryLength?: number;
  /** Tokens per passage, title and framing included (default 128). */
  maxPassageLength?: number;
  /**
   * Batches cut so that examples of one `group` stand together (default false): their gold passages become each
   * other's in-batch negatives, e.g. chunks of one document (TAS-style). Examples without a group form their own.
   */
  groupBatches?: boolean;
  /** Checkpoint selection metric on the dev examples (default 'mrr', TASER's; 'average-rank' is DPR's). */
  validation?: 'mrr' | 'average-rank';
  /** Passages in the validation pool (default 1000). */
  validationPool?: number;
  /** Writes last.pt, best.pt and trainer.json here after every epoch. */
  checkpointDir?: string;
  /** Continue from checkpointDir's last completed epoch. */
  resume?: boolean;
  /** Stop after the first epoch that ends past this many seconds of training. */
  timeBudgetSeconds?: number;
  /** A progress bar on stderr. */
  progress?: boolean;
  /** One line per epoch. */
  log?: (line: string) => void;
  /** Divides the scores before the softmax (default: 0.05 for a model with normalized outputs, else 1 as DPR). */
  temperature?: number;
  /** Ranks the dev pool (default: {@link validate}, a dense Retriever's dot products). */
  validator?: (input: ValidationInput) => Promise<ValidationResult>;
  /** Called with each batch's statistics (e.g. CAME's per-expert losses). */
  onBatch?: (stats: StepStats) => void;
  /** Awaited after each epoch's validation and checkpoint, with the model in its end-of-epoch state. */
  onEpoch?: (stats: EpochStats) => void | Promise<void>;
  /**
   * Data-parallel training (docs/guides/distributed.md): this process is one rank of `group`. Every rank runs the
   * same call with the same data and options; each batch's questions are split across the ranks, which score the
   * whole batch's passages and sum their gradients. Rank 0 validates, writes the checkpoints and logs; every rank
   * returns rank 0's `best` (loading `best.pt` on every rank needs `checkpointDir` on a file system they all read).
   */
  group?: ProcessGroup;
}

/** One epoch's training figures, as {@link TrainOptions.onEpoch} and {@link TrainResult} give them. */
export interface EpochStats {
  /** 0-based epoch number (the log prints it 1-based). */
  epoch: number;
  /** Mean contrastive loss over the epoch's questions. */
  loss: number;
  /** Fraction of questions whose positive ranked first in their batch. */
  accuracy: number;
  /** Optimizer steps taken. */
  steps: number;
  /** Real (non-padding) tokens read. */
  tokens: number;
  /** Wall time of the epoch's training steps (validation and checkpoints not included). */
  seconds: number;
  /** Training throughput: tokens / seconds. */
  tokensPerSecond: number;
  /** The dev pool's figures after the epoch, when there are dev examples. */
  validation?: ValidationResult;
}

/** What {@link trainRetriever} returns: every epoch's figures, the kept epoch and the throughput. */
export interface TrainResult {
  /** Every epoch's figures, resumed epochs included. */
  epochs: EpochStats[];
  /**
   * The kept epoch (0-based) by the validation metric, when there was a dev set; `value` is -MRR or the average rank
   * (lower is better either way).
   */
  best?: { epoch: number; value: number };
  /** Real tokens read, summed over the epochs. */
  tokens: number;
  /** Training time summed over the epochs (validation and checkpoints not included). */
  seconds: number;
  /** tokens / seconds. */
  tokensPerSecond: number;
}

/** What the loop needs of a model: a native training step, AdamW, checkpoints (Retriever, CAME). */
export interface TrainableModel {
  /** Its tasks (for task markers) and whether its outputs are unit vectors (for the default temperature). */
  readonly config: { readonly tasks?: readonly string[]; readonly encoder: { readonly normalize?: boolean } };
  /** Sets AdamW's settings (the loop passes weight decay, layer decay and frozen parameters). */
  setOptimizer(options: OptimizerOptions): void;
  /** Forward and backward of one batch (with a group: this rank's part of it); gradients add up until `step`. */
  accumulate(batch: TrainBatchArg, options?: { group?: ProcessGroup }): Promise<StepStats>;
  /** One AdamW step at `lr` with gradient-norm clipping (with a group: the ranks' gradients summed first). */
  step(lr: number, clip: number, options?: { group?: ProcessGroup }): Promise<number>;
  /** Sets every rank's parameters to rank `root`'s (data-parallel training needs it). */
  broadcastParameters?(group: ProcessGroup, root?: number): Promise<void>;
  /** Whether `accumulate` takes a group (a model whose loss does not gather across ranks yet says false). */
  readonly dataParallel?: boolean;
  /** Writes a checkpoint (weights and optimizer state). */
  save(path: string): Promise<void>;
  /** Reads a checkpoint written by `save`. */
  load(path: string): Promise<void>;
}

/** What {@link trainRetriever} trains on: the corpus and the labelled questions, as corpus rows. */
export interface TrainingData {
  /** Every passage (corpus row i is passages[i]). */
  passages: readonly PassageText[];
  /** The training questions. */
  train: readonly TrainingExample[];
  /** Dev questions: when given, each epoch is validated and the best checkpoint kept. */
  dev?: readonly TrainingExample[];
}

interface TrainerState {
  epoch: number;
  step: number;
  best: { epoch: number; value: number } | null;
  history: EpochStats[];
}

/** Tokenized questions per task (with that task's marker). */
async function questionTables(
  tokenizer: WordPieceTokenizer,
  examples: readonly TrainingExample[],
  tasks: readonly string[],
  markers: boolean,
  maxLength: number,
): Promise<{ tables: Map<string, TokenTable>; rows: number[] }> {
  const tables = new Map<string, TokenTable>();
  const rows = new Array<number>(examples.length).fill(-1);
  for (const [t, task] of tasks.entries()) {
    const idx = examples.map((e, i) => (e.task === task ? i : -1)).filter((i) => i >= 0);
    if (!idx.length) continue;
    const marker = markers ? tokenizer.markerId(t + 1) : undefined;
    tables.set(
      task,
      await TokenTable.build(
        tokenizer,
        idx.map((i) => examples[i]!.query),
        { maxLength, marker },
      ),
    );
    idx.forEach((i, r) => (rows[i] = r));
  }
  return { tables, rows };
}

/**
 * One batch: each question's positive, then its hard negatives; every other passage in the batch is an in-batch
 * negative, except passages that are gold for that question too (left out of its softmax, not counted as negatives).
 */
export function composeBatch(
  examples: readonly TrainingExample[],
  members: readonly number[],
  hardNegatives: number,
  random: () => number,
): { passageRows: number[]; positives: Int32Array; ignore: Int32Array } {
  mustBeArray(examples, 'examples');
  mustBeArray(members, 'members');
  const passageRows: number[] = [];
  const positives = new Int32Array(members.length);
  members.forEach((ei, i) => {
    const e = examples[ei]!;
    positives[i] = passageRows.length;
    passageRows.push(e.positives[Math.floor(random() * e.positives.length)]!);
    const pool = e.hardNegatives.slice();
    for (let h = 0; h < hardNegatives && pool.length; h++) passageRows.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
  });
  const ignore: number[] = [];
  members.forEach((ei, i) => {
    const gold = new Set(examples[ei]!.positives);
    passageRows.forEach((r, j) => {
      if (j !== positives[i] && gold.has(r)) ignore.push(i, j);
    });
  });
  return { passageRows, positives, ignore: Int32Array.from(ignore) };
}

const trainKeys = optionKeys<TrainOptions>()([
  'epochs',
  'batchSize',
  'hardNegatives',
  'lr',
  'warmupSteps',
  'clip',
  'accumulation',
  'weightDecay',
  'layerDecay',
  'frozen',
  'seed',
  'samplingRates',
  'lossScales',
  'taskMarkers',
  'maxQueryLength',
  'maxPassageLength',
  'groupBatches',
  'validation',
  'validationPool',
  'checkpointDir',
  'resume',
  'timeBudgetSeconds',
  'progress',
  'log',
  'temperature',
  'validator',
  'onBatch',
  'onEpoch',
  'group',
]);

/** A checkpoint directory: trainer.json (the epoch and its history) says so, and a checkpoint replaces the three files whole. */
const checkpointsKind: OutputKind = {
  card: 'trainer.json',
  owns: (dir) => {
    const card = jsonCardIn(dir, 'trainer.json');
    return typeof card?.epoch === 'number' && Array.isArray(card.history);
  },
};

/**
 * Trains a retriever contrastively: in-batch and hard negatives, homogeneous per-task batches with sampling rates
 * and loss scales, task markers, AdamW with linear warmup and decay, gradient clipping and accumulation,
 * validation with best-checkpoint selection, checkpoint and resume.
 *
 * @example
 * const model = Retriever.create({ preset: 'taser', encoder: { layers: 4 } });
 * const result = await trainRetriever(model, tokenizer, { passages, train, dev }, { epochs: 5, lr: 3e-4, progress: true });
 * console.log(result.best, result.tokensPerSecond);
 */
export async function trainRetriever(
  model: TrainableModel,
  tokenizer: WordPieceTokenizer,
  data: TrainingData,
  options: TrainOptions = {},
): Promise<TrainResult> {
  checkOptions(options, trainKeys, 'training options');
  const o = {
    epochs: 10,
    batchSize: 16,
    hardNegatives: 1,
    lr: 2e-5,
    clip: 2.0,
    accumulation: 1,
    seed: 12345,
    maxQueryLength: 32,
    maxPassageLength: 128,
    validation: 'mrr' as const,
    validationPool: 1000,
    ...options,
  };
  if (!data.train.length) throw new QuorumError('ERR_ARG', 'no training examples');
  checkTrainingExamples(data.train, data.passages.length, 'train');
  if (data.dev) checkTrainingExamples(data.dev, data.passages.length, 'dev');
  for (const [k, v] of Object.entries({
    epochs: o.epochs,
    batchSize: o.batchSize,
    accumulation: o.accumulation,
    validationPool: o.validationPool,
  }))
    if (!Number.isInteger(v) || v < 1) throw new QuorumError('ERR_RANGE', `${k} must be a positive integer, got ${v}`);
  const tasks = model.config.tasks?.length ? [...model.config.tasks] : [...new Set(data.train.map((e) => e.task))].sort();
  const taskIndex = new Map(tasks.map((t, i) => [t, i]));
  for (const e of [...data.train, ...(data.dev ?? [])])
    if (!taskIndex.has(e.task))
      throw new QuorumError('ERR_ARG', `example task '${e.task}' is not one of the model's tasks (${tasks.join(', ')})`);
  const markers = o.taskMarkers ?? tasks.length > 1;
  const group = optionalGroup(o.group);
  if (group !== undefined) {
    if (!model.dataParallel || !model.broadcastParameters)
      throw new QuorumError(
        'ERR_UNSUPPORTED',
        'data-parallel training covers the Retriever presets (bi-encoder, Siamese, TASER); train this model in one process',
      );
  }
  const rank = group?.rank ?? 0;
  const size = group?.size ?? 1;
  const lead = rank === 0;
  const log = lead ? (o.log ?? (() => {})) : () => {};
  // Before any tokenizing: a bad setting (a frozen pattern that names nothing) fails at once.
  model.setOptimizer({ weightDecay: o.weightDecay ?? 0, layerDecay: o.layerDecay ?? 1, frozen: o.frozen });

  const passages = await TokenTable.passages(tokenizer, data.passages, o.maxPassageLength);
  const trainQ = await questionTables(tokenizer, data.train, tasks, markers, o.maxQueryLength);
  const dev = data.dev?.length ? data.dev : undefined;
  const devQ = dev ? await questionTables(tokenizer, dev, tasks, markers, o.maxQueryLength) : undefined;
  const pool = dev ? validationPool(dev, data.passages.length, o.validationPool, o.seed) : [];

  // Examples grouped by task (homogeneousBatches indexes within a task).
  const byTask = tasks.map((t) => data.train.map((e, i) => (e.task === t ? i : -1)).filter((i) => i >= 0));
  const rates = tasks.map((t) => o.samplingRates?.[t] ?? 1);
  if (o.groupBatches)
    data.train.forEach((e, i) => {
      if (e.group !== undefined && typeof e.group !== 'string')
        throw new QuorumError('ERR_ARG', `training example ${i}: group must be a string`);
    });
  // An example without a group is a group of its own (the NUL prefix keeps it apart from any real key).
  const groups = o.groupBatches ? byTask.map((x) => x.map((i) => data.train[i]!.group ?? `\u0000${i}`)) : undefined;
  // With several ranks a batch too small to give each rank a question is left out (every rank plans alike).
  const plan = (epoch: number) =>
    homogeneousBatches(
      byTask.map((x) => x.length),
      o.batchSize,
      { rates, seed: o.seed, epoch, groups },
    ).filter((b) => b.examples.length >= size);
  const batchesPerEpoch = plan(0).length;
  if (batchesPerEpoch === 0)
    throw new QuorumError('ERR_ARG', `no batch holds a question for each of the ${size} ranks: use a larger batch size or fewer ranks`);
  const totalSteps = Math.ceil((o.epochs * batchesPerEpoch) / o.accumulation);
  const schedule = linearSchedule(o.warmupSteps ?? Math.round(totalSteps * 0.1), totalSteps);

  let state: TrainerState = { epoch: -1, step: 0, best: null, history: [] };
  const dir = o.checkpointDir;
  if (dir) makeDirs(dir);
  if (dir && o.resume && existsSync(join(dir, 'trainer.json'))) {
    state = readJsonFile(join(dir, 'trainer.json')) as TrainerState;
    await model.load(join(dir, 'last.pt'));
    log(`resumed after epoch ${state.epoch + 1} (step ${state.step})`);
  }
  if (group) {
    // Every rank must resume from the same checkpoint (a directory they all read), then start from rank 0's weights.
    const at = await group.broadcast(Float32Array.of(state.epoch, state.step));
    if (at[0] !== state.epoch || at[1] !== state.step)
      throw new QuorumError(
        'ERR_STATE',
        `rank ${rank} resumed after epoch ${state.epoch + 1}, rank 0 after epoch ${at[0]! + 1}: every rank must read the same checkpoint directory`,
      );
    await model.broadcastParameters!(group);
  }

  const batchOf = (tb: TaskBatch, random: () => number): TrainBatchArg => {
    const task = tasks[tb.task]!;
    const members = rankPart(tb.examples, rank, size).map((i) => byTask[tb.task]![i]!);
    const c = composeBatch(data.train, members, o.hardNegatives, random);
    return {
      queries: trainQ.tables.get(task)!.batch(members.map((i) => trainQ.rows[i]!)),
      passages: passages.batch(c.passageRows),
      positives: c.positives,
      ignore: c.ignore,
      task: tb.task,
      lossScale: (o.lossScales?.[task] ?? 1) / o.accumulation,
      temperature: o.temperature ?? (model.config.encoder.normalize ? 0.05 : 1),
    };
  };

  let trainedSeconds = state.history.reduce((s, e) => s + e.seconds, 0);
  for (let epoch = state.epoch + 1; epoch < o.epochs; epoch++) {
    const batches = plan(epoch);
    const random = seededRandom(o.seed * 7919 + epoch);
    const bar = o.progress && lead ? progress(`epoch ${epoch + 1}/${o.epochs}`, batches.length) : undefined;
    const e0 = performance.now();
    let loss = 0;
    let correct = 0;
    let questions = 0;
    let tokens = 0;
    let steps = 0;
    for (let b = 0; b < batches.length; b++) {
      const s = await model.accumulate(batchOf(batches[b]!, random), group ? { group } : undefined);
      o.onBatch?.(s);
      loss += s.loss * s.questions;
      correct += s.correct;
      questions += s.questions;
      tokens += s.tokens;
      if ((b + 1) % o.accumulation === 0 || b + 1 === batches.length) {
        await model.step(o.lr * schedule(state.step), o.clip, group ? { group } : undefined);
        state.step++;
        steps++;
      }
      bar?.tick();
    }
    bar?.stop();
    const seconds = (performance.now() - e0) / 1000;
    // With a group: loss, correct and questions are already the global batches'; tokens are each rank's, summed.
    if (group) tokens = (await group.allReduce(Float32Array.of(tokens)))[0]!;
    const stats: EpochStats = {
      epoch,
      loss: loss / questions,
      accuracy: correct / questions,
      steps,
      tokens,
      seconds,
      tokensPerSecond: tokens / seconds,
    };
    trainedSeconds += seconds;
    let improved = false;
    if (dev && devQ && lead) {
      const input = { passages, queries: devQ.tables, rows: devQ.rows, examples: dev, taskIndex, pool };
      // Without a validator the model is a dense Retriever (the only TrainableModel that validate() scores).
      stats.validation = await (o.validator ? o.validator(input) : validate(model as Retriever, input));
      // Lower is better for both (TASER returns -MRR); an explicit best flag, not DPR's falsy 0.0 check.
      const value = o.validation === 'mrr' ? -stats.validation.mrr : stats.validation.averageRank;
      if (state.best === null || value < state.best.value) {
        state.best = { epoch, value };
        improved = true;
      }
    }
    state.history.push(stats);
    state.epoch = epoch;
    // One checkpoint is last.pt, trainer.json and (when improved) best.pt together: a run killed mid-save resumes
    // from the previous epoch's three, never from weights one epoch ahead of its record (issue 48).
    if (dir && lead)
      await replaceDirectory(
        dir,
        async (tmp) => {
          await model.save(join(tmp, 'last.pt'));
          if (improved) await model.save(join(tmp, 'best.pt'));
          writeFileAtomic(join(tmp, 'trainer.json'), Buffer.from(JSON.stringify(state, null, 1)));
        },
        { keepOthers: true, kind: checkpointsKind },
      );
    const v = stats.validation;
    log(
      `epoch ${epoch + 1}/${o.epochs}: loss ${stats.loss.toFixed(4)}, in-batch accuracy ${(stats.accuracy * 100).toFixed(1)}%, ` +
        `${Math.round(stats.tokensPerSecond)} tokens/s` +
        (v ? `, dev MRR ${v.mrr.toFixed(4)}, average rank ${v.averageRank.toFixed(1)} (pool ${v.pool})${improved ? ' *' : ''}` : ''),
    );
    await o.onEpoch?.(stats);
    let stop = o.timeBudgetSeconds !== undefined && trainedSeconds >= o.timeBudgetSeconds;
    // Rank 0's clock decides for all (the ranks' epochs end at slightly different times).
    if (group) stop = (await group.broadcast(Float32Array.of(stop ? 1 : 0)))[0] === 1;
    if (stop) {
      log(`time budget of ${o.timeBudgetSeconds} s reached after epoch ${epoch + 1}`);
      break;
    }
  }
  const tokens = state.history.reduce((s, e) => s + e.tokens, 0);
  const seconds = state.history.reduce((s, e) => s + e.seconds, 0);
  let best = state.best;
  if (group) {
    // Rank 0's pick, on every rank (as float32 on all of them, so that comparisons of it agree across ranks). Rank 0
    // has written its checkpoints before it gets here: the others may load best.pt once this returns.
    const b = await group.broadcast(Float32Array.of(best ? 1 : 0, best?.epoch ?? 0, best?.value ?? 0));
    best = b[0] === 1 ? { epoch: b[1]!, value: b[2]! } : null;
  }
  return { epochs: state.history, best: best ?? undefined, tokens, seconds, tokensPerSecond: tokens / Math.max(seconds, 1e-9) };
}

const mineKeys = optionKeys<NonNullable<Parameters<typeof mineHardNegatives>[4]>>()([
  'k',
  'maxQueryLength',
  'maxPassageLength',
  'taskMarkers',
]);

/**
 * Maillard et al.'s adversarial confounders: replaces each example's hard negatives with the top passages the
 * model itself retrieves (from an exact DenseIndex over the corpus) that are not gold.
 *
 * @example
 * const round2 = await mineHardNegatives(model, tokenizer, passages, train, { k: 30 });
 * await trainRetriever(model, tokenizer, { passages, train: round2, dev }, { epochs: 2 });
 */
export async function mineHardNegatives(
  model: Retriever,
  tokenizer: WordPieceTokenizer,
  passages: readonly PassageText[],
  examples: readonly TrainingExample[],
  options: { k?: number; maxQueryLength?: number; maxPassageLength?: number; taskMarkers?: boolean } = {},
): Promise<TrainingExample[]> {
  mustBeObject(model, 'model');
  mustBeObject(tokenizer, 'tokenizer');
  mustBeArray(passages, 'passages');
  mustBeArray(examples, 'examples');
  checkOptions(options, mineKeys, 'mineHardNegatives options');
  const { indexTable, encodeTable } = await import('../models/encode-corpus.js');
  const k = options.k ?? 30;
  const tasks = model.config.tasks.length ? [...model.config.tasks] : [...new Set(examples.map((e) => e.task))].sort();
  const table = await TokenTable.passages(tokenizer, passages, options.maxPassageLength ?? 128);
  const { index } = await indexTable(model, table);
  const q = await questionTables(tokenizer, examples, tasks, options.taskMarkers ?? tasks.length > 1, options.maxQueryLength ?? 32);
  const out = examples.map((e) => ({ ...e, hardNegatives: [] as number[] }));
  for (const [t, task] of tasks.entries()) {
    const table = q.tables.get(task);
    if (!table) continue;
    const idx = examples.map((e, i) => (e.task === task ? i : -1)).filter((i) => i >= 0);
    const emb = await encodeTable(model, table, { side: 'query', task: t, rows: idx.map((i) => q.rows[i]!) });
    const hits = await index.search(emb, k + 10);
    idx.forEach((ei, r) => {
      const gold = new Set(examples[ei]!.positives);
      out[ei]!.hardNegatives = hits
        .hits(r)
        .map((h) => Number(h.id))
        .filter((p) => !gold.has(p))
        .slice(0, k);
    });
  }
  return out;
}
