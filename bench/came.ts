// Issue 23's experiment: CAME on a multi-domain benchmark (default data/multidomain-mini; --data=/tmp/quorum-full/data
// for the full one), its experts trained (a) independently, (b) standardized only, (c) standardized + competitive,
// each from GloVe on the train split (dev picks checkpoints and fits the linear fusion), scored on the test split:
//   - per task and all-task Recall@20 / MRR@10 of each expert alone, each pair and all three (Sum fusion);
//   - the fusion variants (Sum, NormSum, NormMax, SumRR, MaxRR, Linear);
//   - rank-biased overlap (p = 0.9) of the experts' top-100 lists;
//   - training time and tokens/s, query latency p50 / p99 at B = 1 with a per-expert breakdown;
//   - the training-step time with Quorum's kernels against libtorch's own ops (one model, the same batches).
//   node --import tsx bench/came.ts [--data=DIR] [--variants=independent,standardized,competitive] [--epochs=2]
//     [--hard=1] [--negatives=1] [--batch=32] [--lr=1e-3] [--tau=0.5] [--budget=S] [--latency=100] [--step-batches=2]
//     [--recall=200] [--save=DIR | --load=DIR] [--train-sample=N]
import { join } from 'node:path';
import { tmpdir } from 'node:os';

import { loadBeir } from '../lib/data/beir.js';
import { evaluate, rankedRun } from '../lib/eval/ranking.js';
import { rbo } from '../lib/eval/rbo.js';
import { CAME_FUSIONS, fuseExperts, type Hit } from '../lib/methods/came/fusion.js';
import type { CameExpertName } from '../lib/methods/came/format.js';
import { CameRetriever } from '../lib/methods/came/retriever.js';
import { fitCameLinear, initCame, trainCame, type CameTrainRecord } from '../lib/methods/came/train.js';
import { capabilities } from '../lib/index.js';
import { packageRoot } from '../lib/native.js';
import { seededRandom } from '../lib/random.js';
import { composeBatch } from '../lib/train/trainer.js';
import { shuffle } from '../lib/random.js';
import { prepareTraining } from '../lib/train/prepare.js';
import { Retriever } from '../lib/models/retriever.js';
import { median, percentile, writeResults } from './harness.js';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const dir = arg('data', join(packageRoot, 'data', 'multidomain-mini'));
const variants = arg('variants', 'independent,standardized,competitive').split(',').filter(Boolean);
const epochs = Number(arg('epochs', '2'));
const hard = Number(arg('hard', '1'));
const negatives = Number(arg('negatives', '1'));
const batch = Number(arg('batch', '32'));
const lr = Number(arg('lr', '1e-3'));
const tau = Number(arg('tau', '0.5'));
const budget = arg('budget', '');
const latencyQueries = Number(arg('latency', '100'));
const stepBatches = Number(arg('step-batches', '2'));
const recallQueries = Number(arg('recall', '200'));
// Each variant's trained retriever is saved here (<dir>/<variant>), for `quorum eval --came` and later runs.
const saveDir = arg('save', '');
const loadDir = arg('load', '');
const seed = 12345;

