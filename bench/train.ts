// Issue 20's experiment: on the multi-domain benchmark (default: the embedded data/multidomain-mini), BM25 and the
// training-free GloVe average beside the three presets (DPR bi-encoder, Siamese, TASER Det-R) initialised from GloVe
// and trained on the train split. Each preset is scored on the test split at step 0 and after every epoch (reported,
// never used for selection: the kept checkpoint is the best by dev MRR), with the spread of its passage vectors
// (a mean pairwise cosine near 1 is a collapse). Then training throughput: the TypeScript loop against one native
// call running the same steps.
//   node --import tsx bench/train.ts [--budget=600] [--epochs=8] [--lr=1e-3] [--batch=32] [--pooling=mean]
//     [--normalize=1] [--token-weights=1] [--center=1] [--word-vocab=1] [--temperature=0.05] [--layers=2] [--hidden=100] [--dropout=0.1] [--passage-length=512]
//     [--window=128 (attention window in tokens; 0: the whole sequence)] [--identity=0 (1: blocks start as the identity)]
//     [--ict=0 (1: ROM's ICT examples from the trained tasks' passages added to the training questions)] [--ict-keep=0.1]
//     [--wise=0 (1: the kept model interpolated toward its start, WiSE-FT, lambda chosen on dev MRR@10)]
//     [--refit-centre=0 (1: the centre refit on the corpus after training, kept if dev MRR@10 rises)]
//     [--projection=0 (N: a linear head after pooling; square, initFromGlove starts it as the identity)]
//     [--group-batches=0 (1: a gold document's questions share batches, TAS-style)]
//     [--same-document=0 (1: hard negatives only from the gold passage's own document, where BM25 found any)]
//     [--mine=0 (1: a second round on hard negatives the kept model retrieves, Maillard et al.; kept if dev says so)]
//     [--mine-epochs=2] [--mine-k=30 (the mined list: the model's top mine-k non-gold passages...)] [--mine-skip=0 (...after its first mine-skip)]
//     [--frozen= (comma-separated parameter-name parts not trained, e.g. word_embeddings)]
//     [--fold-scale=0 (1: each token's GloVe spread folded into its IDF weight, undoing the embedding LayerNorm's)]
//     [--pool=1000 (passages in the dev pool that picks the epoch; 100000: the whole corpus)]
//     [--presets=taser,bi-encoder,siamese] [--data=DIR] [--reps=7] [--hard-negatives=1] [--layer-decay=0.8 taser, 1 others]
//     [--seed=12345 (initialisation, batch order and validation pool; the defaults' figures use 12345)]
//     [--nfkc=1 (0: the tokenizer without compatibility folding, as before 27 Nov)]
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

