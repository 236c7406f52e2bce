// `quorum came train | index | search`: CAME trained on a BEIR dataset (train split; dev for checkpoints and the
// linear fusion), its corpus indexes built and saved into the CAME directory, and searching it.
import { join } from 'node:path';

import type { Command } from 'commander';

import { checkInitConflicts, count, indexCorpusCommand, int, list, num, passagesToAdd, trainingOptions } from '../../cli/args.js';
import { pretrainedShape, readPretrained } from '../../models/hf.js';
import { loadBeirCorpus } from '../../data/beir.js';
import { prepareTraining } from '../../train/prepare.js';
import { Retriever } from '../../models/retriever.js';
import { CAME_FUSIONS, type CameFusion } from './fusion.js';
import { updateCamePassages } from './passages.js';
import { CameRetriever } from './retriever.js';
import { fitCameLinear, initCame, trainCame } from './train.js';
import { weightStorageOption } from '../../models/model-dir.js';
import { check } from '../../validate.js';
import { checkFusion } from '../../search-request.js';
import { asRanks } from '../../cli/launch.js';
import type { ProcessGroup } from '../../models/process-group.js';

interface CameTrainCommandOptions {
  data: string;
  out: string;
  mode: string;
  independent?: boolean;
  epochs: number;
  hardEpochs: number;
  negatives: number;
  batch: number;
  lr: number;
  tau: number;
  flops: number;
  sharedLayers: number;
  expertLayers: number;
  hidden: number;
  maxQueryLength: number;
  maxPassageLength: number;
  glove: boolean;
  /** A Hugging Face BERT-family directory: the bottom and the experts' blocks start from its layers. */
  init?: string;
  seed: number;
  budget?: number;
  dtype: string;
  /** Train as this many local ranks of one data-parallel group (docs/guides/distributed.md). */
  nproc?: number;
}

/**
 * Trains, fits the linear fusion on dev, and writes a CAME directory; as data-parallel ranks with `nproc` (or
 * WORLD_SIZE set), where rank 0 logs, fits and writes. Resolves to the retriever in the process that wrote it.
 */
async function cameTrainCommand(o: CameTrainCommandOptions, log: (line: string) => void = console.log): Promise<CameRetriever | undefined> {
  return asRanks(o.nproc, log, (group, rankLog) => cameTrain(o, rankLog, group));
}

