// The TypeScript side of native/napi/splade_bindings.cc: SPLADE pooling and its backward pass, the regularizers,
// sparse vectors and their scores (lib/splade.ts).
import { coreAddon, type MaybeAsync, type NativeTensorHandle } from '../native.js';

/** splade_bindings.cc's functions (the pooling and its backward pass have CUDA forms: cuda_addon.ts). */
export interface SpladeBindings {
  spladePool(
    logits: NativeTensorHandle,
    mask: NativeTensorHandle | null,
    argmax: boolean,
    async: boolean,
  ): MaybeAsync<{ weights: NativeTensorHandle; argmax?: NativeTensorHandle }>;
  spladePoolBackward(
    logits: NativeTensorHandle,
    argmax: NativeTensorHandle,
    grad: NativeTensorHandle,
    async: boolean,
  ): MaybeAsync<NativeTensorHandle>;
  spladeRegularizer(
    w: NativeTensorHandle,
    kind: string,
    grad: boolean,
    async: boolean,
  ): MaybeAsync<{ value: number; grad?: NativeTensorHandle }>;
  toSparse(
    w: NativeTensorHandle,
    threshold: number,
    topK: number,
    async: boolean,
  ): MaybeAsync<{ offsets: NativeTensorHandle; indices: NativeTensorHandle; values: NativeTensorHandle }>;
  sparseScores(
    ao: NativeTensorHandle,
    ai: NativeTensorHandle,
    av: NativeTensorHandle,
    bo: NativeTensorHandle,
    bi: NativeTensorHandle,
    bv: NativeTensorHandle,
    async: boolean,
  ): MaybeAsync<NativeTensorHandle>;
  sparseDenseScores(
    o: NativeTensorHandle,
    i: NativeTensorHandle,
    v: NativeTensorHandle,
    dense: NativeTensorHandle,
    async: boolean,
  ): MaybeAsync<NativeTensorHandle>;
}

/** splade_bindings.cc's functions in quorum_core.node. */
export function spladeBindings(): SpladeBindings {
  return coreAddon() as SpladeBindings;
}
