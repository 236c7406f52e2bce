// Quantized corpora (issue 66, docs/results/quantization.md): recall@10 against exact f32 search and speed, with every
// contender measured in this process.
//   node --import tsx bench/quantized.ts [--data DIR] [--n 100000] [--bert-passages 3000] [--cache DIR] [--part recall,speed,hnsw] [--hnsw-n 20000]
// Recall, on three corpora: the shipped model's passage vectors (100-d) of the multi-domain benchmark (--data, a
// `quorum data build` directory; default /tmp/quorum-full/data, else the embedded data/multidomain-mini), a 768-d
// encoder's (a BERT-base-shaped 2-layer Transformer at BERT's initial scale from scripts/make-tiny-hf.mjs: no trained
// 768-d model is reachable from here) over --bert-passages of them, and a synthetic 768-d corpus with the anisotropy
// of real embeddings (a common mean direction, a decaying spectrum of latent factors). The settings (int8 clipping,
// binary centring, query planes) are chosen on the dev questions and reported on the test questions.
// Speed, over --n x 768 synthetic rows, top-10, B = 1 and B = 256: Quorum f32 / bf16 / int8 (f32 and int8 queries) /
// binary + rescoring (the f32 vectors mapped from a file), faiss IndexFlatIP / IndexScalarQuantizer / IndexBinaryFlat,
// usearch exactSearch f32 / i8 (its Node binding has no b1); binary contenders' candidates are rescored by the same gatherScores.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  DenseIndex,
  QuantizedTensor,
  Tensor,
  capabilities,
  gatherScoresSync,
  scoreSync,
  scoreTopKSync,
  type ScoreTopKOptions,
} from '../lib/index.js';
import { quantize, type QuantizeOptions } from '../lib/entries/kernels.js';
import { loadBeir } from '../lib/data/beir.js';
import { seededRandom } from '../lib/random.js';
import { Retriever } from '../lib/models/retriever.js';
import { ServingEncoder } from '../lib/models/serving-encoder.js';
import { baselinesAddon, usearch } from './baselines.js';
import { arg, fmt, normalDraws, printTable, timeIt, writeResults } from './harness.js';

const k = 10;
const parts = new Set(arg('part', 'recall,speed').split(','));
const caps = capabilities();
const threads = caps.threads;
console.log(`isa ${caps.isa}, ${threads} threads, cpu ${JSON.stringify(caps.cpu)}, node ${process.version}`);
const results: Record<string, unknown> = { machine: { isa: caps.isa, threads, cpu: caps.cpu } };

// ---------------------------------------------------------------------------------------------------------------
// Corpora

/** N unit vectors of dim D: a common mean direction (mean cosine ~0.3 between rows, as BERT-like encoders give),
 *  64 latent factors with a decaying spectrum, and a little isotropic noise. */
function syntheticEmbeddings(N: number, D: number, seed: number): Tensor<'f32'> {
  const L = 64;
  const draw = normalDraws(seed);
  const z = Float32Array.from({ length: N * L }, (_, i) => draw() / Math.sqrt(1 + (i % L)));
  const mixT = Float32Array.from({ length: D * L }, () => draw() / Math.sqrt(L)); // [D, L]: z . mixT^T = z M
  const x = scoreSync(Tensor.wrap(z, [N, L]), Tensor.wrap(mixT, [D, L])); // [N, D]
  const mean = Float32Array.from({ length: D }, () => draw());
  const mn = Math.hypot(...mean);
  const v = x.data;
  for (let i = 0; i < N; i++) {
    const row = v.subarray(i * D, (i + 1) * D);
    let n = 0;
    for (let d = 0; d < D; d++) n += row[d]! ** 2;
    const s = 1 / Math.sqrt(n);
    let m = 0;
    for (let d = 0; d < D; d++) {
      row[d] = row[d]! * s + (0.75 * mean[d]!) / mn + 0.02 * draw();
      m += row[d]! ** 2;
    }
    for (let d = 0; d < D; d++) row[d]! /= Math.sqrt(m);
  }
  return x;
}

