// `quorum demo`: a retrieval run over the embedded dataset through the native kernels, checked against the
// plain-JS reference, then a short speed comparison.
import { join } from 'node:path';

import { loadBeir } from '../data/beir.js';
import { HashedTfidfEncoder } from '../encoders/hashed-tfidf.js';
import { QuorumError } from '../errors.js';
import { Retriever } from '../train/retriever.js';
import { evaluate, rankedRun } from '../eval/ranking.js';
import { packageRoot } from '../native.js';
import { plainJsTopK } from '../reference/dense.js';
import { capabilities } from '../runtime.js';
import { scoreTopK, scoreTopKSync } from '../dense.js';
import { Bm25Index } from '../bm25/bm25.js';
import { hybridFuse, searchAlpha } from '../hybrid.js';
import { Tensor } from '../tensor.js';
import { table } from './table.js';

/** The demo's table columns. */
const DEMO_METRICS = ['recall@1', 'recall@5', 'recall@20', 'mrr@10'];

/** Queries the plain-JS reference checks (and is timed on). */
const REFERENCE_QUERIES = 64;

const fmt = (x: number) => Math.round(x).toLocaleString('en-US');

function seconds(fn: () => void, minMs = 400): number {
  fn();
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < minMs) {
    fn();
    n++;
  }
  return (performance.now() - t0) / 1000 / n;
}

/** The demo's dense encoder: the shipped trained model (or another model directory), or hashed TF-IDF. */
async function encodeDense(
  ds: { corpus: Array<{ id: string; title: string; text: string }>; queries: Array<{ id: string; text: string; task?: string }> },
  texts: string[],
  options: { model?: string; dim?: number },
): Promise<{ corpus: Tensor<'f32'>; queries: Tensor<'f32'>; dim: number; name: string }> {
  if (options.model !== 'tfidf') {
    try {
      const model = await Retriever.load(options.model ?? 'default');
      const corpus = await model.encodePassages(ds.corpus);
      // Questions are encoded per task (each with its task's marker, if the model was trained with markers).
      const queries = Tensor.zeros([ds.queries.length, model.dim]);
      for (const task of new Set(ds.queries.map((q) => q.task))) {
        const rows = ds.queries.flatMap((q, i) => (q.task === task ? [i] : []));
        const emb = await model.encodeQueries(rows.map((i) => ds.queries[i]!.text), { task });
        rows.forEach((r, j) => queries.data.set(emb.data.subarray(j * model.dim, (j + 1) * model.dim), r * model.dim));
        emb.dispose();
      }
      const name = `trained ${model.config.preset} (${options.model ?? 'default'}, ${model.dim}-d)`;
      return { corpus, queries, dim: model.dim, name };
    } catch (e) {
      // Without the torch module (or the model) the demo still runs, on the training-free encoder.
      if (!(e instanceof QuorumError) || e.code !== 'ERR_BACKEND_UNAVAILABLE' || options.model) throw e;
      console.log(`(the trained model needs quorum_torch: ${e.message}; using hashed TF-IDF)`);
    }
  }
  const dim = options.dim ?? 768;
  const encoder = HashedTfidfEncoder.fit(texts, { dim });
  return { corpus: encoder.encode(texts), queries: encoder.encode(ds.queries.map((q) => q.text)), dim, name: `hashed TF-IDF (${dim}-d)` };
}

