// `node bench/cuda.js` on the GPU machine (bundled by scripts/gpu-tests.sh): the five CUDA kernels at the sizes of
// issue 26, timed from JavaScript (the Sync call: launch, kernel, synchronisation, results to JS), median of reps.
// bench/cuda_torch.py times PyTorch on the same GPU in the same run; the ratios are computed from both JSON files.
// Data is made on the device (fillUniform) so that the 15 GB corpus needs no host copy.
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import { cudaBindings } from '../lib/bindings/cuda_addon.js';
import { cudaInfo } from '../lib/cuda.js';
import { dtypeCode } from '../lib/dtype.js';
import { ensembleMISync, infoNceSync, maxSimSync, spladePoolSync } from '../lib/entries/kernels.js';
import { scoreTopKSync, Tensor } from '../lib/index.js';
import type { Dtype } from '../lib/index.js';

const quick = process.argv.includes('--quick');
const out = process.argv.find((a) => a.startsWith('--out='))?.slice(6);
const scale = quick ? 0.01 : 1;

let seed = 1;
function deviceUniform<D extends Dtype>(shape: number[], dtype: D, lo = -1, hi = 1): Tensor<D> {
  const m = cudaBindings();
  const t = Tensor.fromHandle<D>(new m.CudaTensor(dtypeCode[dtype], shape, false));
  m.fillUniform(t.handle, seed++, lo, hi);
  return t;
}

function time(reps: number, fn: () => unknown): { medianMs: number; minMs: number } {
  for (let i = 0; i < 2; i++) fn();
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    const r = fn() as { dispose?: () => void } | undefined;
    ts.push(performance.now() - t0);
    disposeAll(r);
  }
  ts.sort((a, b) => a - b);
  return { medianMs: ts[Math.floor(ts.length / 2)]!, minMs: ts[0]! };
}
function disposeAll(r: unknown): void {
  if (r instanceof Tensor) r.dispose();
  else if (r && typeof r === 'object') for (const v of Object.values(r)) if (v instanceof Tensor) v.dispose();
}

const results: Record<string, unknown> = { device: cudaInfo(), quick };
const log = (name: string, r: object) => {
  results[name] = r;
  console.log(name, JSON.stringify(r));
};

{
  const n = Math.round(10_000_000 * scale), d = 768, k = 100;
  const corpus = deviceUniform([n, d], 'bf16');
  for (const b of [1, 64]) {
    const q = deviceUniform([b, d], 'f32');
    log(`dense_bf16_B${b}`, { n, d, k, bytes: n * d * 2, ...time(quick ? 3 : 7, () => scoreTopKSync(q, corpus, k)) });
    q.dispose();
  }
  corpus.dispose();
}
{
  const docs = Math.round(100_000 * scale), len = 180, d = 128, lq = 32;
  const tokens = deviceUniform([docs * len, d], 'f16');
  const q = deviceUniform([lq, d], 'f32');
  const lengths = new Int32Array(docs).fill(len);
  log('maxsim_f16', { docs, len, d, lq, bytes: docs * len * d * 2, flops: 2 * lq * docs * len * d,
    ...time(quick ? 3 : 7, () => maxSimSync(q, { tokens, lengths })) });
  tokens.dispose();
  q.dispose();
}
{
  const b = quick ? 16 : 256, l = 256, v = 30522;
  const logits = deviceUniform([b, l, v], 'bf16', -4, 1);
  log('splade_bf16', { b, l, v, bytes: b * l * v * 2, ...time(quick ? 3 : 7, () => spladePoolSync(logits)) });
  logits.dispose();
}
{
  const b = quick ? 256 : 4096, m = quick ? 512 : 8192, d = 768;
  const q = deviceUniform([b, d], 'f32');
  const p = deviceUniform([m, d], 'f32');
  const pos = Int32Array.from({ length: b }, (_, i) => (2 * i) % m);
  log('infonce_f32', { b, m, d, flops: 3 * 2 * b * m * d, ...time(quick ? 3 : 7, () => infoNceSync(q, p, pos)) });
  q.dispose();
  p.dispose();
}
{
  const b = Math.round(100_000 * scale), k = 20, l = 100;
  const z = deviceUniform([b, k, l], 'f32', 0, 0.01);
  log('ensemble_mi', { b, k, l, bytes: b * k * l * 4, ...time(quick ? 3 : 11, () => ensembleMISync(z, { temperature: 1e-3 })) });
  z.dispose();
}
if (out) writeFileSync(out, JSON.stringify(results, null, 2) + '\n');