async function cameTrain(
  o: CameTrainCommandOptions,
  log: (line: string) => void,
  group: ProcessGroup | undefined,
): Promise<CameRetriever | undefined> {
  check(o.mode === 'competitive' || o.mode === 'standardized', 'ERR_ARG', `--mode must be competitive or standardized, got '${o.mode}'`);
  const dtype = weightStorageOption(o.dtype);
  check(o.hidden % 4 === 0, 'ERR_ARG', `--hidden ${o.hidden} must be a multiple of the 4 attention heads`);
  check(o.lr > 0 && o.tau > 0 && o.flops >= 0, 'ERR_RANGE', '--lr and --tau must be > 0, --flops >= 0');
  const bert = o.init !== undefined ? readPretrained(o.init) : undefined;
  // From a checkpoint, its last --expert-layers blocks become each expert's own and the ones below the shared bottom.
  if (bert)
    check(
      bert.encoder.layers >= o.expertLayers,
      'ERR_RANGE',
      `--expert-layers ${o.expertLayers} exceeds the checkpoint's ${bert.encoder.layers} layers`,
    );
  const d = await prepareTraining(
    o.data,
    bert ? { tokenizer: bert.tokenizer, glove: false, wordVocab: false, log } : { glove: o.glove, wordVocab: o.glove, log },
  );
  Retriever.seed(o.seed);
  const came = CameRetriever.create({
    tokenizer: d.tokenizer,
    independent: o.independent === true,
    model: {
      encoder: bert
        ? { ...pretrainedShape(bert.encoder), layers: bert.encoder.layers - o.expertLayers }
        : {
            hiddenSize: o.hidden,
            embeddingSize: o.glove ? 100 : o.hidden,
            layers: o.sharedLayers,
            ffnSize: 4 * o.hidden,
            maxPositions: Math.max(o.maxQueryLength, o.maxPassageLength),
          },
      expertLayers: o.expertLayers,
    },
    text: { maxQueryLength: o.maxQueryLength, maxPassageLength: o.maxPassageLength },
  });
  log(
    `CAME${came.independent ? ' (independent experts)' : ''}: ${came.parameterCount.toLocaleString()} parameters, ${o.sharedLayers} shared + ${o.expertLayers} per expert layers`,
  );
  const init = await initCame(came, d.passages, {
    ...(d.glove ? { glove: d.glove } : {}),
    ...(bert ? { pretrained: bert } : {}),
    seed: o.seed,
  });
  if (bert) log(`initialized from ${o.init}: ${came.models[0]!.config.encoder.layers} shared and ${o.expertLayers} per-expert blocks`);
  if (init.lexicalBias !== undefined)
    log(`lexical expert: decoder bias ${init.lexicalBias.toFixed(2)} (about 128 terms per passage at step 0)`);
  const record = await trainCame(
    came,
    { passages: d.passages, train: d.train, ...(d.dev.length ? { dev: d.dev } : {}) },
    {
      mode: o.mode as 'competitive' | 'standardized',
      epochs: o.epochs,
      hardNegativeEpochs: o.hardEpochs,
      negatives: o.negatives,
      batchSize: o.batch,
      lr: o.lr,
      tau: o.tau,
      flops: o.flops,
      seed: o.seed,
      checkpointDir: join(o.out, 'checkpoints'),
      ...(o.budget !== undefined ? { timeBudgetSeconds: o.budget } : {}),
      progress: true,
      log,
      ...(group ? { group } : {}),
    },
  );
  if (group && group.rank !== 0) return undefined;
  if (d.dev.length) {
    await came.index(d.passages);
    came.linear = await fitCameLinear(came, d.dev);
    log(
      `linear fusion fitted on ${d.dev.length} dev questions: weights ${came.linear.weights.map((w) => w.toPrecision(3)).join(', ')}, bias ${came.linear.bias.toPrecision(3)}`,
    );
  }
  came.training = { data: o.data, ...(came.training ?? {}) };
  came.save(o.out, { dtype });
  log(`wrote ${o.out} (${Math.round(record.seconds)} s of training)`);
  return came;
}

/** Encodes a dataset's corpus with a CAME directory's experts and saves the indexes into it. */
async function cameIndexCommand(o: { came: string; data: string }, log: (line: string) => void = console.log): Promise<void> {
  const came = await CameRetriever.load(o.came);
  const corpus = loadBeirCorpus(o.data);
  const where = join(o.came, 'index');
  await indexCorpusCommand(
    corpus,
    () => came.index(corpus),
    () =>
      came.saveIndex(
        where,
        corpus.map((p) => p.id),
      ),
    where,
    log,
    ` with ${came.experts.join(', ')}`,
  );
}

async function cameSearchCommand(queries: string[], o: { came: string; k: number; fusion: string }): Promise<void> {
  checkFusion(o.fusion, CAME_FUSIONS, '--fusion');
  check(queries.length > 0, 'ERR_ARG', 'give at least one query');
  const came = await CameRetriever.load(o.came);
  const ids = await came.loadIndex(join(o.came, 'index'));
  const r = await came.search(queries, { k: o.k, fusion: o.fusion as CameFusion });
  queries.forEach((q, i) => {
    console.log(q);
    r.fused[i]!.forEach((h, rank) => console.log(`  ${String(rank + 1).padStart(3)}  ${ids[h.id]}  ${h.score.toFixed(4)}`));
  });
}

