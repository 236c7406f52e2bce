// DenseIndex (faiss) against hnswlib-node and usearch on n x 768 vectors: build time, queries per second at
// B = 1 (one query per call, the server case), recall@10 against exact search. Also faiss HNSW with its own
// inner-product metric against DPR's L2 transform (docs/methods/kernels.md#mips-as-l2-search), the measurement behind DenseIndex's default.
//
// Data: synthetic but shaped like embeddings, since no pretrained encoder is reachable here: 256 cluster centres
// in a 64-d latent space, lifted to 768-d by a fixed random map, plus isotropic noise, with log-normal norms
// (real DPR vectors vary in norm, which is what makes MIPS differ from cosine). Queries come from the same
// mixture with other draws. Same M (32), efConstruction and efSearch for every HNSW.
import { createRequire } from 'node:module';

import { DenseIndex, type Mips, Tensor, capabilities, scoreSync, scoreTopKSync } from '../lib/index.js';
import { fmt, printTable } from './harness.js';

type Hnswlib = {
  HierarchicalNSW: new (
    space: 'ip' | 'l2' | 'cosine',
    dim: number,
  ) => {
    initIndex(max: number, m?: number, efConstruction?: number, seed?: number): void;
    addPoint(p: number[] | Float32Array, label: number): void;
    setEf(ef: number): void;
    searchKnn(q: number[] | Float32Array, k: number): { neighbors: number[]; distances: number[] };
  };
};
type Usearch = {
  Index: new (c: {
    dimensions: number;
    metric: string;
    connectivity: number;
    expansion_add: number;
    expansion_search: number;
  }) => {
    add(keys: BigUint64Array, vectors: Float32Array, threads?: number): void;
    search(v: Float32Array, k: number, threads: number): { keys: BigUint64Array };
    changeExpansionSearch?(ef: number): void;
  };
};

export interface IndexBenchOptions {
  n: number;
  dim: number;
  queries: number;
  k: number;
  m: number;
  efConstruction: number;
  efs: number[];
}

/** A deterministic normal sampler (Box-Muller over xorshift32). */
function normals(seed: number): () => number {
  let x = seed >>> 0 || 1;
  const u = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return ((x >>> 0) + 0.5) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
}

/** n embedding-like vectors: mixture in a 64-d latent space, lifted to dim, noise, log-normal norms. */
export function embeddingLike(n: number, dim: number, seed: number): Float32Array {
  const latent = 64;
  const centres = 256;
  const fixed = normals(12345); // the map and the centres are shared by corpus and queries
  const map = Float32Array.from({ length: dim * latent }, () => fixed() / Math.sqrt(latent));
  const mu = Float32Array.from({ length: centres * latent }, () => fixed());
  const g = normals(seed);
  const z = new Float32Array(n * latent);
  const scale = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const c = Math.floor(Math.abs(g()) * 1e6) % centres;
    for (let j = 0; j < latent; j++) z[i * latent + j] = (mu[c * latent + j] as number) + 0.6 * g();
    scale[i] = Math.exp(0.25 * g());
  }
  // The lift Z · mapᵀ by the core's own dense kernel (JS took a minute for 100k rows).
  const lifted = scoreSync(Tensor.wrap(z, [n, latent], 'f32'), Tensor.wrap(map, [dim, latent], 'f32'));
  const out = new Float32Array(lifted.data as Float32Array);
  lifted.dispose();
  for (let i = 0; i < n; i++)
    for (let r = 0; r < dim; r++) out[i * dim + r] = (scale[i] as number) * ((out[i * dim + r] as number) + 0.15 * g());
  return out;
}

function recall(truth: BigInt64Array, got: ArrayLike<bigint | number>, rows: number, k: number): number {
  let hit = 0;
  for (let r = 0; r < rows; r++) {
    const t = new Set<bigint>();
    for (let j = 0; j < k; j++) t.add(truth[r * k + j] as bigint);
    for (let j = 0; j < k; j++) if (t.has(BigInt(got[r * k + j] as bigint | number))) hit++;
  }
  return hit / (rows * k);
}

/** Queries per second of one-at-a-time calls, and the ids they returned (rows x k). */
function perQuery(nq: number, k: number, run: (i: number, out: BigInt64Array) => void): { qps: number; ids: BigInt64Array } {
  const ids = new BigInt64Array(nq * k);
  for (let i = 0; i < Math.min(20, nq); i++) run(i, ids.subarray(i * k, (i + 1) * k)); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < nq; i++) run(i, ids.subarray(i * k, (i + 1) * k));
  return { qps: nq / ((performance.now() - t0) / 1000), ids };
}

