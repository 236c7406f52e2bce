// Issue 24's experiment: ROM on a multi-domain benchmark (default data/multidomain-mini; --data=/tmp/quorum-full/data
// for the full one), every model from GloVe on the train split of the SQuAD-style tasks (dev: average rank, refreshes,
// checkpoints), scored on the test split: retrieval Recall@20 / MRR@10 and end-to-end EM / F1 (SQuAD's official
// normalisation; retrieve 10, read, answer) per task, for
//   - each schedule of the joint phase (pipeline, equal, gradual, random, iterative): one ROM encoder;
//   - three separate models: a bi-encoder (question and passage encoders) and a reader network, ~3x the parameters;
//   - with a fraction (default 1%) of the retrieval labels: no pre-training, ICT, PhraseICT (retrieval only);
// plus the count and time of index refreshes and the reader's throughput (passages/s).
//   node --import tsx bench/rom.ts [--data=DIR] [--tasks=wiki,reddit,covid] [--train-sample=N] [--runs=schedules,separate,low]
//     [--schedules=pipeline,equal,gradual,random,iterative] [--retrieval-epochs=2] [--joint-epochs=4] [--batch=16]
//     [--reader-questions=4] [--reader-passages=10] [--lr=1e-3] [--low=0.01] [--low-epochs=10] [--pretrain-epochs=1]
//     [--pretrain-examples=N] [--qa-sample=N]
import { join } from 'node:path';

import { loadBeir } from '../lib/data/beir.js';
import { evaluate as evaluateRanking, rankedRun } from '../lib/eval/ranking.js';
import { capabilities } from '../lib/index.js';
import { RomModel } from '../lib/methods/rom/model.js';
import { ROM_SCHEDULES, type RomSchedule } from '../lib/methods/rom/schedule.js';
import { squadScores } from '../lib/methods/rom/squad.js';
import { trainRom, type RomTrainOptions, type RomTrainRecord } from '../lib/methods/rom/train.js';
import { packageRoot } from '../lib/native.js';
import { seededRandom } from '../lib/random.js';
import { initFromGlove } from '../lib/train/init.js';
import { prepareTraining } from '../lib/train/prepare.js';
import { Retriever } from '../lib/models/retriever.js';
import { shuffle } from '../lib/random.js';
import { trainRetriever } from '../lib/train/trainer.js';
import { writeResults } from './harness.js';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const dir = arg('data', join(packageRoot, 'data', 'multidomain-mini'));
const tasks = arg('tasks', dir.includes('multidomain-mini') ? 'covid' : 'wiki,reddit,covid').split(',').filter(Boolean);
const runs = arg('runs', 'schedules,separate,low').split(',').filter(Boolean);
const schedules = arg('schedules', ROM_SCHEDULES.join(',')).split(',').filter(Boolean) as RomSchedule[];
const retrievalEpochs = Number(arg('retrieval-epochs', '2'));
const jointEpochs = Number(arg('joint-epochs', '4'));
const batch = Number(arg('batch', '16'));
const readerQuestions = Number(arg('reader-questions', '4'));
const readerPassages = Number(arg('reader-passages', '10'));
const lr = Number(arg('lr', '1e-3'));
const low = Number(arg('low', '0.01'));
const lowEpochs = Number(arg('low-epochs', '10'));
const pretrainEpochs = Number(arg('pretrain-epochs', '1'));
const pretrainExamples = arg('pretrain-examples', '');
const sample = Number(arg('train-sample', '0'));
const qaSample = Number(arg('qa-sample', '0'));
const seed = 12345;
const network = { encoder: { hiddenSize: 100, embeddingSize: 100, layers: 2, ffnSize: 400, maxPositions: 256 } };
const text = { readerLength: 192, maxPassageLength: 128, maxQueryLength: 32, maxAnswerLength: 10 };

