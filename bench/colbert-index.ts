// The ColBERT index (issue 68, docs/results/colbert.md): recall@10 against exact MaxSim over every token, bytes a
// token, and B = 1 latency against exact brute-force MaxSim, all in this process.
//   node --import tsx bench/colbert-index.ts [--passages 100000] [--dim 128] [--centroids 8192] [--questions 40]
//     [--dev 20] [--lq 32] [--nbits 2,1] [--cache DIR]
// --cache keeps each built index in DIR (one per corpus and settings) and loads it on the next run (build time is
// then not measured).
// The corpus is synthetic (test/reference/token-corpus.ts: ColBERT-like token vectors, a Zipfian vocabulary shifted
// by passage topics; ~100 tokens a passage): no ColBERT model can be fetched here. Questions are noisy copies of
// tokens of one passage, dev and test drawn from disjoint passages with different seeds; the search settings are
// chosen on dev (the grid is printed) and the defaults reported on test. Ground truth and the brute-force baseline
// are the core's exact MaxSim kernel over all f32 tokens (the same numbers).
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { ColbertIndex } from '../lib/methods/colbert/index.js';
import { capabilities } from '../lib/runtime.js';
import { maxSim } from '../lib/maxsim.js';
import { Tensor } from '../lib/tensor.js';
import { tokenCorpus, tokenQuestion } from '../test/reference/token-corpus.js';
import { arg, fmt, percentile, printTable, writeResults } from './harness.js';

const fx = (x: number, digits: number) => x.toFixed(digits);

