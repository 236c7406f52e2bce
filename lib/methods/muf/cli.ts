// `quorum muf train | search`: DPR-MUF from expert model directories over a BEIR dataset whose queries carry a
// `task` (train split: the heads; dev split: the temperatures), and searching a saved MUF directory.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import type { Command } from 'commander';

import { count, int, list, passagesToAdd, probability, trainingOptions } from '../../cli/args.js';
import { loadBeir } from '../../data/beir.js';
import { QuorumError } from '../../errors.js';
import { checkFusion } from '../../search-request.js';
import { asRanks } from '../../cli/launch.js';
import type { ProcessGroup } from '../../models/process-group.js';
import { addBm25Negatives, examplesFromQrels } from '../../train/examples.js';
import { Retriever } from '../../models/retriever.js';
import { MUF_SERVER_FUSIONS, type MufFusion } from './format.js';
import { MufRetriever, type MufJudgedQuery } from './retriever.js';
import { trainMufHeads } from './train.js';
import { updateMufPassages } from './passages.js';

interface MufTrainOptions {
  data: string;
  experts: string[];
  out: string;
  members: number;
  hidden: number;
  layers: number;
  epochs: number;
  batch: number;
  lr: number;
  hardNegatives: number;
  topL: number;
  hitTopK: number;
  seed: number;
  /** Train the heads as this many local ranks of one data-parallel group (docs/guides/distributed.md). */
  nproc?: number;
}

/** The judged queries of a split with their relevant passage ids (what calibration and evaluation read). */
function judgedQueries(data: string, split: string): MufJudgedQuery[] {
  const ds = loadBeir(data, split);
  return ds.queries
    .filter((q) => ds.qrels.has(q.id))
    .map((q) => ({
      id: q.id,
      text: q.text,
      ...(q.task !== undefined ? { task: q.task } : {}),
      relevant: new Set([...(ds.qrels.get(q.id) ?? [])].filter(([, g]) => g > 0).map(([d]) => d)),
    }));
}

/**
 * One `--experts` item: a model directory (its single task names the expert), or `DIR:task` for a model that serves
 * several tasks (e.g. `default:covid,default:selqa`: the shipped multi-task model as the expert of each task, which
 * then differ only by their heads and their questions' task marker).
 */
function expertSpec(item: string): { model: string; name?: string; task?: string } {
  const at = item.lastIndexOf(':');
  if (at <= 0) return { model: item };
  const task = item.slice(at + 1);
  if (!/^[\w.-]+$/.test(task)) throw new QuorumError('ERR_ARG', `--experts item '${item}': expected DIR or DIR:task`);
  return { model: item.slice(0, at), name: task, task };
}

/** Builds, trains (train split) and calibrates (dev split) a MUF in memory; `out` is not written. */
export async function buildMuf(
  o: Omit<MufTrainOptions, 'out'>,
  log: (line: string) => void = console.log,
  group?: ProcessGroup,
): Promise<MufRetriever> {
  if (o.experts.length === 0) throw new QuorumError('ERR_ARG', '--experts needs at least one model directory');
  const train = loadBeir(o.data, 'train');
  if (!train.queries.some((q) => q.task !== undefined))
    throw new QuorumError('ERR_ARG', `${o.data}: its queries carry no 'task' field, and MUF's experts are per task`);
  if (!existsSync(join(o.data, 'qrels', 'dev.tsv')))
    throw new QuorumError('ERR_IO', `${o.data}: no qrels/dev.tsv, which MUF calibrates its temperatures on`);
  const examples = examplesFromQrels(train, train.qrels);
  await addBm25Negatives(examples, train.corpus, { k: 30 });
  log(`${o.data}: ${train.corpus.length} passages, ${examples.length} training questions`);
  Retriever.seed(o.seed);
  const muf = await MufRetriever.build(o.experts.map(expertSpec), train.corpus, {
    heads: { members: o.members, hidden: o.hidden, layers: o.layers },
    topL: o.topL,
    hitTopK: o.hitTopK,
    onProgress: log,
  });
  try {
    await trainMufHeads(muf, examples, {
      epochs: o.epochs,
      batchSize: o.batch,
      lr: o.lr,
      hardNegatives: o.hardNegatives,
      seed: o.seed,
      ...(group ? { group } : {}),
    });
    // Every rank holds the same heads now; rank 0 alone calibrates and writes.
    if (group && group.rank !== 0) return muf;
    const dev = judgedQueries(o.data, 'dev');
    log(`calibrating on ${dev.length} dev questions`);
    await muf.calibrate(dev);
    return muf;
  } catch (e) {
    muf.dispose();
    throw e;
  }
}

/** {@link buildMuf}, then saves the MUF directory `out`. */
export async function mufTrainCommand(o: MufTrainOptions, log: (line: string) => void = console.log): Promise<MufRetriever | undefined> {
  return asRanks(o.nproc, log, async (group, rankLog) => {
    const muf = await buildMuf(o, rankLog, group);
    if (group && group.rank !== 0) {
      muf.dispose();
      return undefined;
    }
    return saveMuf(muf, o, rankLog);
  });
}

function saveMuf(muf: MufRetriever, o: MufTrainOptions, log: (line: string) => void): MufRetriever {
  try {
    muf.save(o.out);
  } catch (e) {
    muf.dispose();
    throw e;
  }
  log(`wrote ${o.out} (${muf.experts.map((e) => e.name).join(', ')})`);
  return muf;
}

