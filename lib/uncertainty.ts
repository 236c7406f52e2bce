// DPR-MUF's ensemble uncertainty: mutual information, confidence, ECE and the temperature search
// (docs/methods/kernels.md#ensemble-mutual-information-and-confidence, docs/methods/kernels.md#ece-and-temperature-calibration). Contract of the kernel: native/kernels/ensemble.h.
import { auxOperand, backendOf } from './cuda.js';
import { bestPoint, type GridPoint } from './grid-search.js';
import { QuorumError } from './errors.js';
import { type NativeTensorHandle } from './native.js';
import { type Int32Input, type TensorInput, runAsync, runSync, Operands } from './operand.js';
import { Tensor } from './tensor.js';
import { checkOptions, mustBeArray, mustBeObject, optionKeys } from './validate.js';

/** Options of {@link ensembleMI}. */
export interface EnsembleMIOptions {
  /**
   * Divides the scores before the softmax (DPR-MUF's `p`; its README uses 1e-3, which multiplies the
   * scores by 1000). Default 1e-3.
   */
  temperature?: number;
  /** Candidates used per query `[B]` (each in [1, L]); default all L. */
  lengths?: Int32Input;
  /**
   * `'exact'` (default): x log x := 0 at 0. `'muf'`: -sum x log(x + 1e-6) in both entropies, which reproduces
   * DPR-MUF's numbers (it moves confidence by at most ~1e-4).
   */
  mode?: 'exact' | 'muf';
}

/** What {@link ensembleMI} returns: native Tensors the caller disposes. */
export interface EnsembleMIResult {
  /** Mutual information per query `[B]` (an exact computation may dip below 0 by rounding, ~1e-7). */
  mi: Tensor<'f32'>;
  /** `clamp(1 - MI / ln K, 0, 1)` per query `[B]`. */
  confidence: Tensor<'f32'>;
}

const ensembleKeys = optionKeys<EnsembleMIOptions>()(['temperature', 'lengths', 'mode']);
const calibrationKeys = optionKeys<CalibrationSplit>()(['scores', 'lengths', 'hit']);
const calibrateKeys = optionKeys<{ grid?: unknown; bins?: unknown; mode?: unknown }>()(['grid', 'bins', 'mode']);

function call(ops: Operands, scores: TensorInput, o: EnsembleMIOptions) {
  checkOptions(o, ensembleKeys, 'ensembleMI options');
  const z = ops.tensor(scores, 'scores');
  const lengths = o.lengths === undefined ? undefined : ops.int32(o.lengths, 'lengths');
  if (o.mode !== undefined && o.mode !== 'exact' && o.mode !== 'muf') throw new QuorumError('ERR_ARG', "mode must be 'exact' or 'muf'");
  const be = backendOf([z], ['scores']);
  return (async: boolean) => be.ensembleMI(z.handle, auxOperand(be, lengths, 'lengths'), o.temperature ?? 1e-3, o.mode === 'muf', async);
}

function wrap(r: { mi: NativeTensorHandle; confidence: NativeTensorHandle }): EnsembleMIResult {
  return { mi: Tensor.fromHandle<'f32'>(r.mi), confidence: Tensor.fromHandle<'f32'>(r.confidence) };
}

/**
 * Mutual information between the candidate and the member of an ensemble, and the confidence derived from
 * it, for each query: `z [B, K, L]` holds K members' scores over L candidates (K >= 2).
 *
 * @example
 * const { confidence } = await ensembleMI(z, { temperature: 1e-3 });
 */
export async function ensembleMI(scores: TensorInput, options: EnsembleMIOptions = {}): Promise<EnsembleMIResult> {
  return runAsync((ops) => call(ops, scores, options), wrap);
}

/**
 * {@link ensembleMI} on the calling thread.
 *
 * @example
 * const { mi, confidence } = ensembleMISync(z, { temperature: 1e-3 });   // z: [B, K, L]
 */
export function ensembleMISync(scores: TensorInput, options: EnsembleMIOptions = {}): EnsembleMIResult {
  return runSync((ops) => call(ops, scores, options), wrap);
}

/**
 * Per-bin question count, confidence sum and hit sum with DPR-MUF's binning (see {@link ece}): edges `i / bins` as
 * floating point, each value in the first bin whose closed interval holds it, values outside [0, 1] in none.
 * Inputs are not validated here: {@link ece} and the reliability diagram check them.
 */
export function calibrationBins(
  confidence: ArrayLike<number>,
  hit: ArrayLike<number | boolean>,
  bins: number,
): { count: Float64Array; sumConf: Float64Array; sumHit: Float64Array } {
  const step = 1 / bins;
  const ticks = Array.from({ length: bins + 1 }, (_, i) => i * step);
  const count = new Float64Array(bins);
  const sumConf = new Float64Array(bins);
  const sumHit = new Float64Array(bins);
  for (let i = 0; i < confidence.length; i++) {
    const c = confidence[i] as number;
    for (let b = 0; b < bins; b++) {
      if ((ticks[b] as number) <= c && c <= (ticks[b + 1] as number)) {
        count[b]! += 1;
        sumConf[b]! += c;
        sumHit[b]! += hit[i] ? 1 : 0;
        break;
      }
    }
  }
  return { count, sumConf, sumHit };
}

