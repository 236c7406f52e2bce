// The TypeScript side of native/napi/loss_bindings.cc: InfoNCE and ensemble mutual information (lib/losses.ts,
// lib/uncertainty.ts).
import { coreAddon, type MaybeAsync, type NativeTensorHandle } from '../native.js';

/** loss_bindings.cc's functions (both have CUDA forms with the same signatures: cuda_addon.ts). */
export interface LossBindings {
  infoNce(
    q: NativeTensorHandle,
    p: NativeTensorHandle,
    pos: NativeTensorHandle,
    weights: NativeTensorHandle | null,
    temperature: number,
    cosine: boolean,
    grad: boolean,
    async: boolean,
  ): MaybeAsync<{
    loss: number;
    accuracy: number;
    rowLoss: NativeTensorHandle;
    rank: NativeTensorHandle;
    dQ?: NativeTensorHandle;
    dP?: NativeTensorHandle;
  }>;
  ensembleMI(
    z: NativeTensorHandle,
    lengths: NativeTensorHandle | null,
    temperature: number,
    epsMode: boolean,
    async: boolean,
  ): MaybeAsync<{ mi: NativeTensorHandle; confidence: NativeTensorHandle }>;
}

/** loss_bindings.cc's functions in quorum_core.node. */
export function lossBindings(): LossBindings {
  return coreAddon() as LossBindings;
}
