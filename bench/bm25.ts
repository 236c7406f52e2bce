// BM25 on CACM: queries per second and MAP, ours (native SparseIndex) against wink-bm25-text-search (plain JS),
// both with the same analyzer, k1 = 0.9, b = 0.4. Reads ../shared/data/cacm (skipped when absent).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

import { loadTrecCollection } from './lib/trec-collection.js';
import { Bm25Index } from '../lib/index.js';
import { englishAnalyzer } from '../lib/entries/text.js';
import { evaluate } from '../lib/entries/eval.js';
import { packageRoot } from '../lib/native.js';
import { fmt, timeIt } from './harness.js';

type Wink = {
  defineConfig(c: unknown): void;
  definePrepTasks(t: Array<(s: string) => string[]>): void;
  addDoc(d: { body: string }, id: string): void;
  consolidate(): void;
  search(text: string, limit: number): Array<[string, number]>;
};

export async function benchBm25(): Promise<{ rows: Array<Record<string, number | string>>; checks: string[] } | undefined> {
  const dir = join(packageRoot, '..', 'shared', 'data', 'cacm');
  if (!existsSync(join(dir, 'cacm.json'))) {
    console.log('  (../shared/data/cacm not found: BM25 benchmark skipped)');
    return undefined;
  }
  const { docs, topics, qrels } = loadTrecCollection(dir, 'cacm');
  const texts = topics.map((t) => t.text);
  // trec_eval's MAP: over the topics with a run and a relevant document, equal scores by document id descending.
  const trecMap = (hits: ReadonlyArray<ReadonlyArray<{ id: string; score: number }>>) =>
    evaluate(new Map(topics.map((t, i) => [t.id, hits[i] ?? []])), qrels, ['map'], { queries: 'judged' }).mean.map as number;

  const analyzer = englishAnalyzer();
  let t0 = performance.now();
  const ours = await Bm25Index.build(docs, { k1: 0.9, b: 0.4, analyzer });
  const oursBuild = performance.now() - t0;
  const oursRun = await ours.search(texts, 1000);
  const oursMap = trecMap(oursRun);
  const oursSec = await timeIt(() => ours.searchSync(texts, 1000), { minReps: 5 });

  const require = createRequire(import.meta.url);
  const wink = (require('wink-bm25-text-search') as () => Wink)();
  t0 = performance.now();
  wink.defineConfig({ fldWeights: { body: 1 }, bm25Params: { k1: 0.9, b: 0.4 } });
  wink.definePrepTasks([analyzer]);
  for (const d of docs) wink.addDoc({ body: d.text }, d.id);
  wink.consolidate();
  const winkBuild = performance.now() - t0;
  const winkRun = texts.map((q) => wink.search(q, 1000).map(([id, score]) => ({ id, score })));
  const winkMap = trecMap(winkRun);
  const winkSec = await timeIt(() => texts.map((q) => wink.search(q, 1000)), { minReps: 5 });

  const qps = (s: number) => texts.length / s;
  const rows = [
    { contender: 'quorum Bm25Index (native SparseIndex)', qps: qps(oursSec), map: oursMap, buildMs: oursBuild },
    { contender: 'wink-bm25-text-search (plain JS)', qps: qps(winkSec), map: winkMap, buildMs: winkBuild },
  ];
  console.log(`\nBM25 on CACM (${docs.length} docs, ${texts.length} queries, top-1000, same analyzer; Anserini MAP 0.3123):`);
  for (const r of rows) console.log(`  ${r.contender}: ${fmt(r.qps)} queries/s, MAP ${r.map.toFixed(4)}, build ${fmt(r.buildMs)} ms`);
  const checks = [
    `${Math.abs(oursMap - 0.3123) <= 0.01 ? 'PASS' : 'MISS'}  BM25 CACM MAP ${oursMap.toFixed(4)} within 0.01 of Anserini's 0.3123`,
    `INFO  BM25 queries/s vs wink-bm25-text-search: ${fmt(qps(oursSec) / qps(winkSec))}x (MAP ${oursMap.toFixed(4)} vs ${winkMap.toFixed(4)})`,
  ];
  for (const c of checks) console.log('  ' + c);
  return { rows, checks };
}
