// ROM's training (docs/methods/rom.md#references; the paper's §3 and Algorithm 1) in three phases over one network:
//   1. self-supervised: ICT and / or PhraseICT batches (in-batch negatives), each through its own head
//   2. retrieval alone (DPR's NLL with BM25 hard negatives), the best epoch by dev average rank kept
//   3. joint: per epoch lambda_retrieval from the schedule and lambda_reader = 1 - lambda_retrieval; after each
//      epoch the dev average rank decides whether the corpus is re-encoded and the index rebuilt, and the reader's
//      negatives are replaced by the new retrieval when its dev recall is better (refresh.ts)
// Each task's loss is divided by the loss of a uniform guess on its batch (the paper normalises losses of different
// scales), so the lambdas alone set the balance. The pipeline schedule trains retrieval for the first half, keeps
// its best checkpoint as the retrieval side, and trains the reader alone on that retrieval for the second half.
// A model whose retrieval side is separate (a bi-encoder, or a pipeline's checkpoint) trains only its reader here.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { scoreTopK } from '../../dense.js';
import { QuorumError } from '../../errors.js';
import { optionalGroup, rankPart, type ProcessGroup } from '../../models/process-group.js';
import { type TokenBatchArg, type TrainBatchArg } from '../../bindings/torch_addon.js';
import { progress } from '../../progress.js';
import { seededRandom, shuffle } from '../../random.js';
import { encodeTable } from '../../models/encode-corpus.js';
import type { PassageText, TrainingExample } from '../../train/examples.js';
import { linearSchedule } from '../../train/schedule.js';
import { TokenTable } from '../../models/token-table.js';
import { composeBatch } from '../../train/trainer.js';
import { validate, validationPool, type ValidationInput } from '../../train/validate.js';
import { checkOptions, mustBeArray, mustBeObject, optionKeys } from '../../validate.js';
import type { RomModel } from './model.js';
import { RomNetwork, type ReaderBatchArg, type RomHead, type RomStepStats } from './network.js';
import { ReaderData } from './reader-data.js';
import { IndexRefresh, type RefreshEvent } from './refresh.js';
import { ROM_SCHEDULES, retrievalWeight, type RomSchedule } from './schedule.js';
import { TermIdf, ictExamples, phraseIctExamples, type SelfSupervisedExample } from '../../train/self-supervised.js';

/** Options of {@link trainRom}: the three phases, batches, the schedule and the index refresh. */
export interface RomTrainOptions {
  /** Phase 1: self-supervised pre-training (default none). */
  pretrain?: {
    tasks?: Array<'ict' | 'phrase_ict'>;
    epochs?: number;
    /** Examples per epoch and task (default: one per passage). */
    examplesPerEpoch?: number;
    /** Share of examples that keep the pseudo-query in the evidence (default 0.1). */
    keepRate?: number;
  };
  /** Phase 2: epochs of retrieval alone (default 2). */
  retrievalEpochs?: number;
  /** Phase 3: epochs of joint training (default 4; 0 = a retriever only). */
  jointEpochs?: number;
  /** Phase 3's schedule (default 'random', the paper's main runs). */
  schedule?: RomSchedule;
  /** iterative: the weight of the task off duty (default 0.01). */
  scheduleFloor?: number;
  /** Questions (or pseudo-queries) per contrastive batch (default 16). */
  batchSize?: number;
  /** BM25 hard negatives per question in retrieval batches (default 1). */
  hardNegatives?: number;
  /** Questions per reader batch (default 4). */
  readerQuestions?: number;
  /** Passages the reader reads per question in training: 1 positive + the rest negatives (default 10). */
  readerPassages?: number;
  /** Retrieved passages the reader's negatives are drawn from (default 30). */
  readerDepth?: number;
  /** Peak learning rate of every phase (default 1e-3: the encoder trains from GloVe, not from BERT). */
  lr?: number;
  /** Gradient-norm clip (default 2). */
  clip?: number;
  /** Divides retrieval scores before the softmax (default 0.05 for unit vectors, else 1). */
  temperature?: number;
  /** Divide each task's loss by a uniform guess's loss (default true). */
  normalizeLosses?: boolean;
  /** Algorithm 1's refresh on improvement (default true); false keeps the index the joint phase starts from. */
  refresh?: boolean;
  /** Passages in the dev average-rank pool (default 1000). */
  validationPool?: number;
  /** Seed of the batch order, negative draws, self-supervised examples, the random schedule and the dev pool (default 12345). */
  seed?: number;
  /** Receives a line per epoch and refresh. */
  log?: (line: string) => void;
  /** Progress bars on stderr. */
  progress?: boolean;
  /**
   * Data-parallel training (docs/guides/distributed.md): every rank calls trainRom with the same model, data and
   * options; every contrastive and reader batch is split across the ranks and scored whole, checkpoints stay in each
   * rank's own scratch directory (the ranks hold the same weights), rank 0's dev figures steer every rank, and rank 0
   * alone logs. `batchSize` and `readerQuestions` must be at least the group's size.
   */
  group?: ProcessGroup;
}

