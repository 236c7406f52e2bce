#!/usr/bin/env node
// The `quorum` command line (commander). Every command exits non-zero with a one-line message on bad input.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { Command, CommanderError } from 'commander';

import { checkOutputDirectory } from '../data/files.js';
import { QuorumError } from '../errors.js';
import { checkInitConflicts, count, int, list, num, numbers, trainingOptions, weight } from './args.js';
import { describeError } from './errors.js';
import { demo } from './demo.js';
import { EVAL_METHODS, evalCommand, tuneModelHybrid } from './eval.js';
import { encodeCommand } from './encode.js';
import { exportCommand, type ExportCommandOptions } from './export.js';
import { POOLINGS, PRESETS, TRAIN_DEFAULTS, trainCommand, type TrainCommandOptions } from './train.js';
import { fuseCommand } from './fuse.js';
import { reportCommand } from './report.js';
import { indexBm25, indexDense, searchCommand } from './index-search.js';
import { TASKS, type TaskName, buildMultiDomain, writeMultiDomain } from '../builders/multidomain.js';
import { registerCameCommands } from '../methods/came/cli.js';
import { registerMufCommands } from '../methods/muf/cli.js';
import { registerRomCommands } from '../methods/rom/cli.js';
import { packageRoot } from '../native.js';
import { modelDir } from '../models/model-dir.js';

const HF_POOLING_HELP = "a Hugging Face directory's pooling: cls, mean or max (default: its 1_Pooling/config.json, else cls)";
const HF_NORMALIZE_HELP = "a Hugging Face directory's outputs as unit vectors (default: when its modules.json has Normalize)";

const { version } = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string };

// Commander's own errors (unknown option, bad value) go through the same one-line `quorum: ERR_...` report as
// ours: exitOverride makes them exceptions, and its own error printing is silenced. Subcommands inherit both.
const program = new Command('quorum')
  .description('Multi-expert dense retrieval: native kernels, indexes, fusion and evaluation')
  .version(version, '-V, --version', 'print the version')
  .exitOverride()
  .configureOutput({ outputError: () => {} });

// An output directory that names a file (`--out notes.txt`) is refused before the command's work, not after it
// (issue 65); the save checks again, since the path may change meanwhile.
program.hook('preAction', (_program, action) => {
  const out: unknown = action.opts().out;
  if (action.options.find((opt) => opt.long === '--out')?.flags.includes('<dir>') && out !== undefined) checkOutputDirectory(out as string);
});

program
  .command('demo')
  .description(
    'the multi-expert pipeline on the embedded benchmark (or a BEIR-layout --data DIR with tasks): BM25, the shipped dense model, DPR-MUF, hybrids, the HTML report; then the native kernels against plain JS',
  )
  .option('--data <dir>', 'a BEIR-layout dataset instead of the embedded one')
  .option(
    '--model <dir>',
    "the dense encoder: a model directory, 'default' (the shipped trained model) or 'tfidf' (hashed TF-IDF)",
    'default',
  )
  .option('--dim <n>', 'hashed TF-IDF dimension', int, 768)
  .option('--no-muf', 'skip DPR-MUF')
  .option(
    '--experts <kind>',
    "DPR-MUF's experts: 'trained' (one 0-layer Siamese model per task, trained here from GloVe on its task's questions alone) or 'shared' (the dense model, with each task's marker)",
    'trained',
  )
  .option('--report <file>', 'the HTML report', 'quorum-demo-report.html')
  .option('--no-report', 'write no report')
  .option('--no-bench', 'skip the speed check')
  .action(async (o: { data?: string; dim: number; bench: boolean; model: string; muf: boolean; report: string | false; experts: string }) =>
    demo({ ...o, experts: o.experts as 'trained' | 'shared', model: o.model === 'default' ? undefined : o.model }),
  );