const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads, ${JSON.stringify(caps.cpu)}`);
const d = await prepareTraining(dir, { glove: true, wordVocab: true, log: console.log });
// --train-sample=N: a seeded sample of N training questions (the full benchmark's 16k questions cost ~45 minutes
// per epoch of the three experts on 2 cores).
const sample = Number(arg('train-sample', '0'));
if (sample > 0 && sample < d.train.length) {
  d.train = shuffle(d.train.slice(), seededRandom(seed)).slice(0, sample);
  console.log(`training on a sample of ${sample} questions`);
}
const test = loadBeir(dir, 'test');
const testQ = test.queries.filter((q) => test.qrels.has(q.id));
const tasks = [...new Set(testQ.map((q) => q.task ?? 'default'))].sort();

/** Recall@20 and MRR@10 per task and all-task of per-question lists (ids are corpus rows). */
function score(lists: readonly (readonly Hit[])[]): Record<string, { r20: number; mrr10: number }> {
  const out: Record<string, { r20: number; mrr10: number }> = {};
  for (const t of [...tasks, 'all']) {
    const idx = testQ.map((q, i) => (t === 'all' || (q.task ?? 'default') === t ? i : -1)).filter((i) => i >= 0);
    const run = new Map(idx.map((i) => [testQ[i]!.id, lists[i]!.map((h) => test.corpus[h.id]!.id)]));
    const qrels = new Map(idx.map((i) => [testQ[i]!.id, test.qrels.get(testQ[i]!.id)!]));
    const m = evaluate(rankedRun(run), qrels, ['recall@20', 'mrr@10']).mean;
    out[t] = { r20: m['recall@20'] ?? 0, mrr10: m['mrr@10'] ?? 0 };
  }
  return out;
}

const row = (name: string, s: Record<string, { r20: number; mrr10: number }>) =>
  `| ${name} | ${tasks.map((t) => `${s[t]!.mrr10.toFixed(3)} / ${s[t]!.r20.toFixed(3)}`).join(' | ')} | ${s['all']!.mrr10.toFixed(3)} | ${s['all']!.r20.toFixed(3)} |`;
const header = `| run (MRR@10 / R@20) | ${tasks.join(' | ')} | all MRR@10 | all R@20 |\n|${'---|'.repeat(tasks.length + 3)}`;

const subsets = (experts: CameExpertName[]) => {
  const out: CameExpertName[][] = [];
  for (let mask = 1; mask < 1 << experts.length; mask++) out.push(experts.filter((_, i) => mask & (1 << i)));
  return out.sort((a, b) => a.length - b.length);
};

const results: Record<string, unknown> = { data: dir, options: { epochs, hard, negatives, batch, lr, tau, budget }, machine: { isa: caps.isa, threads: caps.threads } };
const markdown: string[] = [];

for (const variant of variants) {
  console.log(`\n=== ${variant} ===`);
  const from = markdown.length;
  let came: CameRetriever;
  let record: CameTrainRecord;
  if (loadDir) {
    // --load=DIR: the retriever a run with --save=DIR trained, scored again (e.g. after a change to the fusion).
    came = await CameRetriever.load(join(loadDir, variant));
    record = came.training as unknown as CameTrainRecord;
  } else {
    Retriever.seed(seed);
    came = CameRetriever.create({ tokenizer: d.tokenizer, independent: variant === 'independent' });
    const init = await initCame(came, d.passages, { ...(d.glove ? { glove: d.glove } : {}), seed });
    console.log(`${came.parameterCount.toLocaleString()} parameters; lexical bias ${init.lexicalBias?.toFixed(2)}`);
    record = await trainCame(came, { passages: d.passages, train: d.train, dev: d.dev }, {
      mode: variant === 'standardized' ? 'standardized' : 'competitive',
      epochs,
      hardNegativeEpochs: hard,
      negatives,
      batchSize: batch,
      lr,
      tau,
      seed,
      checkpointDir: join(tmpdir(), `quorum-came-bench-${variant}-${process.pid}`),
      ...(budget ? { timeBudgetSeconds: Number(budget) } : {}),
      log: console.log,
    });
  }
  await came.index(test.corpus);
  const linear = d.dev.length ? await fitCameLinear(came, d.dev) : undefined;
  // (fitCameLinear searched the train corpus rows; the test corpus is the same corpus in this benchmark's layout.)
  came.linear = linear;
  if (saveDir && !loadDir) came.save(join(saveDir, variant));
  const t0 = performance.now();
  const r = await came.search(testQ.map((q) => q.text), { k: 100, expertK: 100 });
  const searchSeconds = (performance.now() - t0) / 1000;
  const experts = came.experts;
  const lists = (subset: CameExpertName[]) => (subset.length === 1 ? r.experts[subset[0]!]! : fuseExperts(subset.map((e) => r.experts[e]!), 'sum', 100, 100));
  const ablation: Record<string, unknown> = {};
  markdown.push(`\n#### ${variant}: experts alone, in pairs and all three (Sum), test MRR@10 / Recall@20 per task\n\n${header}`);
  for (const s of subsets(experts)) {
    const sc = score(lists(s));
    ablation[s.join('+')] = sc;
    markdown.push(row(s.join(' + '), sc));
  }
  const fusions: Record<string, unknown> = {};
  markdown.push(`\n#### ${variant}: fusion variants of the three experts\n\n${header}`);
  for (const f of CAME_FUSIONS) {
    if (f === 'linear' && !linear) continue;
    const sc = score(fuseExperts(experts.map((e) => r.experts[e]!), f, 100, 100, linear));
    fusions[f] = sc;
    markdown.push(row(f === 'linear' ? `linear (${linear!.weights.map((w) => w.toPrecision(2)).join(', ')})` : f, sc));
  }
  const overlap: Record<string, number> = {};
  for (let i = 0; i < experts.length; i++)
    for (let j = i + 1; j < experts.length; j++) {
      const a = experts[i]!;
      const b = experts[j]!;
      overlap[`${a}/${b}`] = testQ.reduce((acc, _, q) => acc + rbo(r.experts[a]![q]!.map((h) => h.id), r.experts[b]![q]!.map((h) => h.id), 0.9), 0) / testQ.length;
    }
  markdown.push(`\n${variant}: RBO (p = 0.9) of the top-100 lists: ${Object.entries(overlap).map(([k, v]) => `${k} ${v.toFixed(3)}`).join(', ')}`);
  // The local expert's candidate stage (64 nearest tokens per question token, then exact MaxSim) against brute-force
  // MaxSim over every passage: recall of the exact top 100 (and top 10).
  const rq = testQ.slice(0, recallQueries).map((q) => q.text);
  let localRecall: { at10: number; at100: number } | undefined;
  if (experts.includes('local') && rq.length) {
    const approx = await came.search(rq, { k: 100, expertK: 100, experts: ['local'] });
    const exact = await came.search(rq, { k: 100, expertK: 100, experts: ['local'], localCandidates: 'all' });
    const rec = (k: number) => rq.reduce((a, _, q) => {
      const want = new Set(exact.experts.local![q]!.slice(0, k).map((h) => h.id));
      return a + approx.experts.local![q]!.slice(0, k).filter((h) => want.has(h.id)).length / Math.max(want.size, 1);
    }, 0) / rq.length;
    localRecall = { at10: rec(10), at100: rec(100) };
    markdown.push(`${variant}: local candidate stage against brute-force MaxSim (${rq.length} questions): recall of the exact top 10 ${localRecall.at10.toFixed(3)}, top 100 ${localRecall.at100.toFixed(3)}`);
  }
  // Latency at B = 1 over the first questions (Sum fusion, default candidate generation).
  const lat: number[] = [];
  const parts: Record<string, number[]> = {};
  for (const q of testQ.slice(0, latencyQueries)) {
    const s0 = performance.now();
    const one = await came.search([q.text], { k: 100, expertK: 100 });
    lat.push(performance.now() - s0);
    for (const [k, v] of Object.entries(one.timings)) (parts[k] ??= []).push(v);
  }
  const latency = lat.length ? { p50: percentile(lat, 50), p99: percentile(lat, 99), parts: Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, median(v)])) } : undefined;
  if (latency)
    markdown.push(`${variant}: B = 1 latency over ${lat.length} questions: p50 ${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms (medians: ${Object.entries(latency.parts).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')} ms); all ${testQ.length} test questions in ${searchSeconds.toFixed(1)} s`);
  const tokens = record.stages.reduce((a, s) => a + s.tokensPerSecond * s.seconds, 0);
  const seconds = record.stages.reduce((a, s) => a + s.seconds, 0);
  markdown.push(`${variant}: training ${Math.round(record.seconds)} s in all (${Math.round(seconds)} s in the loop, ${Math.round(tokens / Math.max(seconds, 1e-9))} tokens/s); ${came.parameterCount.toLocaleString()} parameters`);
  results[variant] = { ablation, fusions, overlap, latency, localRecall, training: record, parameters: came.parameterCount, linear };
  // Every table of this variant now: a run stopped later keeps them in its log.
  console.log(markdown.slice(from).join('\n'));
}

