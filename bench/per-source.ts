// Issue 20's explanation of COVID-QA's dev/test disagreement: MRR@10 of `quorum eval --out` runs per source document
// (a passage id `task-<doc>-<chunk>` names its document: for COVID-QA, its paper), for one task's judged questions,
// with the per-question mean and the mean over documents. A split whose questions come from a few documents is as
// many samples as documents.
//   node --import tsx lib/cli/main.ts eval --data data/multidomain-mini --model default --methods dense,glove,bm25 --out /tmp/e
//   node --import tsx bench/per-source.ts --runs=/tmp/e [--data=data/multidomain-mini] [--split=test] [--task=covid] [--methods=dense,glove,bm25]
import { join } from 'node:path';

import { readQrels, readRun } from '../lib/data/trec-files.js';
import { evaluate, groupMeans } from '../lib/eval/ranking.js';
import { packageRoot } from '../lib/native.js';
import { table } from '../lib/cli/table.js';
import { sourceDocument } from './harness.js';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const runs = arg('runs', '');
if (!runs) throw new Error('--runs=DIR (a `quorum eval --out` directory) is required');
const data = arg('data', join(packageRoot, 'data', 'multidomain-mini'));
const split = arg('split', 'test');
const task = arg('task', 'covid');
const methods = arg('methods', 'dense,glove,bm25').split(',');

const all = await readQrels(join(data, 'qrels', `${split}.tsv`));
const qrels = new Map([...all].filter(([q]) => q.startsWith(`${task}-`)));
// Each question's document: that of its first relevant passage (questions with ids of another shape are left out).
const docOf = new Map([...qrels].flatMap(([q, rel]) => {
  const doc = sourceDocument(rel);
  return doc === undefined ? [] : [[q, doc] as const];
}));
const per: Record<string, Record<string, { queries: number; mean: Record<string, number> }>> = {};
const overall: Record<string, number> = {};
for (const m of methods) {
  const run = await readRun(join(runs, `${m}.trec`));
  const { mean, perQuery } = evaluate(new Map([...run].filter(([q]) => qrels.has(q))), qrels, ['mrr@10']);
  per[m] = groupMeans(perQuery, docOf, ['mrr@10']);
  overall[m] = mean['mrr@10']!;
}
const docs = Object.keys(per[methods[0]!]!).sort((a, b) => per[methods[0]!]![b]!.queries - per[methods[0]!]![a]!.queries);
const rows: Array<Record<string, string | number>> = docs.map((d) => ({
  document: d,
  questions: String(per[methods[0]!]![d]!.queries),
  ...Object.fromEntries(methods.map((m) => [m, per[m]![d]!.mean['mrr@10']!.toFixed(3)])),
}));
rows.push({ document: 'per question', questions: String(qrels.size), ...Object.fromEntries(methods.map((m) => [m, overall[m]!.toFixed(3)])) });
rows.push({
  document: 'per document',
  questions: String(docs.length),
  ...Object.fromEntries(methods.map((m) => [m, (docs.reduce((s, d) => s + per[m]![d]!.mean['mrr@10']!, 0) / docs.length).toFixed(3)])),
});
console.log(`${task} ${split} questions of ${data}, MRR@10 per source document:`);
table(rows);