program
  .command('eval')
  .description('run retrieval methods and/or score TREC run files on any BEIR-layout dataset')
  .requiredOption('--data <dir>', 'BEIR layout: corpus.jsonl, queries.jsonl, qrels/<split>.tsv')
  .option('--split <name>', 'qrels split', 'test')
  .option('--methods <list>', `comma-separated: ${EVAL_METHODS.join(', ')}`, list, [] as string[])
  .option('--run <file...>', 'TREC run files to score as well', [] as string[])
  .option('--metrics <list>', 'e.g. ndcg@10,recall@100,mrr@10,map', list, ['ndcg@10', 'recall@100', 'mrr@10'])
  .option('--k <n>', 'retrieval depth', int, 100)
  .option('--dim <n>', "the 'dense' method's hashed TF-IDF dimension", int, 768)
  .option(
    '--alpha <x>',
    "the 'hybrid' method's alpha (normalized scores, weight on BM25; default: tuned for MRR@10 on the dev split over 0..100, per task when queries carry tasks, else 1)",
    weight,
  )
  .option('--no-alpha-per-task', 'tune one alpha for all tasks')
  .option(
    '--no-hybrid-guard',
    'keep the tuned alpha even where its dev gain over BM25 is under one standard error (default: BM25 alone there)',
  )
  .option(
    '--model <dir>',
    "a model directory from `quorum train`, or 'default' (the shipped model): the 'dense' method uses it (default: hashed TF-IDF)",
  )
  .option('--out <dir>', 'write <method>.trec run files and metrics.json here')
  .option('--by-task', "also each task's mean (the queries' `task` field)")
  .option(
    '--muf <dir>',
    'a MUF directory (`quorum muf train`): adds muf, muf-mi, muf-uniform, muf-oracle, expert:<name> and muf-hybrid, and prints abstention coverage',
  )
  .option(
    '--came <dir>',
    'a CAME directory (`quorum came train`): adds came (Sum), came:<fusion> for the other fusions and came-expert:<name>',
  )
  .option('--report <file>', 'also write the HTML report (metric bars, Recall@k curves, MUF calibration, latency) to this file')
  .option('--latency <n>', 'time n single-query searches per method for the report', count, 0)
  .action(
    // --run FILE is repeatable, so commander names the list after the option: runs of evalCommand's options.
    async ({ run, ...o }: Omit<Parameters<typeof evalCommand>[0], 'runs'> & { run: string[] }) => evalCommand({ ...o, runs: run }),
  );

program
  .command('report')
  .description('write the HTML report of an evaluation (the metrics.json of quorum eval --out DIR)')
  .argument('<dir>', 'a results directory from quorum eval --out (or its metrics.json)')
  .requiredOption('--out <file>', 'the HTML file to write')
  .option('--title <text>', 'the page title')
  .action((dir: string, o: { out: string; title?: string }) => reportCommand(dir, o));

