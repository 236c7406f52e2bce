// DPR-MUF's search stage as one native call (native/kernels/muf_search.h, docs/methods/muf.md#serving): the encoded
// questions' top-L from every expert, each expert's confidence (uniform, familiarity's P(own task) or the heads' mutual
// information) and the fusion, in one task off the event loop. The experts' corpus scans and familiarity k-NN scans
// share one parallel region; before, MufServer made three native calls per expert and one for the fusion. 0-layer
// encoders embed the questions in the same task (one hop a question, docs/results/serving.md#dpr-muf). The
// references: scoreTopK for the lists, FamiliarityBank.probability for familiarity, mufConfidence for the heads and
// the fusion (test/muf-stage.test.ts checks the stage's confidences, MI and fused lists against them).
import { QuorumError, awaitNative, callNative } from '../../errors.js';
import { coreAddon, type NativeTensorHandle, type NativeTextsToEmbed } from '../../native.js';
import { Tensor } from '../../tensor.js';

/** One expert's part: its encoded questions, its corpus vectors, and what its confidence needs. */
export interface MufStageExpert {
  /**
   * Question vectors `[B, dim]`: an f32 Tensor, a Float32Array of B rows of the passages' width (copied), or B texts a
   * 0-layer encoder embeds in the stage's own task (ServingEncoder.queriesToEmbed).
   */
  queries: Tensor<'f32'> | Float32Array | NativeTextsToEmbed;
  /** Corpus vectors `[N, dim]` (f32, bf16 or f16), the same N for every expert. */
  passages: Tensor;
  /** Familiarity: the bank's tables and calibration, as FamiliarityBank.stagePart gives them. */
  familiarity?: { own: NativeTensorHandle; other: NativeTensorHandle; k: number; bias: number; weight: number };
  /** Heads: mufConfidence's transposed layers, K and the calibrated temperature. */
  heads?: { weights: ReadonlyArray<Tensor<'f32' | 'bf16'>>; members: number; temperature: number };
}

/**
 * What the stage gives back, as plain typed arrays (nothing to dispose): `[E, B]` confidences and MI, the fused
 * `[B, k]` rows and scores, and its laps in ms.
 */
interface MufStageResult {
  /** Each expert's mutual information per question, `[E * B]` (NaN unless the heads ran). */
  mi: Float32Array;
  /** Each expert's confidence per question, `[E * B]`: 1 (uniform), P(own task) (familiarity), or from the heads' MI. */
  confidence: Float32Array;
  /** Fused corpus rows per question, `[B * k]`, best first, -1 past the union's size. */
  ids: Int32Array;
  /** Their fused scores (-Infinity where padded). */
  scores: Float32Array;
  /** The scans (corpus and familiarity), the confidence and the fusion, in ms. */
  ms: { scan: number; confidence: number; fuse: number };
}

/**
 * Runs the stage. `mode` picks the confidence; every expert must carry what it needs. `rows` (strictly ascending,
 * non-empty) filters the corpus scans.
 */
export async function mufStage(
  experts: readonly MufStageExpert[],
  options: { mode: 'uniform' | 'familiarity' | 'heads'; topL: number; k: number; tieRank?: Tensor<'i32'>; rows?: Tensor<'i32'> },
): Promise<MufStageResult> {
  const parts = experts.map((e, x) => {
    if (options.mode === 'familiarity' && !e.familiarity) throw new QuorumError('ERR_STATE', `expert ${x} has no familiarity bank`);
    if (options.mode === 'heads' && !e.heads) throw new QuorumError('ERR_STATE', `expert ${x} has no heads`);
    return {
      queries: e.queries instanceof Tensor ? e.queries.handle : e.queries,
      passages: e.passages.handle,
      ...(options.mode === 'familiarity' ? { familiarity: e.familiarity! } : {}),
      ...(options.mode === 'heads' ? { weights: e.heads!.weights.map((w) => w.handle), members: e.heads!.members, temperature: e.heads!.temperature } : {}),
    };
  });
  const plan = { mode: options.mode, topL: options.topL, k: options.k, experts: parts, ...(options.tieRank ? { tieRank: options.tieRank.handle } : {}), ...(options.rows ? { rows: options.rows.handle } : {}) };
  type Raw = { mi: Float32Array; confidence: Float32Array; ids: Int32Array; scores: Float32Array; ms: number[] };
  const r = await awaitNative(callNative(() => coreAddon().mufSearch(plan, true) as Promise<Raw>));
  return { mi: r.mi, confidence: r.confidence, ids: r.ids, scores: r.scores, ms: { scan: r.ms[0]!, confidence: r.ms[1]!, fuse: r.ms[2]! } };
}
