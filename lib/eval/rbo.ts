// Rank-biased overlap (Webber, Moffat and Zobel, "A similarity measure for indefinite rankings", TOIS 2010): how
// much two rankings agree, weighting the top more, with persistence p (the chance a reader looks one rank further).
// For lists truncated at depth k, the extrapolated form (their Eq. 30, for lists of equal length):
//   RBO_ext = (X_k / k) p^k + ((1 - p) / p) sum_{d=1..k} (X_d / d) p^d,   X_d = |A[:d] ∩ B[:d]|
// It is 1 for identical lists and 0 for disjoint ones. CAME reports it (42-48% for independently trained experts).
import { QuorumError } from '../errors.js';

/**
 * Extrapolated rank-biased overlap of two rankings (best first) at depth min(|a|, |b|).
 *
 * @example
 * rbo(['a', 'b', 'c'], ['a', 'b', 'c'], 0.9); // 1
 * rbo(['a', 'b'], ['c', 'd'], 0.9);           // 0
 */
export function rbo<T>(a: readonly T[], b: readonly T[], p = 0.9): number {
  if (!Array.isArray(a) || !Array.isArray(b)) throw new QuorumError('ERR_ARG', 'rbo needs two arrays');
  if (!(p > 0 && p < 1)) throw new QuorumError('ERR_RANGE', `p must be in (0, 1), got ${p}`);
  const k = Math.min(a.length, b.length);
  if (k === 0) return 0;
  const seenA = new Set<T>();
  const seenB = new Set<T>();
  let overlap = 0;
  let sum = 0;
  for (let d = 1; d <= k; d++) {
    const x = a[d - 1] as T;
    const y = b[d - 1] as T;
    if (x === y) overlap++;
    else {
      if (seenB.has(x)) overlap++;
      if (seenA.has(y)) overlap++;
    }
    seenA.add(x);
    seenB.add(y);
    sum += (overlap / d) * p ** d;
  }
  return (overlap / k) * p ** k + ((1 - p) / p) * sum;
}
