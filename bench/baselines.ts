// The contenders, each behind one signature: (queries [B*D], B, k) -> ids [B*k].
import { createRequire } from 'node:module';

import { loadAddon } from '../lib/native.js';

const require = createRequire(import.meta.url);

export interface BaselinesAddon {
  FaissFlat: new (corpus: Float32Array, dim: number) => { search(q: Float32Array, k: number, threads: number): { ids: Int32Array; scores: Float32Array } };
  blasTopK(corpus: Float32Array, q: Float32Array, dim: number, k: number, threads: number): { ids: Int32Array; scores: Float32Array };
  memReadGBs(threads: number): number;
  fmaPeakGflops(threads: number): number;
  blasCore(): string;
}

export function baselinesAddon(): BaselinesAddon | undefined {
  try {
    return loadAddon<BaselinesAddon>('quorum_baselines', 'QUORUM_BASELINES_PATH');
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
