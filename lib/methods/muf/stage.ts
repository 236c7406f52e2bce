// DPR-MUF's search stage as one native call (native/kernels/muf_search.h, docs/methods/muf.md#serving), the one
// engine of MufServer.search and MufRetriever.search (the TypeScript path it replaced is test/reference/muf-search.ts):
// the encoded questions' top-L from every expert, each expert's confidence (uniform, familiarity's P(own task) or the
// heads' mutual information) and the fusion, in one task off the event loop. The experts' corpus scans and familiarity k-NN scans
// share one parallel region; before, MufServer made three native calls per expert and one for the fusion. 0-layer
// encoders embed the questions in the same task (one hop a question, docs/results/serving.md#dpr-muf). The
// references: scoreTopK for the lists, FamiliarityBank.probability for familiarity, mufConfidence for the heads and
// the fusion (test/muf-stage.test.ts checks the stage's confidences, MI and fused lists against them).
import { QuorumError, awaitNative, callNative } from '../../errors.js';
import type { ScoredDoc } from '../../eval/ranking.js';
import { compareIds } from '../../fusion/normalize.js';
import type { NativeTextsToEmbed } from '../../bindings/embedding_bag_bindings.js';
import { mufBindings, type NativeFamiliarityPart } from '../../bindings/muf_bindings.js';
import { QuantizedTensor } from '../../quantized.js';
import { Tensor } from '../../tensor.js';
import { allFinite } from '../../validate.js';
import { readEnsembleFile, type MufFusion, type MufHits } from './format.js';

/** One expert's part: its encoded questions, its corpus vectors, and what its confidence needs. */
export interface MufStageExpert {
  /**
   * Question vectors `[B, dim]`: an f32 Tensor, a Float32Array of B rows of the passages' width (copied), or B texts a
   * 0-layer encoder embeds in the stage's own task (ServingEncoder.queriesToEmbed).
   */
  queries: Tensor<'f32'> | Float32Array | NativeTextsToEmbed;
  /** Corpus vectors `[N, dim]` (f32, bf16 or f16, or an int8 / binary QuantizedTensor), the same N for every expert. */
  passages: Tensor | QuantizedTensor;
  /**
   * Binary passages: full vectors of the same rows (f32 / bf16 / f16 Tensor, possibly mapped, or int8) that rescore the
   * best `candidates` rows of each question's scan into its top-L; the heads read them too.
   */
  rescore?: { vectors: Tensor | QuantizedTensor; candidates: number };
  /** Familiarity: the bank's tables and calibration, as FamiliarityBank.stagePart gives them. */
  familiarity?: NativeFamiliarityPart;
  /** Heads: mufConfidence's transposed layers, K and the calibrated temperature. */
  heads?: { weights: ReadonlyArray<Tensor<'f32' | 'bf16'>>; members: number; temperature: number };
}

/** An expert's heads as the stage takes them: mufConfidence's transposed layers and K. */
export interface StageHeads {
  /** `[Wt_0, b_0, ..., Wt_n, b_n]`, each weight `[K, out, in]` (f32 or bf16), each bias `[K, out]` f32. */
  weights: Array<Tensor<'f32' | 'bf16'>>;
  /** K. */
  members: number;
}

/** Which confidence a fusion takes: its own for 'uniform', P(own task) for 'muf' where calibrated, else the heads. */
export function stageMode(fusion: Exclude<MufFusion, 'oracle'>, familiarityCalibrated: boolean): 'uniform' | 'familiarity' | 'heads' {
  return fusion === 'uniform' ? 'uniform' : fusion === 'muf' && familiarityCalibrated ? 'familiarity' : 'heads';
}

/**
 * Each corpus row's rank in corpus-id order, `[N]` i32: the stage's tie order, so that equal fused scores come in
 * the order of the fusion registry (compareIds).
 */
export function corpusTieRank(ids: readonly string[]): Tensor<'i32'> {
  const byId = Array.from(ids, (_, i) => i).sort((a, b) => compareIds(ids[a]!, ids[b]!));
  const rank = new Int32Array(ids.length);
  byId.forEach((row, r) => (rank[row] = r));
  return Tensor.from(rank, [ids.length], 'i32');
}

/**
 * The stage's result as each question's fused hits (corpus ids, best first, at most k) and its experts' confidences;
 * a question whom every expert gives confidence 0 is fused with equal weights, and its confidences say so (1s).
 */
export function stageHits(r: MufStageResult, corpusIds: readonly string[], experts: number, k: number): MufHits[] {
  const B = r.confidence.length / experts;
  return Array.from({ length: B }, (_, b) => {
    const w = Array.from({ length: experts }, (_, x) => r.confidence[x * B + b]!);
    const hits: ScoredDoc[] = [];
    for (let j = 0; j < k && r.ids[b * k + j]! >= 0; j++) hits.push({ id: corpusIds[r.ids[b * k + j]!]!, score: r.scores[b * k + j]! });
    return { hits, confidence: w.some((v) => v > 0) ? w : w.map(() => 1) };
  });
}

