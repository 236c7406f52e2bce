// The contenders, each behind one signature: (queries [B*D], B, k) -> ids [B*k]; and libtorch's forms of the
// other kernels, each timed inside the native module.
import { createRequire } from 'node:module';

import { loadAddon } from '../lib/native.js';

const require = createRequire(import.meta.url);

export interface BaselinesAddon {
  FaissFlat: new (corpus: Float32Array, dim: number) => { search(q: Float32Array, k: number, threads: number): { ids: Int32Array; scores: Float32Array } };
  /** faiss::IndexScalarQuantizer QT_8bit, inner product (trained on the corpus). */
  FaissSQ8: new (corpus: Float32Array, dim: number) => { search(q: Float32Array, k: number, threads: number): { ids: Int32Array; scores: Float32Array }; bytes(): number };
  /** faiss::IndexBinaryFlat over given codes (bits / 8 bytes a row); scores are minus the Hamming distance. */
  FaissBinary: new (codes: Uint8Array, bits: number) => { search(q: Uint8Array, k: number, threads: number): { ids: Int32Array; scores: Float32Array } };
  blasTopK(corpus: Float32Array, q: Float32Array, dim: number, k: number, threads: number): { ids: Int32Array; scores: Float32Array };
  memReadGBs(threads: number): number;
  /** Best of 3 passes of `iters` (default 5e7) rounds of 12 independent FMAs per thread (AVX-512: iters / 2 rounds of 24). */
  fmaPeakGflops(threads: number, iters?: number): number;
  /** GFLOP/s of each of `threads` threads running a GEMM register tile (loads feeding FMAs, L1-resident) at once, `reps` (default 2e4) tiles each. */
  tileRateGflops(threads: number, reps?: number): number[];
  blasCore(): string;
}

export function baselinesAddon(): BaselinesAddon | undefined {
  try {
    return loadAddon<BaselinesAddon>('quorum_baselines', 'QUORUM_BASELINES_PATH');
  } catch {
    return undefined;
  }
}

/** A libtorch run: `ms` is the median per iteration (as timeIt gives ours) after one warm-up call; `out` is the last iteration's result. */
export interface TorchTimed<T> {
  ms: number;
  out: T;
}

/** quorum_torch_baselines.node (native/baselines/torch_baselines.cc): libtorch (CPU) forms of the kernels. */
export interface TorchBaselinesAddon {
  /** ColBERT: q [Lq*d], docs [N*Ld*d] padded to Ld, lengths [N] -> scores [N]. */
  maxSim(q: Float32Array, docs: Float32Array, lengths: Int32Array, N: number, Ld: number, d: number, Lq: number, iters: number): TorchTimed<Float32Array>;
  /** SPLADE max pooling: logits [B*L*V], mask [B*L] (0/1) -> [B*V]. */
  spladePool(logits: Float32Array, mask: Uint8Array, B: number, L: number, V: number, iters: number): TorchTimed<Float32Array>;
  /** In-batch InfoNCE, forward + backward: q [B*D], p [M*D], pos [B] (index into p) -> loss and gradients. */
  infoNce(
    q: Float32Array,
    p: Float32Array,
    pos: Int32Array,
    B: number,
    M: number,
    D: number,
    iters: number,
  ): TorchTimed<{ loss: number; dq: Float32Array; dp: Float32Array }>;
  /** DPR-MUF ensemble mutual information: z [B*K*L] -> confidence [B]. */
  ensembleMI(z: Float32Array, B: number, K: number, L: number, temperature: number, eps: number, iters: number): TorchTimed<Float32Array>;
  /**
   * ATen's intra-op (OpenMP) thread count; its default on x86-64 is half the logical CPUs. Matmuls run in
   * OpenBLAS, whose threads follow OPENBLAS_NUM_THREADS instead.
   */
  setThreads(n: number): void;
  threads(): number;
  /** The thread count of the OpenBLAS behind libtorch's matmuls (default: all cores, whatever `setThreads` says). */
  setBlasThreads(n: number): void;
  blasThreads(): number;
}

export function torchBaselinesAddon(): TorchBaselinesAddon | undefined {
  try {
    return loadAddon<TorchBaselinesAddon>('quorum_torch_baselines', 'QUORUM_TORCH_BASELINES_PATH');
  } catch {
    return undefined;
  }
}

type UsearchModule = {
  exactSearch(dataset: Float32Array, queries: Float32Array, dims: number, k: number, metric: string, threads?: number): { keys: BigUint64Array };
  MetricKind: Record<string, string>;
};
type SimsimdModule = { inner(a: Float32Array, b: Float32Array): number };

export function usearch(): UsearchModule | undefined {
  try {
    return require('usearch') as UsearchModule;
  } catch {
    return undefined;
  }
}

export function simsimd(): SimsimdModule | undefined {
  try {
    return require('simsimd') as SimsimdModule;
  } catch {
    return undefined;
  }
}