const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads`);
const d = await prepareTraining(dir, { glove: true, wordVocab: true, tasks, log: console.log });
if (sample > 0 && sample < d.train.length) {
  d.train = shuffle(d.train.slice(), seededRandom(seed)).slice(0, sample);
  console.log(`training on a sample of ${sample} questions`);
}
const test = loadBeir(dir, 'test');
// The SQuAD-style tasks' test questions (xquad is test only: the wiki domain), those with answers for EM / F1.
const qaTasks = [...new Set([...tasks, ...(test.queries.some((q) => q.task === 'xquad') ? ['xquad'] : [])])].filter((t) => t !== 'selqa' && t !== 'climate').sort();
let testQ = test.queries.filter((q) => test.qrels.has(q.id) && qaTasks.includes(q.task ?? ''));
if (qaSample > 0 && qaSample < testQ.length) testQ = shuffle(testQ.slice(), seededRandom(seed + 1)).slice(0, qaSample);
console.log(`test: ${testQ.length} questions of ${qaTasks.join(', ')}`);

interface Scores {
  [task: string]: { r20: number; mrr10: number; em: number; f1: number; n: number };
}

/** Retrieval and end-to-end QA on the test questions, and the reader's throughput. */
async function evaluate(rom: RomModel): Promise<{ scores: Scores; readerPassagesPerSecond: number }> {
  await rom.index(test.corpus);
  const questions = testQ.map((q) => q.text);
  const hits = await rom.search(questions, { k: 100 });
  const t0 = performance.now();
  const answers = await rom.read(questions, hits.map((h) => h.slice(0, 10)));
  const seconds = (performance.now() - t0) / 1000;
  const scores: Scores = {};
  for (const t of [...qaTasks, 'all']) {
    const idx = testQ.map((q, i) => (t === 'all' || q.task === t ? i : -1)).filter((i) => i >= 0);
    if (!idx.length) continue;
    const run = new Map(idx.map((i) => [testQ[i]!.id, hits[i]!.map((h) => test.corpus[h.id]!.id)]));
    const qrels = new Map(idx.map((i) => [testQ[i]!.id, test.qrels.get(testQ[i]!.id)!]));
    const m = evaluateRanking(rankedRun(run), qrels, ['recall@20', 'mrr@10']).mean;
    let em = 0;
    let f1 = 0;
    let n = 0;
    for (const i of idx) {
      const golds = testQ[i]!.answers;
      if (!golds?.length) continue;
      const s = squadScores(answers[i]!.answer, golds);
      em += s.em;
      f1 += s.f1;
      n++;
    }
    scores[t] = { r20: m['recall@20'] ?? 0, mrr10: m['mrr@10'] ?? 0, em: em / Math.max(n, 1), f1: f1 / Math.max(n, 1), n };
  }
  return { scores, readerPassagesPerSecond: (questions.length * 10) / seconds };
}

const header = `| run | params | ${qaTasks.map((t) => `${t} R@20 / MRR@10 / EM / F1`).join(' | ')} | all R@20 | all MRR@10 | all EM | all F1 |\n|${'---|'.repeat(qaTasks.length + 6)}`;
const row = (name: string, params: number, s: Scores) =>
  `| ${name} | ${(params / 1e6).toFixed(1)}M | ${qaTasks.map((t) => (s[t] ? [s[t]!.r20, s[t]!.mrr10, s[t]!.em, s[t]!.f1].map((x) => x.toFixed(3)).join(' / ') : '-')).join(' | ')} | ` +
  `${['r20', 'mrr10', 'em', 'f1'].map((k) => s['all']![k as 'r20']!.toFixed(3)).join(' | ')} |`;

const results: Record<string, unknown> = { data: dir, tasks, options: { sample, retrievalEpochs, jointEpochs, batch, readerQuestions, readerPassages, lr, low, lowEpochs, pretrainEpochs }, machine: { isa: caps.isa, threads: caps.threads } };
const markdown: string[] = [];
// Lines printed under the tables (a Markdown table must stay contiguous).
const notes: string[] = [];
const base: RomTrainOptions = { retrievalEpochs, jointEpochs, batchSize: batch, readerQuestions, readerPassages, lr, seed, log: console.log };

async function freshRom(): Promise<RomModel> {
  Retriever.seed(seed);
  const rom = RomModel.create({ tokenizer: d.tokenizer, network, text });
  await initFromGlove(rom.network, d.tokenizer.vocabulary, { glove: d.glove!, seed });
  return rom;
}

const refreshLine = (name: string, r: RomTrainRecord) =>
  `${name}: ${r.refreshes.length} index refreshes (after joint epochs ${r.refreshes.map((e) => `${e.round + 1}${e.forced ? ' forced' : ''}`).join(', ')}; 0 = the start of the joint phase) of ${r.refreshes.map((e) => e.seconds.toFixed(1)).join(', ')} s; ` +
  `${r.refreshes.filter((e) => e.updatedReader).length} updated the reader's passages; training ${Math.round(r.seconds)} s; ${r.readerExamples} reader questions`;