/** [K, rows, cols] -> [K, cols, rows]. */
function transposeMembers(w: Float32Array, K: number, rows: number, cols: number): Float32Array {
  const t = new Float32Array(w.length);
  for (let k = 0; k < K; k++) {
    const o = k * rows * cols;
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[o + c * rows + r] = w[o + r * cols + c]!;
  }
  return t;
}

/**
 * A heads file's layers (MlpEnsemble.toBytes' bytes, from a file or from heads in memory) in the stage's layout,
 * checked: shapes that chain from `dim` to `dim`, finite values; each weight transposed (a row per output unit) and
 * held as `dtype`. `where` names the file in errors. The caller disposes the tensors.
 */
export function stageHeads(bytes: Uint8Array, where: string, dim: number, dtype: 'f32' | 'bf16'): StageHeads {
  const { config: c, tensors } = readEnsembleFile(bytes, where);
  if (c.dim !== dim) throw new QuorumError('ERR_FORMAT', `${where}: heads of width ${c.dim} for a ${dim}-d expert`);
  const K = c.members;
  const weights: Array<Tensor<'f32' | 'bf16'>> = [];
  try {
    for (let i = 0; i <= c.layers; i++) {
      const inW = i === 0 ? dim : c.hidden;
      const out = i === c.layers ? dim : c.hidden;
      for (const [name, shape] of [
        [`layer.${i}.weight`, [K, inW, out]],
        [`layer.${i}.bias`, [K, out]],
      ] as const) {
        const t = tensors.get(name);
        const n = shape.reduce((a, b) => a * b, 1);
        if (!t || t.data.length !== n) throw new QuorumError('ERR_FORMAT', `${where}: ${name} must hold ${shape.join(' x ')} values`);
        if (!allFinite(t.data)) throw new QuorumError('ERR_FORMAT', `${where}: ${name} holds NaN or Infinity`);
        if (shape.length === 2) weights.push(Tensor.from(t.data, [...shape]));
        else {
          const wt = Tensor.from(transposeMembers(t.data, K, inW, out), [K, out, inW]);
          if (dtype === 'f32') weights.push(wt);
          else {
            weights.push(wt.to('bf16'));
            wt.dispose();
          }
        }
      }
    }
  } catch (e) {
    for (const w of weights) w.dispose();
    throw e;
  }
  return { weights, members: K };
}

/**
 * What the stage gives back, as plain typed arrays (nothing to dispose): `[E, B]` confidences and MI, the fused
 * `[B, k]` rows and scores, and its laps in ms.
 */
export interface MufStageResult {
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
export async function mufSearch(
  experts: readonly MufStageExpert[],
  options: { mode: 'uniform' | 'familiarity' | 'heads'; topL: number; k: number; tieRank?: Tensor<'i32'>; rows?: Tensor<'i32'> },
): Promise<MufStageResult> {
  const parts = experts.map((e, x) => {
    if (options.mode === 'familiarity' && !e.familiarity) throw new QuorumError('ERR_STATE', `expert ${x} has no familiarity bank`);
    if (options.mode === 'heads' && !e.heads) throw new QuorumError('ERR_STATE', `expert ${x} has no heads`);
    return {
      queries: e.queries instanceof Tensor ? e.queries.handle : e.queries,
      passages: e.passages instanceof QuantizedTensor ? e.passages.operand() : e.passages.handle,
      ...(e.rescore
        ? {
            rescore: e.rescore.vectors instanceof QuantizedTensor ? e.rescore.vectors.operand() : e.rescore.vectors.handle,
            candidates: e.rescore.candidates,
          }
        : {}),
      ...(options.mode === 'familiarity' ? { familiarity: e.familiarity! } : {}),
      ...(options.mode === 'heads'
        ? { weights: e.heads!.weights.map((w) => w.handle), members: e.heads!.members, temperature: e.heads!.temperature }
        : {}),
    };
  });
  const plan = {
    mode: options.mode,
    topL: options.topL,
    k: options.k,
    experts: parts,
    ...(options.tieRank ? { tieRank: options.tieRank.handle } : {}),
    ...(options.rows ? { rows: options.rows.handle } : {}),
  };
  type Raw = { mi: Float32Array; confidence: Float32Array; ids: Int32Array; scores: Float32Array; ms: number[] };
  const r = await awaitNative(callNative(() => mufBindings().mufSearch(plan, true) as Promise<Raw>));
  return { mi: r.mi, confidence: r.confidence, ids: r.ids, scores: r.scores, ms: { scan: r.ms[0]!, confidence: r.ms[1]!, fuse: r.ms[2]! } };
}
