// Comparing two systems on the same queries: the paired two-tailed t-test and the paired randomization
// (sign-flip permutation) test, over per-query metric values.
import { QuorumError } from '../errors.js';
import { checkOptions, mustBeArray, optionKeys } from '../validate.js';

/** What {@link pairedTTest} and {@link randomizationTest} return. */
export interface PairedTest {
  /** Mean of b - a. */
  meanDifference: number;
  /** Two-tailed p-value. */
  p: number;
  /** Queries compared. */
  n: number;
}

function differences(a: readonly number[], b: readonly number[]): number[] {
  if (a.length !== b.length) throw new QuorumError('ERR_SHAPE', `paired tests need equal lengths, got ${a.length} and ${b.length}`);
  if (a.length < 2) throw new QuorumError('ERR_RANGE', 'paired tests need at least 2 queries');
  return a.map((x, i) => (b[i] as number) - x);
}

/** ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9; ~15 significant digits). */
function logGamma(x: number): number {
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905,
    -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  x -= 1;
  let s = c[0] as number;
  for (let i = 1; i < 9; i++) s += (c[i] as number) / (x + i);
  const t = x + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(s);
}

/** Continued fraction of the incomplete beta function (modified Lentz). */
function betaFraction(a: number, b: number, x: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-15) break;
  }
  return h;
}

/**
 * The regularized incomplete beta function I_x(a, b).
 *
 * @example
 * incompleteBeta(0.5, 2, 2);   // 0.5 (symmetric)
 */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  // The fraction converges fast only below the mean; use the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) above it.
  return x < (a + 1) / (a + b + 2) ? (front * betaFraction(a, b, x)) / a : 1 - (front * betaFraction(b, a, 1 - x)) / b;
}

/**
 * Two-tailed p-value of Student's t with `df` degrees of freedom.
 *
 * @example
 * studentTwoTailed(2.0, 10);   // 0.0734
 */
export function studentTwoTailed(t: number, df: number): number {
  if (!Number.isFinite(t)) return Number.isNaN(t) ? NaN : 0;
  return incompleteBeta(df / (df + t * t), df / 2, 0.5);
}

/**
 * Paired two-tailed t-test of b against a (per-query values, same query order). Identical runs give p = 1.
 *
 * @example
 * pairedTTest(perQuery(runA, 'ndcg@10'), perQuery(runB, 'ndcg@10')); // { meanDifference: 0.021, p: 0.003, n: 300 }
 */
export function pairedTTest(a: readonly number[], b: readonly number[]): PairedTest & { t: number } {
  mustBeArray(a, 'a', true);
  mustBeArray(b, 'b', true);
  const d = differences(a, b);
  const n = d.length;
  const mean = d.reduce((s, x) => s + x, 0) / n;
  const variance = d.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1);
  if (variance === 0) return { meanDifference: mean, t: mean === 0 ? 0 : Math.sign(mean) * Infinity, p: mean === 0 ? 1 : 0, n };
  const t = mean / Math.sqrt(variance / n);
  return { meanDifference: mean, t, p: studentTwoTailed(t, n - 1), n };
}

const randomizationKeys = optionKeys<NonNullable<Parameters<typeof randomizationTest>[2]>>()(['trials', 'seed']);

/**
 * Paired randomization test: how often randomly swapping each query's pair of values gives a mean difference at
 * least as large in magnitude as the observed one. p = (count + 1) / (trials + 1). Seeded, so it reproduces.
 *
 * @example
 * const t = randomizationTest(baselineMrr, modelMrr, { trials: 10_000 });   // per-query values, same order
 * t.meanDifference;   // mean of b - a
 * t.p;
 */
export function randomizationTest(
  a: readonly number[],
  b: readonly number[],
  options: { trials?: number; seed?: number } = {},
): PairedTest {
  mustBeArray(a, 'a', true);
  mustBeArray(b, 'b', true);
  checkOptions(options, randomizationKeys, 'randomizationTest options');
  const d = differences(a, b);
  const n = d.length;
  const trials = options.trials ?? 10_000;
  if (!Number.isInteger(trials) || trials < 1) throw new QuorumError('ERR_RANGE', 'trials must be a positive integer');
  const observed = Math.abs(d.reduce((s, x) => s + x, 0));
  let state = (options.seed ?? 1) >>> 0 || 1;
  let extreme = 0;
  for (let t = 0; t < trials; t++) {
    let s = 0;
    for (let i = 0; i < n; i += 32) {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      const bits = state >>> 0;
      for (let j = 0; j < 32 && i + j < n; j++) s += (bits >>> j) & 1 ? (d[i + j] as number) : -(d[i + j] as number);
    }
    // A relative tolerance keeps float noise from deciding ties with the observed sum.
    if (Math.abs(s) >= observed * (1 - 1e-12)) extreme++;
  }
  return { meanDifference: d.reduce((s, x) => s + x, 0) / n, p: (extreme + 1) / (trials + 1), n };
}
