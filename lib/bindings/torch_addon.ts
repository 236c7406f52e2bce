// The TypeScript side of native/napi/torch_addon.cc: quorum_torch.node's objects (Retriever, the MUF heads, CAME's
// and ROM's models, process groups), their argument types, and the module's threads and seed.
import { loadedTorchAddon, torchAddon, type MaybeAsync } from '../native.js';

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
export interface TorchAddonBindings {
  Retriever: new (config: object) => NativeRetriever;
  MlpEnsemble: new (config: { dim: number; hidden?: number; layers?: number; members?: number }) => NativeMlpEnsemble;
  /** CAME's model (native/napi/came_object.cc); typed by lib/methods/came/model.ts. */
  CameModel: new (config: object) => unknown;
  /** ROM's model (native/napi/rom_object.cc); typed by lib/methods/rom/model.ts. */
  RomModel: new (config: object) => unknown;
  /** Data-parallel process groups (native/napi/process_group_object.cc); typed by lib/models/process-group.ts. */
  ProcessGroup: (new () => unknown) & { available(): boolean };
  setThreads(n: number): void;
  threads(): number;
  manualSeed(seed: number): void;
}

/** torch_addon.cc's exports (quorum_torch.node, loaded on first use). */
export function torchBindings(): TorchAddonBindings {
  return torchAddon() as TorchAddonBindings;
}

/** The libtorch module's exports if something already loaded it. */
export function loadedTorchBindings(): TorchAddonBindings | undefined {
  return loadedTorchAddon() as TorchAddonBindings | undefined;
}
