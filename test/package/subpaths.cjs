// Every subpath export through require(): each loads, offers its names, and works on objects of the root export
// (one copy of each class across subpaths).
'use strict';
const assert = require('node:assert/strict');
const root = require('quorum-retrieval');
const subpaths = Object.keys(require('quorum-retrieval/package.json').exports).filter((s) => s !== '.' && s !== './package.json');

for (const s of subpaths) {
  const m = require(`quorum-retrieval/${s.slice(2)}`);
  assert.ok(Object.keys(m).length > 0, `${s} exports nothing`);
}
const kernels = require('quorum-retrieval/kernels');
const q = root.Tensor.from(new Float32Array([1, 0]), [1, 1, 2]);
const d = root.Tensor.from(new Float32Array([1, 0, 0, 1]), [1, 2, 2]);
assert.deepEqual(Array.from(kernels.maxSimSync(q, { tokens: d, lengths: [2] }).scores.data), [1]);
const { evaluate } = require('quorum-retrieval/eval');
const run = new Map([['q', [{ id: 'a', score: 2 }, { id: 'b', score: 1 }]]]);
assert.equal(evaluate(run, new Map([['q', new Map([['b', 1]])]]), ['mrr@10']).mean['mrr@10'], 0.5);
assert.deepEqual(require('quorum-retrieval/fusion').normalizeLists([{ ids: ['a', 'b'], scores: [2, 0] }], 'min-max')[0].scores, [1, 0]);
assert.equal(require('quorum-retrieval/methods/rom').f1Score('the cat', 'a cat'), 1);
assert.equal(require('quorum-retrieval/methods/colbert').colbertSearchDefaults(10).ndocs > 0, true);
assert.ok(require('quorum-retrieval/models').parameterCount(require('quorum-retrieval/models').defaultEncoderConfig) > 0);
console.log(`require: ${subpaths.length} subpaths ok`);