export async function demo(options: { data?: string; dim?: number; bench?: boolean; model?: string }): Promise<void> {
  const caps = capabilities();
  console.log(`Quorum demo: kernels ${caps.isa} (available: ${caps.availableIsas.join(', ')}), ${caps.threads} threads\n`);
  const dir = options.data ?? join(packageRoot, 'data', 'multidomain-mini');
  const all = loadBeir(dir);
  // The judged queries of the test split (the embedded benchmark also holds train and dev queries).
  const ds = { ...all, queries: all.queries.filter((q) => all.qrels.has(q.id)) };
  const tasks = [...new Set(ds.queries.map((q) => q.task).filter(Boolean))];
  console.log(`dataset ${dir}: ${ds.corpus.length} passages, ${ds.queries.length} test queries${tasks.length ? ` (tasks: ${tasks.join(', ')})` : ''}`);

  const t0 = performance.now();
  const passages = ds.corpus.map((p) => `${p.title}. ${p.text}`);
  const { corpus, queries, dim, name } = await encodeDense(ds, passages, options);
  console.log(`encoded with ${name} in ${((performance.now() - t0) / 1000).toFixed(2)} s\n`);

  const k = 20;
  const B = ds.queries.length;
  const bf16 = corpus.to('bf16');
  const runs: Array<{ name: string; ids: Int32Array; sec: number }> = [];
  runs.push({ name: 'quorum scoreTopK f32', ids: (await scoreTopK(queries, corpus, k)).ids, sec: seconds(() => scoreTopKSync(queries, corpus, k)) });
  runs.push({ name: 'quorum scoreTopK bf16', ids: (await scoreTopK(queries, bf16, k)).ids, sec: seconds(() => scoreTopKSync(queries, bf16, k)) });

  const rows = runs.map((r) => {
    const run = new Map<string, string[]>();
    ds.queries.forEach((q, b) => run.set(q.id, Array.from(r.ids.subarray(b * k, (b + 1) * k), (i) => (i >= 0 ? (ds.corpus[i]?.id ?? '') : ''))));
    const m = evaluate(rankedRun(run), ds.qrels, DEMO_METRICS).mean;
    return { method: r.name, ...m, 'queries/s': B / r.sec };
  });
  console.log(`retrieval of ${B} queries over ${ds.corpus.length} passages, top-${k}:`);
  table(rows);
  // The plain-JS reference on a sample of the queries only: over a large dataset it would take minutes.
  const sample = Math.min(B, REFERENCE_QUERIES);
  const sampleQueries = queries.data.subarray(0, sample * dim);
  const reference = plainJsTopK(sampleQueries, corpus.data, dim, k);
  const same = reference.ids.every((id, i) => id === runs[0]?.ids[i]);
  const jsRate = sample / seconds(() => plainJsTopK(sampleQueries, corpus.data, dim, k), 200);
  console.log(`  f32 ids identical to the plain-JS reference (loop + heap) on the first ${sample} queries: ${same ? 'yes' : 'NO'}; plain JS ${fmt(jsRate)} queries/s, quorum f32 ${fmt(B / (runs[0]?.sec ?? 1))}\n`);

  // BM25 (native sparse index) and the dense + BM25 hybrid, alpha tuned on the even-numbered queries and
  // evaluated on the odd-numbered ones (so both halves mix the tasks).
  const t1 = performance.now();
  const bm25 = await Bm25Index.build(ds.corpus.map((p, i) => ({ id: p.id, text: passages[i] as string })), { k1: 0.9, b: 0.4 });
  const k0 = 100;
  const sparseHits = await bm25.search(
    ds.queries.map((q) => q.text),
    k0,
  );
  const denseTop = await scoreTopK(queries, corpus, k0);
  const denseHits = ds.queries.map((_, b) => denseTop.hits(b).map((h) => ({ id: ds.corpus[h.id]?.id ?? '', score: h.score })));
  const even = Array.from({ length: B }, (_, b) => b).filter((b) => b % 2 === 0);
  const odd = Array.from({ length: B }, (_, b) => b).filter((b) => b % 2 === 1);
  const relevantOf = (qid: string) => new Set([...(ds.qrels.get(qid) ?? new Map<string, number>())].filter(([, r]) => r > 0).map(([d]) => d));
  const mrr10 = (ranked: readonly string[], rel: ReadonlySet<string>) => {
    const i = ranked.slice(0, 10).findIndex((d) => rel.has(d));
    return i < 0 ? 0 : 1 / (i + 1);
  };
  const dev = even.map((b) => ({ dense: denseHits[b] ?? [], sparse: sparseHits[b] ?? [], relevant: relevantOf(ds.queries[b]?.id ?? '') }));
  const tuned = searchAlpha(dev, { metric: mrr10, normalization: true, grid: Array.from({ length: 51 }, (_, i) => i / 10) });
  const testRows: Array<Record<string, string | number>> = [];
  const evalHalf = (name: string, ranked: (b: number) => string[]) => {
    const run = new Map<string, string[]>();
    for (const b of odd) run.set(ds.queries[b]?.id ?? '', ranked(b));
    const qrels = new Map([...ds.qrels].filter(([qid]) => run.has(qid)));
    testRows.push({ method: name, ...evaluate(rankedRun(run), qrels, DEMO_METRICS).mean });
  };
  evalHalf(`dense (${name.replace(/ \(.*/, '')})`, (b) => (denseHits[b] ?? []).map((h) => h.id));
  evalHalf('BM25 (k1 0.9, b 0.4)', (b) => (sparseHits[b] ?? []).map((h) => h.id));
  evalHalf(`hybrid, alpha ${tuned.alpha}`, (b) => hybridFuse(denseHits[b] ?? [], sparseHits[b] ?? [], { alpha: tuned.alpha, normalization: true }).map((h) => h.id));
  console.log(`BM25 and the dense + BM25 hybrid (normalized; alpha tuned for MRR@10 on the ${even.length} even-numbered queries, evaluated on the ${odd.length} odd ones; ${((performance.now() - t1) / 1000).toFixed(2)} s):`);
  table(testRows);
  console.log('');

  if (options.bench !== false) {
    const N = 100_000;
    const D = 768;
    console.log(`speed on a random ${N / 1000}k x ${D} corpus, top-10 (full comparison: npm run bench):`);
    const big = Tensor.zeros([N, D]);
    let x = 12345;
    const data = big.data;
    for (let i = 0; i < data.length; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      data[i] = (x >>> 0) / 2147483648 - 1;
    }
    const bigBf16 = big.to('bf16');
    const speed: Array<Record<string, string | number>> = [];
    for (const b of [1, 16]) {
      const q = Tensor.from(data.subarray(0, b * D), [b, D]);
      const f32 = b / seconds(() => scoreTopKSync(q, big, 10));
      const h = b / seconds(() => scoreTopKSync(q, bigBf16, 10));
      const js = 1 / seconds(() => plainJsTopK(data.subarray(0, D), data, D, 10), 1);
      speed.push({ B: String(b), 'quorum f32 QPS': f32, 'quorum bf16 QPS': h, 'plain JS QPS': js, 'f32 / JS': f32 / js });
      q.dispose();
    }
    table(speed);
    big.dispose();
    bigBf16.dispose();
  }
  corpus.dispose();
  queries.dispose();
  bf16.dispose();
}
