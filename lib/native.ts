// Locates and loads the native modules. The core (no system libraries) and the faiss module (faiss and OpenBLAS linked
// in) ship prebuilt in prebuilds/<platform>-<arch>/; torch links the system's libtorch and is built where the package
// is installed. Each is looked up in its environment variable's path, then the local build, then the prebuild.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { QuorumError } from './errors.js';

/**
 * The package root: lib/ (sources, under vitest), dist/lib/ (ES modules) and dist/cjs/ (the CommonJS bundle, whose
 * own package.json only sets its module type) all find it: the nearest package.json that names the package.
 */
export const packageRoot: string = (() => {
  const here = fileURLToPath(import.meta.url);
  const named = (dir: string) => {
    try {
      return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown }).name === 'quorum-retrieval';
    } catch {
      return false;
    }
  };
  let dir = dirname(here);
  while (!named(dir)) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`quorum: the package's package.json not found above ${here}`);
    dir = up;
  }
  return dir;
})();

const require = createRequire(import.meta.url);

/** What each native module needs beyond Node: the Debian packages it links against. */
const systemPackages: Record<string, string[]> = {
  quorum_core: ['build-essential', 'python3'],
  quorum_faiss: ['build-essential', 'cmake', 'python3', 'libfaiss-dev', 'libopenblas-dev'],
  quorum_torch: ['build-essential', 'cmake', 'python3', 'libtorch-dev'],
  // nvcc (CUDA 12 or later) and a GPU driver; Debian's toolkit package, or NVIDIA's own installer.
  quorum_cuda: ['build-essential', 'cmake', 'python3', 'nvidia-cuda-toolkit'],
};

/** The cmake-js options that turn a module on where the default build leaves it out. */
const cmakeOptions: Record<string, string> = { quorum_cuda: ' --CDQUORUM_CUDA=ON' };

/** A source checkout, as opposed to the package installed under a node_modules folder. */
const isCheckout = (): boolean => !packageRoot.split(/[\\/]/).includes('node_modules');

/** In a source checkout, the npm script that builds each module the default build (build:native) leaves out. */
const checkoutScripts: Record<string, string> = {
  quorum_cuda: 'build:cuda',
  quorum_baselines: 'build:bench',
  quorum_torch_baselines: 'build:bench',
  quorum_torch_test: 'build:test',
};

/**
 * The exact commands that build a missing module where the package is: in a source checkout the native build that
 * makes it; in an installed package the Debian packages the module links against, then its build there.
 */
export function buildCommand(
  name: string,
  where: { root: string; checkout: boolean } = { root: packageRoot, checkout: isCheckout() },
): string {
  if (where.checkout) return `cd ${where.root} && bash scripts/bootstrap.sh && npm run ${checkoutScripts[name] ?? 'build:native'}`;
  const apt = `sudo apt-get install -y --no-install-recommends ${(systemPackages[name] ?? systemPackages.quorum_torch!).join(' ')}`;
  if (name === 'quorum_core') return `${apt} && cd ${where.root} && npx --yes node-gyp rebuild`;
  const configure = cmakeOptions[name]
    ? `npx --yes cmake-js@8 configure --out build${cmakeOptions[name]} && npx --yes cmake-js@8 build --out build`
    : 'npx --yes cmake-js@8 compile --out build';
  return `${apt} && cd ${where.root} && ${configure}`;
}

function candidates(name: string, envVar: string): string[] {
  const out: string[] = [];
  const env = process.env[envVar];
  if (env) out.push(resolve(env));
  out.push(join(packageRoot, 'build', 'Release', `${name}.node`));
  return out;
}

/** The prebuilt binary shipped for this platform, `prebuilds/<platform>-<arch>/<name>.node` (scripts/prebuild.sh). */
function prebuilt(name: string): string {
  return join(packageRoot, 'prebuilds', `${process.platform}-${process.arch}`, `${name}.node`);
}

/** The modules that ship prebuilt: the core and DenseIndex's faiss module (docs/building.md, Prebuilt binaries). */
const shippedPrebuilt = new Set(['quorum_core', 'quorum_faiss']);

/**
 * Loads `<name>.node`: from `envVar`'s path, the local build, or the shipped prebuild; throws
 * ERR_BACKEND_UNAVAILABLE with the paths tried and the command that builds it when it is missing.
 */
export function loadAddon<T>(name: string, envVar: string, marker?: string): T {
  const tried = candidates(name, envVar);
  if (shippedPrebuilt.has(name)) tried.push(prebuilt(name));
  for (const path of tried) {
    if (!existsSync(path)) continue;
    const m = require(path) as Record<string, unknown>;
    // An environment variable naming another of Quorum's modules (QUORUM_CUDA_PATH = quorum_core.node) loads: its
    // functions would then be missing, a TypeError at the first call (issue 65).
    if (marker && typeof m[marker] !== 'function')
      throw new QuorumError('ERR_BACKEND_UNAVAILABLE', `${path} is not ${name}.node (it has no ${marker}): check ${envVar}`);
    return m as T;
  }
  throw new QuorumError(
    'ERR_BACKEND_UNAVAILABLE',
    `native module ${name}.node not found (tried ${tried.join(', ')}). Build it with: ${buildCommand(name)}`,
  );
}