/** `quorum came passages`: adds and removes passages of a CAME index (the experts encode the new ones). */
async function camePassagesCommand(
  o: { came: string; add?: string; remove?: string[] },
  log: (line: string) => void = console.log,
): Promise<void> {
  const add = passagesToAdd(o.add);
  const r = await updateCamePassages(o.came, { add, remove: o.remove ?? [] });
  log(`${join(o.came, 'index')}: ${r.added} passages added, ${r.removed} removed; ${r.passages} passages`);
}

/** Adds `came train`, `came index`, `came passages` and `came search` to the program. */
export function registerCameCommands(program: Command): void {
  const came = program
    .command('came')
    .description('CAME: lexical, local and global experts on a shared bottom, competitive learning, fused retrieval');
  trainingOptions(came.command('train'), {
    data: 'BEIR layout: corpus.jsonl, queries.jsonl, qrels/train.tsv (qrels/dev.tsv)',
    out: 'the CAME directory to write',
    batch: [16, 'questions per batch'],
    glove: true,
    dtype: true,
    hidden: 100,
    lengths: [32, 192],
    init: true,
  })
    .description('train CAME on a BEIR dataset (train split; dev picks checkpoints and fits the linear fusion) into a CAME directory')
    .option('--mode <name>', 'competitive (standardized, then specialized) or standardized (sum of losses throughout)', 'competitive')
    .option('--independent', "one model per expert, trained alone (the paper's baseline)")
    .option('--epochs <n>', 'epochs on BM25 negatives', count, 3)
    .option('--hard-epochs <n>', 'epochs on hard negatives mined from the experts (0: none)', count, 1)
    .option('--negatives <n>', 'negatives per positive', count, 7)
    .option('--tau <x>', "the competition's temperature", num, 0.5)
    .option('--flops <x>', 'FLOPS weight of the lexical expert', num, 0.01)
    .option(
      '--shared-layers <n>',
      "Transformer blocks shared by the experts (with --init: the checkpoint's layers less --expert-layers)",
      count,
      1,
    )
    .option('--expert-layers <n>', "each expert's own blocks", count, 1)
    .option('--budget <s>', 'stop each stage after the first epoch past this many seconds', int)
    .option('--nproc <n>', 'train as n data-parallel ranks on this machine (see docs/guides/distributed.md)', count)
    .action(async (o: CameTrainCommandOptions, cmd: Command) => {
      checkInitConflicts(cmd, ['hidden', 'sharedLayers']);
      await cameTrainCommand(o);
    });
  came
    .command('index')
    .description("encode a dataset's corpus with every expert and save the three indexes into the CAME directory")
    .requiredOption('--came <dir>', 'a directory from `quorum came train`')
    .requiredOption('--data <dir>', 'the BEIR dataset whose corpus to index')
    .action(async (o: { came: string; data: string }) => cameIndexCommand(o));
  came
    .command('passages')
    .description(
      'add or remove passages of an indexed CAME directory without retraining: the experts encode the new ones (a server reloads it to serve them)',
    )
    .requiredOption('--came <dir>', 'a directory from `quorum came train`, indexed by `quorum came index` (its index is rewritten)')
    .option('--add <file>', 'passages to add: a corpus.jsonl file ({ _id, title, text } per line) or a BEIR directory')
    .option('--remove <ids>', 'comma-separated passage ids to remove (removed first: an id can be removed and added again)', list)
    .action(async (o: { came: string; add?: string; remove?: string[] }) => camePassagesCommand(o));
  came
    .command('search')
    .description('search an indexed CAME directory: the fused top-k')
    .argument('<queries...>', 'question texts')
    .requiredOption('--came <dir>', 'a directory from `quorum came train`, indexed by `quorum came index`')
    .option('--k <n>', 'hits per query', int, 10)
    .option('--fusion <name>', CAME_FUSIONS.join(', '), 'sum')
    .action(async (queries: string[], o: { came: string; k: number; fusion: string }) => cameSearchCommand(queries, o));
}