trainingOptions(program.command('train'), {
  data: 'BEIR layout: corpus.jsonl, queries.jsonl, qrels/train.tsv (and qrels/dev.tsv)',
  out: 'the model directory to write (model.json, vocab.txt, tokenizer.json, weights.safetensors, checkpoints/)',
  batch: [TRAIN_DEFAULTS.batch, 'questions per batch'],
  seed: 'seed of initialization and batches',
  hidden: TRAIN_DEFAULTS.hidden,
  lengths: [TRAIN_DEFAULTS.maxQueryLength, TRAIN_DEFAULTS.maxPassageLength],
  glove: true,
  dtype: true,
  init: 'quorum',
})
  .description('train a dense retriever on a BEIR-layout dataset (train split; dev split picks the best epoch) into a model directory')
  .requiredOption('--preset <name>', `${PRESETS.join(', ')}`)
  .option('--tasks <list>', "train on these tasks only (the queries' `task` field)", list)
  .option(
    '--pooling <name>',
    `${POOLINGS.join(', ')} (default: mean; with --init, the checkpoint's sentence-transformers pooling, else cls)`,
  )
  .option('--layers <n>', 'Transformer layers (0: embeddings and pooling only)', count, TRAIN_DEFAULTS.layers)
  .option('--projection <n>', 'a linear head of this width after pooling (equal to --hidden: it starts as the identity); 0: none', count, 0)
  .option('--epochs <n>', 'passes over the training questions', int, TRAIN_DEFAULTS.epochs)
  .option('--temperature <x>', 'softmax temperature (default 0.05: the embeddings are unit vectors)', num)
  .option('--hard-negatives <n>', 'BM25 hard negatives per question', count, TRAIN_DEFAULTS.hardNegatives)
  .option(
    '--attention-window <n>',
    'self-attention within windows of n tokens, linear in the passage length (0: the whole sequence)',
    int,
    0,
  )
  .option('--freeze <list>', 'parameters not trained: names containing any of these (e.g. word_embeddings keeps the GloVe vectors)', list)
  .option('--no-word-vocab', "WordPiece's vocabulary only (default: plus the corpus's whole words that GloVe has)")
  .option('--no-nfkc', "BERT's text normalization alone (default: compatibility characters such as PDF ligatures folded first, NFKC)")
  .option('--no-fit-pooling', 'plain mean pooling: no IDF token weights, no corpus centring')
  .option('--budget <seconds>', 'stop after the epoch that passes this much training time', num)
  .option('--resume', 'continue from <out>/checkpoints')
  .option(
    '--no-task-markers',
    'no task marker before the questions (default: markers when training on several tasks); a model for questions of unknown task',
  )
  .option(
    '--nproc <n>',
    'train as n data-parallel ranks on this machine (each batch split across them; on several machines set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT instead)',
    count,
  )
  .action(async (o: Omit<TrainCommandOptions, 'hardNegatives'> & { hardNegatives: number }, cmd: Command) => {
    checkInitConflicts(cmd, ['hidden', 'layers', 'wordVocab', 'nfkc', 'fitPooling']);
    await trainCommand({
      ...o,
      givenLengths: {
        query: cmd.getOptionValueSource('maxQueryLength') === 'cli',
        passage: cmd.getOptionValueSource('maxPassageLength') === 'cli',
      },
    });
  });

registerMufCommands(program);
registerCameCommands(program);
registerRomCommands(program);

program
  .command('encode')
  .description('encode a BEIR corpus with a trained model: vectors.f32, ids.txt and an exact DenseIndex (index.qdx)')
  .requiredOption('--model <dir>', 'a model directory from `quorum train`, or a Hugging Face BERT-family directory')
  .requiredOption('--data <dir>', 'BEIR layout: corpus.jsonl')
  .requiredOption('--out <dir>', 'where to write the vectors and the index')
  .option('--pooling <name>', HF_POOLING_HELP)
  .option('--normalize', HF_NORMALIZE_HELP)
  .option(
    '--nproc <n>',
    'encode as n ranks on this machine, each a part of the corpus, into one index (on several machines set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT instead)',
    count,
  )
  .option(
    '--quantize <kind>',
    'also write the vectors quantized, int8 or binary, as quantized/ (QuantizedTensor.load) with the full vectors as vectors.qtns (Tensor.map) to rescore with',
  )
  .action(
    async (o: { model: string; data: string; out: string; pooling?: string; normalize?: boolean; nproc?: number; quantize?: string }) =>
      encodeCommand(o),
  );

program
  .command('hybrid-alpha')
  .description(
    "tune the dense + BM25 hybrid's alpha for a model on a dataset's dev split and store it in the model's card (quorum train does this itself)",
  )
  .requiredOption('--model <dir>', 'a model directory from `quorum train`')
  .requiredOption('--data <dir>', 'a BEIR-layout dataset with qrels/dev.tsv')
  .action(async (o: { model: string; data: string }) => {
    const h = await tuneModelHybrid(o);
    console.log(
      `stored in ${join(modelDir(o.model), 'model.json')}: alpha ${h.alpha ?? 'BM25 alone'}${h.byTask ? `, per task ${JSON.stringify(h.byTask)}` : ''}`,
    );
  });