const P = Number(arg('passages', '100000'));
const dim = Number(arg('dim', '128'));
const centroids = Number(arg('centroids', '8192'));
const nTest = Number(arg('questions', '40'));
const nDev = Number(arg('dev', '20'));
const lq = Number(arg('lq', '32'));
const bitsList = arg('nbits', '2,1').split(',').map(Number) as Array<1 | 2>;
const cache = arg('cache', '');
const k = 10;
const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads, node ${process.version}; ${P} passages x ~100 tokens of ${dim}, ${centroids} centroids`);

let t0 = performance.now();
const c = tokenCorpus({ passages: P, dim, seed: 68, vocab: 30000, topics: 500, length: [80, 120] });
const tokens = c.vectors.length / dim;
console.log(`corpus: ${tokens} tokens, generated in ${fx((performance.now() - t0) / 1000, 1)} s`);

const docs = { tokens: Tensor.wrap(c.vectors, [tokens, dim], 'f32'), lengths: c.lengths };
// Dev questions from even passages, test from odd ones, each set with its own seeds.
const questions = (n: number, parity: number, seed: number) =>
  Array.from({ length: n }, (_, i) => tokenQuestion(c, (((i * 7919 + seed) % (P >> 1)) << 1) + parity, lq, seed + i));
const dev = questions(nDev, 0, 1000);
const test = questions(nTest, 1, 5000);

async function exactTop(q: Float32Array): Promise<{ ids: number[]; ms: number }> {
  const s = performance.now();
  const r = await maxSim(Tensor.wrap(q, [lq, dim], 'f32'), docs);
  const ms = performance.now() - s;
  const scores = r.scores.data;
  const ids = Array.from({ length: P }, (_, i) => i)
    .sort((a, b) => scores[b]! - scores[a]! || a - b)
    .slice(0, k);
  r.scores.dispose();
  return { ids, ms };
}
t0 = performance.now();
const devTruth = [];
for (const q of dev) devTruth.push(await exactTop(q));
const testTruth = [];
for (const q of test) testTruth.push(await exactTop(q));
const bruteMs = [...devTruth, ...testTruth].map((t) => t.ms);
console.log(`exact MaxSim over all tokens: p50 ${fx(percentile(bruteMs, 50), 1)} ms a question (${fx((performance.now() - t0) / 1000, 1)} s)`);

type Opts = Parameters<ColbertIndex['search']>[2];
async function measure(index: ColbertIndex, qs: Float32Array[], truth: Array<{ ids: number[] }>, opts: Opts, reps = 3) {
  let hit = 0;
  const ms: number[] = [];
  for (let i = 0; i < qs.length; i++) {
    const input = { vectors: qs[i]!, lengths: Int32Array.of(lq), dim };
    let got: Awaited<ReturnType<ColbertIndex['search']>> = [];
    for (let r = 0; r < reps; r++) {
      const s = performance.now();
      got = await index.search(input, k, opts);
      ms.push(performance.now() - s);
    }
    hit += got[0]!.filter((h) => truth[i]!.ids.includes(h.id)).length;
  }
  return { recall: hit / (qs.length * k), p50: percentile(ms, 50), p90: percentile(ms, 90) };
}

const rows: Array<Array<string | number>> = [];
const results: Record<string, unknown>[] = [];
for (const nbits of bitsList) {
  t0 = performance.now();
  const cached = cache ? join(cache, `colbert-${P}-${dim}-${centroids}-${nbits}`) : undefined;
  const index =
    cached && existsSync(join(cached, 'colbert-index.json'))
      ? await ColbertIndex.load(cached, { map: true })
      : await ColbertIndex.build({ vectors: c.vectors, lengths: c.lengths, dim }, { nbits, centroids, vectors: 'f16' });
  const buildS = (performance.now() - t0) / 1000;
  if (cached && !existsSync(join(cached, 'colbert-index.json'))) await index.save(cached);
  const info = index.info;
  console.log(`nbits ${nbits}: built in ${fx(buildS, 0)} s, ${fx(info.bytesPerToken, 2)} bytes a token (codes, residuals, lengths, lists)`);
  // warm-up: a mapped index's pages come in on first touch
  await measure(index, dev, devTruth, {}, 1);
  // dev: the grid the settings are chosen on (the fastest with recall@10 >= 0.95, else the best recall)
  const grid: Array<Array<string | number>> = [];
  let chosen: { opts: Opts; recall: number; p50: number } | undefined;
  for (const ndocs of [256, 1024, 2048])
    for (const ncells of [1, 2]) {
      const opts = { ncells, ndocs, centroidScoreThreshold: 0.5, exact: 4 * k };
      const m = await measure(index, dev, devTruth, opts, 1);
      grid.push([nbits, ndocs, ncells, fmt(m.recall), fx(m.p50, 2)]);
      const ok = (x: { recall: number }) => x.recall >= 0.95;
      if (!chosen || (ok(m) && (!ok(chosen) || m.p50 < chosen.p50)) || (!ok(m) && !ok(chosen) && m.recall > chosen.recall))
        chosen = { opts, recall: m.recall, p50: m.p50 };
    }
  console.log('dev grid (threshold 0.5, exact stage over 4k):');
  printTable(['nbits', 'ndocs', 'ncells', 'recall@10', 'p50 ms'], grid);
  console.log(`chosen on dev: ${JSON.stringify(chosen!.opts)}`);
  for (const [label, opts] of [
    ['library defaults', {}],
    ['chosen on dev', chosen!.opts],
    ['chosen on dev, no exact stage', { ...chosen!.opts, exact: 0 }],
  ] as Array<[string, Opts]>) {
    const m = await measure(index, test, testTruth, opts);
    const speedup = percentile(bruteMs, 50) / m.p50;
    rows.push([nbits, label, fmt(m.recall), fx(m.p50, 2), fx(m.p90, 2), fx(speedup, 0) + 'x', fx(info.bytesPerToken, 2)]);
    results.push({ nbits, label, ...m, speedup, bytesPerToken: info.bytesPerToken, buildS });
  }
  index.dispose();
}
console.log(`test questions (${nTest}), B = 1, top-${k}; exact brute force p50 ${fx(percentile(bruteMs, 50), 1)} ms`);
printTable(['nbits', 'search', 'recall@10', 'p50 ms', 'p90 ms', 'vs brute force', 'bytes / token'], rows);
writeResults('colbert-index', { isa: caps.isa, threads: caps.threads, passages: P, tokens, dim, centroids, bruteP50: percentile(bruteMs, 50), results });
