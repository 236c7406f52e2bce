// DenseIndex under churn (issue 46's goal: memory flat over 1M add/delete cycles at a constant collection size):
// an index of `--size` vectors where each cycle removes the oldest id and adds a new one (in batches of `--batch`),
// for `--cycles` cycles; the process's RSS is sampled every `--every` cycles and its slope fitted over the second
// half. HNSW removes through tombstones and compacts once they pass a quarter of the nodes; Flat removes in place.
// Recall@10 of the final index against brute force over the live vectors is printed as a check.
//   node --import tsx bench/dense-churn.ts [--factory HNSW16] [--size 2000] [--dim 32] [--cycles 1000000] [--batch 100]
import { readFileSync } from 'node:fs';

import { DenseIndex } from '../lib/index.js';
import { capabilities } from '../lib/runtime.js';
import { arg, normalDraws, writeResults } from './harness.js';

const factory = arg('factory', 'HNSW16');
const size = Number(arg('size', '2000'));
const dim = Number(arg('dim', '32'));
const cycles = Number(arg('cycles', '1000000'));
const batch = Number(arg('batch', '100'));
const every = Number(arg('every', '50000'));
console.log(`isa ${capabilities().isa}; ${factory}, ${size} x ${dim}, ${cycles.toLocaleString('en')} add/delete cycles in batches of ${batch}`);

const draw = normalDraws(7);
const vec = (n: number) => Float32Array.from({ length: n * dim }, draw);
const rssMb = () => Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;
const index = DenseIndex.create({ dim, factory });
const vectors = new Map<bigint, Float32Array>();
let next = 0n;
const add = (n: number) => {
  const x = vec(n);
  const ids = BigInt64Array.from({ length: n }, () => next++);
  index.addSync(x, ids);
  ids.forEach((id, i) => vectors.set(id, x.subarray(i * dim, (i + 1) * dim)));
};
add(size);
let oldest = 0n;
const samples: Array<[number, number]> = [[0, rssMb()]];
const t0 = performance.now();
for (let done = 0; done < cycles; done += batch) {
  const gone = BigInt64Array.from({ length: batch }, () => oldest++);
  if (index.removeSync(gone) !== batch) throw new Error('remove lost ids');
  gone.forEach((id) => vectors.delete(id));
  add(batch);
  if ((done + batch) % every === 0) {
    if (globalThis.gc) globalThis.gc();
    samples.push([done + batch, rssMb()]);
  }
}
const seconds = (performance.now() - t0) / 1000;
if (index.size !== size) throw new Error(`size ${index.size}, expected ${size}`);
// Least-squares slope of RSS over the second half of the samples, MB per 100k cycles.
const half = samples.slice(Math.floor(samples.length / 2));
const mx = half.reduce((a, [c]) => a + c, 0) / half.length;
const my = half.reduce((a, [, m]) => a + m, 0) / half.length;
const slope = half.reduce((a, [c, m]) => a + (c - mx) * (m - my), 0) / half.reduce((a, [c]) => a + (c - mx) ** 2, 0);
// Recall@10 over the live vectors.
const keys = [...vectors.keys()];
const q = vec(20);
const top = index.searchSync(q, 10, { ...(factory.startsWith('HNSW') ? { efSearch: 128 } : {}) });
let found = 0;
for (let r = 0; r < 20; r++) {
  const qr = q.subarray(r * dim, (r + 1) * dim);
  const truth = new Set(keys.map((k) => [k, vectors.get(k)!.reduce((a, v, j) => a + v * qr[j]!, 0)] as const).sort((a, b) => b[1] - a[1]).slice(0, 10).map(([k]) => k));
  for (const h of top.hits(r)) if (truth.has(h.id)) found++;
}
console.log(`RSS MB at ${samples.map(([c, m]) => `${c / 1000}k: ${m.toFixed(0)}`).join(', ')}`);
console.log(`${(cycles / seconds).toFixed(0)} cycles/s; RSS slope over the second half: ${(slope * 100_000).toFixed(2)} MB per 100k cycles (start ${samples[0]![1].toFixed(0)} MB, end ${samples.at(-1)![1].toFixed(0)} MB); recall@10 ${(found / 200).toFixed(3)}`);
writeResults('dense-churn', { factory, size, dim, cycles, batch, seconds, samples, slopeMbPer100k: slope * 100_000, recall: found / 200 });