program
  .command('export')
  .description(
    'hand a model to other tools: a Hugging Face / sentence-transformers directory (hf) or ONNX graphs with the tokenizer (onnx)',
  )
  .requiredOption('--model <dir>', "a model directory from `quorum train`, 'default', or a Hugging Face BERT-family directory")
  .requiredOption('--format <name>', 'hf or onnx')
  .requiredOption('--out <dir>', 'the directory to write')
  .option('--pooling <name>', HF_POOLING_HELP)
  .option('--normalize', HF_NORMALIZE_HELP)
  .action(async (o: ExportCommandOptions) => exportCommand(o));

program
  .command('fuse')
  .description("fuse TREC run files into one run file, by any fusion method of docs/methods/fusion.md but MUF's (which needs confidences)")
  .argument('<runs...>', 'TREC run files')
  .requiredOption('--method <name>', 'rrf, sum, wsum, mnz, bordafuse, condorcet, came-sum, hybrid, ...')
  .requiredOption('--out <file>', 'the fused TREC run file')
  .option('--norm <name>', 'none, min-max, min-max-inverted, max, sum, zmuv, rank, borda')
  .option('--missing <policy>', 'zero, min, kth, exclude, -inf, +inf')
  .option('--weights <list>', 'one weight per run', numbers)
  .option('--k <n>', 'list depth K of --missing kth', int)
  .option('--depth <n>', 'keep the best n per query', int)
  .option('--rrf-k <n>', "rrf's k", num)
  .option('--phi <x>', "rbc's phi", num)
  .option('--gamma <x>', "gmnz's gamma", num)
  .option('--alpha <x>', "hybrid's alpha", weight)
  .option('--sigma <x>', "logn_isr's sigma", num)
  .option('--window <n>', "slidefuse's half window", int)
  .option('--segments <n>', "probfuse's segments", int)
  .option('--train-runs <list>', 'supervised methods: one run file per input run, same systems on training questions', list)
  .option('--train-qrels <file>', 'supervised methods: qrels of the training questions')
  .option(
    '--qrels <file>',
    'qrels (TREC, or the BEIR qrels/<split>.tsv of quorum data build): print the metrics of the inputs and of the fused run',
  )
  .option('--metrics <list>', 'metrics with --qrels', list, ['ndcg@10', 'recall@100', 'mrr@10'])
  .action(async (runs: string[], o: Record<string, unknown>) =>
    fuseCommand({ ...(o as unknown as Parameters<typeof fuseCommand>[0]), runs, rrfK: o.rrfK as number | undefined }),
  );

const index = program.command('index').description('build an index file');
index
  .command('bm25')
  .description('BM25 (Lucene formula, English analyzer) over the corpus of a BEIR-layout dataset')
  .requiredOption('--data <dir>', 'a BEIR-layout dataset (corpus.jsonl is read)')
  .requiredOption('--out <file>', 'the index file')
  .option('--k1 <x>', 'k1', num, 0.9)
  .option('--b <x>', 'b', num, 0.4)
  .action(async (o: { data: string; out: string; k1: number; b: number }) => indexBm25(o));
index
  .command('dense')
  .description('a faiss DenseIndex over a raw little-endian float32 vectors file (rows x dim) and an ids file')
  .requiredOption('--vectors <file>', 'raw float32, rows x dim')
  .requiredOption('--ids <file>', 'one passage id per line, in row order')
  .requiredOption('--dim <n>', 'vector dimension', int)
  .requiredOption('--out <file>', 'the index file (the ids go to <file>.ids)')
  .option('--factory <s>', 'faiss factory string', 'Flat')
  .option('--mips <m>', 'inner-product or l2', 'inner-product')
  .option('--train <n>', 'train IVF / PQ on the first n vectors (default: all)', int)
  .action(async (o: { vectors: string; ids: string; dim: number; out: string; factory: string; mips: string; train?: number }) =>
    indexDense(o),
  );

