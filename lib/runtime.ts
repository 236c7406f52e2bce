import { QuorumError, callNative } from './errors.js';
import { cudaInfo } from './cuda.js';
import { loadedFaissBindings } from './bindings/faiss_addon.js';
import { runtimeBindings } from './bindings/runtime_bindings.js';
import type { NativeCapabilities } from './native.js';
import { loadedTorchBindings } from './bindings/torch_addon.js';

/** Kernel variants, best first. */
export type Isa = 'avx512' | 'avx2' | 'neon' | 'scalar';

/** What the native core runs with. */
export interface Capabilities {
  /** The kernel variant in use. */
  isa: Isa;
  /** Variants this CPU can run, best first. */
  availableIsas: Isa[];
  /** Threads every parallel kernel uses, the calling thread included. */
  threads: number;
  /**
   * Whether int8 corpora are scored with int8 queries by default (`queryBits` unset): the active variant has byte
   * dot products (AVX-512 VNNI, or AArch64 SDOT with `cpu.dotprod`). Otherwise they take f32 queries, which cost the
   * same there and lose nothing (docs/methods/quantization.md).
   */
  int8Queries: boolean;
  /**
   * What the CPU reports (x86 cpuid, AArch64 hwcaps): the instruction sets the kernel variants need (avx2, avx512,
   * avx512vnni, avx512vpopcntdq, f16c, neon, dotprod) and ones only reported (avx512bf16, bf16).
   */
  cpu: NativeCapabilities['cpu'];
  /** Devices kernels can run on: 'cpu', and 'cuda' where quorum_cuda.node is built and a GPU is usable. */
  devices: string[];
}

/**
 * Reports the kernel variant, thread count and CPU features.
 *
 * @example
 * console.log(capabilities()); // { isa: 'avx512', threads: 2, ... }
 */
export function capabilities(): Capabilities {
  const caps = callNative(() => runtimeBindings().capabilities()) as Capabilities;
  if (cudaInfo().count > 0) caps.devices = [...caps.devices, 'cuda'];
  return caps;
}

/**
 * Sets the number of threads every parallel kernel uses (default: QUORUM_THREADS or the core count). One
 * setting for all kernels, faiss's OpenMP (DenseIndex) and libtorch (Retriever), so they never oversubscribe the machine.
 *
 * @example
 * setThreads(2);
 * capabilities().threads;   // 2
 */
export function setThreads(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > 256) throw new QuorumError('ERR_RANGE', `threads must be an integer in [1, 256], got ${n}`);
  callNative(() => runtimeBindings().setThreads(n));
  callNative(() => loadedFaissBindings()?.setThreads(n));
  callNative(() => loadedTorchBindings()?.setThreads(n));
}

/**
 * Forces a kernel variant (ERR_UNSUPPORTED if this CPU cannot run it). Mostly for tests and benchmarks.
 *
 * @example
 * capabilities().availableIsas;   // e.g. ['avx512', 'avx2', 'scalar']
 * setIsa('avx2');                 // benchmark the AVX2 variant on an AVX-512 machine
 */
export function setIsa(isa: Isa): void {
  callNative(() => runtimeBindings().setIsa(isa));
}
