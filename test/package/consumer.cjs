// The installed package through require(): a dense search on the prebuilt core, a BM25 search, a typed error.
'use strict';
const assert = require('node:assert/strict');
const quorum = require('quorum-retrieval');

const corpus = quorum.Tensor.from(new Float32Array([1, 0, 0, 1, 0.6, 0.8]), [3, 2]);
const query = quorum.Tensor.from(new Float32Array([0.6, 0.8]), [1, 2]);
const top = quorum.scoreTopKSync(query, corpus, 2);
assert.deepEqual(Array.from(top.ids), [2, 1]);

(async () => {
  const bm25 = await quorum.Bm25Index.build([
    { id: 'a', text: 'dense retrieval with experts' },
    { id: 'b', text: 'a recipe for bread' },
  ]);
  assert.equal(bm25.searchSync(['bread recipe'], 1)[0][0].id, 'b');
  assert.throws(() => quorum.scoreTopKSync(query, corpus, 0), (e) => e instanceof quorum.QuorumError && typeof e.code === 'string');
  console.log(`require: ok (isa ${quorum.capabilities().isa})`);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
