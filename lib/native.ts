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
export function loadAddon<T>(name: string, envVar: string): T {
  const tried = candidates(name, envVar);
  if (shippedPrebuilt.has(name)) tried.push(prebuilt(name));
  for (const path of tried) {
    if (existsSync(path)) return require(path) as T;
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

interface NativeTensorCtor {
  new (dtype: number, shape: readonly number[], data?: ArrayBufferView): NativeTensorHandle;
}

interface NativeCapabilities {
  isa: string;
  availableIsas: string[];
  threads: number;
  cpu: { avx2: boolean; avx512: boolean; avx512bf16: boolean; f16c: boolean };
  devices: string[];
}

export type MaybeAsync<T> = T | Promise<T>;

/**
 * Texts for a native call to embed with a 0-layer encoder in its own task (mufSearch's questions): the model's tensors
 * (as embedTexts takes them), the native WordPiece, the normalized texts (and pairs) and the encode options
 * (native/napi/embedding_bag_args.h).
 */
export interface NativeTextsToEmbed {
  readonly model: Record<string, NativeTensorHandle | number | boolean>;
  readonly tokenizer: NativeWordPiece;
  readonly texts: string[];
  readonly pairs: string[] | null;
  readonly maxLength: number;
  readonly marker: number;
}

/** quorum_core.node's exports. */
export interface CoreAddon {
  NativeTensor: NativeTensorCtor;
  saveTensorFile(t: NativeTensorHandle, path: string, async: boolean): MaybeAsync<object>;
  mapTensorFile(path: string): { tensor: NativeTensorHandle; checksum: bigint };
  tensorWordHash(t: NativeTensorHandle, async: boolean): MaybeAsync<{ hash: bigint }>;
  scoreTopK(
    q: NativeTensorHandle,
    c: NativeTensorHandle,
    k: number,
    checkFinite: boolean,
    async: boolean,
    rows?: NativeTensorHandle | null,
  ): MaybeAsync<{ ids: NativeTensorHandle; scores: NativeTensorHandle }>;
  scoreMatrix(q: NativeTensorHandle, c: NativeTensorHandle, checkFinite: boolean, async: boolean): MaybeAsync<NativeTensorHandle>;
  gatherScores(
    q: NativeTensorHandle,
    c: NativeTensorHandle,
    ids: NativeTensorHandle,
    checkFinite: boolean,
    async: boolean,
  ): MaybeAsync<NativeTensorHandle>;
  convert(t: NativeTensorHandle, dtype: number, async: boolean): MaybeAsync<NativeTensorHandle>;
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
  spladePool(
    logits: NativeTensorHandle,
    mask: NativeTensorHandle | null,
    argmax: boolean,
    async: boolean,
  ): MaybeAsync<{ weights: NativeTensorHandle; argmax?: NativeTensorHandle }>;
  spladePoolBackward(
    logits: NativeTensorHandle,
    argmax: NativeTensorHandle,
    grad: NativeTensorHandle,
    async: boolean,
  ): MaybeAsync<NativeTensorHandle>;
  spladeRegularizer(
    w: NativeTensorHandle,
    kind: string,
    grad: boolean,
    async: boolean,
  ): MaybeAsync<{ value: number; grad?: NativeTensorHandle }>;
  toSparse(
    w: NativeTensorHandle,
    threshold: number,
    topK: number,
    async: boolean,
  ): MaybeAsync<{ offsets: NativeTensorHandle; indices: NativeTensorHandle; values: NativeTensorHandle }>;
  sparseScores(
    ao: NativeTensorHandle,
    ai: NativeTensorHandle,
    av: NativeTensorHandle,
    bo: NativeTensorHandle,
    bi: NativeTensorHandle,
    bv: NativeTensorHandle,
    async: boolean,
  ): MaybeAsync<NativeTensorHandle>;
  sparseDenseScores(
    o: NativeTensorHandle,
    i: NativeTensorHandle,
    v: NativeTensorHandle,
    dense: NativeTensorHandle,
    async: boolean,
  ): MaybeAsync<NativeTensorHandle>;
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
  /** DPR-MUF's heads, candidate scores and mutual information of every expert in one call (native/kernels/muf_heads.h). */
  mufConfidence(
    experts: Array<{
      queries: NativeTensorHandle;
      passages: NativeTensorHandle;
      ids: NativeTensorHandle;
      weights: NativeTensorHandle[];
      members: number;
      temperature: number;
      scores?: NativeTensorHandle;
    }>,
    epsMode: boolean,
    async: boolean,
    fuse?: { k: number; uniform: boolean; tieRank?: NativeTensorHandle; weights?: NativeTensorHandle },
  ): MaybeAsync<{ mi: NativeTensorHandle; confidence: NativeTensorHandle; ids?: NativeTensorHandle; scores?: NativeTensorHandle }>;
  /**
   * DPR-MUF's search stage in one call (native/kernels/muf_search.h): every expert's top-L, its confidence (uniform,
   * familiarity or heads) and the fusion.
   */
  mufSearch(
    plan: {
      mode: 'uniform' | 'familiarity' | 'heads';
      topL: number;
      k: number;
      tieRank?: NativeTensorHandle;
      rows?: NativeTensorHandle;
      experts: Array<{
        queries: NativeTensorHandle | Float32Array | NativeTextsToEmbed;
        passages: NativeTensorHandle;
        familiarity?: { own: NativeTensorHandle; other: NativeTensorHandle; k: number; bias: number; weight: number };
        weights?: NativeTensorHandle[];
        members?: number;
        temperature?: number;
      }>;
    },
    async: boolean,
  ): MaybeAsync<{ mi: Float32Array; confidence: Float32Array; ids: Int32Array; scores: Float32Array; ms: number[] }>;
  /** The forward pass of a 0-layer encoder (native/kernels/embedding_bag.h): named weight tensors and settings. */
  embeddingBag(
    model: Record<string, NativeTensorHandle | number | boolean>,
    ids: NativeTensorHandle,
    typeIds: NativeTensorHandle,
    lengths: NativeTensorHandle,
    async: boolean,
  ): MaybeAsync<NativeTensorHandle>;
  /**
   * Normalized texts segmented (as NativeWordPiece.encode) and embedded by a 0-layer encoder in one call
   * (native/napi/embedding_bag_bindings.cc): [rows * dim].
   */
  embedTexts(
    model: Record<string, NativeTensorHandle | number | boolean>,
    tokenizer: NativeWordPiece,
    first: string[],
    second: string[] | null,
    maxLength: number,
    marker: number,
    async: boolean,
  ): MaybeAsync<Float32Array>;
  WordPiece: new (vocabulary: string[], maxWordChars?: number) => NativeWordPiece;
  /** @internal The HNSW distance kernel (tests only). */
  pairDistance(a: NativeTensorHandle, b: NativeTensorHandle, kind: 'dot' | 'l2sq'): number;
  capabilities(): NativeCapabilities;
  setThreads(n: number): void;
  setIsa(name: string): void;
}

/** The native WordPiece segmenter (native/napi/tokenizer_object.cc); lib/text/tokenizer.ts wraps it. */
export interface NativeWordPiece {
  readonly size: number;
  encode(
    first: string[],
    second: string[] | null,
    maxLength: number,
    marker: number,
    padToMax: boolean,
    async: boolean,
  ): MaybeAsync<{ ids: Int32Array; typeIds: Int32Array; lengths: Int32Array; rows: number; seqLen: number }>;
  pieces(normalized: string): Int32Array;
  idOf(token: string): number;
  tokenOf(id: number): string;
}

let core: CoreAddon | undefined;

/** The core addon, loaded on first use. */
export function coreAddon(): CoreAddon {
  if (!core) {
    core = loadAddon<CoreAddon>('quorum_core', 'QUORUM_CORE_PATH');
    warnAboutEnvironment(core.capabilities());
  }
  return core;
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

/** One DenseIndex object of quorum_faiss.node (native/napi/faiss_addon.cc). */
export interface NativeDenseIndex {
  train(x: Float32Array, async: boolean): MaybeAsync<object>;
  add(x: Float32Array, ids: BigInt64Array, async: boolean): MaybeAsync<object>;
  remove(ids: BigInt64Array, async: boolean): MaybeAsync<{ removed: number }>;
  compact(async: boolean): MaybeAsync<{ removed: number }>;
  search(
    q: Float32Array,
    k: number,
    efSearch: number | undefined,
    nprobe: number | undefined,
    async: boolean,
    allowed?: BigInt64Array,
    filterScanBelow?: number,
  ): MaybeAsync<{ ids: BigInt64Array; scores: Float32Array; rows: number; k: number }>;
  reconstruct(ids: BigInt64Array, async: boolean): MaybeAsync<{ vectors: Float32Array }>;
  save(path: string, async: boolean): MaybeAsync<object>;
  load(path: string, async: boolean): MaybeAsync<object>;
  map(path: string, verify: boolean, async: boolean): MaybeAsync<object>;
  toBuffer(): Uint8Array;
  fromBuffer(bytes: Uint8Array): void;
  setSearchDefaults(efSearch: number | undefined, nprobe: number | undefined): void;
  dispose(): void;
  isDisposed(): boolean;
  info(): {
    dim: number;
    size: number;
    trained: boolean;
    factory: string;
    mips: 'inner-product' | 'l2';
    phi: number;
    supportsRemove: boolean;
    mapped: boolean;
    efSearch?: number;
    nprobe?: number;
  };
}

/** quorum_faiss.node's exports. */
interface FaissAddon {
  DenseIndex: new (options?: object) => NativeDenseIndex;
  kmeans(
    vectors: Float32Array,
    dim: number,
    k: number,
    niter: number,
    seed: number,
    spherical: boolean,
    async: boolean,
  ): MaybeAsync<{ centroids: Float32Array }>;
  setThreads(n: number): void;
  threads(): number;
}

let faiss: FaissAddon | undefined;

/**
 * The faiss addon (built by CMake only), loaded on first use with the core's thread setting. ERR_BACKEND_UNAVAILABLE
 * when it was not built (no faiss on the build machine).
 */
export function faissAddon(): FaissAddon {
  if (!faiss) {
    const m = loadAddon<FaissAddon>('quorum_faiss', 'QUORUM_FAISS_PATH');
    m.setThreads(coreAddon().capabilities().threads);
    faiss = m;
  }
  return faiss;
}

/** The faiss addon if something already loaded it (setThreads must not load it just to set a number). */
export function loadedFaissAddon(): FaissAddon | undefined {
  return faiss;
}

/** A tokenized batch as the torch module takes it (lib/text/tokenizer.ts produces it). */
export interface TokenBatchArg {
  /** Token ids, `rows * seqLen`, row-major, padded with [PAD]. */
  ids: Int32Array;
  /** Token type (segment) ids, same layout. */
  typeIds: Int32Array;
  /** Real tokens per row, framing included. */
  lengths: Int32Array;
  /** Number of rows. */
  rows: number;
  /** Columns per row. */
  seqLen: number;
}

/** One contrastive training batch (native/torch/retriever.h TrainBatch). */
export interface TrainBatchArg {
  /** The batch's questions. */
  queries: TokenBatchArg;
  /** The batch's passages: every question's candidates (its positive, hard negatives and the others'). */
  passages: TokenBatchArg;
  /** Per question, the row of its positive among the passages. */
  positives: Int32Array;
  /**
   * (question, passage) pairs left out of the softmax, flattened: e.g. a passage that is another gold of the
   * question.
   */
  ignore?: Int32Array | null;
  /** Task index, for task markers and per-task question encoders. */
  task?: number;
  /** Multiplies the batch's loss (a task's loss scale; 1 / accumulation steps). */
  lossScale?: number;
  /** Scores are divided by it before the softmax (default 1). */
  temperature?: number;
}

/** One batch's training figures, from {@link Retriever.accumulate}. */
export interface StepStats {
  /** Mean contrastive loss over the batch's questions. */
  loss: number;
  /** TASER's routers' mean negative entropy (0 without routed blocks). */
  entropy: number;
  /** Questions whose positive ranked first among the batch's passages. */
  correct: number;
  /** Questions in the batch. */
  questions: number;
  /** Real (non-padding) tokens read, queries and passages. */
  tokens: number;
}

/** The native Retriever of quorum_torch.node (native/napi/torch_addon.cc). */
export interface NativeRetriever {
  info(): { parameterCount: number; outDim: number; optimizerSteps: number; encoders: string[] };
  dispose(): void;
  isDisposed(): boolean;
  parameters(): { name: string; shape: number[] }[];
  getParameter(name: string): Float32Array;
  setParameter(name: string, values: Float32Array): void;
  setOptimizer(o: { beta1?: number; beta2?: number; eps?: number; weightDecay?: number; layerDecay?: number; frozen?: string[] }): void;
  encode(
    batch: TokenBatchArg,
    side: 'query' | 'passage',
    task: number,
    out: Float32Array | null,
    async: boolean,
    pooledState?: boolean,
  ): MaybeAsync<Float32Array>;
  accumulate(batch: TrainBatchArg, async: boolean, group?: unknown): MaybeAsync<StepStats>;
  step(lr: number, clip: number, async: boolean, group?: unknown): MaybeAsync<{ gradNorm: number }>;
  broadcastParameters(group: unknown, root: number, async: boolean): MaybeAsync<void>;
  trainLoop(
    batches: TrainBatchArg[],
    lrs: Float64Array,
    clip: number,
    accumulation: number,
    async: boolean,
  ): MaybeAsync<StepStats & { ms: number }>;
  save(path: string, async: boolean): MaybeAsync<object>;
  load(path: string, async: boolean): MaybeAsync<object>;
}

/** The MUF ensemble heads (native/napi/mlp_ensemble_object.cc). */
export interface NativeMlpEnsemble {
  info(): { parameterCount: number; optimizerSteps: number };
  dispose(): void;
  isDisposed(): boolean;
  parameters(): { name: string; shape: number[] }[];
  getParameter(name: string): Float32Array;
  setParameter(name: string, values: Float32Array): void;
  step(
    questions: Float32Array,
    passages: Float32Array,
    qRows: Int32Array,
    pRows: Int32Array,
    group: number,
    lr: number,
    clip: number,
    async: boolean,
    ranks?: unknown,
  ): MaybeAsync<{ loss: number; memberLoss: Float64Array; correct: number; questions: number }>;
  broadcastParameters(group: unknown, root: number, async: boolean): MaybeAsync<object>;
  score(q: Float32Array, passages: Float32Array, ids: Int32Array, L: number, out: Float32Array, async: boolean): MaybeAsync<Float32Array>;
  members(q: Float32Array, async: boolean): MaybeAsync<Float32Array>;
}

/** quorum_torch.node's exports. */
interface TorchAddon {
  Retriever: new (config: object) => NativeRetriever;
  MlpEnsemble: new (config: { dim: number; hidden?: number; layers?: number; members?: number }) => NativeMlpEnsemble;
  /** CAME's model (native/napi/came_object.cc); typed by lib/methods/came/model.ts. */
  CameModel: new (config: object) => unknown;
  /** ROM's model (native/napi/rom_object.cc); typed by lib/methods/rom/model.ts. */
  RomModel: new (config: object) => unknown;
  setThreads(n: number): void;
  threads(): number;
  manualSeed(seed: number): void;
}

let torchModule: TorchAddon | undefined;

/** The libtorch module, loaded on first use (it costs ~160 MB and up to a second), with the runtime's threads. */
export function torchAddon(): TorchAddon {
  if (!torchModule) {
    const m = loadAddon<TorchAddon>('quorum_torch', 'QUORUM_TORCH_PATH');
    m.setThreads(coreAddon().capabilities().threads);
    torchModule = m;
  }
  return torchModule;
}

/** The libtorch module if something already loaded it. */
export function loadedTorchAddon(): TorchAddon | undefined {
  return torchModule;
}
