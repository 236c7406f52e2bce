// Issue 23's kernel row: forward + backward of MaxSim and SPLADE pooling at CAME training shapes, through Quorum's
// kernels as libtorch autograd functions against the same step in libtorch's own ops (the pure-libtorch
// reference). Median of the given repetitions, alternated, in one process.
//   npm run build:test && node --import tsx bench/came-kernels.ts [--reps=5]   (the hooks module: quorum_torch_test.node)
import { capabilities } from '../lib/index.js';
import { torchTestAddon } from '../test/torch-hooks.js';
import { fillRandom, median, printTable } from './harness.js';

const reps = Number(process.argv.find((a) => a.startsWith('--reps='))?.slice(7) ?? '5');
const addon = torchTestAddon();
const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads`);
const rows: Array<Array<string | number>> = [];
{
  // 32 questions of 32 tokens against 64 passages (positive + 1 negative each) of 180 tokens, 128-d.
  const [B, Lq, N, Ld, D] = [32, 32, 64, 180, 128];
  const q = fillRandom(new Float32Array(B * Lq * D), 1);
  const d = fillRandom(new Float32Array(N * Ld * D), 2);
  const qMask = new Int32Array(B * Lq).fill(1);
  const lengths = Int32Array.from({ length: N }, (_, n) => 100 + (n % 80));
  const grad = fillRandom(new Float32Array(B * N), 3);
  const t: Record<string, number[]> = { kernel: [], libtorch: [] };
  for (let r = 0; r < reps; r++)
    for (const ref of [false, true]) {
      const t0 = performance.now();
      addon.maxSimAutograd(q, qMask, d, lengths, grad, B, Lq, N, Ld, D, ref);
      t[ref ? 'libtorch' : 'kernel']!.push(performance.now() - t0);
    }
  rows.push([`MaxSim fwd+bwd, ${B}x${Lq} vs ${N}x${Ld}, ${D}-d`, median(t.kernel!).toFixed(1), median(t.libtorch!).toFixed(1), (median(t.libtorch!) / median(t.kernel!)).toFixed(2)]);
}
{
  // 16 texts of 64 tokens over BERT's 30,522-term vocabulary.
  const [B, T, V] = [16, 64, 30522];
  const x = fillRandom(new Float32Array(B * T * V), 4);
  const mask = new Int32Array(B * T).fill(1);
  const grad = fillRandom(new Float32Array(B * V), 5);
  const t: Record<string, number[]> = { kernel: [], libtorch: [] };
  for (let r = 0; r < reps; r++)
    for (const ref of [false, true]) {
      const t0 = performance.now();
      addon.spladePoolAutograd(x, mask, grad, B, T, V, ref);
      t[ref ? 'libtorch' : 'kernel']!.push(performance.now() - t0);
    }
  rows.push([`SPLADE pool fwd+bwd, ${B}x${T}x${V}`, median(t.kernel!).toFixed(1), median(t.libtorch!).toFixed(1), (median(t.libtorch!) / median(t.kernel!)).toFixed(2)]);
}
printTable(['step (includes copying the inputs in and the gradients out)', 'kernels ms', 'libtorch ms', 'libtorch / kernels'], rows);
