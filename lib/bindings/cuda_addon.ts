// The TypeScript side of native/napi/cuda_addon.cc: quorum_cuda.node's device tensors, copies, allocator and the
// CUDA forms of the kernels, which share the core's call signatures (lib/cuda.ts picks the module by the operands'
// device). The module is optional: without it, a driver or a GPU, nothing here throws until a device is asked for.
import { QuorumError, callNative } from '../errors.js';
import { coreAddon, optionalCudaAddon, type MaybeAsync, type NativeTensorHandle } from '../native.js';
import type { DenseBindings } from './dense_bindings.js';
import type { LossBindings } from './loss_bindings.js';
import type { MaxsimBindings } from './maxsim_bindings.js';
import type { SpladeBindings } from './splade_bindings.js';

/** What the CUDA module reports about the machine's GPU. */
export interface CudaDeviceInfo {
  /** Usable devices (0 without a driver or a GPU). */
  count: number;
  /** Why no device is usable ('' when one is). */
  reason: string;
  /** Device 0's name, e.g. 'NVIDIA H100 80GB HBM3'. */
  name?: string;
  /** Device 0's memory in bytes. */
  totalBytes?: number;
  /** Device 0's streaming multiprocessors. */
  multiprocessors?: number;
  /** Device 0's compute capability, e.g. '9.0'. */
  computeCapability?: string;
}

/** The caching allocator's counters, in bytes (mallocs: cudaMalloc calls; a cache hit makes none). */
export interface CudaMemoryStats {
  /** Bytes held by live tensors. */
  allocated: number;
  /** Bytes the allocator keeps for reuse (given back by {@link cudaEmptyCache}). */
  cached: number;
  /** The most bytes ever held by live tensors at once. */
  peak: number;
  /** cudaMalloc calls so far. */
  mallocs: number;
}

/** The kernels with a CUDA form: the same signatures in the core and in the CUDA module. */
export type KernelBindings = Pick<DenseBindings, 'scoreTopK' | 'convert'> &
  Pick<MaxsimBindings, 'maxSim'> &
  Pick<SpladeBindings, 'spladePool' | 'spladePoolBackward'> &
  Pick<LossBindings, 'infoNce' | 'ensembleMI'>;

/** quorum_cuda.node's exports: the core's kernel signatures, plus copies and the allocator. */
export interface CudaAddonBindings extends KernelBindings {
  /** new CudaTensor(dtype, shape, zero): device memory for the shape (uninitialised unless zero). */
  CudaTensor: new (dtype: number, shape: readonly number[], zero: boolean) => NativeTensorHandle;
  available(): CudaDeviceInfo;
  upload(dtype: number, shape: readonly number[], data: ArrayBufferView, async: boolean): MaybeAsync<NativeTensorHandle>;
  download(t: NativeTensorHandle, into: ArrayBufferView, async: boolean): MaybeAsync<object>;
  emptyCache(): void;
  memoryStats(): CudaMemoryStats;
  /** @internal Benchmark data made on the device: uniform in [lo, hi). */
  fillUniform(t: NativeTensorHandle, seed: number, lo: number, hi: number): void;
}

let info: CudaDeviceInfo | undefined; // the driver's answer does not change within a process

/** The GPU this process can use, or why there is none (cached; lib/cuda.ts's cudaInfo gives a copy). */
export function cudaDevice(): CudaDeviceInfo {
  if (!info) {
    const m = cudaModule();
    info = m
      ? callNative(() => m.available())
      : { count: 0, reason: `quorum_cuda.node is not built here (${optionalCudaAddon().error?.message ?? 'not found'})` };
  }
  return info;
}

/** The CUDA module if it was built (undefined otherwise; never throws). */
export function cudaModule(): CudaAddonBindings | undefined {
  return optionalCudaAddon().module as CudaAddonBindings | undefined;
}

/** The CUDA module with a usable device; ERR_BACKEND_UNAVAILABLE (with the reason) otherwise. */
export function cudaBindings(): CudaAddonBindings {
  const m = cudaModule();
  const gpu = cudaDevice();
  if (!m || gpu.count === 0) throw new QuorumError('ERR_BACKEND_UNAVAILABLE', `CUDA is not available: ${gpu.reason}`);
  return m;
}

/** The core's kernels with a CUDA form, as the CPU backend. */
export function coreKernels(): KernelBindings {
  return coreAddon() as KernelBindings;
}
