// `npm run bench`: every micro-benchmark in one process, ratios against baselines measured in the same run.
// `npm run bench -- --quick` skips the 1M-row corpus and the 10,000-document MaxSim case.
// `npm run bench -- --only=kernels` (or `dense`, `index`, `sparse`, `bm25`) runs one group. `--quick` also shrinks the
// index benchmark from 100,000 to 20,000 vectors.
import { benchDense } from './dense.js';
import { benchBm25 } from './bm25.js';
import { benchDenseIndex } from './dense-index.js';
import { benchSparseIndex } from './sparse-index.js';
import { benchKernels } from './kernels.js';
import { writeResults } from './harness.js';

const quick = process.argv.includes('--quick');
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
const dense = only && only !== 'dense' ? undefined : await benchDense({
  dim: 768,
  k: 10,
  cases: quick
    ? [{ n: 100_000, batches: [1, 16, 256] }]
    : [
        { n: 100_000, batches: [1, 16, 256] },
        { n: 1_000_000, batches: [1] },
      ],
  lagCorpus: quick ? 100_000 : 1_000_000,
});
const kernels = only && only !== 'kernels' ? undefined : await benchKernels({ quick });
const index = only && only !== 'index' ? undefined : await benchDenseIndex({
  n: quick ? 20_000 : 100_000,
  dim: 768,
  queries: quick ? 200 : 1000,
  k: 10,
  m: 32,
  efConstruction: 40,
  efs: [16, 64, 128],
});
const sparse = only && only !== 'sparse' ? undefined : await benchSparseIndex({ quick });
const bm25 = only && only !== 'bm25' ? undefined : await benchBm25();
const path = writeResults('bench', { date: new Date().toISOString(), node: process.version, dense, kernels, index, sparse, bm25 });
console.log(`\nresults written to ${path}`);
