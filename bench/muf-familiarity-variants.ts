// Which signal tells an expert's own task's questions from the others'? (issue 45,
// docs/results/muf.md#which-familiarity). Per expert of a MUF directory, the AUROC of own-task membership for:
// - the library's familiarity (FamiliarityBank: k-NN margin, k = 30, in the expert's own space);
// - linear discriminant analysis (shared covariance, ridge 1e-3) and two Gaussians (one covariance per side, ridge
//   1e-2: the Mahalanobis distance to the other side minus that to the own side), in the expert's own space;
// - logistic regression on the expert's question vectors (L2 10);
// - the same k-NN margin over TF-IDF word vectors (a lexical space no expert has);
// - the same k-NN margin in the concatenation of every expert's space.
// Everything is fitted on the training split's questions; dev chooses, test reports (also without XQuAD's questions,
// which have no expert, and with XQuAD counted as wiki's domain, as the benchmark's builder defines it).
//   node --import tsx bench/muf-familiarity-variants.ts --muf DIR --data DIR
import { join } from 'node:path';

import { loadBeir, type Query } from '../lib/data/beir.js';
import { FamiliarityBank, FAMILIARITY_K } from '../lib/methods/muf/familiarity.js';
import { readMufDir } from '../lib/methods/muf/format.js';
import { ServingEncoder } from '../lib/models/serving-encoder.js';
import { capabilities } from '../lib/runtime.js';
import { auroc, fitPlatt } from '../lib/uncertainty.js';
import { arg, writeResults } from './harness.js';

