// The TypeScript side of native/napi/muf_bindings.cc: DPR-MUF's confidence stage over given candidates
// (mufConfidence, lib/methods/muf/serve.ts) and its whole search stage (mufSearch, lib/methods/muf/stage.ts).
import type { CodedOperand } from './quant_bindings.js';
import { coreAddon, type MaybeAsync, type NativeTensorHandle } from '../native.js';
import type { NativeTextsToEmbed } from './embedding_bag_bindings.js';

/** A familiarity bank as the stage reads it (FamiliarityBank.stagePart): its two tables, k and the Platt scaling. */
export interface NativeFamiliarityPart {
  own: NativeTensorHandle | CodedOperand;
  other: NativeTensorHandle | CodedOperand;
  k: number;
  bias: number;
  weight: number;
}

/** muf_bindings.cc's functions. */
export interface MufBindings {
  /** DPR-MUF's heads, candidate scores and mutual information of every expert in one call (native/kernels/muf_heads.h). */
  mufConfidence(
    experts: Array<{
      queries: NativeTensorHandle;
      passages: NativeTensorHandle | CodedOperand;
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
        passages: NativeTensorHandle | CodedOperand;
        /** Binary passages: the full vectors that rescore the best `candidates` of each scan. */
        rescore?: NativeTensorHandle | CodedOperand;
        candidates?: number;
        familiarity?: NativeFamiliarityPart;
        weights?: NativeTensorHandle[];
        members?: number;
        temperature?: number;
      }>;
    },
    async: boolean,
  ): MaybeAsync<{ mi: Float32Array; confidence: Float32Array; ids: Int32Array; scores: Float32Array; ms: number[] }>;
}

/** muf_bindings.cc's functions in quorum_core.node. */
export function mufBindings(): MufBindings {
  return coreAddon() as MufBindings;
}
