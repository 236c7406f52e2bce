// The TypeScript side of native/napi/maxsim_bindings.cc: MaxSim and its backward pass (lib/maxsim.ts).
import { coreAddon, type MaybeAsync, type NativeTensorHandle } from '../native.js';

/** maxsim_bindings.cc's functions (maxSim has a CUDA form with the same signature: cuda_addon.ts). */
export interface MaxsimBindings {
  maxSim(
    q: NativeTensorHandle,
    queryMask: NativeTensorHandle | null,
    docs: NativeTensorHandle,
    lengths: NativeTensorHandle,
    tokenMask: NativeTensorHandle | null,
    clampZero: boolean,
    argmax: boolean,
    async: boolean,
    select?: NativeTensorHandle | null,
  ): MaybeAsync<{ scores: NativeTensorHandle; argmax?: NativeTensorHandle }>;
  maxSimBackward(
    q: NativeTensorHandle,
    queryMask: NativeTensorHandle | null,
    docs: NativeTensorHandle,
    lengths: NativeTensorHandle,
    tokenMask: NativeTensorHandle | null,
    argmax: NativeTensorHandle,
    grad: NativeTensorHandle,
    async: boolean,
  ): MaybeAsync<{ dQueries: NativeTensorHandle; dDocuments: NativeTensorHandle }>;
}

/** maxsim_bindings.cc's functions in quorum_core.node. */
export function maxsimBindings(): MaxsimBindings {
  return coreAddon() as MaxsimBindings;
}
