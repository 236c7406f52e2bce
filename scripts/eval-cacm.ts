// BM25 on CACM (k1 = 0.9, b = 0.4, Porter + Lucene stopwords), evaluated like Anserini's regression, whose
// published figures are MAP 0.3123 and P@30 0.1942. Reads ../shared/data/cacm (or the path given).
//   npx tsx scripts/eval-cacm.ts [dir] [--exact-lengths]
import { join, resolve } from 'node:path';

import { Bm25Index } from '../lib/bm25/bm25.js';
import { loadTrecCollection } from '../bench/lib/trec-collection.js';
import { evaluate } from '../lib/eval/ranking.js';
import { packageRoot } from '../lib/native.js';

const dir = resolve(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? join(packageRoot, '..', 'shared', 'data', 'cacm'));
const exact = process.argv.includes('--exact-lengths');

const { docs, topics, qrels } = loadTrecCollection(dir, 'cacm');

const t0 = performance.now();
const bm25 = await Bm25Index.build(docs, { k1: 0.9, b: 0.4, lengthNorm: exact ? 'exact' : 'lucene' });
const t1 = performance.now();
const results = await bm25.search(
  topics.map((t) => t.text),
  1000,
);
const t2 = performance.now();
// trec_eval's means: over the topics with a run and a relevant document, equal scores by document id descending.
const { mean, perQuery } = evaluate(new Map(topics.map((t, i) => [t.id, results[i] ?? []])), qrels, ['map', 'precision@30'], { queries: 'judged' });
const [map, pAtK, queries] = [mean.map as number, mean['precision@30'] as number, perQuery.size];
console.log(`CACM: ${docs.length} documents, ${topics.length} topics, ${queries} judged; index ${(t1 - t0).toFixed(0)} ms, ${topics.length} queries ${(t2 - t1).toFixed(1)} ms`);
console.log(`BM25 k1=0.9 b=0.4 (${exact ? 'exact' : 'Lucene-rounded'} lengths): MAP ${map.toFixed(4)} (Anserini 0.3123, diff ${(map - 0.3123).toFixed(4)}), P@30 ${pAtK.toFixed(4)} (Anserini 0.1942)`);