export async function benchDenseIndex(o: IndexBenchOptions): Promise<{ rows: Array<Record<string, number | string>>; checks: string[] }> {
  const { n, dim: d, queries: nq, k, m, efConstruction } = o;
  const threads = capabilities().threads;
  console.log(`\nDenseIndex vs hnswlib-node and usearch: ${n} x ${d} embedding-like vectors, ${nq} queries, k = ${k}, M = ${m}, efConstruction = ${efConstruction}, ${threads} threads for builds, B = 1 searches`);
  let t0 = performance.now();
  const x = embeddingLike(n, d, 1);
  const q = embeddingLike(nq, d, 2);
  console.log(`  data generated in ${fmt((performance.now() - t0) / 1000)} s`);
  const ids = BigInt64Array.from({ length: n }, (_, i) => BigInt(i));

  // Exact top-k: the core's fused kernel, checked against faiss Flat below.
  const truth = (() => {
    const c = Tensor.wrap(x, [n, d], 'f32');
    const r = scoreTopKSync(Tensor.wrap(q, [nq, d], 'f32'), c, k);
    return BigInt64Array.from(r.ids, (v) => BigInt(v));
  })();

  const rows: Array<Record<string, number | string>> = [];
  const add = (contender: string, buildS: number, ef: number | string, qps: number, rec: number) => {
    rows.push({ contender, buildS, ef, qps, recall: rec });
  };

  // Exact baselines at B = 1.
  {
    const flat = DenseIndex.create({ dim: d });
    t0 = performance.now();
    flat.addSync(x, ids);
    const build = (performance.now() - t0) / 1000;
    const few = Math.min(nq, 100);
    const r = perQuery(few, k, (i, out) => out.set(flat.searchSync(q.subarray(i * d, (i + 1) * d), k).ids));
    add('DenseIndex Flat (faiss IndexFlatIP)', build, 'exact', r.qps, recall(truth.subarray(0, few * k), r.ids, few, k));
    const c = Tensor.wrap(x, [n, d], 'f32');
    const r2 = perQuery(few, k, (i, out) => {
      const t = scoreTopKSync(Tensor.wrap(q.subarray(i * d, (i + 1) * d), [1, d], 'f32'), c, k);
      out.set(BigInt64Array.from(t.ids, (v) => BigInt(v)));
    });
    add('quorum scoreTopK (exact, core kernel)', 0, 'exact', r2.qps, recall(truth.subarray(0, few * k), r2.ids, few, k));
  }

  // faiss HNSW, both ways of ranking by inner product.
  const hnswRecall: Record<string, Record<number, number>> = {};
  for (const mips of ['inner-product', 'l2'] as Mips[]) {
    const index = DenseIndex.create({ dim: d, factory: `HNSW${m}`, mips, efConstruction });
    t0 = performance.now();
    await index.add(x, ids);
    const build = (performance.now() - t0) / 1000;
    hnswRecall[mips] = {};
    for (const ef of o.efs) {
      index.setSearchDefaults({ efSearch: ef }); // the shared-lock path a server would use
      const r = perQuery(nq, k, (i, out) => out.set(index.searchSync(q.subarray(i * d, (i + 1) * d), k).ids));
      const rec = recall(truth, r.ids, nq, k);
      hnswRecall[mips]![ef] = rec;
      add(`DenseIndex HNSW${m} (faiss, mips ${mips})`, build, ef, r.qps, rec);
    }
  }

  const require = createRequire(import.meta.url);
  let hnswlib: Hnswlib | undefined;
  try {
    hnswlib = require('hnswlib-node') as Hnswlib;
  } catch {
    console.log('  (hnswlib-node not installed: skipped)');
  }
  if (hnswlib) {
    const h = new hnswlib.HierarchicalNSW('ip', d);
    h.initIndex(n, m, efConstruction, 100);
    t0 = performance.now();
    for (let i = 0; i < n; i++) h.addPoint(Array.from(x.subarray(i * d, (i + 1) * d)), i);
    const build = (performance.now() - t0) / 1000;
    for (const ef of o.efs) {
      h.setEf(ef);
      const r = perQuery(nq, k, (i, out) => {
        const res = h.searchKnn(Array.from(q.subarray(i * d, (i + 1) * d)), k);
        // hnswlib returns farthest first
        const order = res.neighbors.map((id, j) => [id, res.distances[j] as number] as const).sort((a, b) => a[1] - b[1]);
        for (let j = 0; j < k; j++) out[j] = BigInt(order[j]?.[0] ?? -1);
      });
      add(`hnswlib-node HNSW (ip, single-threaded build)`, build, ef, r.qps, recall(truth, r.ids, nq, k));
    }
  }

  let us: Usearch | undefined;
  try {
    us = require('usearch') as Usearch;
  } catch {
    console.log('  (usearch not installed: skipped)');
  }
  if (us) {
    for (const ef of o.efs) {
      // usearch fixes expansion_search at construction in its JS API: one index per ef, built once per ef but
      // timed only the first time.
      const u = new us.Index({ dimensions: d, metric: 'ip', connectivity: m, expansion_add: efConstruction, expansion_search: ef });
      t0 = performance.now();
      u.add(BigUint64Array.from(ids, (v) => BigInt.asUintN(64, v)), x, threads);
      const build = (performance.now() - t0) / 1000;
      const r = perQuery(nq, k, (i, out) => {
        const res = u.search(q.subarray(i * d, (i + 1) * d), k, 1);
        for (let j = 0; j < k; j++) out[j] = j < res.keys.length ? BigInt.asIntN(64, res.keys[j] as bigint) : -1n;
      });
      add(`usearch HNSW (ip, f32)`, build, ef, r.qps, recall(truth, r.ids, nq, k));
    }
  }

  printTable(
    ['contender', 'build s', 'efSearch', 'queries/s', 'recall@10'],
    rows.map((r) => [r.contender as string, r.buildS as number, String(r.ef), r.qps as number, (r.recall as number).toFixed(3)]),
  );
  const checks: string[] = [];
  for (const ef of o.efs) {
    const ip = hnswRecall['inner-product']?.[ef] ?? NaN;
    const l2 = hnswRecall.l2?.[ef] ?? NaN;
    checks.push(`INFO  faiss HNSW${m} recall@${k} at efSearch ${ef}: inner-product ${ip.toFixed(3)}, DPR L2 transform ${l2.toFixed(3)}`);
  }
  for (const c of checks) console.log('  ' + c);
  return { rows, checks };
}
