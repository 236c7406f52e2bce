// The TypeScript side of native/napi/tensor_file_bindings.cc: saved and mapped tensor files (lib/tensor.ts's
// save / Tensor.map).
import { coreAddon, type MaybeAsync, type NativeTensorHandle } from '../native.js';

/** tensor_file_bindings.cc's functions. */
export interface TensorFileBindings {
  saveTensorFile(t: NativeTensorHandle, path: string, async: boolean): MaybeAsync<object>;
  mapTensorFile(path: string): { tensor: NativeTensorHandle; checksum: bigint };
  tensorWordHash(t: NativeTensorHandle, async: boolean): MaybeAsync<{ hash: bigint }>;
}

/** tensor_file_bindings.cc's functions in quorum_core.node. */
export function tensorFileBindings(): TensorFileBindings {
  return coreAddon() as TensorFileBindings;
}
