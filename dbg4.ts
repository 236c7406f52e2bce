import { DenseIndex } from './lib/index.js';
import { embeddingLike } from './bench/dense-index.js';
const n = 8000, d = 768;
const x = embeddingLike(n, d, 1);
const ix = DenseIndex.create({ dim: d, factory: 'HNSW32', efConstruction: 40 });
const t0 = performance.now(); ix.addSync(x, BigInt64Array.from({ length: n }, (_, i) => BigInt(i))); console.log('build s', (performance.now() - t0) / 1000);