import { loadBeir, type BeirDataset } from '../lib/data/beir.js';
import { scoreTopK } from '../lib/dense.js';
import { GloveAverageEncoder } from '../lib/encoders/glove-average.js';
import { evaluate, groupMeans, rankedRun } from '../lib/eval/ranking.js';
import { randomizationTest } from '../lib/eval/significance.js';
import { packageRoot } from '../lib/native.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { gloveWordTokenizer } from '../lib/train/prepare.js';
import type { Pooling, RetrieverPreset } from '../lib/models/config.js';
import { encodeTable, indexTable } from '../lib/models/encode-corpus.js';
import { addBm25Negatives, examplesFromQrels, type PassageText, type TrainingExample } from '../lib/train/examples.js';
import { ictTrainingExamples } from './lib/ict.js';
import { interpolateParameters, snapshotParameters } from './lib/interpolate.js';
import { loadGloveVectors } from '../lib/models/glove.js';
import { fitCentre, fitPoolingToCorpus, initFromGlove } from '../lib/train/init.js';
import { Retriever } from '../lib/models/retriever.js';
import { composeBatch, mineHardNegatives, trainRetriever } from '../lib/train/trainer.js';
import { TokenTable } from '../lib/models/token-table.js';
import { table } from '../lib/cli/table.js';
import { median, sourceDocument, writeResults } from './harness.js';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const dir = arg('data', join(packageRoot, 'data', 'multidomain-mini'));
const budget = Number(arg('budget', '600'));
const epochs = Number(arg('epochs', '8'));
// --presets= (empty) skips training and runs only the throughput comparison.
const presets = arg('presets', 'taser,bi-encoder,siamese').split(',').filter(Boolean) as RetrieverPreset[];
const reps = Number(arg('reps', '7'));
const seed = Number(arg('seed', '12345'));
const hidden = Number(arg('hidden', '100'));
const passageLength = Number(arg('passage-length', '512'));
const encoder = {
  hiddenSize: hidden,
  embeddingSize: 100,
  layers: Number(arg('layers', '2')),
  heads: 4,
  ffnSize: 4 * hidden,
  maxPositions: Math.max(256, passageLength),
  attentionWindow: Number(arg('window', '128')),
  dropout: Number(arg('dropout', '0.1')),
  pooling: arg('pooling', 'mean') as Pooling,
  normalize: arg('normalize', '1') === '1',
  tokenWeights: arg('token-weights', '1') === '1',
  center: arg('center', '1') === '1',
  projectionDim: Number(arg('projection', '0')),
};
const train = {
  batchSize: Number(arg('batch', '32')),
  hardNegatives: Number(arg('hard-negatives', '1')),
  lr: Number(arg('lr', '1e-3')),
  temperature: Number(arg('temperature', encoder.normalize ? '0.05' : '1')),
  clip: 2.0,
  maxQueryLength: 32,
  maxPassageLength: passageLength,
  // --pool=N: passages in the dev pool that picks the epoch (gold, BM25 negatives, random); at least the corpus's
  // size: the whole corpus, so that the selection metric is the dev split's MRR as `quorum eval` measures it.
  validationPool: Number(arg('pool', '1000')),
};

