// Every subpath export through import: each loads, offers its names, and works on objects of the root export.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { Tensor } from 'quorum-retrieval';
import { maxSim } from 'quorum-retrieval/kernels';
import { evaluate } from 'quorum-retrieval/eval';

const subpaths = Object.keys(createRequire(import.meta.url)('quorum-retrieval/package.json').exports).filter((s) => s !== '.' && s !== './package.json');
for (const s of subpaths) {
  const m = await import(`quorum-retrieval/${s.slice(2)}`);
  assert.ok(Object.keys(m).length > 0, `${s} exports nothing`);
}
const q = Tensor.from(new Float32Array([1, 0]), [1, 1, 2]);
const d = Tensor.from(new Float32Array([1, 0, 0, 1]), [1, 2, 2]);
assert.deepEqual(Array.from((await maxSim(q, { tokens: d, lengths: [2] })).scores.data), [1]);
const run = new Map([['q', [{ id: 'a', score: 2 }, { id: 'b', score: 1 }]]]);
assert.equal(evaluate(run, new Map([['q', new Map([['b', 1]])]]), ['mrr@10']).mean['mrr@10'], 0.5);
console.log(`import: ${subpaths.length} subpaths ok`);