program
  .command('search')
  .description('search a BM25 or dense index file into a TREC run file')
  .requiredOption('--index <file>', 'from quorum index')
  .requiredOption('--out <file>', 'the TREC run file')
  .option('--data <dir>', 'BM25: the queries.jsonl of this BEIR-layout dataset')
  .option('--queries <file>', 'BM25: a queries.jsonl ({_id, text})')
  .option('--split <name>', 'BM25 with --data: only the queries of qrels/<name>.tsv (e.g. test)')
  .option('--query-vectors <file>', 'dense: raw float32 query vectors')
  .option('--query-ids <file>', 'dense: one query id per line')
  .option('--k <n>', 'results per query', int, 100)
  .option('--ef-search <n>', 'HNSW efSearch', int)
  .option('--nprobe <n>', 'IVF nprobe', int)
  .option(
    '--filter <json>',
    'only passages whose metadata match, inside the search (needs --data: its corpus\'s titles and metadata), e.g. \'{"field":"title","eq":"Paris"}\'',
  )
  .action(async (o: Parameters<typeof searchCommand>[0]) => searchCommand(o));

const data = program.command('data').description('datasets');
data
  .command('build')
  .description('build the multi-domain benchmark (BEIR layout, a task per query, split by document) from the public source files')
  .requiredOption('--data <dir>', 'the source files, laid out as docs/data.md ("Source files of the multi-domain benchmark") describes')
  .requiredOption('--out <dir>', 'where to write corpus.jsonl, queries.jsonl, qrels/{train,dev,test}.tsv, metadata.json')
  .option('--tasks <list>', `comma-separated subset of ${TASKS.join(', ')}`, list, [...TASKS] as string[])
  .option('--seed <n>', 'split seed', int, 13)
  .option('--chunk-words <n>', 'COVID-QA window length in words', int, 100)
  .option('--max-docs <task=n,...>', 'keep at most n documents of a task (a seeded sample)', list, [] as string[])
  .action((o: { data: string; out: string; tasks: string[]; seed: number; chunkWords: number; maxDocs: string[] }) => {
    const maxDocs: Partial<Record<TaskName, number>> = {};
    for (const kv of o.maxDocs) {
      const [task, n] = kv.split('=');
      if (!task || !n || !Number.isInteger(Number(n)) || Number(n) < 1)
        throw new QuorumError('ERR_ARG', `--max-docs expects task=n, got '${kv}'`);
      maxDocs[task as TaskName] = Number(n);
    }
    const built = buildMultiDomain(o.data, {
      tasks: o.tasks as TaskName[],
      seed: o.seed,
      chunkWords: o.chunkWords,
      ...(o.maxDocs.length ? { maxDocs } : {}),
    });
    writeMultiDomain(o.out, built);
    console.log(`wrote ${built.corpus.length} passages and ${built.queries.length} queries (${o.tasks.join(', ')}) to ${o.out}`);
  });

// No command is bad input like any other: one line and exit 1, not the whole help on stderr.
if (process.argv.length <= 2) {
  console.error(`quorum: ERR_ARG: give a command: ${program.commands.map((c) => c.name()).join(', ')} (quorum --help describes them)`);
  process.exit(1);
}

program.parseAsync(process.argv).catch((e: unknown) => {
  if (e instanceof CommanderError) {
    // --help and --version end here too, with exit code 0.
    if (e.exitCode === 0) process.exit(0);
    console.error(`quorum: ERR_ARG: ${e.message.replace(/^error: /, '')} (add --help for usage)`);
    process.exit(1);
  }
  console.error(`quorum: ${describeError(e)}`);
  process.exit(1);
});
