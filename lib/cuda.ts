// The CUDA backend: quorum_cuda.node (built where nvcc is found) holds device tensors and the CUDA forms of the
// kernels, with the core addon's call signatures; kernels pick the addon by their operands' device. A machine
// without the module, a driver or a GPU keeps working on the CPU: moving a tensor to 'cuda' there is
// ERR_BACKEND_UNAVAILABLE with the reason.
import { QuorumError, callNative } from './errors.js';
import { type CoreAddon, type MaybeAsync, type NativeTensorHandle, coreAddon, loadAddon } from './native.js';

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

type KernelNames = 'scoreTopK' | 'maxSim' | 'spladePool' | 'spladePoolBackward' | 'infoNce' | 'ensembleMI' | 'convert';

/** quorum_cuda.node's exports: the core's kernel signatures, plus copies and the allocator. */
interface CudaAddon extends Pick<CoreAddon, KernelNames> {
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

let cuda: CudaAddon | null | undefined;
let loadError: QuorumError | undefined;
let info: CudaDeviceInfo | undefined; // the driver's answer does not change within a process

/** The CUDA module if it was built (undefined otherwise; never throws). */
function cudaModule(): CudaAddon | undefined {
  if (cuda === undefined) {
    try {
      cuda = loadAddon<CudaAddon>('quorum_cuda', 'QUORUM_CUDA_PATH');
    } catch (e) {
      cuda = null;
      loadError = e instanceof QuorumError ? e : new QuorumError('ERR_BACKEND_UNAVAILABLE', String(e));
    }
  }
  return cuda ?? undefined;
}

/**
 * The GPU this process can use, or why there is none.
 *
 * @example
 * const gpu = cudaInfo();
 * if (gpu.count > 0) corpus = await corpus.toAsync('cuda');
 * else console.log('CPU only:', gpu.reason);
 */
export function cudaInfo(): CudaDeviceInfo {
  if (!info) {
    const m = cudaModule();
    info = m
      ? callNative(() => m.available())
      : { count: 0, reason: `quorum_cuda.node is not built here (${loadError?.message ?? 'not found'})` };
  }
  return { ...info };
}

/** The CUDA module with a usable device; ERR_BACKEND_UNAVAILABLE (with the reason) otherwise. */
export function cudaAddon(): CudaAddon {
  const m = cudaModule();
  const gpu = cudaInfo();
  if (!m || gpu.count === 0) throw new QuorumError('ERR_BACKEND_UNAVAILABLE', `CUDA is not available: ${gpu.reason}`);
  return m;
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
type Backend = Pick<CoreAddon, KernelNames> & { readonly device: 'cpu' | 'cuda' };

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
    cudaCached ??= Object.assign(Object.create(cudaAddon()) as CudaAddon, { device: 'cuda' as const });
    return cudaCached;
  }
  cpuCached ??= Object.assign(Object.create(coreAddon()) as CoreAddon, { device: 'cpu' as const });
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
