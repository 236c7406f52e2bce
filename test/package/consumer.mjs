// The installed package through import: the same checks as consumer.cjs, with the Promise forms.
import assert from 'node:assert/strict';
import { Bm25Index, QuorumError, Tensor, capabilities, scoreTopK } from 'quorum-retrieval';

const corpus = Tensor.from(new Float32Array([1, 0, 0, 1, 0.6, 0.8]), [3, 2]);
const query = Tensor.from(new Float32Array([0.6, 0.8]), [1, 2]);
const top = await scoreTopK(query, corpus, 2);
assert.deepEqual(Array.from(top.ids), [2, 1]);
const bm25 = await Bm25Index.build([
  { id: 'a', text: 'dense retrieval with experts' },
  { id: 'b', text: 'a recipe for bread' },
]);
assert.equal(bm25.searchSync(['bread recipe'], 1)[0][0].id, 'b');
await assert.rejects(scoreTopK(query, corpus, 0), (e) => e instanceof QuorumError && typeof e.code === 'string');
console.log(`import: ok (isa ${capabilities().isa})`);