/** The native tensor handle (native/napi/tensor_object.h). */
export interface NativeTensorHandle {
  readonly shape: number[];
  readonly dtype: number;
  readonly device: string;
  readonly disposed: boolean;
  readonly owned: boolean;
  buffer(): ArrayBuffer | ArrayBufferView;
  dispose(): void;
  /** Keeps the memory alive through dispose() until the matching unpin() (another addon is reading it). */
  pin(): void;
  unpin(): void;
}

/** What every native module answers: its capabilities (the core's) or its threads (faiss, libtorch). */
export interface NativeCapabilities {
  isa: string;
  availableIsas: string[];
  threads: number;
  int8Queries: boolean;
  cpu: {
    avx2: boolean;
    avx512: boolean;
    avx512bf16: boolean;
    avx512vnni: boolean;
    avx512vpopcntdq: boolean;
    f16c: boolean;
    neon: boolean;
    dotprod: boolean;
    bf16: boolean;
  };
  devices: string[];
}

export type MaybeAsync<T> = T | Promise<T>;

/**
 * A loaded native module, opaque here: each N-API binding file has one TypeScript module in lib/bindings/ (same
 * name) that types its exports and is the only caller of these loaders (docs/building.md, Bindings).
 */
export type NativeModule = object;

/** What loading needs of a module beside the core: its thread setting. */
interface Threaded {
  setThreads(n: number): void;
}

let core: NativeModule | undefined;

/** The core addon, loaded on first use (its capabilities checked against the environment once). */
export function coreAddon(): NativeModule {
  if (!core) {
    const m = loadAddon<NativeModule & { capabilities(): NativeCapabilities }>('quorum_core', 'QUORUM_CORE_PATH', 'capabilities');
    warnAboutEnvironment(m.capabilities());
    core = m;
  }
  return core;
}

/** The core's thread setting, which the modules loaded after it start with. */
function coreThreads(): number {
  return (coreAddon() as { capabilities(): NativeCapabilities }).capabilities().threads;
}

/**
 * The core reads QUORUM_ISA and QUORUM_THREADS when it loads and falls back to its defaults on a value it cannot use
 * (a variant this CPU lacks, a thread count that is not a positive integer). A process warning says so, once: a
 * benchmark run with QUORUM_ISA=avx512 on an AVX2 machine must not report AVX2 figures as AVX-512 ones unnoticed.
 */
function warnAboutEnvironment(caps: NativeCapabilities): void {
  const isa = process.env.QUORUM_ISA;
  if (isa && isa !== caps.isa)
    process.emitWarning(
      `QUORUM_ISA=${isa} is not a kernel variant this CPU runs (available: ${caps.availableIsas.join(', ')}); using ${caps.isa}`,
      { code: 'QUORUM_ENV' },
    );
  const threads = process.env.QUORUM_THREADS;
  if (threads && !/^\s*[1-9]\d*\s*$/.test(threads))
    process.emitWarning(`QUORUM_THREADS=${threads} is not a positive integer; using ${caps.threads} threads`, { code: 'QUORUM_ENV' });
}

let faiss: NativeModule | undefined;

/**
 * The faiss addon (built by CMake only), loaded on first use with the core's thread setting. ERR_BACKEND_UNAVAILABLE
 * when it was not built (no faiss on the build machine).
 */
export function faissAddon(): NativeModule {
  if (!faiss) {
    const m = loadAddon<NativeModule & Threaded>('quorum_faiss', 'QUORUM_FAISS_PATH', 'DenseIndex');
    m.setThreads(coreThreads());
    faiss = m;
  }
  return faiss;
}

/** The faiss addon if something already loaded it (setThreads must not load it just to set a number). */
export function loadedFaissAddon(): NativeModule | undefined {
  return faiss;
}

let torchModule: NativeModule | undefined;

/** The libtorch module, loaded on first use (it costs ~160 MB and up to a second), with the runtime's threads. */
export function torchAddon(): NativeModule {
  if (!torchModule) {
    const m = loadAddon<NativeModule & Threaded>('quorum_torch', 'QUORUM_TORCH_PATH', 'manualSeed');
    m.setThreads(coreThreads());
    torchModule = m;
  }
  return torchModule;
}

/** The libtorch module if something already loaded it. */
export function loadedTorchAddon(): NativeModule | undefined {
  return torchModule;
}

let cuda: { module?: NativeModule; error?: QuorumError } | undefined;

/**
 * The CUDA module (built only where nvcc was found) if it loaded, else why not; never throws, and tries once: a
 * machine without it keeps working on the CPU.
 */
export function optionalCudaAddon(): { module?: NativeModule; error?: QuorumError } {
  if (!cuda) {
    try {
      cuda = { module: loadAddon<NativeModule>('quorum_cuda', 'QUORUM_CUDA_PATH', 'upload') };
    } catch (e) {
      cuda = { error: e instanceof QuorumError ? e : new QuorumError('ERR_BACKEND_UNAVAILABLE', String(e)) };
    }
  }
  return cuda;
}
