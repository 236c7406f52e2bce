// The TypeScript side of native/napi/quant_bindings.cc: fitting and encoding int8 and binary corpora, decoding them,
// and rescoring candidates with full vectors (lib/quantized.ts).
import { coreAddon, type MaybeAsync, type NativeTensorHandle } from '../native.js';

/** A coded corpus as the native corpus operand reads it (native/napi/corpus_arg.h). */
export interface CodedOperand {
  coding: 'int8' | 'binary';
  dim: number;
  codes: NativeTensorHandle;
  scale?: NativeTensorHandle;
  offset?: NativeTensorHandle;
  center?: NativeTensorHandle | null;
  /** binary: the rotation's seed, or null for none. */
  rotation?: number | null;
  queryBits?: number;
}

/** quant_bindings.cc's functions. */
export interface QuantBindings {
  quantizeInt8(
    vectors: NativeTensorHandle,
    clip: number,
    scale: NativeTensorHandle | null,
    offset: NativeTensorHandle | null,
    async: boolean,
  ): MaybeAsync<{ codes: NativeTensorHandle; scale: NativeTensorHandle; offset: NativeTensorHandle }>;
  quantizeBinary(
    vectors: NativeTensorHandle,
    center: 'fit' | NativeTensorHandle | null,
    rotation: number | null,
    async: boolean,
  ): MaybeAsync<{ codes: NativeTensorHandle; center: NativeTensorHandle | null }>;
  dequantize(coded: CodedOperand): NativeTensorHandle;
  rescoreTopK(
    q: NativeTensorHandle,
    full: NativeTensorHandle | CodedOperand,
    candidates: NativeTensorHandle,
    k: number,
    async: boolean,
  ): MaybeAsync<{ ids: NativeTensorHandle; scores: NativeTensorHandle }>;
}

/** quant_bindings.cc's functions in quorum_core.node. */
export function quantBindings(): QuantBindings {
  return coreAddon() as QuantBindings;
}
