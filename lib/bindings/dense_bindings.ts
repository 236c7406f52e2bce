// The TypeScript side of native/napi/dense_bindings.cc: dense scoring and top-k, score matrices, scores of given ids,
// dtype conversion, and HNSW's distance kernel (lib/dense.ts, lib/tensor.ts).
import { coreAddon, type MaybeAsync, type NativeTensorHandle } from '../native.js';
import type { CodedOperand } from './quant_bindings.js';

/** A corpus operand: a tensor, or a quantized corpus (CPU only). */
type CorpusHandle = NativeTensorHandle | CodedOperand;

/** dense_bindings.cc's functions (the first four have CUDA forms with the same signatures: cuda_addon.ts). */
export interface DenseBindings {
  scoreTopK(
    q: NativeTensorHandle,
    c: CorpusHandle,
    k: number,
    checkFinite: boolean,
    async: boolean,
    rows?: NativeTensorHandle | null,
    full?: CorpusHandle | null,
    candidates?: number,
  ): MaybeAsync<{ ids: NativeTensorHandle; scores: NativeTensorHandle }>;
  scoreMatrix(q: NativeTensorHandle, c: CorpusHandle, checkFinite: boolean, async: boolean): MaybeAsync<NativeTensorHandle>;
  gatherScores(
    q: NativeTensorHandle,
    c: CorpusHandle,
    ids: NativeTensorHandle,
    checkFinite: boolean,
    async: boolean,
  ): MaybeAsync<NativeTensorHandle>;
  convert(t: NativeTensorHandle, dtype: number, async: boolean): MaybeAsync<NativeTensorHandle>;
  /** @internal The HNSW distance kernel (tests only). */
  pairDistance(a: NativeTensorHandle, b: NativeTensorHandle, kind: 'dot' | 'l2sq'): number;
}

/** dense_bindings.cc's functions in quorum_core.node. */
export function denseBindings(): DenseBindings {
  return coreAddon() as DenseBindings;
}
