// `quorum rom train | index` and `quorum ask`: ROM trained on a BEIR dataset with answers (train split; dev for the
// average rank that picks checkpoints and triggers index refreshes), its corpus index saved into the model
// directory, and open-domain questions answered from it.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import type { Command } from 'commander';

import { checkInitConflicts, count, indexCorpusCommand, int, trainingOptions } from '../../cli/args.js';
import { loadPretrainedWeights, pretrainedShape, readPretrained } from '../../models/hf.js';
import { loadBeirCorpus } from '../../data/beir.js';
import { initFromGlove } from '../../train/init.js';
import { prepareTraining } from '../../train/prepare.js';
import { Retriever } from '../../models/retriever.js';
import { RomModel } from './model.js';
import { ROM_SCHEDULES, type RomSchedule } from './schedule.js';
import { trainRom } from './train.js';
import { weightStorageOption } from '../../models/model-dir.js';
import { check } from '../../validate.js';
import { asRanks } from '../../cli/launch.js';
import type { ProcessGroup } from '../../models/process-group.js';

interface RomTrainCommandOptions {
  data: string;
  out: string;
  tasks?: string;
  schedule: string;
  pretrain?: string;
  pretrainEpochs: number;
  retrievalEpochs: number;
  jointEpochs: number;
  batch: number;
  readerQuestions: number;
  readerPassages: number;
  lr: number;
  hidden: number;
  layers: number;
  readerLength: number;
  refresh: boolean;
  glove: boolean;
  /** A Hugging Face BERT-family directory: the encoder starts from it (its shape, tokenizer and weights). */
  init?: string;
  seed: number;
  dtype: string;
  /** Train as this many local ranks of one data-parallel group (docs/guides/distributed.md). */
  nproc?: number;
}

/**
 * Trains ROM on a dataset and writes its model directory; as data-parallel ranks with `nproc` (or WORLD_SIZE set),
 * where rank 0 logs and writes. Resolves to the model in the process that wrote it.
 */
async function romTrainCommand(o: RomTrainCommandOptions, log: (line: string) => void = console.log): Promise<RomModel | undefined> {
  return asRanks(o.nproc, log, (group, rankLog) => romTrain(o, rankLog, group));
}

async function romTrain(
  o: RomTrainCommandOptions,
  log: (line: string) => void,
  group: ProcessGroup | undefined,
): Promise<RomModel | undefined> {
  check(
    ROM_SCHEDULES.includes(o.schedule as RomSchedule),
    'ERR_ARG',
    `--schedule must be one of ${ROM_SCHEDULES.join(', ')}, got '${o.schedule}'`,
  );
  const dtype = weightStorageOption(o.dtype);
  check(o.hidden % 4 === 0, 'ERR_ARG', `--hidden ${o.hidden} must be a multiple of the 4 attention heads`);
  check(o.lr > 0, 'ERR_RANGE', '--lr must be > 0');
  const pretrain = (o.pretrain ?? '').split(',').filter(Boolean);
  for (const t of pretrain) check(t === 'ict' || t === 'phrase_ict', 'ERR_ARG', `--pretrain takes ict and phrase_ict, got '${t}'`);
  const tasks = o.tasks?.split(',').filter(Boolean);
  const bert = o.init !== undefined ? readPretrained(o.init) : undefined;
  if (bert)
    check(
      o.readerLength <= bert.encoder.maxPositions,
      'ERR_RANGE',
      `--reader-length ${o.readerLength} exceeds the checkpoint's ${bert.encoder.maxPositions} positions`,
    );
  const d = await prepareTraining(o.data, {
    ...(bert ? { tokenizer: bert.tokenizer, glove: false, wordVocab: false } : { glove: o.glove, wordVocab: o.glove }),
    log,
    ...(tasks ? { tasks } : {}),
  });
  Retriever.seed(o.seed);
  const rom = RomModel.create({
    tokenizer: d.tokenizer,
    network: {
      encoder: bert
        ? { ...pretrainedShape(bert.encoder), layers: bert.encoder.layers }
        : {
            hiddenSize: o.hidden,
            embeddingSize: o.glove ? 100 : o.hidden,
            layers: o.layers,
            ffnSize: 4 * o.hidden,
            maxPositions: Math.max(o.readerLength, 128),
          },
    },
    text: { readerLength: o.readerLength },
  });
  if (d.glove) await initFromGlove(rom.network, d.tokenizer.vocabulary, { glove: d.glove, seed: o.seed });
  // The reader's third token type (question words in the passage) starts as a copy of type 0 (checkpoint-map.ts).
  if (bert) loadPretrainedWeights(rom.network, bert, { strict: false });
  const { layers, hiddenSize } = rom.network.config.encoder;
  log(
    `ROM: ${rom.parameterCount.toLocaleString()} parameters, ${layers} blocks of ${hiddenSize}${bert ? ` from ${o.init}` : ''}; schedule ${o.schedule}`,
  );
  const record = await trainRom(
    rom,
    { passages: d.passages, train: d.train, ...(d.dev.length ? { dev: d.dev } : {}) },
    {
      schedule: o.schedule as RomSchedule,
      ...(pretrain.length ? { pretrain: { tasks: pretrain as Array<'ict' | 'phrase_ict'>, epochs: o.pretrainEpochs } } : {}),
      retrievalEpochs: o.retrievalEpochs,
      jointEpochs: o.jointEpochs,
      batchSize: o.batch,
      readerQuestions: o.readerQuestions,
      readerPassages: o.readerPassages,
      lr: o.lr,
      refresh: o.refresh,
      seed: o.seed,
      progress: true,
      log,
      ...(group ? { group } : {}),
    },
  );
  if (group && group.rank !== 0) return undefined;
  rom.training = { data: o.data, ...(rom.training ?? {}) };
  rom.save(o.out, { dtype });
  log(
    `wrote ${o.out} (${Math.round(record.seconds)} s of training, ${record.refreshes.length} index refreshes, ${record.readerExamples} reader questions)`,
  );
  return rom;
}