const mufDir = arg('muf', '');
const data = arg('data', '');
if (!mufDir || !data) throw new Error('usage: --muf DIR --data DIR');
/** Tasks without an expert counted as another task's domain (the benchmark's builder: XQuAD is wiki's domain). */
const sameDomain = new Map([['xquad', 'wiki']]);
const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads`);

const judged = (split: string) => {
  const d = loadBeir(data, split);
  return d.queries.filter((q) => d.qrels.has(q.id) && q.task);
};
const train = judged('train');
const dev = judged('dev');
const test = judged('test');
/** The experts by name, each with its task and folder. */
const experts = readMufDir(mufDir).experts.map((e) => ({ name: e.expert.name, task: e.expert.task, base: e.base }));

/** Unit rows of one expert's question vectors (with its task's marker where its model has one). */
async function vectors(enc: ServingEncoder, task: string, qs: Query[]): Promise<Float32Array> {
  const v = await enc.encodeQueries(qs.map((q) => q.text), enc.config.tasks.includes(task) ? { task } : {});
  const D = enc.dim;
  for (let r = 0; r < qs.length; r++) {
    let s = 0;
    for (let j = 0; j < D; j++) s += v[r * D + j]! ** 2;
    const inv = 1 / Math.max(Math.sqrt(s), 1e-12);
    for (let j = 0; j < D; j++) v[r * D + j]! *= inv;
  }
  return v;
}

const rowsOf = (v: Float32Array, ix: readonly number[], D: number) => {
  const out = new Float32Array(ix.length * D);
  ix.forEach((i, r) => out.set(v.subarray(i * D, (i + 1) * D), r * D));
  return out;
};

function meanCov(v: Float32Array, D: number): { mu: Float64Array; cov: Float64Array } {
  const n = v.length / D;
  const mu = new Float64Array(D);
  for (let r = 0; r < n; r++) for (let j = 0; j < D; j++) mu[j] = mu[j]! + v[r * D + j]! / n;
  const cov = new Float64Array(D * D);
  const x = new Float64Array(D);
  for (let r = 0; r < n; r++) {
    for (let j = 0; j < D; j++) x[j] = v[r * D + j]! - mu[j]!;
    for (let i = 0; i < D; i++) for (let j = 0; j < D; j++) cov[i * D + j] = cov[i * D + j]! + (x[i]! * x[j]!) / n;
  }
  return { mu, cov };
}

/** Cholesky factor of a symmetric positive definite matrix (ridge added by the caller). */
function cholesky(a: Float64Array, m: number): Float64Array {
  const l = new Float64Array(m * m);
  for (let i = 0; i < m; i++)
    for (let j = 0; j <= i; j++) {
      let s = a[i * m + j]!;
      for (let k = 0; k < j; k++) s -= l[i * m + k]! * l[j * m + k]!;
      l[i * m + j] = i === j ? Math.sqrt(s) : s / l[j * m + j]!;
    }
  return l;
}

/** Solves L Lᵀ x = b. */
function cholSolve(l: Float64Array, b: Float64Array, m: number): Float64Array {
  const y = new Float64Array(m);
  for (let i = 0; i < m; i++) {
    let s = b[i]!;
    for (let k = 0; k < i; k++) s -= l[i * m + k]! * y[k]!;
    y[i] = s / l[i * m + i]!;
  }
  const x = new Float64Array(m);
  for (let i = m - 1; i >= 0; i--) {
    let s = y[i]!;
    for (let k = i + 1; k < m; k++) s -= l[k * m + i]! * x[k]!;
    x[i] = s / l[i * m + i]!;
  }
  return x;
}

const ridged = (cov: Float64Array, D: number, ridge: number) => {
  const s = Float64Array.from(cov);
  for (let i = 0; i < D; i++) s[i * D + i] = s[i * D + i]! + ridge;
  return s;
};

/** A scorer of row-major unit vectors, from the training split's own and other vectors. */
type Fit = (own: Float32Array, other: Float32Array, D: number) => Promise<(v: Float32Array) => Promise<Float64Array>>;
const linear = (w: Float64Array, D: number) => async (v: Float32Array) =>
  Float64Array.from({ length: v.length / D }, (_, r) => {
    let s = 0;
    for (let j = 0; j < D; j++) s += w[j]! * v[r * D + j]!;
    return s;
  });
const fits: Record<string, Fit> = {
  [`k-NN margin, k = ${FAMILIARITY_K} (the library's)`]: async (own, other, D) => {
    const bank = FamiliarityBank.fromVectors(own, other, D);
    return async (v) => Float64Array.from(await bank.margin(v));
  },
  'linear discriminant (ridge 1e-3)': async (own, other, D) => {
    const a = meanCov(own, D);
    const b = meanCov(other, D);
    const pooled = Float64Array.from(a.cov, (x, i) => 0.5 * x + 0.5 * b.cov[i]!);
    return linear(cholSolve(cholesky(ridged(pooled, D, 1e-3), D), Float64Array.from(a.mu, (x, j) => x - b.mu[j]!), D), D);
  },
  'two Gaussians (ridge 1e-2)': async (own, other, D) => {
    const sides = [meanCov(own, D), meanCov(other, D)].map((m) => ({ mu: m.mu, l: cholesky(ridged(m.cov, D, 1e-2), D) }));
    const maha = (s: (typeof sides)[number], v: Float32Array, r: number) => {
      const x = Float64Array.from({ length: D }, (_, j) => v[r * D + j]! - s.mu[j]!);
      const y = cholSolve(s.l, x, D);
      return x.reduce((acc, xi, j) => acc + xi * y[j]!, 0);
    };
    return async (v) => Float64Array.from({ length: v.length / D }, (_, r) => maha(sides[1]!, v, r) - maha(sides[0]!, v, r));
  },
  'logistic regression (L2 10)': async (own, other, D) => {
    const n = [own.length / D, other.length / D];
    const rows = [...Array.from({ length: n[0]! }, (_, r) => Array.from(own.subarray(r * D, (r + 1) * D))), ...Array.from({ length: n[1]! }, (_, r) => Array.from(other.subarray(r * D, (r + 1) * D)))];
    const p = fitPlatt(rows, [...new Array<number>(n[0]!).fill(1), ...new Array<number>(n[1]!).fill(0)], { l2: 10 });
    return linear(Float64Array.from(p.weights), D);
  },
};

/**
 * Per task, each question's k-NN margin over TF-IDF unit vectors of lower-cased words (IDF from the training
 * questions), by cosine against the training questions: one similarity pass a question serves every task.
 */
