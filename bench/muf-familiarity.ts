// Does a DPR-MUF expert's confidence know its domain, and does a confidence that does route better? (issue 45,
// docs/methods/muf.md#does-the-confidence-know-the-domain). Per expert:
// - as a test of "this question is from my task", the AUROC of the paper's MI confidence and of familiarity: the
//   question's top-k mean cosine to the expert's own task's training questions, minus the same to the other tasks'
//   training questions, in the expert's own space (k-nearest neighbours on the core's scoreTopK);
// - fusion weights from Platt scalings fitted on dev (familiarity alone, familiarity + MI, both against own-task
//   membership; both against the expert's top-1 being right), MRR@10 of the fused lists against the paper's MI
//   weights, uniform and the oracle indicator, with paired randomization tests.
// Every fit reads dev; `--split test` evaluates on test with the dev fits.
//   node --import tsx bench/muf-familiarity.ts --muf DIR --data DIR [--split dev|test] [--bank 4000] [--k 30]
import { loadBeir, type Query as BeirQuery, type Qrels } from '../lib/data/beir.js';
import { reciprocalRank, type ScoredDoc } from '../lib/eval/ranking.js';
import { randomizationTest } from '../lib/eval/significance.js';
import { fuse } from '../lib/fusion/fuse.js';
import { mufFusion } from '../lib/methods/muf/fusion.js';
import { FamiliarityBank } from '../lib/methods/muf/familiarity.js';
import { MufRetriever } from '../lib/methods/muf/retriever.js';
import { ServingEncoder } from '../lib/models/serving-encoder.js';
import { capabilities } from '../lib/runtime.js';
import { auroc, ece, fitPlatt, plattProbability, type PlattScaling } from '../lib/uncertainty.js';
import { rng } from '../test/basics.js';
import { arg, writeResults } from './harness.js';
import { join } from 'node:path';

