// CAME search latency, libtorch (CameRetriever) against the serving path without libtorch (CameServer: the experts'
// graphs in ONNX Runtime, the saved indexes, the same fusion), same directory and index, same questions, one run.
// The model has CAME's small defaults (cameConfig), GloVe-initialised with its lexical bias fitted (initCame), not
// trained: the speed does not depend on training, and the lexical expert starts about as sparse as a trained one.
//   node --import tsx bench/came-serve.ts [--data DIR] [--queries 200]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadBeir } from '../lib/data/beir.js';
import { CameRetriever } from '../lib/methods/came/retriever.js';
import { CameServer } from '../lib/methods/came/serve.js';
import { initCame } from '../lib/methods/came/train.js';
import { packageRoot } from '../lib/native.js';
import { capabilities } from '../lib/runtime.js';
import { readTokenizerFiles } from '../lib/text/tokenizer-files.js';
import { arg, writeResults } from './harness.js';

const data = arg('data', join(packageRoot, 'data', 'multidomain-mini'));
const nq = Number(arg('queries', '200'));
const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads`);

const ds = loadBeir(data, 'test');
const questions = ds.queries.filter((q) => ds.qrels.has(q.id)).slice(0, nq).map((q) => q.text);
const work = mkdtempSync(join(tmpdir(), 'quorum-came-serve-'));
const dir = join(work, 'came');
const tokenizer = await readTokenizerFiles(join(packageRoot, 'data', 'models', 'default'));
const came = CameRetriever.create({ tokenizer });
const t0 = performance.now();
await initCame(came, ds.corpus, { seed: 7 });
await came.index(ds.corpus);
came.save(dir);
await came.saveIndex(join(dir, 'index'), ds.corpus.map((p) => p.id));
console.log(`CAME of ${came.experts.join(', ')} (${came.parameterCount.toLocaleString()} parameters) over ${ds.corpus.length} passages, indexed in ${((performance.now() - t0) / 1000).toFixed(0)} s`);

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
async function measure(search: (qs: string[]) => Promise<{ timings: Record<string, number> }>) {
  await search(questions.slice(0, 8));
  const ms: number[] = [];
  const stages: Record<string, number[]> = {};
  for (const q of questions) {
    const t = performance.now();
    const r = await search([q]);
    ms.push(performance.now() - t);
    for (const [s, v] of Object.entries(r.timings)) (stages[s] ??= []).push(v);
  }
  return { p50: +pct(ms, 50).toFixed(2), p99: +pct(ms, 99).toFixed(2), ...Object.fromEntries(Object.entries(stages).map(([s, v]) => [`${s} p50`, +pct(v, 50).toFixed(2)])) };
}
const torch = await measure((qs) => came.search(qs, { k: 10 }));
came.dispose();
const server = await CameServer.load(dir, { threads: caps.threads });
const serving = await measure((qs) => server.search(qs, { k: 10 }));
await server.dispose();
const rows = [
  { path: 'CameRetriever (libtorch)', ...torch },
  { path: 'CameServer (no libtorch)', ...serving },
];
console.table(rows);
const path = writeResults('came-serve', { date: new Date().toISOString(), machine: { isa: caps.isa, threads: caps.threads }, data, queries: questions.length, rows });
console.log(`results written to ${path}`);
rmSync(work, { recursive: true, force: true });