/** Re-chooses every expert's temperature on a split (default dev) and rewrites the directory's card. */
async function mufCalibrateCommand(
  o: { muf: string; data: string; split: string },
  log: (line: string) => void = console.log,
): Promise<void> {
  const muf = await MufRetriever.load(o.muf, { onProgress: log });
  try {
    if (o.split === 'test') throw new QuorumError('ERR_ARG', 'calibrating on the test split would tune on the evaluation labels: use dev');
    const queries = judgedQueries(o.data, o.split);
    log(`calibrating on ${queries.length} ${o.split} questions`);
    await muf.calibrate(queries);
    muf.save(o.muf);
  } finally {
    muf.dispose();
  }
}

async function mufSearchCommand(queries: string[], o: { muf: string; k: number; fusion: string; abstain?: number }): Promise<void> {
  checkFusion(o.fusion, MUF_SERVER_FUSIONS, '--fusion');
  if (queries.length === 0) throw new QuorumError('ERR_ARG', 'give at least one query');
  const muf = await MufRetriever.load(o.muf);
  try {
    const results = await muf.search(queries, o.k, {
      fusion: o.fusion as MufFusion,
      ...(o.abstain !== undefined ? { abstain: o.abstain } : {}),
    });
    const what = o.fusion === 'muf' && muf.familiarityCalibrated ? 'P(own task)' : o.fusion === 'uniform' ? 'weight' : 'confidence (MI)';
    results.forEach((r, i) => {
      console.log(`${queries[i]}`);
      console.log(`  ${what}: ${muf.experts.map((e, j) => `${e.name} ${r.confidence[j]!.toFixed(3)}`).join(', ')}`);
      if (r.abstained) console.log(`  abstained: no expert reaches ${o.abstain}`);
      r.hits.forEach((h, rank) => console.log(`  ${String(rank + 1).padStart(3)}  ${h.id}  ${h.score.toFixed(4)}`));
    });
  } finally {
    muf.dispose();
  }
}

/** `quorum muf passages`: adds and removes passages of a MUF directory (each expert encodes the new ones). */
export async function mufPassagesCommand(
  o: { muf: string; add?: string; remove?: string[] },
  log: (line: string) => void = console.log,
): Promise<void> {
  const add = passagesToAdd(o.add);
  const r = await updateMufPassages(o.muf, { add, remove: o.remove ?? [] });
  log(`${o.muf}: ${r.added} passages added, ${r.removed} removed; ${r.passages} passages`);
}

/** Adds `muf train`, `calibrate`, `passages` and `search` to the program. */
export function registerMufCommands(program: Command): void {
  const muf = program.command('muf').description('DPR-MUF: per-task experts, ensemble heads, calibrated confidence, fused retrieval');
  trainingOptions(muf.command('train'), {
    data: "BEIR layout whose queries carry a 'task': corpus.jsonl, queries.jsonl, qrels/train.tsv, qrels/dev.tsv",
    out: 'the MUF directory to write',
    batch: [128, 'questions per step, split into one sub-batch per member'],
    lr: [1e-3, "Adam's learning rate"],
    seed: 'seed of the heads and their batches',
  })
    .description("train each expert's ensemble heads (train split) and calibrate its temperature (dev split) into a MUF directory")
    .requiredOption(
      '--experts <list>',
      'comma-separated model directories, one per task (`quorum train --tasks <task>`); DIR:task names the task of a multi-task model',
      list,
    )
    .option('--members <n>', 'K, heads per expert', int, 20)
    .option('--hidden <n>', 'hidden units per head layer', int, 512)
    .option('--layers <n>', 'hidden layers per head', count, 2)
    .option('--epochs <n>', "passes over each expert's training questions", int, 100)
    .option('--hard-negatives <n>', 'BM25 hard negatives per question', count, 1)
    .option('--top-l <n>', 'passages each expert retrieves and its heads score', int, 100)
    .option('--hit-top-k <n>', "calibration target: a relevant passage in the expert's top k", int, 1)
    .option('--nproc <n>', "train the heads as n data-parallel ranks on this machine (each member's sub-batch split across them)", count)
    .action(async (o: MufTrainOptions) => {
      (await mufTrainCommand(o))?.dispose();
    });
  muf
    .command('calibrate')
    .description("choose each expert's temperature again by ECE (e.g. after a new grid), without retraining the heads")
    .requiredOption('--muf <dir>', 'a directory from `quorum muf train` (rewritten)')
    .requiredOption('--data <dir>', 'the BEIR dataset it was trained on')
    .option('--split <name>', 'the calibration split (never test)', 'dev')
    .action(async (o: { muf: string; data: string; split: string }) => mufCalibrateCommand(o));
  muf
    .command('passages')
    .description(
      'add or remove passages of a MUF directory without retraining: each expert encodes the new ones (a server reloads it to serve them)',
    )
    .requiredOption('--muf <dir>', 'a directory from `quorum muf train` (rewritten)')
    .option('--add <file>', 'passages to add: a corpus.jsonl file ({ _id, title, text } per line) or a BEIR directory')
    .option('--remove <ids>', 'comma-separated passage ids to remove (removed first: an id can be removed and added again)', list)
    .action(async (o: { muf: string; add?: string; remove?: string[] }) => mufPassagesCommand(o));
  muf
    .command('search')
    .description("search a MUF directory: fused hits and each expert's confidence")
    .argument('<queries...>', 'question texts')
    .requiredOption('--muf <dir>', 'a directory from `quorum muf train`')
    .option('--k <n>', 'hits per query', int, 10)
    .option(
      '--fusion <name>',
      "muf (each expert's calibrated confidence: P(own task) where the directory has familiarity, else MI), muf-mi (MI, as published) or uniform",
      'muf',
    )
    .option('--abstain <p>', "no hits for a question whom no expert's confidence reaches p (in [0, 1])", probability)
    .action(async (queries: string[], o: { muf: string; k: number; fusion: string; abstain?: number }) => mufSearchCommand(queries, o));
}
