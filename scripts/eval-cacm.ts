// BM25 on CACM (k1 = 0.9, b = 0.4, Porter + Lucene stopwords), evaluated like Anserini's regression, whose
// published figures are MAP 0.3123 and P@30 0.1942. Reads ../shared/data/cacm (or the path given).
//   npx tsx scripts/eval-cacm.ts [dir] [--exact-lengths]
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { Bm25Index } from '../lib/bm25/bm25.js';
import { evaluateTrec, parseQrels } from '../lib/eval/trec.js';
import { packageRoot } from '../lib/native.js';

const dir = resolve(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? join(packageRoot, '..', 'shared', 'data', 'cacm'));
const exact = process.argv.includes('--exact-lengths');

const docs = readFileSync(join(dir, 'cacm.json'), 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l) as { id: string; contents: string })
  .map((d) => ({ id: d.id, text: d.contents }));
const topics = [...readFileSync(join(dir, 'topics.cacm.txt'), 'utf8').matchAll(/<DOCNO>\s*(\S+)\s*<\/DOCNO>([\s\S]*?)<\/DOC>/g)].map((m) => ({
  id: m[1] as string,
  text: (m[2] as string).trim(),
}));
const qrels = parseQrels(readFileSync(join(dir, 'qrels.cacm.txt'), 'utf8'));

const t0 = performance.now();
const bm25 = await Bm25Index.build(docs, { k1: 0.9, b: 0.4, lengthNorm: exact ? 'exact' : 'lucene' });
const t1 = performance.now();
const results = await bm25.search(
  topics.map((t) => t.text),
  1000,
);
const t2 = performance.now();
// trec_eval's order: score descending, then document id descending.
const run = new Map(topics.map((t, i) => [t.id, [...(results[i] ?? [])].sort((a, b) => b.score - a.score || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((h) => h.id)]));
const { map, pAtK, queries } = evaluateTrec(run, qrels, 30);
console.log(`CACM: ${docs.length} documents, ${topics.length} topics, ${queries} judged; index ${(t1 - t0).toFixed(0)} ms, ${topics.length} queries ${(t2 - t1).toFixed(1)} ms`);
console.log(`BM25 k1=0.9 b=0.4 (${exact ? 'exact' : 'Lucene-rounded'} lengths): MAP ${map.toFixed(4)} (Anserini 0.3123, diff ${(map - 0.3123).toFixed(4)}), P@30 ${pAtK.toFixed(4)} (Anserini 0.1942)`);
