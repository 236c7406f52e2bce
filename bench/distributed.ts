// Issue 47's benchmark: training throughput of `quorum train` as 1 and 2 data-parallel ranks on this machine (Gloo
// over loopback), one epoch of the embedded multidomain-mini train split (1,357 questions, batches of 32 questions
// split across the ranks). Rows: one rank with every core, one rank with one core (what each of two ranks gets here),
// two ranks. Tokens/s is the group's (every rank's real tokens over the epoch's training time); the per-rank figure
// divides it by the ranks.
//   node --import tsx bench/distributed.ts [--layers=2] [--hidden=100] [--batch=32] [--reps=2] [--data=data/multidomain-mini]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';

import { capabilities } from '../lib/runtime.js';
import { packageRoot } from '../lib/native.js';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const layers = arg('layers', '2'), hidden = arg('hidden', '100'), batch = arg('batch', '32'), reps = Number(arg('reps', '2'));
const data = arg('data', join(packageRoot, 'data', 'multidomain-mini'));
const cores = availableParallelism();
console.log(`ISA ${capabilities().isa}, ${cores} cores; ${layers} layers, hidden ${hidden}, batch ${batch}, ${data}`);

const runs: Array<{ name: string; nproc: number; threads: number }> = [
  { name: `1 rank, ${cores} threads`, nproc: 1, threads: cores },
  { name: '1 rank, 1 thread', nproc: 1, threads: 1 },
  { name: `2 ranks, ${Math.max(1, Math.floor(cores / 2))} thread(s) each`, nproc: 2, threads: Math.max(1, Math.floor(cores / 2)) },
];
const out = mkdtempSync(join(tmpdir(), 'quorum-bench-dist-'));
console.log('| run | tokens/s (group) | tokens/s per rank | epoch seconds | wall seconds |\n|---|---|---|---|---|');
for (const r of runs)
  for (let rep = 0; rep < reps; rep++) {
    const t0 = performance.now();
    const p = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(packageRoot, 'lib', 'cli', 'main.ts'), 'train', '--data', data, '--preset', 'siamese', '--layers', layers, '--hidden', hidden,
        '--epochs', '1', '--batch', batch, '--no-glove', '--max-passage-length', '128', '--nproc', String(r.nproc), '--out', join(out, `m${r.nproc}-${rep}`)],
      { cwd: packageRoot, encoding: 'utf8', env: { ...process.env, QUORUM_THREADS: String(r.threads) } },
    );
    const wall = (performance.now() - t0) / 1000;
    const m = /(\d+) s, (\d+) tokens\/s\)/.exec(p.stdout);
    if (p.status !== 0 || !m) throw new Error(`${r.name}: exit ${p.status}\n${p.stdout}\n${p.stderr}`);
    const tps = Number(m[2]);
    console.log(`| ${r.name} | ${tps.toLocaleString()} | ${Math.round(tps / r.nproc).toLocaleString()} | ${m[1]} | ${wall.toFixed(1)} |`);
  }
rmSync(out, { recursive: true, force: true });