const split = (s: string): BeirDataset => loadBeir(dir, s);
const trainDs = split('train');
const devDs = split('dev');
const testDs = split('test');
const passages = trainDs.corpus;
// --nfkc=0: BERT's normalization alone (before 27 Nov): PDF ligatures split words into pieces.
const baseTokenizer = await WordPieceTokenizer.load(undefined, { nfkc: arg('nfkc', '1') === '1' });
const trainEx = examplesFromQrels(trainDs, trainDs.qrels);
const devEx = examplesFromQrels(devDs, devDs.qrels);
const bm25 = await addBm25Negatives(trainEx, passages, { k: 30 });
await addBm25Negatives(devEx, passages, { k: 30, index: bm25 });
// A corpus row's document: `task-<doc>` of its id `task-<doc>-<chunk>` (quorum data build's ids).
const docOf = (row: number) => passages[row]!.id.split('-').slice(0, 2).join('-');
// --group-batches=1: a question's group is its gold passage's document, and batches keep a document's questions
// together (TAS-style), so that other chunks of that document are in-batch negatives.
if (arg('group-batches', '0') === '1') for (const e of trainEx) e.group = docOf(e.positives[0]!);
// --same-document=1: a question's hard negatives (drawn at random from its BM25 list) only from its gold passage's
// own document (`task-<doc>-<chunk>`) where that list has any, so that they are other chunks of that document
// (COVID-QA: for 49% of its training questions BM25's top negative already comes from the gold paper).
if (arg('same-document', '0') === '1') {
  for (const e of trainEx) {
    const gold = docOf(e.positives[0]!);
    const negs = e.hardNegatives ?? [];
    const same = negs.filter((r) => docOf(r) === gold);
    if (same.length) e.hardNegatives = same;
  }
}
const tasks = [...new Set(trainEx.map((e) => e.task))].sort();
// --ict=1: a passage's task is its id's prefix (quorum data build's `task-...` ids); passages of other tasks give none.
let trainPassages: readonly PassageText[] = passages;
let trainAll: TrainingExample[] = trainEx;
if (arg('ict', '0') === '1') {
  const ict = await ictTrainingExamples(passages, {
    taskOf: (r) => tasks.find((t) => passages[r]!.id.startsWith(`${t}-`)),
    keepRate: Number(arg('ict-keep', '0.1')),
    seed,
    index: bm25,
  });
  trainPassages = ict.passages;
  trainAll = [...trainEx, ...ict.examples];
  console.log(`ICT: ${ict.examples.length} self-supervised questions, ${ict.passages.length - passages.length} passages without their sentence`);
}
console.log(`${dir}: ${passages.length} passages; ${trainEx.length} train, ${devEx.length} dev, ${testDs.qrels.size} test questions; tasks ${tasks.join(', ')}`);
const t0 = performance.now();
const glove = await loadGloveVectors();
console.log(`GloVe loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
// --word-vocab=1: BERT's WordPiece vocabulary plus the whole words of the corpus and the training questions that
// GloVe has, so that such words keep their own GloVe vector instead of being read as pieces.
const tokenizer = arg('word-vocab', '1') === '1'
  ? gloveWordTokenizer(baseTokenizer, [...passages.flatMap((p) => [p.title, p.text]), ...trainEx.map((e) => e.query)], glove)
  : baseTokenizer;
console.log(`vocabulary: ${tokenizer.size} tokens (${tokenizer.size - baseTokenizer.size} whole words added)`);
(encoder as { vocabSize?: number }).vocabSize = tokenizer.size;

// Test evaluation per task (the test split also holds XQuAD, a task no model trained on: it runs as 'wiki'-like
// questions with no marker when markers are off). The dev split is scored the same way (what a selection may read),
// and each run's per-query MRR@10 is kept for the paired tests against the GloVe average.
const judgedOf = (ds: BeirDataset) => ds.queries.filter((q) => ds.qrels.has(q.id));
const testQueries = judgedOf(testDs);
const testTasks = [...new Set(testQueries.map((q) => q.task ?? 'default'))].sort();
const perQueryMrr = new Map<string, { test: Map<string, number>; dev: Map<string, number> }>();
// One evaluation per run: the per-task and all-task means, and each question's MRR@10 for the paired tests.
function score(run: Map<string, string[]>, ds: BeirDataset = testDs) {
  const metrics = ['recall@20', 'mrr@10'] as const;
  const { mean, perQuery } = evaluate(rankedRun(run), ds.qrels, metrics);
  const groups = groupMeans(perQuery, new Map(judgedOf(ds).map((q) => [q.id, q.task ?? 'default'])), metrics);
  const row = (m: Record<string, number>, questions: number) => ({ 'Recall@20': m['recall@20'] ?? 0, 'MRR@10': m['mrr@10'] ?? 0, questions });
  const scores: Record<string, Record<string, number>> = {};
  for (const [t, g] of Object.entries(groups)) scores[t] = row(g.mean, g.queries);
  scores['all'] = row(mean, perQuery.size);
  return { scores, mrr: new Map([...perQuery].map(([q, v]) => [q, v['mrr@10']!])) };
}

const results: Record<string, unknown> = {};
const rows: Array<Record<string, string | number>> = [];
const report = (name: string, params: number, s: Record<string, Record<string, number>>, extra: Record<string, string | number> = {}) => {
  const row: Record<string, string | number> = { model: name, parameters: params };
  for (const t of [...testTasks, 'all']) {
    row[`${t} R@20`] = (s[t]?.['Recall@20'] ?? 0).toFixed(3);
    row[`${t} MRR@10`] = (s[t]?.['MRR@10'] ?? 0).toFixed(3);
  }
  rows.push({ ...row, ...extra });
};

{
  const hits = await bm25.search(testQueries.map((q) => q.text), 100);
  const run = new Map(testQueries.map((q, i) => [q.id, (hits[i] ?? []).map((h) => passages[Number(h.id)]!.id)]));
  const s = score(run).scores;
  results['bm25'] = s;
  report('BM25 (k1 0.9, b 0.4)', 0, s);
}

// The training-free reference rows: plain averages, and IDF-weighted averages centred on the corpus mean.
for (const [name, fit] of [['GloVe average', false], ['GloVe average (IDF, centred)', true]] as const) {
  const texts = passages.map((p) => `${p.title} ${p.text}`);
  const enc = GloveAverageEncoder.fromVectors(glove, fit ? { fitOn: texts } : {});
  const corpus = enc.encode(texts);
  const runOf = async (ds: BeirDataset) => {
    const qs = judgedOf(ds);
    const top = await scoreTopK(enc.encode(qs.map((q) => q.text)), corpus, 100);
    return new Map(qs.map((q, i) => [q.id, top.hits(i).map((h) => passages[h.id]!.id)]));
  };
  const [test, dev] = [score(await runOf(testDs)), score(await runOf(devDs), devDs)];
  results[name] = { ...test.scores, dev: dev.scores };
  perQueryMrr.set(name, { test: test.mrr, dev: dev.mrr });
  report(name, 0, test.scores);
}

// Spread of a set of vectors: mean norm and the mean cosine over all pairs (1 = every vector points the same way).
function spread(E: Float32Array, d: number): { norm: number; pairCosine: number } {
  const n = E.length / d;
  const sum = new Float64Array(d);
  let norms = 0;
  for (let i = 0; i < n; i++) {
    let s2 = 0;
    for (let j = 0; j < d; j++) s2 += (E[i * d + j] as number) ** 2;
    const norm = Math.sqrt(s2) || 1;
    norms += norm;
    for (let j = 0; j < d; j++) sum[j] = (sum[j] as number) + (E[i * d + j] as number) / norm;
  }
  const total = sum.reduce((a, v) => a + v * v, 0);
  return { norm: norms / n, pairCosine: (total - n) / (n * (n - 1)) };
}

const passageTable = await TokenTable.passages(tokenizer, passages, train.maxPassageLength);

// A split through a model: task markers as in training, XQuAD (a task no model trained on) without one.
async function runModel(model: Retriever, ds: BeirDataset, index: Awaited<ReturnType<typeof indexTable>>['index']) {
  const run = new Map<string, string[]>();
  const qsAll = judgedOf(ds);
  for (const t of [...new Set(qsAll.map((q) => q.task ?? 'default'))]) {
    const qs = qsAll.filter((q) => (q.task ?? 'default') === t);
    const ti = tasks.indexOf(t);
    const qt = await TokenTable.build(tokenizer, qs.map((q) => q.text), { maxLength: train.maxQueryLength, marker: ti >= 0 ? tokenizer.markerId(ti + 1) : undefined });
    const emb = await encodeTable(model, qt, { side: 'query', task: Math.max(ti, 0) });
    const top = await index.search(emb, 100);
    qs.forEach((q, i) => run.set(q.id, top.hits(i).map((h) => passages[Number(h.id)]!.id)));
  }
  return run;
}
async function testModel(model: Retriever, name?: string) {
  const { index, embeddings } = await indexTable(model, passageTable);
  const test = score(await runModel(model, testDs, index));
  if (name) {
    const dev = score(await runModel(model, devDs, index), devDs);
    perQueryMrr.set(name, { test: test.mrr, dev: dev.mrr });
    return { scores: test.scores, dev: dev.scores, spread: spread(embeddings.data, model.dim) };
  }
  return { scores: test.scores, spread: spread(embeddings.data, model.dim) };
}
// The dev split alone (what a choice after training may read).
async function devModel(model: Retriever) {
  const { index } = await indexTable(model, passageTable);
  return score(await runModel(model, devDs, index), devDs).scores;
}

for (const preset of presets) {
  Retriever.seed(seed);
  const model = Retriever.create({ preset, encoder, tasks });
  const { coverage, uncovered } = await initFromGlove(model, tokenizer.vocabulary, { glove, seed, identityBlocks: arg('identity', '0') === '1' });
  await fitPoolingToCorpus(model, tokenizer, passages, { maxPassageLength: train.maxPassageLength, mute: arg('mute', '1') === '1' ? uncovered : [], foldTokenScale: arg('fold-scale', '0') === '1' });

  const ckpt = join(tmpdir(), `quorum-train-${preset}-${process.pid}`);
  mkdirSync(ckpt, { recursive: true });
  console.log(`\n${preset}: ${model.parameterCount.toLocaleString()} parameters, GloVe covers ${(coverage * 100).toFixed(1)}% of the vocabulary`);
  const curve: Array<{ epoch: number; loss?: number; accuracy?: number; devMrr?: number; testMrr: number; pairCosine: number; norm: number }> = [];
  // Named, so that its per-question figures join the comparisons with the GloVe average below: what training
  // changed per task and per source document, not only where the trained model ends.
  const step0 = await testModel(model, `${preset}, step 0`);
  curve.push({ epoch: 0, testMrr: step0.scores['all']!['MRR@10']!, ...step0.spread });
  console.log(`  step 0: test MRR@10 ${step0.scores['all']!['MRR@10']!.toFixed(3)}, passage vectors: norm ${step0.spread.norm.toFixed(2)}, mean pairwise cosine ${step0.spread.pairCosine.toFixed(3)}`);
  report(`${preset}, step 0`, model.parameterCount, step0.scores);
  console.log(`  step 0 dev MRR@10: ${[...tasks, 'all'].map((t) => `${t} ${(step0.dev![t]?.['MRR@10'] ?? 0).toFixed(3)}`).join(', ')}`);
  const start = snapshotParameters(model);
  // What both rounds share (a mined round below trains with the same settings).
  const options = {
    ...train,
    groupBatches: arg('group-batches', '0') === '1',
    frozen: arg('frozen', '').split(',').filter(Boolean),
    seed, // one seed: the same validation pool in both rounds, so that they compare
    layerDecay: Number(arg('layer-decay', preset === 'taser' ? '0.8' : '1')),
    timeBudgetSeconds: budget,
  };
  const r = await trainRetriever(model, tokenizer, { passages: trainPassages, train: trainAll, dev: devEx }, {
    ...options,
    epochs,
    checkpointDir: ckpt,
    log: (l) => console.log('  ' + l),
    onEpoch: async (e) => {
      const t = await testModel(model);
      curve.push({ epoch: e.epoch + 1, loss: e.loss, accuracy: e.accuracy, devMrr: e.validation?.mrr, testMrr: t.scores['all']!['MRR@10']!, ...t.spread });
      console.log(`    (report only) test MRR@10 ${t.scores['all']!['MRR@10']!.toFixed(3)}, passage vectors: norm ${t.spread.norm.toFixed(2)}, mean pairwise cosine ${t.spread.pairCosine.toFixed(3)}`);
    },
  });
  await model.load(join(ckpt, 'best.pt'));
  let minedRound: { train: Awaited<ReturnType<typeof trainRetriever>>; kept: boolean } | undefined;
  if (arg('mine', '0') === '1' && r.best) {
    // Maillard et al.'s second round: the labelled questions' hard negatives become the kept model's own top
    // passages (not gold; after the first mine-skip, which may hold unlabelled answers), and training goes on from
    // the kept checkpoint. The round is kept only if its best dev pool metric beats the first round's.
    const skip = Number(arg('mine-skip', '0'));
    const mined = (await mineHardNegatives(model, tokenizer, passages, trainEx, { k: skip + Number(arg('mine-k', '30')), maxQueryLength: train.maxQueryLength, maxPassageLength: train.maxPassageLength }))
      .map((e) => ({ ...e, hardNegatives: e.hardNegatives.slice(skip) }));
    // Per task, beside BM25's lists, so that the two compare on the same questions.
    for (const task of tasks) {
      const idx = trainEx.map((_, i) => i).filter((i) => trainEx[i]!.task === task);
      const share = (lists: ReadonlyArray<readonly number[]>) =>
        idx.filter((i) => lists[i]!.length > 0 && docOf(lists[i]![0]!) === docOf(trainEx[i]!.positives[0]!)).length / Math.max(idx.length, 1);
      const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
      console.log(`  mined (${task}): top negative from the gold passage's document for ${pct(share(mined.map((e) => e.hardNegatives)))} of the questions (BM25's: ${pct(share(trainEx.map((e) => e.hardNegatives)))})`);
    }
    const ckpt2 = `${ckpt}-mined`;
    mkdirSync(ckpt2, { recursive: true });
    const r2 = await trainRetriever(model, tokenizer, { passages: trainPassages, train: [...mined, ...trainAll.slice(trainEx.length)], dev: devEx }, {
      ...options,
      epochs: Number(arg('mine-epochs', '2')),
      checkpointDir: ckpt2,
      log: (l) => console.log('  (mined) ' + l),
    });
    const kept = r2.best !== undefined && r2.best.value < r.best.value;
    console.log(`  mined round: best dev pool value ${r2.best?.value.toFixed(4)} against ${r.best.value.toFixed(4)} after round 1: ${kept ? 'kept' : 'not kept'}`);
    minedRound = { train: r2, kept };
    await model.load(join(kept ? ckpt2 : ckpt, 'best.pt'));
  }
  if (arg('wise', '0') === '1') {
    // WiSE-FT: lambda by the full dev split's MRR@10 (all dev questions against the whole corpus).
    const trained = snapshotParameters(model);
    let pick = { lambda: 1, dev: -Infinity };
    for (const lambda of [0.25, 0.5, 0.75, 1]) {
      interpolateParameters(model, start, trained, lambda);
      const d = (await devModel(model))['all']!['MRR@10']!;
      console.log(`  WiSE-FT lambda ${lambda}: dev MRR@10 ${d.toFixed(4)}`);
      if (d > pick.dev) pick = { lambda, dev: d };
    }
    console.log(`  WiSE-FT: lambda ${pick.lambda} chosen on dev`);
    interpolateParameters(model, start, trained, pick.lambda);
  }
  if (arg('refit-centre', '0') === '1' && encoder.center) {
    // Training moves the passages' mean direction (mean pairwise cosine 0.004 at step 0, 0.09-0.29 after), so the
    // step-0 centre no longer centres them; refit it on the corpus, kept only where the dev split says so.
    const before = snapshotParameters(model);
    const devBefore = (await devModel(model))['all']!['MRR@10']!;
    await fitCentre(model, passageTable);
    const devAfter = (await devModel(model))['all']!['MRR@10']!;
    console.log(`  centre refit on the corpus: dev MRR@10 ${devBefore.toFixed(4)} -> ${devAfter.toFixed(4)}${devAfter > devBefore ? ' (kept)' : ' (not kept)'}`);
    // Interpolating a snapshot with itself writes it back: the trained centre restored.
    if (devAfter <= devBefore) interpolateParameters(model, before, before, 1);
  }
  const e0 = performance.now();
  const best = await testModel(model, preset);
  const encodeSec = (performance.now() - e0) / 1000;
  results[preset] = { scores: best.scores, dev: best.dev, parameters: model.parameterCount, train: r, ...(minedRound ? { minedRound } : {}), encodeSeconds: encodeSec, curve };
  report(preset, model.parameterCount, best.scores, {
    'train s': Math.round(r.seconds),
    epochs: r.epochs.length,
    'best epoch': (r.best?.epoch ?? -1) + 1,
    'tokens/s': Math.round(r.tokensPerSecond),
  });
}

console.log(`\ntest split (${testQueries.length} questions):`);
table(rows);

// Each trained preset against the GloVe average on the tasks it trained on, dev and test: the difference of MRR@10
// and the two-sided p of a paired randomization test (10,000 sign flips) over the task's questions; and the same
// difference per source document (a passage id `task-<doc>-<chunk>` names it: a COVID-QA paper), since a split
// whose questions come from a handful of documents is about that many samples, and one large document can set the
// sign of the per-question mean.
const reference = perQueryMrr.get('GloVe average (IDF, centred)')!;
const paired: Array<Record<string, string | number>> = [];
const bySource: Array<Record<string, string | number>> = [];
function sourceRow(m: Map<string, number>, ref: Map<string, number>, ds: BeirDataset, task: string): Record<string, string> | undefined {
  const docOf = new Map<string, string>();
  for (const q of judgedOf(ds).filter((x) => x.task === task)) {
    const doc = sourceDocument(ds.qrels.get(q.id)!);
    if (doc !== undefined) docOf.set(q.id, doc);
  }
  const docs = [...new Set(docOf.values())];
  if (docs.length < 2) return undefined;
  const diff = (d: string) => {
    const qs = [...docOf].filter(([, x]) => x === d).map(([q]) => q);
    return qs.reduce((a, q) => a + (m.get(q) ?? 0) - (ref.get(q) ?? 0), 0) / qs.length;
  };
  const largest = docs.map((d) => ({ d, n: [...docOf.values()].filter((x) => x === d).length })).sort((a, b) => b.n - a.n)[0]!;
  return {
    documents: String(docs.length),
    'difference per document': (docs.reduce((a, d) => a + diff(d), 0) / docs.length).toFixed(3),
    'documents at least GloVe': `${docs.filter((d) => diff(d) >= 0).length} of ${docs.length}`,
    'largest document': `${largest.d} (${largest.n} questions): ${diff(largest.d).toFixed(3)}`,
  };
}
for (const preset of presets.flatMap((p) => [`${p}, step 0`, p])) {
  const m = perQueryMrr.get(preset);
  if (!m) continue;
  for (const task of tasks)
    for (const [splitName, ds] of [['dev', devDs], ['test', testDs]] as const) {
      const ids = judgedOf(ds).filter((q) => q.task === task).map((q) => q.id);
      const a = ids.map((q) => m[splitName].get(q) ?? 0);
      const b = ids.map((q) => reference[splitName].get(q) ?? 0);
      // randomizationTest(x, y) is about y - x: here the preset minus the GloVe average.
      const t = randomizationTest(b, a);
      paired.push({ model: preset, task, split: splitName, questions: String(ids.length), 'MRR@10': (a.reduce((x, y) => x + y, 0) / ids.length).toFixed(3), 'GloVe MRR@10': (b.reduce((x, y) => x + y, 0) / ids.length).toFixed(3), difference: t.meanDifference.toFixed(3), p: t.p.toFixed(3) });
      const row = sourceRow(m[splitName], reference[splitName], ds, task);
      if (row) bySource.push({ model: preset, task, split: splitName, ...row });
    }
}
if (paired.length) {
  console.log('\nagainst the GloVe average (IDF, centred) on the trained tasks, paired randomization test:');
  table(paired);
  results['paired'] = paired;
}
if (bySource.length) {
  console.log('\nthe same per source document (mean over documents of the preset minus the GloVe average):');
  table(bySource);
  results['bySource'] = bySource;
}

// Throughput (--reps=0 skips it): the same 24 batches through the TypeScript loop (accumulate + step per batch, each a Promise) and
// through one native call, alternated, on one TASER model.
if (reps > 0) {
  Retriever.seed(seed);
  const model = Retriever.create({ preset: 'taser', encoder, tasks });
  const random = () => 0.5;
  const qTable = await TokenTable.build(tokenizer, trainEx.map((e) => e.query), { maxLength: train.maxQueryLength });
  const batches = Array.from({ length: 24 }, (_, b) => {
    const members = Array.from({ length: train.batchSize }, (_, i) => (b * train.batchSize + i) % trainEx.length);
    const c = composeBatch(trainEx, members, 1, random);
    return { queries: qTable.batch(members), passages: passageTable.batch(c.passageRows), positives: c.positives, ignore: c.ignore, task: 0, lossScale: 1 };
  });
  const lrs = new Float64Array(batches.length).fill(1e-4);
  const tsLoop = async () => {
    const t = performance.now();
    let tokens = 0;
    for (const [i, b] of batches.entries()) {
      tokens += (await model.accumulate(b)).tokens;
      await model.step(lrs[i]!, 2);
    }
    return { tokens, ms: performance.now() - t };
  };
  await model.trainLoopNative(batches.slice(0, 2), lrs, 2); // warm up
  const ts: number[] = [];
  const nat: number[] = [];
  // Alternated, and each pair in swapped order every other time, so drift on this noisy VM hits both alike.
  for (let rep = 0; rep < reps; rep++) {
    const native = async () => {
      const n = await model.trainLoopNative(batches, lrs, 2);
      nat.push(n.tokens / (n.ms / 1000));
    };
    const typescript = async () => {
      const a = await tsLoop();
      ts.push(a.tokens / (a.ms / 1000));
    };
    if (rep % 2) {
      await native();
      await typescript();
    } else {
      await typescript();
      await native();
    }
  }
  const overhead = 1 - median(ts) / median(nat);
  console.log(`\ntraining throughput (TASER, ${batches.length} batches of ${train.batchSize} questions + ${train.batchSize} hard negatives, median of ${reps}):`);
  table([
    { loop: 'native C++ loop (libtorch)', 'tokens/s': Math.round(median(nat)) },
    { loop: 'TypeScript loop over native steps', 'tokens/s': Math.round(median(ts)) },
  ]);
  console.log(`TypeScript orchestration cost: ${(overhead * 100).toFixed(1)}% (target: at most 10%)`);
  results['throughput'] = { nativeTokensPerSecond: nat, tsTokensPerSecond: ts, overhead };
}
const path = writeResults('train', { date: new Date().toISOString(), node: process.version, data: dir, budget, encoder, train, results });
console.log(`\nresults written to ${path}`);
