// DPR-MUF's ensemble uncertainty: mutual information, confidence, ECE and the temperature search
// (docs/methods/kernels.md#ensemble-mutual-information-and-confidence,
// docs/methods/kernels.md#ece-and-temperature-calibration). Contract of the kernel: native/kernels/ensemble.h.
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

/**
 * Area under the ROC curve of a score as a test of a binary label: the probability that a random positive scores
 * above a random negative, ties counted one half (the Mann-Whitney U statistic over n+ n-; average ranks for ties).
 * 0.5 is a coin; DPR-MUF's confidence as a test of "this question is from my expert's task" is one use
 * (docs/methods/muf.md#does-the-confidence-know-the-domain).
 *
 * @param score per-item score (higher = more likely positive)
 * @param label per-item label (1 / true = positive)
 *
 * @example
 * auroc([0.9, 0.4, 0.4, 0.1], [1, 1, 0, 0]);   // 0.875: of the four pairs, three ordered, one tied
 */
export function auroc(score: ArrayLike<number>, label: ArrayLike<number | boolean>): number {
  mustBeArray(score, 'scores', true);
  mustBeArray(label, 'labels', true);
  if (score.length !== label.length) throw new QuorumError('ERR_SHAPE', `${score.length} scores but ${label.length} labels`);
  const n = score.length;
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < n; i++) {
    const s = score[i];
    if (typeof s !== 'number' || !Number.isFinite(s))
      throw new QuorumError('ERR_RANGE', `score ${i} must be a finite number, got ${String(s)}`);
  }
  order.sort((a, b) => (score[a] as number) - (score[b] as number));
  let positives = 0;
  let rankSum = 0;
  for (let i = 0; i < n;) {
    let j = i;
    while (j < n && score[order[j]!] === score[order[i]!]) j++;
    const rank = (i + 1 + j) / 2; // average of ranks i+1 .. j
    for (let t = i; t < j; t++)
      if (label[order[t]!]) {
        positives++;
        rankSum += rank;
      }
    i = j;
  }
  const negatives = n - positives;
  if (positives === 0 || negatives === 0) throw new QuorumError('ERR_ARG', 'auroc needs at least one positive and one negative label');
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
}

/**
 * Selective answering: answer the questions whose confidence is at least t, abstain on the rest. Per threshold
 * (every distinct confidence, highest first): the share answered (coverage) and the share of those right
 * (precision). `coverageAt(p)` is the largest coverage whose precision is at least p (0 when none).
 *
 * @example
 * const c = precisionCoverage([0.9, 0.8, 0.3], [true, false, true]);
 * c.points;          // [{ threshold: 0.9, coverage: 1/3, precision: 1 }, { 0.8, 2/3, 0.5 }, { 0.3, 1, 2/3 }]
 * c.coverageAt(0.6); // 1 (all three answered: 2/3 right)
 */
export function precisionCoverage(
  confidence: ArrayLike<number>,
  right: ArrayLike<number | boolean>,
): {
  points: Array<{ threshold: number; coverage: number; precision: number }>;
  coverageAt(precision: number): number;
} {
  mustBeArray(confidence, 'confidences', true);
  mustBeArray(right, 'outcomes', true);
  if (confidence.length !== right.length)
    throw new QuorumError('ERR_SHAPE', `${confidence.length} confidences but ${right.length} outcomes`);
  const n = confidence.length;
  if (n === 0) throw new QuorumError('ERR_ARG', 'precisionCoverage needs at least one question');
  for (let i = 0; i < n; i++)
    if (typeof confidence[i] !== 'number' || !Number.isFinite(confidence[i]))
      throw new QuorumError('ERR_RANGE', `confidence ${i} must be a finite number`);
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => (confidence[b] as number) - (confidence[a] as number));
  const points: Array<{ threshold: number; coverage: number; precision: number }> = [];
  let good = 0;
  for (let i = 0; i < n; i++) {
    if (right[order[i]!]) good++;
    // A threshold answers every question at or above it: emit after the last of a run of equal confidences.
    if (i + 1 === n || confidence[order[i + 1]!] !== confidence[order[i]!])
      points.push({ threshold: confidence[order[i]!] as number, coverage: (i + 1) / n, precision: good / (i + 1) });
  }
  return {
    points,
    coverageAt: (p: number) => points.reduce((best, x) => (x.precision >= p ? Math.max(best, x.coverage) : best), 0),
  };
}

/** A fitted Platt scaling: `p = sigmoid(bias + sum_j weights[j] x[j])`. */
export interface PlattScaling {
  /** One weight per feature. */
  weights: number[];
  /** The intercept. */
  bias: number;
}

/**
 * Platt scaling (Platt 1999): logistic regression of a binary outcome on one or more scores, fitted by Newton's
 * method (iteratively reweighted least squares) with a small L2 penalty on the weights (`l2`, default 1e-4 times the
 * number of rows) so that separable data still converge. Fitted on a dev split, never on test
 * (docs/methods/muf.md#does-the-confidence-know-the-domain).
 *
 * @param features per-item feature rows (each the same length, finite)
 * @param outcome per-item outcome (1 / true = positive)
 * @example
 * const p = fitPlatt([[0.1], [0.4], [0.35], [0.8]], [0, 0, 1, 1]);
 * plattProbability(p, [0.7]);   // about 0.8
 */