/**
 * Expected calibration error with DPR-MUF's binning: bin edges `i / bins` (floating point, as numpy's
 * `arange`), each value in the FIRST bin whose closed interval holds it (so a boundary value goes to the
 * lower bin), empty bins contribute 0, and N counts every value, including any outside [0, 1].
 *
 * @param confidence per-query confidence
 * @param hit per-query outcome (1 / true = the first-stage top-k contains an answer)
 *
 * @example
 * ece([0.9, 0.2], [true, false]);   // 0.15 = (|0.9 - 1| + |0.2 - 0|) / 2, one value in each of two bins
 */
export function ece(confidence: ArrayLike<number>, hit: ArrayLike<number | boolean>, bins = 10): number {
  mustBeArray(confidence, 'confidences', true);
  mustBeArray(hit, 'outcomes', true);
  if (confidence.length !== hit.length) throw new QuorumError('ERR_SHAPE', `${confidence.length} confidences but ${hit.length} outcomes`);
  if (!Number.isInteger(bins) || bins < 1) throw new QuorumError('ERR_RANGE', 'bins must be a positive integer');
  const n = confidence.length;
  if (n === 0) throw new QuorumError('ERR_SHAPE', 'ece needs at least one value');
  for (let i = 0; i < n; i++) {
    const c = confidence[i];
    // A NaN confidence falls in no bin yet would count in n. (Finite values outside [0, 1] count in n and no
    // bin, as in DPR-MUF's own ECE.)
    if (typeof c !== 'number') throw new QuorumError('ERR_ARG', `confidence ${i} must be a number, got ${typeof c}`);
    if (!Number.isFinite(c)) throw new QuorumError('ERR_RANGE', `confidence ${i} must be finite, got ${c}`);
  }
  const { count, sumConf, sumHit } = calibrationBins(confidence, hit, bins);
  let total = 0;
  for (let b = 0; b < bins; b++) {
    const m = count[b] as number;
    if (m > 0) total += m * Math.abs((sumHit[b] as number) / m - (sumConf[b] as number) / m);
  }
  return total / n;
}

/** A calibration split: ensemble scores and outcomes of queries that are NOT the evaluation set. */
export interface CalibrationSplit {
  /** `[B, K, L]` members' scores. */
  scores: TensorInput;
  /** Candidates used per query `[B]`, as in {@link EnsembleMIOptions.lengths}; default all L. */
  lengths?: Int32Input;
  /** Per query: did the first-stage top-k contain an answer. */
  hit: ArrayLike<number | boolean>;
}

/** What {@link calibrateTemperature} returns. */
export interface TemperatureSearch {
  /** The temperature with the lowest ECE (the first on ties). */
  temperature: number;
  /** Its expected calibration error on the split. */
  ece: number;
  /** Every temperature tried with its ECE, in grid order. */
  tried: Array<{ temperature: number; ece: number }>;
}

/** DPR-MUF's grid: 0.001, 0.002, ..., 0.010. */
export const mufTemperatureGrid: readonly number[] = Object.freeze(Array.from({ length: 10 }, (_, i) => 0.001 + i * 0.001));

/**
 * DPR-MUF's grid (rounded to 0.001 .. 0.010) widened on both sides, for confidences from scores that are not on
 * DPR's dot-product scale (MufRetriever's heads): 1e-5 .. 5e-4 below, 0.02 .. 10 above.
 */
export const widenedTemperatureGrid: readonly number[] = Object.freeze([
  1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4,
  ...mufTemperatureGrid.map((t) => Math.round(t * 1000) / 1000),
  0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10,
]);

/**
 * The temperature with the lowest ECE over `grid` (the first on ties), given the confidences at each temperature
 * and the outcomes: the search behind {@link calibrateTemperature} and MufRetriever.calibrate.
 */
export async function searchTemperature(
  grid: readonly number[],
  confidenceAt: (temperature: number) => Promise<ArrayLike<number>>,
  hit: ArrayLike<number | boolean>,
  bins = 10,
): Promise<TemperatureSearch> {
  if (grid.length === 0) throw new QuorumError('ERR_ARG', 'the temperature grid is empty');
  const tried: Array<GridPoint<number>> = [];
  for (const temperature of grid) tried.push({ point: temperature, value: ece(await confidenceAt(temperature), hit, bins) });
  const best = bestPoint(tried, { goal: 'min', ties: 'first' });
  return { temperature: best.point, ece: best.value, tried: tried.map((t) => ({ temperature: t.point, ece: t.value })) };
}

/**
 * Picks the temperature with the lowest ECE on a calibration split (the first on ties). Pass a held-out split
 * such as the expert's dev set: searching on the test questions would tune on test labels, which is why
 * DPR-MUF's README fixes p = 1e-3 instead.
 *
 * @example
 * const { temperature, ece } = await calibrateTemperature({ scores: devScores, hit: devHits });   // devScores [B, K, L]
 */
export async function calibrateTemperature(
  calibration: CalibrationSplit,
  options: { grid?: readonly number[]; bins?: number; mode?: 'exact' | 'muf' } = {},
): Promise<TemperatureSearch> {
  mustBeObject(calibration, 'calibration split');
  checkOptions(calibration, calibrationKeys, 'calibration split');
  checkOptions(options, calibrateKeys, 'calibrateTemperature options');
  const confidenceAt = async (temperature: number) => {
    const opts: EnsembleMIOptions = { temperature };
    if (calibration.lengths !== undefined) opts.lengths = calibration.lengths;
    if (options.mode !== undefined) opts.mode = options.mode;
    const r = await ensembleMI(calibration.scores, opts);
    const c = r.confidence.data.slice();
    r.mi.dispose();
    r.confidence.dispose();
    return c;
  };
  return searchTemperature(options.grid ?? mufTemperatureGrid, confidenceAt, calibration.hit, options.bins ?? 10);
}
