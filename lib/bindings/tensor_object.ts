// The TypeScript side of native/napi/tensor_object.cc (registered by addon_core.cc as NativeTensor): the core's
// tensor constructor. lib/tensor.ts's Tensor is the typed class in front of it.
import { coreAddon, type NativeTensorHandle } from '../native.js';

/** tensor_object.cc's constructor: new NativeTensor(dtype code, shape, data?) (zeros without data). */
export interface TensorObjectBindings {
  NativeTensor: new (dtype: number, shape: readonly number[], data?: ArrayBufferView) => NativeTensorHandle;
}

/** tensor_object.cc's exports in quorum_core.node. */
export function tensorObject(): TensorObjectBindings {
  return coreAddon() as TensorObjectBindings;
}