function lexicalMargins(tasks: readonly string[], qs: Query[], k = FAMILIARITY_K): Map<string, Float64Array> {
  const words = (t: string) => t.toLowerCase().match(/[a-z0-9]+/g) ?? [];
  const df = new Map<string, number>();
  for (const q of train) for (const w of new Set(words(q.text))) df.set(w, (df.get(w) ?? 0) + 1);
  const vec = (t: string) => {
    const m = new Map<string, number>();
    for (const w of words(t)) m.set(w, (m.get(w) ?? 0) + 1);
    let norm = 0;
    for (const [w, c] of m) {
      const x = c * Math.log((train.length + 1) / ((df.get(w) ?? 0) + 1));
      m.set(w, x);
      norm += x * x;
    }
    for (const [w, x] of m) m.set(w, x / (Math.sqrt(norm) || 1));
    return m;
  };
  const postings = new Map<string, Array<[number, number]>>();
  train.forEach((q, i) => {
    for (const [w, x] of vec(q.text)) (postings.get(w) ?? postings.set(w, []).get(w)!).push([i, x]);
  });
  const topMean = (s: number[]) => s.sort((a, b) => b - a).slice(0, k).reduce((a, b) => a + b, 0) / k;
  const out = new Map(tasks.map((t) => [t, new Float64Array(qs.length)]));
  qs.forEach((q, b) => {
    const sim = new Float64Array(train.length);
    for (const [w, x] of vec(q.text)) for (const [i, y] of postings.get(w) ?? []) sim[i] = sim[i]! + x * y;
    for (const t of tasks) {
      const own: number[] = [];
      const other: number[] = [];
      sim.forEach((v, i) => (train[i]!.task === t ? own : other).push(v));
      out.get(t)![b] = topMean(own) - topMean(other);
    }
  });
  return out;
}

// Each expert's unit question vectors for the three splits.
const space = new Map<string, { D: number; train: Float32Array; dev: Float32Array; test: Float32Array }>();
for (const e of experts) {
  const enc = await ServingEncoder.load(join(e.base, 'model'));
  space.set(e.name, { D: enc.dim, train: await vectors(enc, e.task, train), dev: await vectors(enc, e.task, dev), test: await vectors(enc, e.task, test) });
  await enc.dispose();
}
const concat = (split: 'train' | 'dev' | 'test', n: number) => {
  const D = experts.reduce((s, x) => s + space.get(x.name)!.D, 0);
  const out = new Float32Array(n * D);
  for (let r = 0; r < n; r++) {
    let at = r * D;
    for (const x of experts) {
      const s = space.get(x.name)!;
      out.set(s[split].subarray(r * s.D, (r + 1) * s.D), at);
      at += s.D;
    }
  }
  return { D, v: out };
};
const all = { train: concat('train', train.length), dev: concat('dev', dev.length), test: concat('test', test.length) };

const lexical = { dev: lexicalMargins(experts.map((e) => e.task), dev), test: lexicalMargins(experts.map((e) => e.task), test) };

const rows: Array<Record<string, string | number>> = [];
for (const { name, task } of experts) {
  const s = space.get(name)!;
  const ownIx = train.flatMap((q, i) => (q.task === task ? [i] : []));
  const otherIx = train.flatMap((q, i) => (q.task !== task ? [i] : []));
  const label = (qs: Query[], domain = false) => qs.map((q) => (q.task === task || (domain && sameDomain.get(q.task!) === task) ? 1 : 0));
  const withExpert = test.flatMap((q, i) => (sameDomain.has(q.task!) ? [] : [i]));
  const row = (variant: string, d: ArrayLike<number>, t: ArrayLike<number>) => {
    const r: Record<string, string | number> = { expert: name, variant, dev: +auroc(d, label(dev)).toFixed(3), test: +auroc(t, label(test)).toFixed(3) };
    r['test, questions with an expert'] = +auroc(withExpert.map((i) => t[i]!), withExpert.map((i) => label(test)[i]!)).toFixed(3);
    if ([...sameDomain.values()].includes(task)) r['test, by domain'] = +auroc(t, label(test, true)).toFixed(3);
    rows.push(r);
  };
  for (const [variant, fit] of Object.entries(fits)) {
    const score = await fit(rowsOf(s.train, ownIx, s.D), rowsOf(s.train, otherIx, s.D), s.D);
    row(variant, await score(s.dev), await score(s.test));
  }
  row(`TF-IDF words, k-NN margin, k = ${FAMILIARITY_K}`, lexical.dev.get(task)!, lexical.test.get(task)!);
  const cat = await fits[`k-NN margin, k = ${FAMILIARITY_K} (the library's)`]!(rowsOf(all.train.v, ownIx, all.train.D), rowsOf(all.train.v, otherIx, all.train.D), all.train.D);
  row(`every expert's space, k-NN margin, k = ${FAMILIARITY_K}`, await cat(all.dev.v), await cat(all.test.v));
  console.table(rows.filter((r) => r.expert === name));
}
console.log(`results written to ${writeResults('muf-familiarity-variants', { date: new Date().toISOString(), machine: { isa: caps.isa, threads: caps.threads }, muf: mufDir, data, rows })}`);
