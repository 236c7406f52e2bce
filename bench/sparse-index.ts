// SparseIndex search algorithms, measured to choose the default (issue 4): term-at-a-time accumulators against
// document-at-a-time MaxScore, on the real CACM BM25 run and on two synthetic collections shaped like BM25 and
// SPLADE vectors (Zipf-distributed terms). Both algorithms run the same query batch through the same thread pool.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { loadTrecCollection } from './lib/trec-collection.js';
import { Bm25Index, SparseIndex, type SparseAlgorithm } from '../lib/index.js';
import { englishAnalyzer } from '../lib/entries/text.js';
import { packageRoot } from '../lib/native.js';
import { fmt, printTable, timeIt } from './harness.js';

type Row = Array<{ index: number; value: number }>;

function uniform(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return ((x >>> 0) + 0.5) / 4294967296;
  };
}

/** Zipf(1) over [0, vocab) by inverse CDF on the harmonic numbers. */
function zipf(vocab: number, u: () => number): () => number {
  const cdf = new Float64Array(vocab);
  let s = 0;
  for (let i = 0; i < vocab; i++) cdf[i] = s += 1 / (i + 1);
  return () => {
    const t = u() * s;
    let lo = 0;
    let hi = vocab - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cdf[mid] as number) < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

function rows(n: number, terms: number, vocab: number, seed: number, weight: (term: number, u: () => number) => number): Row[] {
  const u = uniform(seed);
  const z = zipf(vocab, u);
  return Array.from({ length: n }, () => {
    const seen = new Map<number, number>();
    for (let j = 0; j < terms; j++) {
      const t = z();
      seen.set(t, (seen.get(t) ?? 0) + weight(t, u));
    }
    return Array.from(seen, ([index, value]) => ({ index, value }));
  });
}

export async function benchSparseIndex(opts: { quick: boolean }): Promise<{ rows: Array<Record<string, number | string>>; checks: string[] }> {
  const out: Array<Record<string, number | string>> = [];
  const algos: SparseAlgorithm[] = ['taat', 'maxscore', 'auto'];
  const measure = async (name: string, search: (k: number, a: SparseAlgorithm) => unknown, nq: number) => {
    for (const k of [10, 100, 1000]) {
      const qps: Record<string, number> = {};
      for (const a of algos) qps[a] = nq / (await timeIt(() => search(k, a), { minReps: 3, minSeconds: 1 }));
      out.push({
        collection: name,
        k,
        taat: qps.taat as number,
        maxscore: qps.maxscore as number,
        auto: qps.auto as number,
        ratio: (qps.maxscore as number) / (qps.taat as number),
        autoVsBest: (qps.auto as number) / Math.max(qps.taat as number, qps.maxscore as number),
      });
    }
  };

  const n = opts.quick ? 50_000 : 200_000;
  console.log(`\nSparseIndex search algorithms: building the synthetic collections (${n} and ${n / 2} documents)...`);
  // BM25-like: ~40 distinct terms per document over a 50k vocabulary, weight = idf-like decreasing with frequency.
  const bm25Docs = rows(n, 60, 50_000, 1, (t, u) => Math.log(2 + t / 10) * (0.5 + u()));
  const bm25Queries = rows(500, 5, 50_000, 2, (t) => Math.log(2 + t / 10));
  const a = new SparseIndex();
  a.addSync(BigInt64Array.from({ length: n }, (_, i) => BigInt(i)), bm25Docs);
  await measure(`BM25-like ${n} docs, 5-term queries`, (k, algo) => a.searchSync(bm25Queries, k, { algorithm: algo }), bm25Queries.length);

  // SPLADE-like: ~120 terms per document over 30,522 word pieces, ~25-term queries, positive ReLU-log weights.
  const spladeDocs = rows(n / 2, 150, 30_522, 3, (_, u) => Math.log1p(3 * u()));
  const spladeQueries = rows(500, 30, 30_522, 4, (_, u) => Math.log1p(3 * u()));
  const b = new SparseIndex();
  b.addSync(BigInt64Array.from({ length: n / 2 }, (_, i) => BigInt(i)), spladeDocs);
  await measure(`SPLADE-like ${n / 2} docs, 25-term queries`, (k, algo) => b.searchSync(spladeQueries, k, { algorithm: algo }), spladeQueries.length);

  const cacm = join(packageRoot, '..', 'shared', 'data', 'cacm');
  if (existsSync(join(cacm, 'cacm.json'))) {
    const { docs, topics } = loadTrecCollection(cacm, 'cacm');
    const bm25 = await Bm25Index.build(docs, { k1: 0.9, b: 0.4, analyzer: englishAnalyzer() });
    const texts = topics.map((t) => t.text);
    await measure(`CACM BM25 (${docs.length} docs, ${texts.length} topics)`, (k, algo) => bm25.searchSync(texts, k, { algorithm: algo }), texts.length);
  }

  console.log('\nSparseIndex: term-at-a-time accumulators vs MaxScore (queries/s, same batch, same threads):');
  printTable(
    ['collection', 'k', 'TAAT q/s', 'MaxScore q/s', 'MaxScore / TAAT', "'auto' / best"],
    out.map((r) => [r.collection as string, String(r.k), r.taat as number, r.maxscore as number, fmt(r.ratio as number), fmt(r.autoVsBest as number)]),
  );
  const checks = out.map(
    (r) => `INFO  sparse ${r.collection} k=${r.k}: MaxScore ${fmt(r.ratio as number)}x TAAT; 'auto' at ${fmt(r.autoVsBest as number)}x the better one`,
  );
  return { rows: out, checks };
}
