// Issue 21: the index loaders under seeded mutation (bench/fuzz/loaders.ts). Prints one JSON report; a crash
// ends the process with a signal, which the caller (or test/robustness-loaders.test.ts) sees.
//   node --import tsx bench/fuzz-loaders.ts [--iterations N] [--seed S] [--kinds dense,sparse] [--flips SEED_NAME]
import { Command } from 'commander';

import { capabilities } from '../lib/index.js';
import { byteFlips, fuzzLoaders } from './fuzz/loaders.js';

const o = new Command()
  .option('--iterations <n>', 'mutated inputs in all', (v) => Number.parseInt(v, 10), 100_000)
  .option('--seed <n>', 'PRNG seed', (v) => Number.parseInt(v, 10), 1)
  .option('--kinds <list>', 'dense,sparse', (v) => v.split(','), ['dense', 'sparse'])
  .option('--flips <seed>', "instead: every single-byte change of one seed index ('HNSW8', 'IVF4,Flat', 'sparse', ...)")
  .option('--stride <n>', 'with --flips: every n-th byte', (v) => Number.parseInt(v, 10), 1)
  .option('--trace <file>', 'write each input here before running it, and its number to stderr (to find a crash)')
  .parse()
  .opts<{ iterations: number; seed: number; kinds: Array<'dense' | 'sparse'>; trace?: string; flips?: string; stride: number }>();
const report = o.flips ? byteFlips(o.flips, 0x41, o.seed, o.trace, o.stride) : await fuzzLoaders(o.iterations, o.seed, o.kinds, o.trace);
console.log(JSON.stringify({ isa: capabilities().isa, seed: o.seed, ...report }, null, 1));
if (report.untyped.length) process.exitCode = 1;
