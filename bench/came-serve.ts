// CAME search latency, libtorch (CameRetriever) against the serving path without libtorch (CameServer: the experts'
// graphs in ONNX Runtime, the saved indexes, the same fusion), same directory and index, same questions, one run.
// The model has CAME's small defaults (cameConfig), GloVe-initialised with its lexical bias fitted (initCame), not
// trained: the speed does not depend on training, and the lexical expert starts about as sparse as a trained one.
// The local expert's centroid stage (nprobe, candidates re-scored) is reported against exact MaxSim over every
// passage: recall of the exact top-10 and top-100 (--sweep: a grid of settings, on the --split questions; choose on dev).
// A third row runs the experts as separate calls and fuses in JS, as before the search stage was one native call.
//   node --import tsx bench/came-serve.ts [--data DIR] [--queries 200] [--split test] [--keep DIR] [--sweep]
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadBeir } from '../lib/data/beir.js';
import { fuseExperts } from '../lib/methods/came/fusion.js';
import type { CameIndexes } from '../lib/methods/came/search.js';
import { CameRetriever } from '../lib/methods/came/retriever.js';
import { CameServer } from '../lib/methods/came/serve.js';
import { initCame } from '../lib/methods/came/train.js';
import { packageRoot } from '../lib/native.js';
import { capabilities } from '../lib/runtime.js';
import { Tensor } from '../lib/tensor.js';
import { readTokenizerFiles } from '../lib/text/tokenizer-files.js';
import { arg, writeResults } from './harness.js';

const data = arg('data', join(packageRoot, 'data', 'multidomain-mini'));
const nq = Number(arg('queries', '200'));
const split = arg('split', 'test');
const keep = arg('keep', '');
const sweep = process.argv.includes('--sweep');
const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads`);

const ds = loadBeir(data, split);
const questions = ds.queries.filter((q) => ds.qrels.has(q.id)).slice(0, nq).map((q) => q.text);
const work = mkdtempSync(join(tmpdir(), 'quorum-came-serve-'));
const dir = keep || join(work, 'came');
let came: CameRetriever;
if (keep && existsSync(join(dir, 'index'))) {
  came = await CameRetriever.load(dir);
  await came.loadIndex(join(dir, 'index'));
  console.log(`CAME of ${came.experts.join(', ')} from ${dir}`);
} else {
  const tokenizer = await readTokenizerFiles(join(packageRoot, 'data', 'models', 'default'));
  came = CameRetriever.create({ tokenizer });
  const t0 = performance.now();
  await initCame(came, ds.corpus, { seed: 7 });
  await came.index(ds.corpus);
  came.save(dir);
  await came.saveIndex(join(dir, 'index'), ds.corpus.map((p) => p.id));
  console.log(`CAME of ${came.experts.join(', ')} (${came.parameterCount.toLocaleString()} parameters) over ${ds.corpus.length} passages, indexed in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
async function measure(search: (qs: string[]) => Promise<{ timings: Record<string, number> }>) {
  await search(questions.slice(0, 8));
  const ms: number[] = [];
  const stages: Record<string, number[]> = {};
  for (const q of questions) {
    const t = performance.now();
    const r = await search([q]);
    const took = performance.now() - t;
    ms.push(took);
    // Everything after the encoding: the experts' searches and the fusion, with the calls' own overhead.
    for (const [s, v] of Object.entries({ ...r.timings, 'after encode': took - r.timings.encode! })) (stages[s] ??= []).push(v);
  }
  return { p50: +pct(ms, 50).toFixed(2), p99: +pct(ms, 99).toFixed(2), ...Object.fromEntries(Object.entries(stages).map(([s, v]) => [`${s} p50`, +pct(v, 50).toFixed(2)])) };
}
const torch = await measure((qs) => came.search(qs, { k: 10 }));
// The same searches as one call per expert and the fusion in JS (what CameRetriever.search did before the stage
// became one native call): SparseIndex, the token index (the stage with its one expert), DenseIndex (faiss), fuseExperts.
const ix = (came as unknown as { indexes: CameIndexes }).indexes;
const K = 100;
const hitsOf = (r: { hits(q: number): Array<{ id: bigint; score: number }> }, n: number) => Array.from({ length: n }, (_, q) => r.hits(q).map((h) => ({ id: Number(h.id), score: h.score })));
const separate = await measure(async (qs) => {
  const t0 = performance.now();
  const enc = await came.encode(await came.questionTable(qs), 'query', { maxTerms: ix.queryTerms });
  const encode = performance.now() - t0;
  const lexical = hitsOf(await ix.lexical!.search(enc.lexical!, K), qs.length);
  const local = await ix.local!.search(enc.local!, K);
  const global = hitsOf(await ix.global!.search(Tensor.wrap(enc.global!, [qs.length, enc.global!.length / qs.length], 'f32'), K), qs.length);
  fuseExperts([lexical, local, global], 'sum', 10, K);
  return { timings: { encode } };
});
came.dispose();
const server = await CameServer.load(dir, { threads: caps.threads });
const serving = await measure((qs) => server.search(qs, { k: 10 }));
const rows: Record<string, unknown>[] = [
  { path: 'CameRetriever (libtorch), experts as separate calls', ...separate },
  { path: 'CameRetriever (libtorch)', ...torch },
  { path: 'CameServer (no libtorch)', ...serving },
];
console.table(rows);

// The local expert against exact MaxSim over every passage, at each setting: recall of the exact top-10 / top-100.
const exact = (await server.search(questions, { k: 100, expertK: 100, experts: ['local'], localCandidates: 'all' })).experts.local!;
const settings: Array<{ localProbe: number; localCandidates: number }> = sweep
  ? [1, 2, 4, 8, 0].flatMap((localProbe) => [128, 256, 512].map((localCandidates) => ({ localProbe, localCandidates })))
  : [{ localProbe: 4, localCandidates: 256 }];
const local: Record<string, unknown>[] = [];
for (const s of settings) {
  const ms: number[] = [];
  let r10 = 0;
  let r100 = 0;
  for (const [i, q] of questions.entries()) {
    const t = performance.now();
    const got = (await server.search([q], { k: 100, expertK: 100, experts: ['local'], ...s })).experts.local![0]!;
    ms.push(performance.now() - t);
    const ids = new Set(got.map((h) => h.id));
    r10 += exact[i]!.slice(0, 10).filter((h) => ids.has(h.id)).length / 10;
    r100 += exact[i]!.filter((h) => ids.has(h.id)).length / exact[i]!.length;
  }
  local.push({ ...s, 'local p50 ms': +pct(ms, 50).toFixed(2), 'recall@10 of exact': +(r10 / questions.length).toFixed(4), 'recall@100 of exact': +(r100 / questions.length).toFixed(4) });
}
console.table(local);
await server.dispose();
const path = writeResults('came-serve', { date: new Date().toISOString(), machine: { isa: caps.isa, threads: caps.threads }, data, split, queries: questions.length, rows, local });
console.log(`results written to ${path}`);
rmSync(work, { recursive: true, force: true });