const mufDir = arg('muf', '');
const data = arg('data', '');
if (!mufDir || !data) throw new Error('usage: --muf DIR --data DIR');
const split = arg('split', 'dev');
const bankSize = Number(arg('bank', '4000'));
const K = Number(arg('k', '30'));
const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads; fits on dev, evaluation on ${split}; k = ${K}`);

const train = loadBeir(data, 'train');
const judged = (s: string) => {
  const d = loadBeir(data, s);
  return { qs: d.queries.filter((q) => d.qrels.has(q.id) && q.task), qrels: d.qrels };
};
const dev = judged('dev');
const ev = split === 'dev' ? dev : judged(split);
const muf = await MufRetriever.load(mufDir);
const experts = muf.experts;
const L = muf.topL;

const draw = rng(45);
const sample = (qs: BeirQuery[]) => (qs.length > bankSize ? qs.map((q) => ({ q, r: draw() })).sort((a, b) => a.r - b.r).slice(0, bankSize).map((o) => o.q) : qs);

interface Pass {
  qs: BeirQuery[];
  lists: ScoredDoc[][][];  // [expert][question] top-L
  mi: number[][];          // [expert][question]
  fam: number[][];         // [expert][question] familiarity margin
  hit: number[][];         // [expert][question] top-1 relevant
  muf: ScoredDoc[][];
  uniform: ScoredDoc[][];
  oracle: ScoredDoc[][];
}

async function pass(qs: BeirQuery[], qrels: Qrels): Promise<Pass> {
  const lists: ScoredDoc[][][] = experts.map(() => []);
  const mi: number[][] = experts.map(() => []);
  const all = { muf: [] as ScoredDoc[][], uniform: [] as ScoredDoc[][], oracle: [] as ScoredDoc[][] };
  for (let s = 0; s < qs.length; s += 64) {
    const part = qs.slice(s, s + 64);
    const r = await muf.searchAll(part.map((q) => q.text), L, { tasks: part.map((q) => q.task) });
    r.experts.forEach((e, x) => lists[x]!.push(...e));
    r.confidence.forEach((c) => c.forEach((v, x) => mi[x]!.push(v)));
    for (const key of ['muf', 'uniform', 'oracle'] as const) all[key].push(...r[key]!.map((h) => h.hits.slice(0, 10)));
  }
  const fam: number[][] = [];
  for (const e of experts) {
    const enc = await ServingEncoder.load(join(mufDir, 'experts', e.name, 'model'));
    const task = enc.config.tasks.includes(e.task) ? { task: e.task } : {};
    const vec = (list: BeirQuery[]) => enc.encodeQueries(list.map((q) => q.text), task);
    // queries.jsonl holds every split: the banks are the training split's questions only. The margin is the
    // library's (FamiliarityBank: mean cosine of the K nearest own-task minus other-task training questions).
    const bank = FamiliarityBank.fromVectors(await vec(banks.get(e.name)!.own), await vec(banks.get(e.name)!.other), enc.dim);
    fam.push(Array.from(await bank.margin(await vec(qs), K)));
    bank.dispose();
    await enc.dispose();
  }
  const hit = lists.map((l) => l.map((hits, b) => ((qrels.get(qs[b]!.id)?.get(hits[0]?.id ?? '') ?? 0) > 0 ? 1 : 0)));
  return { qs, lists, mi, fam, hit, ...all };
}

const banks = new Map(experts.map((e) => [e.name, {
  own: sample(train.queries.filter((q) => q.task === e.task && train.qrels.has(q.id))),
  other: sample(train.queries.filter((q) => q.task && q.task !== e.task && train.qrels.has(q.id))),
}]));
const d = await pass(dev.qs, dev.qrels);
const t = split === 'dev' ? d : await pass(ev.qs, ev.qrels);

// Platt scalings on dev, per expert.
type Weigher = { name: string; fit: (x: number) => PlattScaling; features: (p: Pass, x: number, b: number) => number[] };
const own = (p: Pass, x: number) => p.qs.map((q) => (q.task === experts[x]!.task ? 1 : 0));
const weighers: Weigher[] = [
  { name: 'familiarity -> own task', fit: (x) => fitPlatt(d.fam[x]!.map((v) => [v]), own(d, x)), features: (p, x, b) => [p.fam[x]![b]!] },
  { name: 'familiarity + MI -> own task', fit: (x) => fitPlatt(d.fam[x]!.map((v, b) => [v, d.mi[x]![b]!]), own(d, x)), features: (p, x, b) => [p.fam[x]![b]!, p.mi[x]![b]!] },
  { name: 'familiarity + MI -> top-1 right', fit: (x) => fitPlatt(d.fam[x]!.map((v, b) => [v, d.mi[x]![b]!]), d.hit[x]!), features: (p, x, b) => [p.fam[x]![b]!, p.mi[x]![b]!] },
];

const mrr = (runs: ScoredDoc[][], p: Pass, qrels: Qrels) => runs.map((hits, b) => reciprocalRank(hits.map((h) => h.id), qrels.get(p.qs[b]!.id)!, 10));
const perQ: Record<string, number[]> = {
  'MI (paper)': mrr(t.muf, t, ev.qrels),
  uniform: mrr(t.uniform, t, ev.qrels),
  'oracle indicator': mrr(t.oracle, t, ev.qrels),
};
const expertRows: Array<Record<string, string | number>> = experts.map((e, x) => ({
  expert: e.name,
  own: own(t, x).filter(Boolean).length,
  'MI auroc': +auroc(t.mi[x]!, own(t, x)).toFixed(3),
  'familiarity auroc': +auroc(t.fam[x]!, own(t, x)).toFixed(3),
  'MI ece (top-1)': +ece(t.mi[x]!, t.hit[x]!).toFixed(3),
}));
for (const w of weighers) {
  const fits = experts.map((_, x) => w.fit(x));
  const conf = experts.map((_, x) => t.qs.map((_, b) => plattProbability(fits[x]!, w.features(t, x, b))));
  experts.forEach((_, x) => {
    expertRows[x]![`${w.name} auroc`] = +auroc(conf[x]!, own(t, x)).toFixed(3);
    if (w.name.endsWith('right')) expertRows[x]!['calibrated ece (top-1)'] = +ece(conf[x]!, t.hit[x]!).toFixed(3);
    if (w.name === 'familiarity -> own task') expertRows[x]!['P(own) ece (own task)'] = +ece(conf[x]!, own(t, x)).toFixed(3);
  });
  const runs = experts.map((_, x) => new Map(t.qs.map((_, b) => [String(b), t.lists[x]![b]!])));
  const weights = new Map(t.qs.map((_, b) => [String(b), experts.map((_, x) => conf[x]![b]!)]));
  const fused = fuse(runs, mufFusion, { confidence: weights, depth: 10 });
  perQ[`Platt: ${w.name}`] = mrr(t.qs.map((_, b) => fused.get(String(b)) ?? []), t, ev.qrels);
}
console.table(expertRows);
const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
const fusionRows = Object.entries(perQ).map(([name, v]) => ({
  weights: name,
  'MRR@10': +mean(v).toFixed(4),
  'vs oracle p': +randomizationTest(v, perQ['oracle indicator']!, { trials: 2000, seed: 1 }).p.toFixed(3),
  'vs uniform p': +randomizationTest(v, perQ.uniform!, { trials: 2000, seed: 1 }).p.toFixed(3),
}));
console.table(fusionRows);
console.log(`results written to ${writeResults('muf-familiarity', { date: new Date().toISOString(), machine: { isa: caps.isa, threads: caps.threads }, muf: mufDir, data, split, k: K, bank: bankSize, questions: t.qs.length, experts: expertRows, fusion: fusionRows })}`);
muf.dispose();