/** One epoch's figures of {@link trainRom}. */
export interface RomEpochRecord {
  /** Which phase the epoch belongs to. */
  phase: 'pretrain' | 'retrieval' | 'joint';
  /** 0-based epoch number within its phase. */
  epoch: number;
  /** Each task's loss weight in this epoch (the schedule's). */
  lambdas: Partial<Record<RomHead | 'reader', number>>;
  /** Mean loss per task over the epoch (unnormalized) and its chance level. */
  losses: Partial<Record<RomHead | 'reader', { loss: number; chance: number; accuracy: number }>>;
  /** The dev pool's average rank after the epoch, when there are dev questions. */
  averageRank?: number;
  /** Training time of the epoch. */
  seconds: number;
  /** Real tokens read. */
  tokens: number;
}

/** What {@link trainRom} returns (and the model keeps as `training`). */
export interface RomTrainRecord {
  /** The options the run used, defaults filled in. */
  options: Omit<RomTrainOptions, 'log'>;
  /** Every epoch of every phase, in order. */
  epochs: RomEpochRecord[];
  /** Every index refresh decision (Algorithm 1). */
  refreshes: RefreshEvent[];
  /** Training questions the reader could learn from (an answer string found in a gold passage). */
  readerExamples: number;
  /** Training time of all phases. */
  seconds: number;
}

/** What {@link trainRom} trains on: the corpus and labelled questions, as corpus rows. */
export interface RomTrainingData {
  /** The corpus (row i is passages[i]). */
  passages: readonly PassageText[];
  /** Questions with gold passages; those with `answers` also train the reader. */
  train: readonly TrainingExample[];
  /** Dev questions: their average rank drives the index refresh. */
  dev?: readonly TrainingExample[];
}

const trainKeys = optionKeys<RomTrainOptions>()([
  'pretrain',
  'retrievalEpochs',
  'jointEpochs',
  'schedule',
  'scheduleFloor',
  'batchSize',
  'hardNegatives',
  'readerQuestions',
  'readerPassages',
  'readerDepth',
  'lr',
  'clip',
  'temperature',
  'normalizeLosses',
  'refresh',
  'validationPool',
  'seed',
  'log',
  'progress',
  'group',
]);
const pretrainKeys = optionKeys<NonNullable<RomTrainOptions['pretrain']>>()(['tasks', 'epochs', 'examplesPerEpoch', 'keepRate']);

const positiveInt = (v: number, name: string, zero = false) => {
  if (!Number.isInteger(v) || v < (zero ? 0 : 1))
    throw new QuorumError('ERR_RANGE', `${name} must be an integer >= ${zero ? 0 : 1}, got ${v}`);
};

/**
 * Trains a ROM model in place and records what happened (also kept in `model.training`). The model's index is
 * dropped at the end: the encoder changed.
 *
 * @example
 * const rom = RomModel.create({ tokenizer });
 * const record = await trainRom(rom, { passages, train, dev }, { pretrain: { tasks: ['ict'] }, schedule: 'equal' });
 * console.log(record.refreshes.length, 'index refreshes');
 */
