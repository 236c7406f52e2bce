// Issue 22's measurements on MUF directories (`quorum muf train`) over a BEIR dataset with tasks:
//   - ensemble size: mixed-test MRR@10 and per-query latency (B = 1) for each given directory (K = 1, 2, 5, ...);
//   - speed of the main directory: latency p50 / p99 at B = 1 and throughput at B = 64 with the stages (question
//     encoding, expert retrieval, heads, MI, fusion), against the same pipeline in plain JavaScript (top-L by a
//     scan, the heads' MLPs, softmax and MI, the fusion) from the same question vectors, checked to give the same
//     fused lists.
//   node --import tsx bench/muf.ts --data=DIR --muf=MUF_DIR [--sizes=DIR1,DIR2,...] [--queries=256] [--reps=3]
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { capabilities } from '../lib/index.js';
import { loadBeir } from '../lib/data/beir.js';
import { evaluate } from '../lib/eval/ranking.js';
import { fuse } from '../lib/fusion/fuse.js';
import { readSafetensors } from '../lib/io/safetensors.js';
import { mufFusion } from '../lib/methods/muf/fusion.js';
import { MufRetriever } from '../lib/methods/muf/retriever.js';
import { Retriever } from '../lib/models/retriever.js';
import { packageRoot } from '../lib/native.js';
import { confidenceHistogramsSvg, reliabilityDiagramSvg } from './lib/charts.js';
import { CalibrationRecorder } from '../lib/report/data.js';
import { ece } from '../lib/uncertainty.js';
import { median, percentile, printTable, writeResults } from './harness.js';

