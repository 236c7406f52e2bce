// Issue 21: resident memory over 20,000 Sync calls in a loop that never yields to the event loop.
//   node --import tsx bench/sync-memory.ts
import { DenseIndex, Tensor, scoreTopKSync } from '../lib/index.js';
const q = new Float32Array(8 * 64).fill(0.1);
const c = Tensor.from(new Float32Array(1000 * 64).fill(0.2), [1000, 64]);
const idx = DenseIndex.create({ dim: 64 }); idx.addSync(c.data as Float32Array, BigInt64Array.from({ length: 1000 }, (_, i) => BigInt(i)));
const rss = () => Math.round(process.memoryUsage().rss / 1e6);
for (const [name, f] of [['scoreTopKSync', () => scoreTopKSync({ data: q, shape: [8, 64] }, c, 100)], ['DenseIndex.searchSync', () => idx.searchSync(q, 100)]] as const) {
  const r0 = rss();
  for (let i = 0; i < 20000; i++) f();
  console.log(name, '20000 calls without yielding: rss', r0, '->', rss(), 'MB');
  await new Promise((r) => setTimeout(r, 50));
}