// The training step with Quorum's kernels against libtorch's own ops: the same model and batches.
if (stepBatches > 0) {
  const times: Record<string, number[]> = {};
  for (const referenceOps of [false, true]) {
    Retriever.seed(seed);
    const came = CameRetriever.create({ tokenizer: d.tokenizer, model: { referenceOps } });
    const m = came.models[0]!;
    await initCame(came, d.passages, { ...(d.glove ? { glove: d.glove } : {}), seed });
    const pt = await came.passageTable(d.passages);
    const qt = await came.questionTable(d.train.map((e) => e.query));
    const rnd = seededRandom(1);
    const key = referenceOps ? 'libtorch ops' : 'Quorum kernels';
    for (let i = 0; i < stepBatches + 1; i++) {
      const members = Array.from({ length: batch }, (_, j) => (i * batch + j) % d.train.length);
      const c = composeBatch(d.train, members, negatives, rnd);
      const b = { queries: qt.batch(members), passages: pt.batch(c.passageRows), positives: c.positives, ignore: c.ignore };
      const s0 = performance.now();
      await m.accumulate(b);
      await m.step(lr, 2);
      if (i > 0) (times[key] ??= []).push(performance.now() - s0); // the first step warms up
    }
  }
  const k = median(times['Quorum kernels']!);
  const t = median(times['libtorch ops']!);
  markdown.push(`\nTraining step (batch ${batch} questions, ${negatives} negative each, the three experts, median of ${stepBatches}): Quorum kernels ${k.toFixed(0)} ms, libtorch's own ops ${t.toFixed(0)} ms (${(t / k).toFixed(2)}x)`);
  results['step'] = { kernels: times['Quorum kernels'], libtorch: times['libtorch ops'] };
}

console.log('\n' + markdown.join('\n'));
console.log(`\nresults written to ${writeResults('came', { ...results, markdown: markdown.join('\n') })}`);