export async function trainRom(model: RomModel, data: RomTrainingData, options: RomTrainOptions = {}): Promise<RomTrainRecord> {
  mustBeObject(model, 'model');
  mustBeObject(data, 'training data');
  checkOptions(options, trainKeys, 'ROM training options');
  checkOptions(options.pretrain, pretrainKeys, 'ROM training options pretrain');
  mustBeArray(data.passages, 'passages');
  mustBeArray(data.train, 'train');
  if (data.dev !== undefined) mustBeArray(data.dev, 'dev');
  const o = {
    retrievalEpochs: 2,
    jointEpochs: 4,
    schedule: 'random' as RomSchedule,
    batchSize: 16,
    hardNegatives: 1,
    readerQuestions: 4,
    readerPassages: 10,
    readerDepth: 30,
    lr: 1e-3,
    clip: 2,
    normalizeLosses: true,
    refresh: true,
    validationPool: 1000,
    seed: 12345,
    ...options,
  };
  const pre = { tasks: ['ict' as const], epochs: 0, keepRate: 0.1, ...o.pretrain };
  if (!ROM_SCHEDULES.includes(o.schedule)) throw new QuorumError('ERR_ARG', `schedule must be one of ${ROM_SCHEDULES.join(', ')}`);
  positiveInt(o.retrievalEpochs, 'retrievalEpochs', true);
  positiveInt(o.jointEpochs, 'jointEpochs', true);
  positiveInt(pre.epochs, 'pretrain.epochs', true);
  for (const [k, v] of Object.entries({
    batchSize: o.batchSize,
    readerQuestions: o.readerQuestions,
    readerPassages: o.readerPassages,
    readerDepth: o.readerDepth,
  }))
    positiveInt(v, k);
  positiveInt(o.hardNegatives, 'hardNegatives', true);
  if (!(o.lr > 0)) throw new QuorumError('ERR_RANGE', 'lr must be > 0');
  for (const t of pre.tasks)
    if (t !== 'ict' && t !== 'phrase_ict')
      throw new QuorumError('ERR_ARG', `a pre-training task is 'ict' or 'phrase_ict', got ${String(t)}`);
  if (!data.train.length && (o.retrievalEpochs > 0 || o.jointEpochs > 0)) throw new QuorumError('ERR_ARG', 'no training questions');
  const group = optionalGroup(o.group);
  const rank = group?.rank ?? 0;
  const size = group?.size ?? 1;
  if (o.batchSize < size || o.readerQuestions < size)
    throw new QuorumError(
      'ERR_RANGE',
      `batchSize (${o.batchSize}) and readerQuestions (${o.readerQuestions}) must be at least the ${size} ranks`,
    );
  // This rank's share of a batch's questions; its collectives and what they are called with.
  const mine = <T>(items: readonly T[]): T[] => (group ? rankPart(items, rank, size) : [...items]);
  const ranked = group ? { group } : {};
  const log = rank === 0 ? (o.log ?? (() => {})) : () => {};
  const network = model.network;
  const tok = model.tokenizer;
  const text = model.text;
  const separate = model.retrieval !== undefined;
  const temperature = o.temperature ?? (network.config.encoder.normalize ? 0.05 : 1);
  const random = seededRandom(o.seed);
  const scratch = mkdtempSync(join(tmpdir(), 'quorum-rom-train-'));
  const t0 = performance.now();
  const { log: _log, group: _group, ...recorded } = options;
  const record: RomTrainRecord = { options: recorded, epochs: [], refreshes: [], readerExamples: 0, seconds: 0 };

  try {
    const passages = await model.passageTable(data.passages);
    const trainQ = await model.questionTable(data.train.map((e) => e.query));
    const dev = data.dev?.length ? data.dev : undefined;
    const validation = dev ? await validationInput(model, dev, data.passages.length, o.validationPool, o.seed, passages) : undefined;
    // Every rank computes it (the same weights give the same figure); rank 0's steers all, so that their checkpoints
    // and refreshes cannot part over a rounding difference.
    const averageRank = async () => {
      if (!validation) return undefined;
      const v = (await validate(model.retrievalEncoder(), validation)).averageRank;
      return group ? (await group.broadcast(Float32Array.of(v)))[0]! : v;
    };
    if (group) await network.broadcastParameters(group);

    /** One epoch: `steps` optimizer steps, each accumulating the batches `parts` makes for it. */
    const epochLoop = async (
      phase: RomEpochRecord['phase'],
      epoch: number,
      steps: number,
      schedule: (step: number) => number,
      lambdas: RomEpochRecord['lambdas'],
      parts: (step: number) => Promise<Array<{ task: RomHead | 'reader'; stats: RomStepStats }>>,
    ): Promise<RomEpochRecord> => {
      const bar = o.progress && rank === 0 ? progress(`${phase} epoch ${epoch + 1}`, steps) : undefined;
      const sums: Record<string, { loss: number; chance: number; correct: number; n: number }> = {};
      let tokens = 0;
      const e0 = performance.now();
      for (let s = 0; s < steps; s++) {
        for (const { task, stats } of await parts(s)) {
          const a = (sums[task] ??= { loss: 0, chance: 0, correct: 0, n: 0 });
          a.loss += stats.loss * stats.questions;
          a.chance += stats.chance * stats.questions;
          a.correct += stats.correct;
          a.n += stats.questions;
          tokens += stats.tokens;
        }
        await network.step(o.lr * schedule(s), o.clip, ranked);
        bar?.tick();
      }
      bar?.stop();
      const losses: RomEpochRecord['losses'] = {};
      for (const [k, a] of Object.entries(sums))
        losses[k as RomHead] = { loss: a.loss / a.n, chance: a.chance / a.n, accuracy: a.correct / a.n };
      const rec: RomEpochRecord = { phase, epoch, lambdas, losses, seconds: (performance.now() - e0) / 1000, tokens };
      record.epochs.push(rec);
      return rec;
    };
    const describe = (r: RomEpochRecord) =>
      `${r.phase} epoch ${r.epoch + 1}: ` +
      Object.entries(r.losses)
        .map(([k, v]) => `${k} loss ${v.loss.toFixed(3)} (chance ${v.chance.toFixed(2)}, acc ${(v.accuracy * 100).toFixed(1)}%)`)
        .join(', ') +
      (r.averageRank !== undefined ? `, dev average rank ${r.averageRank.toFixed(2)}` : '') +
      `, ${Math.round(r.tokens / Math.max(r.seconds, 1e-9))} tokens/s`;

    // Phase 1: ICT / PhraseICT.
    if (pre.epochs > 0) {
      const idf = pre.tasks.includes('phrase_ict') ? TermIdf.fit(data.passages) : undefined;
      const perTask = pre.examplesPerEpoch ?? data.passages.length;
      const stepsPer = Math.ceil(perTask / o.batchSize);
      const lrSchedule = linearSchedule(Math.round(pre.epochs * stepsPer * 0.1), pre.epochs * stepsPer);
      const lambda = 1 / pre.tasks.length;
      for (let epoch = 0; epoch < pre.epochs; epoch++) {
        const streams = new Map<RomHead, SelfSupervisedExample[]>();
        for (const t of pre.tasks) {
          const seed = o.seed * 31 + epoch * 2 + (t === 'ict' ? 0 : 1);
          const made =
            t === 'ict'
              ? ictExamples(data.passages, { seed, keepRate: pre.keepRate })
              : phraseIctExamples(data.passages, idf!, { seed, keepRate: pre.keepRate });
          streams.set(t, shuffle([...made], seededRandom(seed)).slice(0, perTask));
        }
        const rec = await epochLoop(
          'pretrain',
          epoch,
          stepsPer,
          (s) => lrSchedule(epoch * stepsPer + s),
          Object.fromEntries(pre.tasks.map((t) => [t, lambda])),
          async (s) => {
            const out: Array<{ task: RomHead; stats: RomStepStats }> = [];
            for (const [task, list] of streams) {
              const part = list.slice(s * o.batchSize, (s + 1) * o.batchSize);
              if (part.length < Math.max(2, size)) continue;
              const batch = await selfSupervisedBatch(model, data.passages, mine(part), temperature, lambda);
              out.push({ task, stats: await network.accumulate(batch, task, { normalize: o.normalizeLosses, ...ranked }) });
            }
            return out;
          },
        );
        const v = await averageRank();
        if (v !== undefined) rec.averageRank = v;
        log(describe(rec));
      }
    }

    // Phase 2: retrieval alone, the best epoch by dev average rank kept.
    const retrievalStepsPer = Math.ceil(data.train.length / o.batchSize);
    // The last step of an epoch may hold fewer questions than ranks: every rank then leaves it out alike.
    const retrievalBatch = (all: number[], lambda: number): TrainBatchArg | undefined => {
      if (all.length < size) return undefined;
      const members = mine(all);
      const c = composeBatch(data.train, members, o.hardNegatives, random);
      return {
        queries: trainQ.batch(members),
        passages: passages.batch(c.passageRows),
        positives: c.positives,
        ignore: c.ignore,
        lossScale: lambda,
        temperature,
      };
    };
    const retrievalPart = async (all: number[], lambda: number): Promise<Array<{ task: RomHead; stats: RomStepStats }>> => {
      const b = retrievalBatch(all, lambda);
      return b ? [{ task: 'retrieval', stats: await network.accumulate(b, 'retrieval', { normalize: o.normalizeLosses, ...ranked }) }] : [];
    };
    const order = (epoch: number) =>
      shuffle(
        Array.from({ length: data.train.length }, (_, i) => i),
        seededRandom(o.seed * 7919 + epoch),
      );
    if (o.retrievalEpochs > 0 && !separate) {
      const lrSchedule = linearSchedule(Math.round(o.retrievalEpochs * retrievalStepsPer * 0.1), o.retrievalEpochs * retrievalStepsPer);
      let best = Infinity;
      for (let epoch = 0; epoch < o.retrievalEpochs; epoch++) {
        const ord = order(epoch);
        const rec = await epochLoop(
          'retrieval',
          epoch,
          retrievalStepsPer,
          (s) => lrSchedule(epoch * retrievalStepsPer + s),
          { retrieval: 1 },
          (s) => retrievalPart(ord.slice(s * o.batchSize, (s + 1) * o.batchSize), 1),
        );
        const v = await averageRank();
        if (v !== undefined) rec.averageRank = v;
        log(describe(rec));
        if (v !== undefined && v < best) {
          best = v;
          await network.save(join(scratch, 'retrieval-best.pt'));
        }
      }
      if (Number.isFinite(best)) await network.load(join(scratch, 'retrieval-best.pt'));
    }

    // Phase 3: joint training with the schedule and the index refresh.
    const reader = new ReaderData(tok, data.passages, (row) => model.passagePieces(row, data.passages), data.train, {
      readerLength: text.readerLength,
      maxQuestion: text.maxQueryLength,
      passages: o.readerPassages,
      depth: o.readerDepth,
      markMatches: network.marksMatches,
    });
    record.readerExamples = reader.examples.length;
    if (o.jointEpochs > 0 && reader.examples.length === 0)
      log('no training question has an answer string in a gold passage: the reader is not trained');
    if (o.jointEpochs > 0) {
      let pending: number[][] = [];
      const refresher = new IndexRefresh({
        refresh: async () => {
          const vectors = await encodeTable(model.retrievalEncoder(), passages, { side: 'passage' });
          const search = async (table: TokenTable) =>
            scoreTopK(
              await encodeTable(model.retrievalEncoder(), table, { side: 'query' }),
              vectors,
              Math.min(o.readerDepth + 10, data.passages.length),
            );
          const top = await search(trainQ);
          pending = data.train.map((_, i) => top.hits(i).map((h) => h.id));
          if (!validation) return 0;
          // Dev recall at the reader's width: how often the reader would see a gold passage.
          const devTop = await search(validation.allQuestions);
          return (
            dev!.reduce(
              (a, e, i) =>
                a +
                (devTop
                  .hits(i)
                  .slice(0, o.readerPassages)
                  .some((h) => e.positives.includes(h.id))
                  ? 1
                  : 0),
              0,
            ) / dev!.length
          );
        },
        updateReader: async () => reader.setRetrieved(pending),
        log,
      });
      const E = o.jointEpochs;
      const stepsPer = retrievalStepsPer;
      const lrSchedule = linearSchedule(Math.round(E * stepsPer * 0.1), E * stepsPer);
      const readerOrder = shuffle(
        Array.from({ length: reader.examples.length }, (_, i) => i),
        seededRandom(o.seed + 17),
      );
      let readerAt = 0;
      const readerBatch = (lambda: number): ReaderBatchArg => {
        const chosen = Array.from({ length: o.readerQuestions }, () => reader.examples[readerOrder[readerAt++ % readerOrder.length]!]!);
        return reader.batch(mine(chosen), random, lambda, o.normalizeLosses);
      };

      await refresher.force(-1, (await averageRank()) ?? Infinity);
      const switchAt = o.schedule === 'pipeline' ? Math.ceil(E / 2) : -1;
      let bestRetrieval = Infinity;
      for (let epoch = 0; epoch < E; epoch++) {
        if (epoch === switchAt && !separate) {
          // The pipeline's hand-over: the best retrieval checkpoint becomes the retrieval side, its results the reader's.
          if (Number.isFinite(bestRetrieval)) await network.load(join(scratch, 'joint-best.pt'));
          const side = RomNetwork.fromConfig(network.config);
          await network.save(join(scratch, 'side.pt'));
          await side.load(join(scratch, 'side.pt'));
          model.retrieval = { kind: 'rom', network: side };
          await refresher.force(epoch, (await averageRank()) ?? Infinity);
        }
        const wr = separate
          ? 0
          : retrievalWeight(o.schedule, epoch, E, { seed: o.seed, ...(o.scheduleFloor !== undefined ? { floor: o.scheduleFloor } : {}) });
        const wd = reader.examples.length ? 1 - wr : 0;
        const ord = order(o.retrievalEpochs + epoch);
        const rec = await epochLoop(
          'joint',
          epoch,
          stepsPer,
          (s) => lrSchedule(epoch * stepsPer + s),
          { retrieval: wr, reader: wd },
          async (s) => {
            const out: Array<{ task: RomHead | 'reader'; stats: RomStepStats }> = [];
            if (wr > 0) out.push(...(await retrievalPart(ord.slice(s * o.batchSize, (s + 1) * o.batchSize), wr)));
            if (wd > 0) out.push({ task: 'reader', stats: await network.accumulateReader(readerBatch(wd), ranked) });
            return out;
          },
        );
        const retrievalTrains = !separate && !(o.schedule === 'pipeline' && epoch >= switchAt);
        const v = retrievalTrains ? await averageRank() : undefined;
        if (v !== undefined) rec.averageRank = v;
        log(describe(rec));
        if (rec.averageRank !== undefined && o.schedule === 'pipeline' && rec.averageRank < bestRetrieval) {
          bestRetrieval = rec.averageRank;
          await network.save(join(scratch, 'joint-best.pt'));
        }
        if (o.refresh && rec.averageRank !== undefined) await refresher.observe(epoch, rec.averageRank);
      }
      record.refreshes = refresher.events;
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  record.seconds = (performance.now() - t0) / 1000;
  model.dropIndex();
  model.training = record as unknown as Record<string, unknown>;
  return record;
}

/**
 * The dev pool (docs/methods/evaluation.md#average-rank) and the dev questions, tokenized once: validate() reads each
 * task's questions from a table
 * per task, and here every task points at the one table of all dev questions (row i = question i).
 */
async function validationInput(
  model: RomModel,
  dev: readonly TrainingExample[],
  corpusSize: number,
  poolSize: number,
  seed: number,
  passages: TokenTable,
): Promise<ValidationInput & { allQuestions: TokenTable }> {
  const tasks = [...new Set(dev.map((e) => e.task))].sort();
  const allQuestions = await model.questionTable(dev.map((e) => e.query));
  return {
    passages,
    queries: new Map(tasks.map((t) => [t, allQuestions])),
    rows: dev.map((_, i) => i),
    examples: dev,
    taskIndex: new Map(tasks.map((t, i) => [t, i])),
    pool: validationPool(dev, corpusSize, poolSize, seed),
    allQuestions,
  };
}

/** A contrastive batch of pseudo-queries against their evidence ("[CLS] title [SEP] context [SEP]"). */
async function selfSupervisedBatch(
  model: RomModel,
  passages: readonly PassageText[],
  part: readonly SelfSupervisedExample[],
  temperature: number,
  lossScale: number,
): Promise<TrainBatchArg> {
  const tok = model.tokenizer;
  const queries: TokenBatchArg = await tok.encodeAsync(
    part.map((e) => e.query),
    { maxLength: model.text.maxQueryLength },
  );
  const evidence: TokenBatchArg = await tok.encodeAsync(
    part.map((e) => passages[e.passage]!.title),
    {
      pairs: part.map((e) => e.context),
      maxLength: model.text.maxPassageLength,
    },
  );
  // Two examples from one passage (when a stream repeats passages) are not each other's negatives.
  const ignore: number[] = [];
  part.forEach((a, i) => part.forEach((b, j) => i !== j && a.passage === b.passage && ignore.push(i, j)));
  return {
    queries,
    passages: evidence,
    positives: Int32Array.from(part.map((_, i) => i)),
    ignore: Int32Array.from(ignore),
    lossScale,
    temperature,
  };
}
