// The installed package serving without a compiler, libtorch or a shared faiss (scripts/check-package.sh):
// DenseIndex from the prebuilt faiss module (Flat against brute force; PCA, random rotation and OPQ, which call the
// LAPACK linked into it), a saved MUF directory through MufServer against the checkout's libtorch MufRetriever
// (reference.json), and the libraries the process has mapped.
//   node serve.mjs MUF_DIR reference.json
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

import { DenseIndex } from 'quorum-retrieval';
import { MufServer } from 'quorum-retrieval/methods/muf';

const [mufDir, referencePath] = process.argv.slice(2);
let seed = 5;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
const d = 16;
const n = 700; // OPQ4,PQ4x4 trains 16 centroids per sub-space: faiss wants 39 points each
const x = Float32Array.from({ length: n * d }, rand);
const ids = BigInt64Array.from({ length: n }, (_, i) => BigInt(i));
const q = Float32Array.from({ length: 4 * d }, rand);
const brute = (row) => Array.from({ length: n }, (_, i) => i)
  .map((i) => ({ i, s: x.subarray(i * d, (i + 1) * d).reduce((a, v, j) => a + v * q[row * d + j], 0) }))
  .sort((a, b) => b.s - a.s || a.i - b.i).slice(0, 5).map((h) => BigInt(h.i));
for (const factory of ['Flat', 'RR16,Flat']) {
  const index = DenseIndex.create({ dim: d, factory });
  if (!index.info.trained) await index.train(x);
  await index.add(x, ids);
  const top = await index.search(q, 5);
  for (let r = 0; r < 4; r++) assert.deepEqual(top.hits(r).map((h) => h.id), brute(r), `${factory} row ${r}`);
  index.dispose();
}
const pca = DenseIndex.create({ dim: d, factory: 'PCA16,Flat' });
await pca.train(x);
await pca.add(x, ids);
const back = await pca.reconstruct([7n]);
back.forEach((v, j) => assert.ok(Math.abs(v - x[7 * d + j]) < 1e-3, 'PCA reconstructs'));
const opq = DenseIndex.create({ dim: d, factory: 'OPQ4,PQ4x4' });
await opq.train(x);
await opq.add(x, ids);
assert.equal((await opq.search(q, 5)).hits(0).length, 5);
pca.dispose();
opq.dispose();

const reference = JSON.parse(readFileSync(referencePath, 'utf8'));
const muf = await MufServer.load(mufDir);
const served = await muf.search(reference.questions, 10);
served.forEach((r, b) => {
  const want = reference.results[b];
  assert.deepEqual(r.hits.map((h) => h.id), want.ids, `MUF hits of '${reference.questions[b]}'`);
  r.hits.forEach((h, j) => assert.ok(Math.abs(h.score - want.scores[j]) < 1e-4, 'MUF scores'));
  r.confidence.forEach((c, e) => assert.ok(Math.abs(c - want.confidence[e]) < 1e-4, 'MUF confidences'));
});
await muf.dispose();

const maps = readFileSync('/proc/self/maps', 'utf8');
for (const [what, pattern] of [['libtorch', /libtorch|libc10/], ['a shared faiss', /libfaiss\.so/], ['a shared BLAS', /libopenblas\.so|libblas\.so/], ['ONNX Runtime', /onnxruntime/]])
  assert.ok(!pattern.test(maps), `the process maps ${what}`);
const root = dirname(createRequire(import.meta.url).resolve('quorum-retrieval/package.json'));
const platform = `${process.platform}-${process.arch}`;
for (const m of ['quorum_core', 'quorum_faiss']) assert.ok(maps.includes(`${root}/prebuilds/${platform}/${m}.node`), `${m} is not the ${platform} prebuild`);
console.log(`serve: ok on ${platform} (DenseIndex and a MUF directory from the prebuilds; no libtorch, shared faiss or BLAS, ONNX Runtime)`);