export function fitPlatt(
  features: ReadonlyArray<readonly number[]>,
  outcome: ArrayLike<number | boolean>,
  options: { l2?: number } = {},
): PlattScaling {
  mustBeArray(features, 'features');
  mustBeArray(outcome, 'outcomes', true);
  if (features.length !== outcome.length)
    throw new QuorumError('ERR_SHAPE', `${features.length} feature rows but ${outcome.length} outcomes`);
  if (features.length === 0) throw new QuorumError('ERR_ARG', 'fitPlatt needs at least one row');
  const d = features[0]!.length;
  features.forEach((f, i) => {
    if (!Array.isArray(f) || f.length !== d) throw new QuorumError('ERR_SHAPE', `feature row ${i} must hold ${d} numbers`);
    if (!f.every((v) => typeof v === 'number' && Number.isFinite(v)))
      throw new QuorumError('ERR_RANGE', `feature row ${i} holds a value that is not finite`);
  });
  const n = features.length;
  const positives = Array.from({ length: n }, (_, i) => (outcome[i] ? 1 : 0) as number).reduce((a, b) => a + b, 0);
  if (positives === 0 || positives === n) throw new QuorumError('ERR_ARG', 'fitPlatt needs both outcomes among the rows');
  const l2 = options.l2 ?? 1e-4 * n;
  if (!(l2 >= 0) || !Number.isFinite(l2)) throw new QuorumError('ERR_RANGE', `l2 must be a finite number >= 0, got ${l2}`);
  // theta = [bias, weights...]; the bias is not penalized.
  const m = d + 1;
  const theta = new Float64Array(m);
  theta[0] = Math.log(positives / (n - positives));
  for (let iter = 0; iter < 100; iter++) {
    const grad = new Float64Array(m);
    const hess = new Float64Array(m * m);
    for (let i = 0; i < n; i++) {
      const x = [1, ...features[i]!];
      let z = 0;
      for (let j = 0; j < m; j++) z += theta[j]! * x[j]!;
      const p = 1 / (1 + Math.exp(-z));
      const r = p - (outcome[i] ? 1 : 0);
      const w = Math.max(p * (1 - p), 1e-12);
      for (let j = 0; j < m; j++) {
        grad[j] = grad[j]! + r * x[j]!;
        for (let l = 0; l < m; l++) hess[j * m + l] = hess[j * m + l]! + w * x[j]! * x[l]!;
      }
    }
    for (let j = 1; j < m; j++) {
      grad[j] = grad[j]! + l2 * theta[j]!;
      hess[j * m + j] = hess[j * m + j]! + l2;
    }
    const step = solve(hess, grad, m);
    let size = 0;
    for (let j = 0; j < m; j++) {
      theta[j] = theta[j]! - step[j]!;
      size = Math.max(size, Math.abs(step[j]!));
    }
    if (size < 1e-10) break;
  }
  return { bias: theta[0]!, weights: Array.from(theta.subarray(1)) };
}

/** Gaussian elimination with partial pivoting: A x = b for a small dense m x m system (A, b consumed). */
function solve(a: Float64Array, b: Float64Array, m: number): Float64Array {
  for (let c = 0; c < m; c++) {
    let piv = c;
    for (let r = c + 1; r < m; r++) if (Math.abs(a[r * m + c]!) > Math.abs(a[piv * m + c]!)) piv = r;
    if (piv !== c) {
      for (let j = 0; j < m; j++) [a[c * m + j], a[piv * m + j]] = [a[piv * m + j]!, a[c * m + j]!];
      [b[c], b[piv]] = [b[piv]!, b[c]!];
    }
    const d = a[c * m + c]!;
    if (Math.abs(d) < 1e-300) continue;
    for (let r = c + 1; r < m; r++) {
      const f = a[r * m + c]! / d;
      for (let j = c; j < m; j++) a[r * m + j] = a[r * m + j]! - f * a[c * m + j]!;
      b[r] = b[r]! - f * b[c]!;
    }
  }
  const x = new Float64Array(m);
  for (let r = m - 1; r >= 0; r--) {
    let s = b[r]!;
    for (let j = r + 1; j < m; j++) s -= a[r * m + j]! * x[j]!;
    const d = a[r * m + r]!;
    x[r] = Math.abs(d) < 1e-300 ? 0 : s / d;
  }
  return x;
}

/** The probability a {@link fitPlatt} scaling gives one feature row. */
export function plattProbability(p: PlattScaling, features: readonly number[]): number {
  mustBeObject(p, 'Platt scaling');
  mustBeArray(features, 'features');
  if (!Array.isArray(p.weights) || features.length !== p.weights.length)
    throw new QuorumError('ERR_SHAPE', `${features.length} features for ${p.weights?.length} weights`);
  let z = p.bias;
  for (let j = 0; j < features.length; j++) z += p.weights[j]! * (features[j] as number);
  if (!Number.isFinite(z) && !Number.isNaN(z)) return z > 0 ? 1 : 0;
  return 1 / (1 + Math.exp(-z));
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
  1e-5,
  2e-5,
  5e-5,
  1e-4,
  2e-4,
  5e-4,
  ...mufTemperatureGrid.map((t) => Math.round(t * 1000) / 1000),
  0.02,
  0.05,
  0.1,
  0.2,
  0.5,
  1,
  2,
  5,
  10,
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