if (runs.includes('schedules') || runs.includes('separate')) markdown.push(`\n#### One ROM encoder per schedule, and three separate models (test split)\n\n${header}`);
if (runs.includes('schedules')) {
  for (const schedule of schedules) {
    console.log(`\n=== ROM, ${schedule} schedule ===`);
    const rom = await freshRom();
    const record = await trainRom(rom, { passages: d.passages, train: d.train, dev: d.dev }, { ...base, schedule });
    const ev = await evaluate(rom);
    results[`rom-${schedule}`] = { ...ev, training: record, parameters: rom.parameterCount };
    markdown.push(row(`ROM ${schedule}`, rom.parameterCount, ev.scores));
    notes.push(`- ${refreshLine(`ROM ${schedule}`, record)}; reader ${Math.round(ev.readerPassagesPerSecond)} passages/s at test time`);
    console.log(markdown.at(-1), '\n' + notes.at(-1));
  }
}
if (runs.includes('separate')) {
  console.log('\n=== three separate models: bi-encoder + reader ===');
  Retriever.seed(seed);
  const bi = Retriever.create({ preset: 'bi-encoder', encoder: { ...network.encoder, vocabSize: d.tokenizer.size } });
  await initFromGlove(bi, d.tokenizer.vocabulary, { glove: d.glove!, seed });
  // The bi-encoder gets ROM's retrieval epochs plus half the joint ones (the joint phase's average retrieval weight).
  const biEpochs = retrievalEpochs + Math.ceil(jointEpochs / 2);
  const t0 = performance.now();
  await trainRetriever(bi, d.tokenizer, { passages: d.passages, train: d.train, dev: d.dev }, { epochs: biEpochs, batchSize: batch, lr, seed, validation: 'average-rank', taskMarkers: false, maxPassageLength: text.maxPassageLength, log: console.log });
  const biSeconds = (performance.now() - t0) / 1000;
  const rom = await freshRom();
  rom.retrieval = { kind: 'retriever', model: bi };
  const record = await trainRom(rom, { passages: d.passages, train: d.train, dev: d.dev }, { ...base, retrievalEpochs: 0, schedule: 'equal' });
  const ev = await evaluate(rom);
  results['separate'] = { ...ev, training: record, biEncoderSeconds: biSeconds, parameters: rom.parameterCount };
  markdown.push(row('3 models (bi-encoder + reader)', rom.parameterCount, ev.scores));
  notes.push(`- 3 models: bi-encoder ${biEpochs} epochs in ${Math.round(biSeconds)} s, then the reader alone ${Math.round(record.seconds)} s; reader ${Math.round(ev.readerPassagesPerSecond)} passages/s at test time`);
  console.log(markdown.at(-1), '\n' + notes.at(-1));
}
if (notes.length) markdown.push('', ...notes.splice(0));
if (runs.includes('low')) {
  const n = Math.max(1, Math.round(d.train.length * low));
  const few = shuffle(d.train.slice(), seededRandom(seed + 2)).slice(0, n);
  markdown.push(`\n#### ${(low * 100).toFixed(0)}% of the retrieval labels (${n} questions, ${lowEpochs} retrieval epochs), with and without self-supervised pre-training (retrieval only, test split)\n\n${header}`);
  for (const pre of [[], ['ict'], ['phrase_ict']] as Array<Array<'ict' | 'phrase_ict'>>) {
    const name = pre.length ? pre.join('+') : 'no pre-training';
    console.log(`\n=== ${low * 100}% labels, ${name} ===`);
    const rom = await freshRom();
    const record = await trainRom(rom, { passages: d.passages, train: few, dev: d.dev }, {
      ...base,
      retrievalEpochs: lowEpochs,
      jointEpochs: 0,
      ...(pre.length ? { pretrain: { tasks: pre, epochs: pretrainEpochs, ...(pretrainExamples ? { examplesPerEpoch: Number(pretrainExamples) } : {}) } } : {}),
    });
    const ev = await evaluate(rom);
    results[`low-${name}`] = { ...ev, training: record };
    markdown.push(row(name, rom.parameterCount, ev.scores));
    console.log(markdown.at(-1));
  }
}

console.log('\n' + markdown.join('\n'));
console.log(`\nresults written to ${writeResults('rom', { ...results, markdown: markdown.join('\n') })}`);
