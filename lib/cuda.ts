// The CUDA backend: quorum_cuda.node (built where nvcc is found) holds device tensors and the CUDA forms of the
// kernels, with the core addon's call signatures; kernels pick the addon by their operands' device. A machine
// without the module, a driver or a GPU keeps working on the CPU: moving a tensor to 'cuda' there is
// ERR_BACKEND_UNAVAILABLE with the reason.
import { QuorumError, callNative } from './errors.js';
import {
  coreKernels,
  cudaBindings,
  cudaDevice,
  cudaModule,
  type CudaDeviceInfo,
  type CudaMemoryStats,
  type KernelBindings,
} from './bindings/cuda_addon.js';
import type { NativeTensorHandle } from './native.js';

export type { CudaDeviceInfo, CudaMemoryStats } from './bindings/cuda_addon.js';

/**
 * The GPU this process can use, or why there is none.
 *
 * @example
 * const gpu = cudaInfo();
 * if (gpu.count > 0) corpus = await corpus.toAsync('cuda');
 * else console.log('CPU only:', gpu.reason);
 */
export function cudaInfo(): CudaDeviceInfo {
  return { ...cudaDevice() };
}

/**
 * The caching allocator's counters (all 0 when the module is not built).
 *
 * @example
 * const before = cudaMemoryStats().allocated;
 * const t = await Tensor.zeros([1024, 768]).toAsync('cuda');
 * cudaMemoryStats().allocated - before;   // at least 3 MiB
 */
export function cudaMemoryStats(): CudaMemoryStats {
  const m = cudaModule();
  return m ? callNative(() => m.memoryStats()) : { allocated: 0, cached: 0, peak: 0, mallocs: 0 };
}

/**
 * Gives the allocator's cached blocks back to the driver (live tensors keep theirs).
 *
 * @example
 * t.dispose();          // its block goes back to the cache
 * cudaEmptyCache();     // and the cache to the driver
 */
export function cudaEmptyCache(): void {
  const m = cudaModule();
  if (m) callNative(() => m.emptyCache());
}

/** A kernel's backend: the core for CPU operands, the CUDA module for CUDA ones; mixing them is ERR_ARG. */
type Backend = KernelBindings & { readonly device: 'cpu' | 'cuda' };

let cpuCached: Backend | undefined;
let cudaCached: Backend | undefined;

/** The backend for `operands` (named by `what`, for the error): every operand on one device. */
export function backendOf(operands: ReadonlyArray<{ handle: NativeTensorHandle } | undefined>, what: readonly string[]): Backend {
  let device: string | undefined;
  let first = '';
  operands.forEach((t, i) => {
    if (!t) return;
    const d = t.handle.device;
    if (device === undefined) {
      device = d;
      first = what[i] ?? `operand ${i}`;
    } else if (d !== device) {
      throw new QuorumError(
        'ERR_ARG',
        `${what[i] ?? `operand ${i}`} is on ${d} but ${first} is on ${device}: move them to one device with .to()`,
      );
    }
  });
  if (device === 'cuda') {
    cudaCached ??= Object.assign(Object.create(cudaBindings()) as KernelBindings, { device: 'cuda' as const });
    return cudaCached;
  }
  cpuCached ??= Object.assign(Object.create(coreKernels()) as KernelBindings, { device: 'cpu' as const });
  return cpuCached;
}

/** ERR_UNSUPPORTED unless every operand is on the CPU: for the kernels that have no GPU form. */
export function cpuOnly(operands: ReadonlyArray<{ handle: NativeTensorHandle }>, what: string): void {
  if (operands.some((t) => t.handle.device !== 'cpu'))
    throw new QuorumError('ERR_UNSUPPORTED', `${what} runs on the cpu only: copy the operands with .to('cpu')`);
}

/**
 * A small index or mask operand for `backend`: its handle, or for the CUDA backend a CPU tensor's values (copied to
 * the GPU by the call). A CUDA tensor given to the CPU backend is ERR_ARG.
 */
export function auxOperand(
  backend: Backend,
  t: { handle: NativeTensorHandle; data: ArrayBufferView } | undefined,
  what: string,
): NativeTensorHandle | null {
  if (!t) return null;
  if (backend.device === 'cuda') return t.handle.device === 'cuda' ? t.handle : (t.data as unknown as NativeTensorHandle);
  if (t.handle.device !== 'cpu') throw new QuorumError('ERR_ARG', `${what} is on ${t.handle.device} but the kernel runs on the cpu`);
  return t.handle;
}
