// `quorum eval`: retrieval methods (and/or given run files) over any BEIR-layout dataset, scored with the
// metrics of SPEC §4; a table on screen, TREC run files and metrics.json on disk.
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

import { Bm25Index } from '../bm25/bm25.js';
import { readBeir } from '../data/beir.js';
import { readRun, writeRun } from '../data/trec-files.js';
import { scoreTopK } from '../dense.js';
import { HashedTfidfEncoder } from '../encoders/hashed-tfidf.js';
import { QuorumError } from '../errors.js';
import { type Run, type ScoredDoc, evaluate, metricFn } from '../eval/ranking.js';
import { fuse } from '../fusion/fuse.js';
import { BATCH, bm25Search } from './index-search.js';
import { inBatches, table } from './table.js';

export const EVAL_METHODS = ['bm25', 'dense', 'hybrid', 'rrf'] as const;

export interface EvalCommandOptions {
  data: string;
  split: string;
  methods: string[];
  runs: string[];
  metrics: string[];
  k: number;
  dim: number;
  alpha: number;
  out?: string;
  /** Also report each task's mean (queries carry a `task`, as in the multi-domain benchmark). */
  byTask?: boolean;
}

async function bm25Run(corpus: Array<{ id: string; text: string }>, queries: Array<{ id: string; text: string }>, k: number): Promise<Run> {
  return bm25Search(await Bm25Index.build(corpus, { k1: 0.9, b: 0.4 }), queries, k, 'bm25  ');
}

async function denseRun(corpus: Array<{ id: string; text: string }>, queries: Array<{ id: string; text: string }>, k: number, dim: number): Promise<Run> {
  const encoder = HashedTfidfEncoder.fit(
    corpus.map((p) => p.text),
    { dim },
  );
  const passages = encoder.encode(corpus.map((p) => p.text));
  const run = new Map<string, ScoredDoc[]>();
  try {
    await inBatches('dense ', queries.length, BATCH, async (start, end) => {
      const batch = queries.slice(start, end);
      const q = encoder.encode(batch.map((x) => x.text));
      const top = await scoreTopK(q, passages, k);
      batch.forEach((x, j) => run.set(x.id, top.hits(j).map((h) => ({ id: corpus[h.id]?.id ?? '', score: h.score }))));
      q.dispose();
    });
  } finally {
    passages.dispose();
  }
  return run;
}

export async function evalCommand(o: EvalCommandOptions): Promise<void> {
  for (const m of o.metrics) metricFn(m); // ERR_ARG for an unknown metric, before any work
  for (const m of o.methods)
    if (!(EVAL_METHODS as readonly string[]).includes(m))
      throw new QuorumError('ERR_ARG', `unknown method '${m}': use ${EVAL_METHODS.join(', ')} (or --run FILE for a TREC run)`);
  if (!Number.isInteger(o.k) || o.k < 1) throw new QuorumError('ERR_RANGE', `--k must be a positive integer, got ${o.k}`);
  if (o.methods.length === 0 && o.runs.length === 0) throw new QuorumError('ERR_ARG', 'nothing to evaluate: give --methods and/or --run');

  const ds = await readBeir(o.data, o.split);
  const judged = new Set(ds.qrels.keys());
  const queries = ds.queries.filter((q) => judged.has(q.id));
  console.log(`dataset ${o.data} (${o.split}): ${ds.corpus.length} passages, ${queries.length} judged queries`);
  const corpus = ds.corpus.map((p) => ({ id: p.id, text: p.title ? `${p.title}. ${p.text}` : p.text }));

  const runs = new Map<string, Run>();
  const want = new Set(o.methods);
  const needBm25 = want.has('bm25') || want.has('hybrid') || want.has('rrf');
  const needDense = want.has('dense') || want.has('hybrid') || want.has('rrf');
  const bm25 = needBm25 ? await bm25Run(corpus, queries, o.k) : undefined;
  const dense = needDense ? await denseRun(corpus, queries, o.k, o.dim) : undefined;
  if (want.has('bm25') && bm25) runs.set('bm25', bm25);
  if (want.has('dense') && dense) runs.set('dense', dense);
  if (want.has('hybrid') && bm25 && dense) runs.set('hybrid', fuse([dense, bm25], 'hybrid', { alpha: o.alpha, normalization: true, depth: o.k }));
  if (want.has('rrf') && bm25 && dense) runs.set('rrf', fuse([bm25, dense], 'rrf', { depth: o.k }));
  for (const file of o.runs) runs.set(basename(file).replace(/\.(trec|run|txt)$/, ''), await readRun(file));

  const results: Record<string, Record<string, number>> = {};
  const byTask: Record<string, Record<string, Record<string, number>>> = {};
  const rows: Array<Record<string, string | number>> = [];
  const taskRows: Array<Record<string, string | number>> = [];
  const taskOf = new Map(queries.map((q) => [q.id, q.task ?? '(none)']));
  const tasks = [...new Set(taskOf.values())].sort();
  for (const [name, run] of runs) {
    const { mean, perQuery } = evaluate(run, ds.qrels, o.metrics);
    results[name] = mean;
    rows.push({ run: name, ...mean });
    if (!o.byTask) continue;
    byTask[name] = {};
    for (const task of tasks) {
      const values = [...perQuery].filter(([qid]) => taskOf.get(qid) === task).map(([, v]) => v);
      const m = Object.fromEntries(o.metrics.map((k) => [k, values.reduce((a, v) => a + (v[k] as number), 0) / Math.max(values.length, 1)]));
      byTask[name][task] = m;
      taskRows.push({ run: name, task, queries: String(values.length), ...m });
    }
  }
  console.log('');
  table(rows);
  if (o.byTask) {
    console.log('');
    table(taskRows);
  }
  if (o.out) {
    mkdirSync(o.out, { recursive: true });
    for (const [name, run] of runs) if (o.methods.includes(name)) writeRun(join(o.out, `${name}.trec`), run, name);
    writeFileSync(join(o.out, 'metrics.json'), JSON.stringify({ dataset: o.data, split: o.split, queries: queries.length, metrics: results, ...(o.byTask ? { byTask } : {}) }, null, 2) + '\n');
    console.log(`\nwrote ${[...runs.keys()].filter((n) => o.methods.includes(n)).map((n) => `${n}.trec`).join(', ')}${o.methods.length ? ' and ' : ''}metrics.json to ${o.out}`);
  }
}
