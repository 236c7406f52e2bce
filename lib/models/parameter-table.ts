// The named-parameter access every libtorch-backed object shares (Retriever, MUF heads, CAME): names and shapes,
// copies out, checked writes in; and the optimizer and checkpoints of the natively trained models.
import { QuorumError, awaitNative, callNative } from '../errors.js';
import { ProcessGroup, optionalGroup, type NativeProcessGroup } from './process-group.js';
import type { MaybeAsync } from '../native.js';
import { NativeResource, type NativeDisposable } from '../native-resource.js';

/** What every libtorch-backed native object answers (native/napi/torch_args.h, TorchObject). */
interface NativeParameters extends NativeDisposable {
  info(): { parameterCount: number };
  parameters(): { name: string; shape: number[] }[];
  getParameter(name: string): Float32Array;
  setParameter(name: string, values: Float32Array): void;
}

export abstract class ParameterTable extends NativeResource {
  protected abstract readonly native: NativeParameters;

  /** Trainable values in all parameters. */
  get parameterCount(): number {
    return callNative(() => this.native.info().parameterCount);
  }

  /** Names and shapes, in the model's fixed order. */
  parameters(): { name: string; shape: number[] }[] {
    return callNative(() => this.native.parameters());
  }

  /** The native model (what {@link NativeResource.dispose} frees: weights and optimizer state). */
  protected nativeResource(): NativeDisposable {
    return this.native;
  }

  /** A copy of one parameter's values (ERR_NOT_FOUND for an unknown name). */
  getParameter(name: string): Float32Array {
    return callNative(() => this.native.getParameter(name));
  }

  /** Overwrites one parameter (ERR_NOT_FOUND, ERR_SHAPE, ERR_NONFINITE leave it unchanged). */
  setParameter(name: string, values: Float32Array): void {
    callNative(() => this.native.setParameter(name, values));
  }
}

/** AdamW settings (DPR's defaults) and TASER's layer-wise learning-rate decay. */
export interface OptimizerOptions {
  /** Decay of the first moment (default 0.9). */
  beta1?: number;
  /** Decay of the second moment (default 0.999). */
  beta2?: number;
  /** Added to the second moment's root (default 1e-8). */
  eps?: number;
  /** Decoupled weight decay; biases and LayerNorm weights never decay. Default 0 (DPR). */
  weightDecay?: number;
  /** Block l's rate is lr * layerDecay^(layers + 1 - l), embeddings' lr * layerDecay^(layers + 2). 1 = off. */
  layerDecay?: number;
  /**
   * Parameters whose name contains any of these strings (substrings: `layer.1` also matches `layer.10`) are not
   * trained: no update, and their gradient is left out of the clipped norm (e.g. `['word_embeddings']` keeps
   * GloVe's vectors). A string that names no parameter is ERR_NOT_FOUND, an empty one ERR_ARG. `trainRetriever`
   * sets the optimizer itself: pass `frozen` in its options there.
   */
  frozen?: string[];
}

interface NativeTrainable extends NativeParameters {
  info(): { parameterCount: number; optimizerSteps: number };
  setOptimizer(o: OptimizerOptions): void;
  step(lr: number, clip: number, async: boolean, group?: unknown): MaybeAsync<{ gradNorm: number }>;
  broadcastParameters(group: unknown, root: number, async: boolean): MaybeAsync<void>;
  save(path: string, async: boolean): MaybeAsync<object>;
  load(path: string, async: boolean): MaybeAsync<object>;
}

/**
 * What every natively trained model shares (Retriever, CAME): AdamW with clipping applied to the accumulated
 * gradients, and checkpoints of parameters and optimizer state.
 */
export abstract class TrainableTable extends ParameterTable {
  protected abstract override readonly native: NativeTrainable;

  /** AdamW updates applied so far (restored by {@link load}). */
  get optimizerSteps(): number {
    return callNative(() => this.native.info().optimizerSteps);
  }

  /**
   * Sets AdamW's hyperparameters, layer-wise decay and frozen parameters for the following steps; the moments and
   * per-parameter update counts are kept. A refused setting (ERR_ARG, ERR_RANGE, ERR_NOT_FOUND) leaves the
   * previous one in place.
   *
   * @example
   * model.setOptimizer({ weightDecay: 0.01, frozen: ['word_embeddings'] });
   * await model.accumulate(batch);
   * await model.step(1e-3, 2);
   */
  setOptimizer(options: OptimizerOptions): void {
    callNative(() => this.native.setOptimizer(options));
  }

  /**
   * Clips the gradient norm to `clip` (0: off), applies AdamW at `lr`, clears gradients; returns the norm. With a
   * `group` the ranks' gradients are summed first (every rank then applies the same update).
   */
  async step(lr: number, clip: number, options: { group?: ProcessGroup } = {}): Promise<number> {
    const group = groupOf(options);
    return (await awaitNative(callNative(() => this.native.step(lr, clip, true, group)) as Promise<{ gradNorm: number }>)).gradNorm;
  }

  /** Sets every rank's parameters to rank `root`'s (default 0): the start of a data-parallel run. */
  async broadcastParameters(group: ProcessGroup, root = 0): Promise<void> {
    if (!(group instanceof ProcessGroup)) throw new QuorumError('ERR_ARG', 'group must be a ProcessGroup');
    await awaitNative(callNative(() => this.native.broadcastParameters(group.native, root, true)) as Promise<void>);
  }

  /** {@link step} on the calling thread. */
  stepSync(lr: number, clip: number): number {
    return callNative(() => (this.native.step(lr, clip, false) as { gradNorm: number }).gradNorm);
  }

  /** Parameters and optimizer state to one file (written atomically). */
  async save(path: string): Promise<void> {
    await awaitNative(callNative(() => this.native.save(path, true)) as Promise<object>);
  }

  /** Restores {@link save}'s file into a model of the same configuration; a bad file changes nothing. */
  async load(path: string): Promise<void> {
    await awaitNative(callNative(() => this.native.load(path, true)) as Promise<object>);
  }
}

/** The native group of `options.group` (undefined without one); ERR_ARG for something else. */
export function groupOf(options: { group?: ProcessGroup }): NativeProcessGroup | undefined {
  if (options === null || typeof options !== 'object') throw new QuorumError('ERR_ARG', 'options must be an object');
  return optionalGroup(options.group)?.native;
}