/** Encodes a dataset's corpus and saves the index into the model directory. */
async function romIndexCommand(o: { model: string; data: string }, log: (line: string) => void = console.log): Promise<void> {
  const rom = await RomModel.load(o.model);
  const corpus = loadBeirCorpus(o.data);
  const where = join(o.model, 'index');
  await indexCorpusCommand(
    corpus,
    () => rom.index(corpus),
    () =>
      rom.saveIndex(
        where,
        corpus.map((p) => p.id),
      ),
    where,
    log,
  );
}

/** Answers questions from a dataset's corpus (the saved index when it matches the corpus, else encoded now). */
async function askCommand(
  questions: string[],
  o: { model: string; data: string; k: number },
  log: (line: string) => void = console.log,
): Promise<void> {
  check(questions.length > 0, 'ERR_ARG', 'give at least one question');
  const rom = await RomModel.load(o.model);
  const corpus = loadBeirCorpus(o.data);
  if (existsSync(join(o.model, 'index', 'index.json'))) rom.loadIndex(join(o.model, 'index'), corpus);
  else await rom.index(corpus);
  const answers = await rom.answer(questions, { k: o.k });
  questions.forEach((q, i) => {
    const a = answers[i]!;
    const p = corpus[a.passage];
    log(q);
    log(
      a.passage < 0
        ? '  (no answer)'
        : `  ${a.answer}\n  from ${p!.id} "${p!.title}" (reader ${a.passageScore.toFixed(2)}, span ${a.spanScore.toFixed(2)}, retrieval ${a.retrievalScore.toFixed(3)})`,
    );
  });
}

/** Adds `rom train`, `rom index` and `ask` to the program. */
export function registerRomCommands(program: Command): void {
  const rom = program
    .command('rom')
    .description('ROM: one encoder for retrieval and reading, ICT / PhraseICT, learning schedules, index refresh');
  trainingOptions(rom.command('train'), {
    data: 'BEIR layout: corpus.jsonl, queries.jsonl (with answers), qrels/train.tsv (qrels/dev.tsv)',
    out: 'the model directory to write',
    batch: [16, 'questions per retrieval batch'],
    glove: true,
    dtype: true,
    hidden: 100,
    init: true,
  })
    .description('train ROM on a BEIR dataset whose questions carry answers (train split; dev for average rank and refreshes)')
    .option('--tasks <list>', 'train on these tasks only (comma-separated)')
    .option('--schedule <name>', `joint-phase schedule: ${ROM_SCHEDULES.join(', ')}`, 'random')
    .option('--pretrain <list>', 'self-supervised pre-training: ict, phrase_ict (comma-separated; default none)')
    .option('--pretrain-epochs <n>', 'epochs of pre-training', count, 1)
    .option('--retrieval-epochs <n>', 'epochs of retrieval alone', count, 2)
    .option('--joint-epochs <n>', 'epochs of joint retrieval + reader training', count, 4)
    .option('--reader-questions <n>', 'questions per reader batch', int, 4)
    .option('--reader-passages <n>', 'passages per question in reader batches (1 positive + negatives)', int, 10)
    .option('--layers <n>', 'Transformer blocks', count, 2)
    .option('--reader-length <n>', 'tokens of a reader row (question + passage)', int, 192)
    .option('--no-refresh', 'keep the index the joint phase starts from (no refresh on improvement)')
    .option('--nproc <n>', 'train as n data-parallel ranks on this machine (see docs/guides/distributed.md)', count)
    .action(async (o: RomTrainCommandOptions, cmd: Command) => {
      checkInitConflicts(cmd, ['hidden', 'layers']);
      await romTrainCommand(o);
    });
  rom
    .command('index')
    .description("encode a dataset's corpus with the retrieval head and save the index into the model directory")
    .requiredOption('--model <dir>', 'a directory from `quorum rom train`')
    .requiredOption('--data <dir>', 'the BEIR dataset whose corpus to index')
    .action(async (o: { model: string; data: string }) => romIndexCommand(o));
  program
    .command('ask')
    .description('answer questions from a corpus with a ROM model: retrieve, read, return the span')
    .argument('<questions...>', 'question texts')
    .requiredOption('--model <dir>', 'a directory from `quorum rom train`')
    .requiredOption('--data <dir>', 'the BEIR dataset whose corpus to answer from')
    .option('--k <n>', 'passages to read per question', int, 10)
    .action(async (questions: string[], o: { model: string; data: string; k: number }) => askCommand(questions, o));
}