interface Corpus {
  name: string;
  passages: Tensor<'f32'>;
  dev: Tensor<'f32'>;
  test: Tensor<'f32'>;
}

function splitQueryIds(dir: string, split: string): Set<string> {
  const lines = readFileSync(join(dir, 'qrels', `${split}.tsv`), 'utf8')
    .split('\n')
    .slice(1);
  return new Set(lines.filter(Boolean).map((l) => l.split('\t')[0]!));
}

async function realCorpora(): Promise<Corpus[]> {
  const dataDir = arg('data', existsSync('/tmp/quorum-full/data/corpus.jsonl') ? '/tmp/quorum-full/data' : 'data/multidomain-mini');
  const data = loadBeir(dataDir, 'test');
  const devIds = splitQueryIds(dataDir, 'dev');
  const testIds = splitQueryIds(dataDir, 'test');
  const pick = (ids: Set<string>, n: number) => data.queries.filter((q) => ids.has(q.id)).slice(0, n);
  const devQ = pick(devIds, 1000);
  const testQ = pick(testIds, 1000);
  console.log(`data ${dataDir}: ${data.corpus.length} passages, ${devQ.length} dev and ${testQ.length} test questions`);
  const out: Corpus[] = [];

  const enc = await ServingEncoder.load('data/models/default');
  const t0 = performance.now();
  const pv = await enc.encodePassages(data.corpus);
  const dim = pv.length / data.corpus.length;
  // Without task markers: the geometry of the question vectors is what matters here, not the best MRR.
  const queries = async (qs: typeof devQ) => Tensor.from(await enc.encodeQueries(qs.map((q) => q.text)), [qs.length, dim]);
  out.push({
    name: `shipped model (${dim}-d)`,
    passages: Tensor.from(pv, [data.corpus.length, dim]),
    dev: await queries(devQ),
    test: await queries(testQ),
  });
  console.log(`  shipped model: encoded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const nb = Math.min(Number(arg('bert-passages', '3000')), data.corpus.length);
  // The 768-d vectors take minutes to encode on 2 cores: --cache DIR keeps them between runs.
  const cache = arg('cache', '');
  const cached = cache && existsSync(join(cache, `bert-${nb}-passages.qtns`));
  if (nb > 0 && cached) {
    const load = async (name: string) => (await Tensor.map(join(cache, `bert-${nb}-${name}.qtns`))) as Tensor<'f32'>;
    out.push({
      name: `2-layer BERT-base shape (768-d, random init), ${nb} passages`,
      passages: await load('passages'),
      dev: await load('dev'),
      test: await load('test'),
    });
  } else if (nb > 0) {
    const work = mkdtempSync(join(tmpdir(), 'quorum-bert768-'));
    try {
      execFileSync(
        process.execPath,
        [
          join(import.meta.dirname, '..', 'scripts', 'make-tiny-hf.mjs'),
          '--out',
          work,
          '--vocab-size',
          '30522',
          '--positions',
          '512',
          '--layers',
          '2',
          '--hidden',
          '768',
          '--heads',
          '12',
          '--ffn',
          '3072',
          '--pooling',
          'mean',
          '--normalize',
          '--std',
          '0.02',
        ],
        { stdio: 'inherit' },
      );
      const t1 = performance.now();
      const bert = await Retriever.load(work);
      const step = data.corpus.length / nb;
      const subset = Array.from({ length: nb }, (_, i) => data.corpus[Math.floor(i * step)]!);
      const p = await bert.encodePassages(subset);
      const q = async (qs: typeof devQ) => bert.encodeQueries(qs.slice(0, 300).map((x) => x.text));
      const c: Corpus = {
        name: `2-layer BERT-base shape (768-d, random init), ${nb} passages`,
        passages: p,
        dev: await q(devQ),
        test: await q(testQ),
      };
      out.push(c);
      console.log(`  768-d encoder: encoded in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
      if (cache) {
        mkdirSync(cache, { recursive: true });
        for (const name of ['passages', 'dev', 'test'] as const) await c[name].save(join(cache, `bert-${nb}-${name}.qtns`));
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Recall

/** Per-query recall@k of `ids` against the exact top-k, and its mean with a 95 % interval (normal approximation). */
function recallOf(exact: Int32Array, ids: Int32Array, B: number): { mean: number; half: number } {
  const per: number[] = [];
  for (let b = 0; b < B; b++) {
    const want = new Set(exact.subarray(b * k, (b + 1) * k));
    let hit = 0;
    for (let j = 0; j < k; j++) if (want.has(ids[b * k + j]!)) hit++;
    per.push(hit / k);
  }
  const mean = per.reduce((a, x) => a + x, 0) / B;
  const sd = Math.sqrt(per.reduce((a, x) => a + (x - mean) ** 2, 0) / Math.max(1, B - 1));
  return { mean, half: (1.96 * sd) / Math.sqrt(B) };
}

interface Variant {
  label: string;
  kind: 'int8' | 'binary';
  quantize: QuantizeOptions;
  search: ScoreTopKOptions;
}

const variants = (full: Tensor): Variant[] => [
  { label: 'int8, min/max, f32 queries', kind: 'int8', quantize: {}, search: { queryBits: 32 } },
  { label: 'int8, min/max, int8 queries', kind: 'int8', quantize: {}, search: { queryBits: 8 } },
  { label: 'int8, clip 0.001, f32 queries', kind: 'int8', quantize: { clip: 0.001 }, search: { queryBits: 32 } },
  { label: 'int8, clip 0.001, int8 queries', kind: 'int8', quantize: { clip: 0.001 }, search: { queryBits: 8 } },
  ...[1, 2, 3, 4].flatMap((over): Variant[] => [
    {
      label: `binary centred, 4-bit queries, rescored x${over}`,
      kind: 'binary',
      quantize: {},
      search: { queryBits: 4, rescore: full, oversample: over },
    },
    {
      label: `binary centred, signs (Hamming), rescored x${over}`,
      kind: 'binary',
      quantize: {},
      search: { queryBits: 1, rescore: full, oversample: over },
    },
    {
      label: `binary plain signs, 4-bit queries, rescored x${over}`,
      kind: 'binary',
      quantize: { center: false },
      search: { queryBits: 4, rescore: full, oversample: over },
    },
  ]),
];

async function recallPart(corpora: Corpus[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const c of corpora) {
    const [N, D] = c.passages.shape as [number, number];
    console.log(`\n${c.name}: ${N} x ${D}; recall@10 against exact f32 search (mean and 95 % interval over the questions)`);
    const coded = new Map<string, QuantizedTensor>();
    const rows: Array<Array<string | number>> = [];
    for (const v of variants(c.passages)) {
      const key = `${v.kind} ${JSON.stringify(v.quantize)}`;
      if (!coded.has(key)) coded.set(key, await quantize(c.passages, v.kind, v.quantize));
      const q = coded.get(key)!;
      const r: Record<string, number> = {};
      for (const split of ['dev', 'test'] as const) {
        const Q = c[split];
        const B = Q.shape[0]!;
        const exact = scoreTopKSync(Q, c.passages, k).ids;
        const got = recallOf(exact, scoreTopKSync(Q, q, k, v.search).ids, B);
        r[split] = got.mean;
        r[`${split}Half`] = got.half;
      }
      rows.push([
        v.label,
        `${fmt(r.dev!, 4)} ± ${fmt(r.devHalf!, 3)}`,
        `${fmt(r.test!, 4)} ± ${fmt(r.testHalf!, 3)}`,
        fmt(q.bytes / (N * D * 4), 4),
      ]);
      out.push({ corpus: c.name, n: N, dim: D, variant: v.label, ...r, bytesRatio: q.bytes / (N * D * 4) });
    }
    printTable(['variant', 'dev recall@10', 'test recall@10', 'bytes / f32'], rows);
    coded.forEach((q) => q.dispose());
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Speed

/** usearch's i8: each value times 127 (its convention for vectors in [-1, 1]). */
const toI8 = (x: Float32Array) => Int8Array.from(x, (v) => Math.max(-127, Math.min(127, Math.round(v * 127))));
/** Sign bits of x - center, `bits` per row (a multiple of 8), for faiss and usearch. */
function signBits(x: Float32Array, D: number, center: Float32Array | undefined): Uint8Array {
  const rows = x.length / D;
  const out = new Uint8Array((rows * D) / 8);
  for (let r = 0; r < rows; r++)
    for (let d = 0; d < D; d++) if (x[r * D + d]! - (center ? center[d]! : 0) > 0) out[(r * D + d) >> 3]! |= 1 << (d & 7);
  return out;
}

async function speedPart(): Promise<unknown[]> {
  const N = Number(arg('n', '100000'));
  const D = 768;
  const corpus = syntheticEmbeddings(N, D, 7);
  const allQ = syntheticEmbeddings(256, D, 8);
  const base = baselinesAddon();
  const us = usearch();
  const dir = mkdtempSync(join(tmpdir(), 'quorum-qbench-'));
  const out: unknown[] = [];
  try {
    await corpus.save(join(dir, 'full.qtns'));
    const mapped = await Tensor.map(join(dir, 'full.qtns'));
    const bf16 = corpus.to('bf16');
    const q8 = await quantize(corpus, 'int8');
    const bin = await quantize(corpus, 'binary');
    const ix8 = DenseIndex.create({ dim: D, quantization: 'int8' });
    await ix8.train(corpus);
    await ix8.add(corpus, Array.from({ length: N }, (_, i) => i));
    // The binary index mapped: its f32 vectors in the file's pages, its codes built when mapped.
    const ixbBuilt = DenseIndex.create({ dim: D, quantization: 'binary' });
    await ixbBuilt.train(corpus);
    await ixbBuilt.add(corpus, Array.from({ length: N }, (_, i) => i));
    await ixbBuilt.save(join(dir, 'binary.qdx'));
    ixbBuilt.dispose();
    const ixb = await DenseIndex.map(join(dir, 'binary.qdx'));
    const faissFlat = base ? new base.FaissFlat(corpus.data, D) : undefined;
    const faissSq8 = base ? new base.FaissSQ8(corpus.data, D) : undefined;
    const center = bin.center!.data;
    const bits = signBits(corpus.data, D, center);
    const faissBin = base ? new base.FaissBinary(bits, D) : undefined;
    const i8 = toI8(corpus.data);
    const f32Bytes = N * D * 4;
    const mem: Record<string, number> = {
      int8: q8.bytes / f32Bytes,
      binary: bin.bytes / f32Bytes,
      faissSQ8: faissSq8 ? faissSq8.bytes() / f32Bytes : NaN,
    };
    console.log(
      `\nspeed over ${N} x ${D} (synthetic), top-${k}; bytes / f32: int8 ${fmt(mem.int8!, 4)}, binary ${fmt(mem.binary!, 4)} (full vectors mapped), faiss SQ8 ${fmt(mem.faissSQ8!, 4)}`,
    );
    for (const B of [1, 256]) {
      const Q = Tensor.from(allQ.data.slice(0, B * D), [B, D]);
      const exact = scoreTopKSync(Q, corpus, k).ids;
      const rows: Array<Array<string | number>> = [];
      let f32Qps = 0;
      const budget = { minSeconds: B === 1 ? 2 : 3, maxReps: B === 1 ? 400 : 20 };
      const add = async (name: string, run: () => Int32Array) => {
        const ids = run();
        const s = await timeIt(run, budget);
        const qps = B / s;
        if (name === 'quorum f32') f32Qps = qps;
        const rec = recallOf(exact, ids, B).mean;
        rows.push([name, fmt(qps), fmt(qps / f32Qps, 3), fmt(rec, 4)]);
        out.push({ n: N, dim: D, b: B, contender: name, qps, vsF32: qps / f32Qps, recall: rec });
        console.log(`  B=${B} ${name}: ${fmt(qps)} QPS, ${fmt(qps / f32Qps)}x f32, recall@10 ${fmt(rec, 4)}`);
      };
      const over = 4;
      const rescore = (cand: Int32Array, m: number) => {
        const s = gatherScoresSync(Q, mapped, cand).data;
        const ids = new Int32Array(B * k);
        for (let b = 0; b < B; b++) {
          const order = Array.from({ length: m }, (_, j) => j).sort((x, y) => s[b * m + y]! - s[b * m + x]!);
          for (let j = 0; j < k; j++) ids[b * k + j] = cand[b * m + order[j]!]!;
        }
        return ids;
      };
      await add('quorum f32', () => scoreTopKSync(Q, corpus, k).ids);
      await add('quorum bf16', () => scoreTopKSync(Q, bf16, k).ids);
      await add('quorum int8, f32 queries', () => scoreTopKSync(Q, q8, k, { queryBits: 32 }).ids);
      await add('quorum int8, int8 queries', () => scoreTopKSync(Q, q8, k, { queryBits: 8 }).ids);
      await add(
        `quorum binary 4-bit queries + rescore x${over} (mapped f32)`,
        () => scoreTopKSync(Q, bin, k, { rescore: mapped, oversample: over }).ids,
      );
      await add(
        `quorum binary Hamming + rescore x${over} (mapped f32)`,
        () => scoreTopKSync(Q, bin, k, { rescore: mapped, oversample: over, queryBits: 1 }).ids,
      );
      await add(
        `quorum binary 4-bit queries + rescore x${over} (int8)`,
        () => scoreTopKSync(Q, bin, k, { rescore: q8, oversample: over }).ids,
      );
      await add("DenseIndex { quantization: 'int8' } (faiss SQ8 codes, our kernel)", () => Int32Array.from(ix8.searchSync(Q.data, k).ids, Number));
      await add("DenseIndex { quantization: 'binary' }, mapped (rescore x4)", () => Int32Array.from(ixb.searchSync(Q.data, k).ids, Number));
      if (faissFlat) await add('faiss IndexFlatIP', () => faissFlat.search(Q.data, k, threads).ids);
      if (faissSq8) await add('faiss IndexScalarQuantizer (8 bit)', () => faissSq8.search(Q.data, k, threads).ids);
      if (faissBin) {
        const qb = signBits(Q.data, D, undefined);
        await add(`faiss IndexBinaryFlat + rescore x${over} (mapped f32)`, () =>
          rescore(faissBin.search(qb, k * over, threads).ids, k * over),
        );
      }
      if (us) {
        // usearch's exactSearch takes Int8Array and Uint8Array rows too (its typings say Float32Array only).
        const exact8 = us.exactSearch as unknown as (...a: unknown[]) => { keys: BigUint64Array };
        const usIds = (keys: BigUint64Array, m: number) => Int32Array.from(keys, (x) => Number(x)).subarray(0, B * m);
        await add('usearch exactSearch f32', () => usIds(us.exactSearch(corpus.data, Q.data, D, k, 'ip', threads).keys, k));
        const qi8 = toI8(Q.data);
        await add('usearch exactSearch i8', () => usIds(exact8(i8, qi8, D, k, 'ip', threads).keys, k));
        // usearch's Node binding (2.25.3, javascript/lib.cpp) takes Float32Array, Float64Array and Int8Array rows only:
        // its b1 vectors cannot be searched from Node, so there is no usearch b1 row.
      }
      console.log(`\nB = ${B}`);
      printTable(['contender', 'QPS', 'x quorum f32', 'recall@10'], rows);
      Q.dispose();
    }
    results.memory = mem;
    mapped.dispose();
    ixb.dispose();
    ix8.dispose();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// HNSW over int8 codes: faiss's "HNSW32,SQ8" against "HNSW32" (f32), the same graph parameters, over --hnsw-n synthetic
// 768-d rows: build time, file bytes, recall@10 against exact f32 search (500 questions) and QPS at B = 1 and 256.

async function hnswPart(): Promise<unknown[]> {
  const N = Number(arg('hnsw-n', '20000'));
  const D = 768;
  const corpus = syntheticEmbeddings(N, D, 21);
  const allQ = syntheticEmbeddings(500, D, 22);
  const exact = scoreTopKSync(allQ, corpus, k).ids;
  const ids = Array.from({ length: N }, (_, i) => i);
  const dir = mkdtempSync(join(tmpdir(), 'quorum-qhnsw-'));
  const out: unknown[] = [];
  const rows: Array<Array<string | number>> = [];
  try {
    for (const [label, quantization] of [
      ['HNSW32 (f32)', undefined],
      ["HNSW32 { quantization: 'int8' } (faiss HNSW32,SQ8)", 'int8'],
    ] as const) {
      const ix = DenseIndex.create({ dim: D, factory: 'HNSW32', efConstruction: 40, efSearch: 64, ...(quantization ? { quantization } : {}) });
      const t0 = performance.now();
      if (quantization) await ix.train(corpus);
      await ix.add(corpus, ids);
      const build = (performance.now() - t0) / 1000;
      await ix.save(join(dir, 'ix.qdx'));
      const bytes = statSync(join(dir, 'ix.qdx')).size;
      const rec = recallOf(exact, Int32Array.from(ix.searchSync(allQ.data, k).ids, Number), 500);
      const qps: number[] = [];
      for (const B of [1, 256]) {
        const q = allQ.data.slice(0, B * D);
        qps.push(B / (await timeIt(() => ix.searchSync(q, k), { minSeconds: 2, maxReps: B === 1 ? 2000 : 50 })));
      }
      ix.dispose();
      rows.push([label, fmt(build), fmt(bytes / 2 ** 20), `${fmt(rec.mean, 4)} ± ${fmt(rec.half, 4)}`, fmt(qps[0]!), fmt(qps[1]!)]);
      out.push({ label, n: N, build, bytes, recall: rec, qpsB1: qps[0], qpsB256: qps[1] });
      console.log(`  ${label}: build ${fmt(build)} s, ${fmt(bytes / 2 ** 20)} MiB, recall@10 ${fmt(rec.mean, 4)}, B=1 ${fmt(qps[0]!)} QPS, B=256 ${fmt(qps[1]!)} QPS`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`
HNSW over ${N} x ${D} (synthetic), efConstruction 40, efSearch 64, top-${k}`);
  printTable(['index', 'build s', 'file MiB', 'recall@10', 'B = 1 QPS', 'B = 256 QPS'], rows);
  return out;
}

if (parts.has('recall')) {
  const corpora = await realCorpora();
  const syn = syntheticEmbeddings(20000, 768, 11);
  const synQ = syntheticEmbeddings(2000, 768, 12);
  corpora.push({
    name: 'synthetic 768-d (anisotropic), 20,000 rows',
    passages: syn,
    dev: Tensor.from(synQ.data.slice(0, 1000 * 768), [1000, 768]),
    test: Tensor.from(synQ.data.slice(1000 * 768), [1000, 768]),
  });
  // The same corpus with retrieval-like questions: each one a passage plus an independent draw of the distribution,
  // normalized (cosine ~0.88 to its passage, against ~0.56 between unrelated rows; the level was set before this
  // corpus was first measured). Real questions have passages this close; the independent questions above have none.
  const near = (Q: Tensor<'f32'>, seed: number) => {
    const [N, D] = syn.shape as [number, number];
    const pick = seededRandom(seed);
    const out = Float32Array.from(Q.data);
    for (let b = 0; b < Q.shape[0]!; b++) {
      const p = Math.floor(pick() * N);
      const row = out.subarray(b * D, (b + 1) * D);
      let n = 0;
      for (let d = 0; d < D; d++) {
        row[d] = row[d]! + syn.data[p * D + d]!;
        n += row[d]! ** 2;
      }
      for (let d = 0; d < D; d++) row[d]! /= Math.sqrt(n);
    }
    return Tensor.from(out, [Q.shape[0]!, D]);
  };
  const last = corpora[corpora.length - 1]!;
  corpora.push({
    name: 'synthetic 768-d (anisotropic), 20,000 rows, questions near a passage',
    passages: syn,
    dev: near(last.dev, 13),
    test: near(last.test, 14),
  });
  results.recall = await recallPart(corpora);
}
if (parts.has('speed')) results.speed = await speedPart();
if (parts.has('hnsw')) results.hnsw = await hnswPart();
console.log(`\nresults: ${writeResults('quantized', results)}`);
