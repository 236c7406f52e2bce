// DPR-MUF search latency, libtorch (MufRetriever) against the serving path without libtorch (MufServer: ServingEncoder,
// then one native call for every expert's scans, confidence and the fusion), same directory, same questions, one run;
// MufServer with uniform fusion (no heads) beside it, and the memory floor of the heads at B = 1: their weights' bytes
// over the rate at which scoreTopK streams a 65.5 MB corpus at B = 1 (the machine's streaming rate through our kernel).
// Builds a MUF over the shipped multi-task model's two experts (K heads, L candidates) unless --muf DIR names one.
//   node --import tsx bench/muf-serve.ts [--muf DIR] [--data DIR] [--members 20] [--top-l 100] [--queries 200]
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadBeir } from '../lib/data/beir.js';
import { scoreTopK } from '../lib/dense.js';
import { Tensor } from '../lib/tensor.js';
import { mufTrainCommand } from '../lib/methods/muf/cli.js';
import { MufRetriever } from '../lib/methods/muf/retriever.js';
import { MufServer } from '../lib/methods/muf/serve.js';
import { packageRoot } from '../lib/native.js';
import { capabilities } from '../lib/runtime.js';
import { arg, writeResults } from './harness.js';

const data = arg('data', join(packageRoot, 'data', 'multidomain-mini'));
const members = Number(arg('members', '20'));
const topL = Number(arg('top-l', '100'));
const nq = Number(arg('queries', '200'));
const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads`);

const work = mkdtempSync(join(tmpdir(), 'quorum-muf-serve-'));
let dir = arg('muf', '');
if (!dir) {
  dir = join(work, 'muf');
  const t0 = performance.now();
  (await mufTrainCommand(
    { data, experts: ['default:covid', 'default:selqa'], out: dir, members, hidden: 512, layers: 2, epochs: 5, batch: 128, lr: 1e-3, hardNegatives: 1, topL, hitTopK: 1, seed: 7 },
    () => undefined,
  ))?.dispose();
  console.log(`built a MUF of 2 experts, K = ${members}, L = ${topL} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}
const test = loadBeir(data, 'test');
const questions = test.queries.filter((q) => test.qrels.has(q.id)).slice(0, nq).map((q) => q.text);

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
async function measure(search: (qs: string[]) => Promise<unknown>) {
  await search(questions.slice(0, 8)); // warm-up
  const ms: number[] = [];
  for (const q of questions) {
    const t0 = performance.now();
    await search([q]);
    ms.push(performance.now() - t0);
  }
  // B = 64: every full batch of 64 of the questions, five passes; the median batch's rate (one pass of four calls, as
  // before 29 Nov, moved by 20% between runs on these VMs).
  const batches: number[] = [];
  for (let pass = 0; pass < 5; pass++)
    for (let s = 0; s + 64 <= questions.length; s += 64) {
      const t0 = performance.now();
      await search(questions.slice(s, s + 64));
      batches.push(performance.now() - t0);
    }
  const qps = 64 / (pct(batches, 50) / 1000);
  return { p50: +pct(ms, 50).toFixed(2), p99: +pct(ms, 99).toFixed(2), b64PerS: +qps.toFixed(0) };
}

const torch = await MufRetriever.load(dir);
const libtorch = await measure((qs) => torch.search(qs, 10));
torch.dispose();
const server = await MufServer.load(dir, { threads: caps.threads });
const serving = await measure((qs) => server.search(qs, 10));
const uniform = await measure((qs) => server.search(qs, 10, { fusion: 'uniform' }));
// bf16 variants: their speed, the largest confidence move and the questions whose fused top 10 differ from f32's.
const variants: Array<{ name: string; options: { heads?: 'bf16'; passages?: 'bf16'; familiarity?: 'bf16' } }> = [
  { name: "heads: 'bf16'", options: { heads: 'bf16' } },
  { name: "heads and passages: 'bf16'", options: { heads: 'bf16', passages: 'bf16' } },
  { name: "heads, passages and familiarity: 'bf16'", options: { heads: 'bf16', passages: 'bf16', familiarity: 'bf16' } },
];
const halves: Array<Record<string, unknown>> = [];
const moves: Record<string, { maxConfidenceMove: number; changedTop10: number }> = {};
for (const v of variants) {
  const half = await MufServer.load(dir, { threads: caps.threads, ...v.options });
  halves.push({ path: `MufServer, ${v.name}`, ...(await measure((qs) => half.search(qs, 10))) });
  let maxMove = 0;
  let changed = 0;
  for (let s = 0; s < questions.length; s += 64) {
    const qs = questions.slice(s, s + 64);
    const [a, b] = [await server.search(qs, 10), await half.search(qs, 10)];
    a.forEach((r, i) => {
      r.confidence.forEach((c, j) => (maxMove = Math.max(maxMove, Math.abs(c - b[i]!.confidence[j]!))));
      if (r.hits.map((h) => h.id).join() !== b[i]!.hits.map((h) => h.id).join()) changed++;
    });
  }
  console.log(`${v.name}: confidences move by at most ${maxMove.toFixed(4)}; ${changed} of ${questions.length} fused top-10 lists differ from f32's`);
  moves[v.name] = { maxConfidenceMove: maxMove, changedTop10: changed };
  await half.dispose();
}
await server.dispose();
const rows = [
  { path: 'MufRetriever (libtorch)', ...libtorch },
  { path: 'MufServer (no libtorch)', ...serving },
  { path: 'MufServer, uniform fusion (no heads)', ...uniform },
  ...halves,
];

// The heads' memory floor at B = 1: every weight is read once per question.
const expertsDir = join(dir, 'experts');
const headBytes = readdirSync(expertsDir).reduce((a, e) => a + statSync(join(expertsDir, e, 'heads.safetensors')).size, 0);
const probeRows = 163_840; // x 100 floats = 65.5 MB, twice the L3 of the machines measured
const probe = Tensor.from(new Float32Array(probeRows * 100).map((_, i) => ((i * 2654435761) % 1000) / 1000), [probeRows, 100]);
const one = Tensor.from(new Float32Array(100).fill(0.1), [1, 100]);
const times: number[] = [];
for (let r = 0; r < 12; r++) {
  const t0 = performance.now();
  await scoreTopK(one, probe, 10);
  times.push(performance.now() - t0);
}
probe.dispose();
one.dispose();
const streamGBs = (probeRows * 400) / 1e6 / pct(times, 50);
const floorMs = headBytes / 1e6 / streamGBs;
console.log(`heads: ${(headBytes / 2 ** 20).toFixed(1)} MiB of weights; scoreTopK streams ${streamGBs.toFixed(1)} GB/s at B = 1, so the heads alone take at least ${floorMs.toFixed(2)} ms a question at B = 1`);
console.table(rows);
const path = writeResults('muf-serve', { date: new Date().toISOString(), machine: { isa: caps.isa, threads: caps.threads }, data, members, topL, queries: questions.length, rows, heads: { bytes: headBytes, streamGBs, floorMs }, bf16: moves });
console.log(`results written to ${path}`);
rmSync(work, { recursive: true, force: true });
