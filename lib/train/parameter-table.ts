// The named-parameter access every libtorch-backed object shares (Retriever, MUF heads): names and shapes, copies
// out, checked writes in.
import { callNative } from '../errors.js';

interface NativeParameters {
  info(): { parameterCount: number };
  parameters(): { name: string; shape: number[] }[];
  getParameter(name: string): Float32Array;
  setParameter(name: string, values: Float32Array): void;
}

export abstract class ParameterTable {
  protected abstract readonly native: NativeParameters;

  /** Trainable values in all parameters. */
  get parameterCount(): number {
    return this.native.info().parameterCount;
  }

  /** Names and shapes, in the model's fixed order. */
  parameters(): { name: string; shape: number[] }[] {
    return this.native.parameters();
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
