// The TypeScript side of native/napi/runtime_bindings.cc: the core's capabilities, threads and kernel variant
// (lib/runtime.ts).
import { coreAddon, type NativeCapabilities } from '../native.js';

/** runtime_bindings.cc's functions. */
export interface RuntimeBindings {
  capabilities(): NativeCapabilities;
  setThreads(n: number): void;
  setIsa(name: string): void;
}

/** runtime_bindings.cc's functions in quorum_core.node. */
export function runtimeBindings(): RuntimeBindings {
  return coreAddon() as RuntimeBindings;
}