const arg = (name: string, fallback?: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const data = arg('data')!;
const mainDir = arg('muf')!;
const sizes = (arg('sizes') ?? '').split(',').filter(Boolean);
const nQueries = Number(arg('queries', '256'));
const reps = Number(arg('reps', '3'));
if (!data || !mainDir) throw new Error('usage: bench/muf.ts --data=DIR --muf=MUF_DIR [--sizes=...]');

const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads, ${JSON.stringify(caps.cpu)}`);
const test = loadBeir(data, 'test');
const judged = test.queries.filter((q) => test.qrels.has(q.id));

// Ensemble size: mixed-test MRR@10 over every judged test question, and B = 1 latency over the first 100.
const sizeRows: Array<Array<string | number>> = [];
const sizeResults: Array<Record<string, number>> = [];
for (const dir of sizes) {
  const muf = await MufRetriever.load(dir);
  const K = JSON.parse(readFileSync(join(dir, 'muf.json'), 'utf8')).heads.members as number;
  const run = new Map<string, Array<{ id: string; score: number }>>();
  for (let s = 0; s < judged.length; s += 256) {
    const batch = judged.slice(s, s + 256);
    const r = await muf.search(batch.map((q) => q.text), 100);
    batch.forEach((q, b) => run.set(q.id, r[b]!.hits));
  }
  const m = evaluate(run, test.qrels, ['mrr@10', 'recall@20', 'recall@100']).mean;
  const lat: number[] = [];
  for (const q of judged.slice(0, 100)) {
    const t0 = performance.now();
    await muf.search([q.text], 100);
    lat.push(performance.now() - t0);
  }
  sizeResults.push({ K, mrr10: m['mrr@10']!, r20: m['recall@20']!, r100: m['recall@100']!, p50: percentile(lat, 50), p99: percentile(lat, 99) });
  sizeRows.push([String(K), m['mrr@10']!.toFixed(3), m['recall@20']!.toFixed(3), m['recall@100']!.toFixed(3), percentile(lat, 50).toFixed(2), percentile(lat, 99).toFixed(2)]);
  muf.dispose();
}
if (sizeRows.length) printTable(['K', 'mixed MRR@10', 'R@20', 'R@100', 'B=1 p50 ms', 'p99 ms'], sizeRows);

// Speed of the main directory.
const muf = await MufRetriever.load(mainDir);
const experts = muf.experts;
const L = muf.topL;
const card = JSON.parse(readFileSync(join(mainDir, 'muf.json'), 'utf8')) as { heads: { members: number; hidden: number; layers: number } };
const { members: K, layers } = card.heads;
const texts = judged.slice(0, nQueries).map((q) => q.text);

// Calibration on the test split (the temperatures were chosen on dev): per expert, ECE of its confidence against
// whether its own top-1 is relevant; the reliability diagram and the confidence histograms as SVG.
const recorder = new CalibrationRecorder(experts.map((e) => e.name));
const taskOf: string[] = [];
for (let s0 = 0; s0 < judged.length; s0 += 256) {
  const batch = judged.slice(s0, s0 + 256);
  recorder.add(batch.map((q) => q.id), await muf.searchAll(batch.map((q) => q.text), 10), test.qrels);
  taskOf.push(...batch.map((q) => q.task ?? ''));
}
const series = recorder.series();
const conf = series.map((e) => e.confidence);
const hits = series.map((e) => e.hit);
const calRows = experts.map((e, i) => {
  const own = taskOf.map((t, b) => (t === e.task ? b : -1)).filter((b) => b >= 0);
  const meanOf = (xs: number[], idx: number[]) => idx.reduce((a, b) => a + xs[b]!, 0) / Math.max(idx.length, 1);
  const other = taskOf.map((t, b) => (t !== e.task ? b : -1)).filter((b) => b >= 0);
  return [e.name, e.calibration!.temperature, e.calibration!.eceBefore.toFixed(3), e.calibration!.eceAfter.toFixed(3), ece(conf[i]!, hits[i]!).toFixed(3),
    meanOf(conf[i]!, own).toFixed(3), meanOf(conf[i]!, other).toFixed(3), meanOf(hits[i]!, own).toFixed(3), meanOf(hits[i]!, other).toFixed(3)];
});
printTable(['expert', 'temperature', 'dev ECE at 1e-3', 'dev ECE tuned', 'test ECE', 'conf own task', 'conf other', 'top-1 own', 'top-1 other'], calRows);
const svgDir = join(packageRoot, 'bench', 'results');
writeFileSync(join(svgDir, 'muf-reliability.svg'), await reliabilityDiagramSvg(series, { title: 'DPR-MUF experts on the test split (temperature tuned on dev)' }));
writeFileSync(join(svgDir, 'muf-confidence.svg'), await confidenceHistogramsSvg(series, { title: 'Confidence per expert, test split' }));
console.log(`wrote bench/results/muf-reliability.svg and muf-confidence.svg`);

// B = 1 latency with stages, and B = 64 throughput.
const stages = { encode: [] as number[], retrieve: [] as number[], heads: [] as number[], mi: [] as number[], fuse: [] as number[] };
const lat1: number[] = [];
for (const t of texts.slice(0, 100)) {
  const t0 = performance.now();
  await muf.search([t], 100);
  lat1.push(performance.now() - t0);
  for (const k of Object.keys(stages) as Array<keyof typeof stages>) stages[k].push(muf.lastTimings![k]);
}
const batch64 = texts.slice(0, 64);
const ours64: number[] = [];
const oursStages64: Array<Record<string, number>> = [];
let oursHits: Array<Array<{ id: string; score: number }>> = [];
for (let r = 0; r < reps; r++) {
  const t0 = performance.now();
  oursHits = (await muf.search(batch64, 100)).map((h) => h.hits);
  ours64.push(performance.now() - t0);
  oursStages64.push({ ...muf.lastTimings! });
}

// The plain-JavaScript pipeline from the same question vectors (each expert's encoder, as ours uses).
const tables = experts.map((e) => {
  const base = join(mainDir, 'experts', e.name);
  const passages = readSafetensors(readFileSync(join(base, 'passages.safetensors'))).get('passages')!;
  const heads = readSafetensors(readFileSync(join(base, 'heads.safetensors')));
  return { name: e.name, task: e.task, temperature: e.calibration!.temperature, P: passages.data, N: passages.shape[0]!, D: passages.shape[1]!, heads };
});
const models = await Promise.all(experts.map((e) => Retriever.load(join(mainDir, 'experts', e.name, 'model'))));
const qvec = await Promise.all(models.map((m, i) => m.encodeQueries(batch64, { task: experts[i]!.task })));
const ids = muf.corpusIds;

function jsTopL(q: Float32Array, P: Float32Array, N: number, D: number, L: number): Array<{ id: number; score: number }> {
  // The best L so far, sorted descending (ties by id ascending); a passage enters by binary insertion.
  const best: Array<{ id: number; score: number }> = [];
  for (let n = 0; n < N; n++) {
    let s = 0;
    for (let d = 0; d < D; d++) s += q[d]! * P[n * D + d]!;
    if (best.length === L && s <= best[L - 1]!.score) continue;
    let lo = 0;
    let hi = best.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (best[mid]!.score >= s) lo = mid + 1;
      else hi = mid;
    }
    best.splice(lo, 0, { id: n, score: s });
    if (best.length > L) best.pop();
  }
  return best;
}

function jsMember(heads: Map<string, { data: Float32Array; shape: number[] }>, k: number, x: Float32Array): Float32Array {
  let h = x;
  for (let l = 0; l <= layers; l++) {
    const W = heads.get(`layer.${l}.weight`)!;
    const bias = heads.get(`layer.${l}.bias`)!;
    const [, inDim, outDim] = W.shape as [number, number, number];
    const next = new Float32Array(outDim);
    for (let o = 0; o < outDim; o++) next[o] = bias.data[k * outDim + o]!;
    for (let i = 0; i < inDim; i++) {
      const hi = h[i]!;
      if (hi === 0) continue;
      const row = (k * inDim + i) * outDim;
      for (let o = 0; o < outDim; o++) next[o] = next[o]! + hi * W.data[row + o]!;
    }
    if (l < layers) for (let o = 0; o < outDim; o++) next[o] = Math.max(next[o]!, 0);
    h = next;
  }
  return h;
}

function jsConfidence(z: Float64Array[], temperature: number): number {
  const Lc = z[0]!.length;
  const M = new Float64Array(Lc);
  let meanH = 0;
  for (const row of z) {
    let mx = -Infinity;
    for (const v of row) mx = Math.max(mx, v / temperature);
    let sum = 0;
    const p = row.map((v) => Math.exp(v / temperature - mx));
    for (const v of p) sum += v;
    let H = 0;
    for (let l = 0; l < Lc; l++) {
      const pl = p[l]! / sum;
      M[l]! += pl / z.length;
      if (pl > 0) H -= pl * Math.log(pl);
    }
    meanH += H / z.length;
  }
  let HM = 0;
  for (const m of M) if (m > 0) HM -= m * Math.log(m);
  return Math.min(1, Math.max(0, 1 - (HM - meanH) / Math.log(z.length)));
}

async function jsPipeline(): Promise<{ hits: Array<Array<{ id: string; score: number }>>; stages: Record<string, number> }> {
  const st = { retrieve: 0, heads: 0, mi: 0, fuse: 0 };
  const B = batch64.length;
  const runs: Array<Map<string, Array<{ id: string; score: number }>>> = [];
  const conf = tables.map(() => new Array<number>(B).fill(1));
  tables.forEach((t, e) => {
    const run = new Map<string, Array<{ id: string; score: number }>>();
    for (let b = 0; b < B; b++) {
      const q = qvec[e]!.data.subarray(b * t.D, (b + 1) * t.D);
      let t0 = performance.now();
      const top = jsTopL(q, t.P, t.N, t.D, L);
      st.retrieve += performance.now() - t0;
      t0 = performance.now();
      const z: Float64Array[] = [];
      for (let k = 0; k < K; k++) {
        const f = jsMember(t.heads as never, k, q);
        z.push(Float64Array.from(top, (h) => {
          let s = 0;
          for (let d = 0; d < t.D; d++) s += f[d]! * t.P[h.id * t.D + d]!;
          return s;
        }));
      }
      st.heads += performance.now() - t0;
      t0 = performance.now();
      if (K > 1) conf[e]![b] = jsConfidence(z, t.temperature);
      st.mi += performance.now() - t0;
      run.set(String(b), top.map((h) => ({ id: ids[h.id]!, score: h.score })));
    }
    runs.push(run);
  });
  const t0 = performance.now();
  const fused = fuse(runs, mufFusion, { confidence: new Map(Array.from({ length: B }, (_, b) => [String(b), tables.map((_, e) => conf[e]![b]!)])), depth: 100 });
  st.fuse += performance.now() - t0;
  return { hits: Array.from({ length: B }, (_, b) => fused.get(String(b)) ?? []), stages: st };
}

const js64: number[] = [];
let jsHits: Array<Array<{ id: string; score: number }>> = [];
let jsStages: Record<string, number> = {};
for (let r = 0; r < Math.max(1, Math.min(reps, 2)); r++) {
  const t0 = performance.now();
  const out = await jsPipeline();
  js64.push(performance.now() - t0);
  jsHits = out.hits;
  jsStages = out.stages;
}
// Same fused top-10 (f32 against f64 arithmetic may swap near-ties further down).
let same = 0;
for (let b = 0; b < batch64.length; b++) if (oursHits[b]!.slice(0, 10).map((h) => h.id).join() === jsHits[b]!.slice(0, 10).map((h) => h.id).join()) same++;
const oursMs = median(ours64);
const oursPipe = median(oursStages64.map((s) => s.retrieve! + s.heads! + s.mi! + s.fuse!));
const jsMs = median(js64);
const oursEncode = median(oursStages64.map((s) => s.encode!));
printTable(
  ['run', 'B=64 ms', 'queries/s', 'encode', 'retrieve', 'heads', 'MI', 'fusion'],
  [
    ['Quorum', oursMs.toFixed(1), (64000 / oursMs).toFixed(0), oursEncode.toFixed(1), ...(['retrieve', 'heads', 'mi', 'fuse'] as const).map((k) => median(oursStages64.map((s) => s[k]!)).toFixed(1))],
    ['plain JS (from the same question vectors)', jsMs.toFixed(1), (64000 / (jsMs + oursEncode)).toFixed(0), `(${oursEncode.toFixed(1)})`, ...(['retrieve', 'heads', 'mi', 'fuse'] as const).map((k) => jsStages[k]!.toFixed(1))],
  ],
);
console.log(`after question encoding: Quorum ${oursPipe.toFixed(1)} ms, plain JS ${jsMs.toFixed(1)} ms: ${(jsMs / oursPipe).toFixed(1)}x; end to end (with encoding) ${((jsMs + oursEncode) / oursMs).toFixed(1)}x`);
console.log(`same fused top-10 on ${same} of ${batch64.length} queries`);
const p = (xs: number[], q: number) => percentile(xs, q).toFixed(2);
console.log(`B = 1 over ${lat1.length} queries: p50 ${p(lat1, 50)} ms, p99 ${p(lat1, 99)} ms; stage medians: ${(Object.keys(stages) as Array<keyof typeof stages>).map((k) => `${k} ${median(stages[k]).toFixed(2)}`).join(', ')} ms`);
writeResults('muf', {
  machine: { isa: caps.isa, threads: caps.threads, cpu: caps.cpu },
  experts: experts.length,
  K,
  L,
  sizes: sizeResults,
  b1: { p50: percentile(lat1, 50), p99: percentile(lat1, 99), stages: Object.fromEntries(Object.entries(stages).map(([k, v]) => [k, median(v)])) },
  calibration: calRows,
  b64: { oursMs, oursPipelineMs: oursPipe, jsMs, speedupPipeline: jsMs / oursPipe, speedupEndToEnd: (jsMs + oursEncode) / oursMs, sameTop10: same },
});
for (const q of qvec) q.dispose();
muf.dispose();
