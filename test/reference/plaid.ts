// Plain TypeScript reference (f64) of the ColBERT index (native/kernels/plaid_index.h, docs/methods/colbert.md):
// ColBERTv2's residual codec and PLAID's stages, written from the papers' description, for the tests.

/** Linear interpolation between order statistics (torch.quantile's and numpy's default). */
export function quantileRef(sorted: ArrayLike<number>, q: number): number {
  const pos = q * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return (sorted[lo] as number) + (pos - lo) * ((sorted[hi] as number) - (sorted[lo] as number));
}

/** ColBERTv2's buckets: cut-off i at quantile i / 2^nbits, weight i at (i + 0.5) / 2^nbits of every residual value. */
export function fitBucketsRef(residuals: ArrayLike<number>, nbits: number): { cutoffs: number[]; weights: number[] } {
  const v = Float64Array.from(residuals as ArrayLike<number>).sort();
  const nb = 2 ** nbits;
  return {
    cutoffs: Array.from({ length: nb - 1 }, (_, i) => quantileRef(v, (i + 1) / nb)),
    weights: Array.from({ length: nb }, (_, i) => quantileRef(v, (i + 0.5) / nb)),
  };
}

/** The nearest centroid by inner product (ties: the lower centroid). */
export function nearestRef(x: ArrayLike<number>, at: number, centroids: ArrayLike<number>, dim: number): number {
  let best = -Infinity;
  let arg = -1;
  for (let c = 0; c < centroids.length / dim; c++) {
    let s = 0;
    for (let d = 0; d < dim; d++) s += (x[at + d] as number) * (centroids[c * dim + d] as number);
    if (s > best) (best = s), (arg = c);
  }
  return arg;
}

export interface CodecRef {
  centroids: ArrayLike<number>;
  dim: number;
  cutoffs: ArrayLike<number>;
  weights: ArrayLike<number>;
}

/** A token as the index stores it: its centroid plus each dimension's bucket weight, unit length. */
export function decodeTokenRef(x: ArrayLike<number>, at: number, code: number, k: CodecRef): Float64Array {
  const out = new Float64Array(k.dim);
  let ss = 0;
  for (let d = 0; d < k.dim; d++) {
    const c = k.centroids[code * k.dim + d] as number;
    const r = (x[at + d] as number) - c;
    let b = 0;
    while (b < k.cutoffs.length && (k.cutoffs[b] as number) < r) b++;
    out[d] = c + (k.weights[b] as number);
    ss += out[d]! * out[d]!;
  }
  const n = Math.max(Math.sqrt(ss), 1e-12);
  for (let d = 0; d < k.dim; d++) out[d]! /= n;
  return out;
}

export interface PlaidRefParams {
  k: number;
  ncells: number;
  threshold: number;
  ndocs: number;
  /** Stage 4 over the full vectors `x`: this many passages of stage 3 re-scored exactly (undefined: no stage 4). */
  exact?: number;
}

/**
 * PLAID's search over passages (tokens `x`, `lengths`, each token's `codes`): candidates from each question token's
 * `ncells` best centroids' passages (or every allowed one), stage 1 (pruned centroid MaxSim, -9999 for a question
 * token nothing kept reaches), stage 2 (every token), MaxSim over the decoded tokens, and with `exact` MaxSim over
 * the full vectors of stage 3's best `exact`. Ties to the lower passage.
 */
export function plaidSearchRef(
  q: ArrayLike<number>,
  lq: number,
  x: ArrayLike<number>,
  lengths: ArrayLike<number>,
  codes: ArrayLike<number>,
  k: CodecRef,
  p: PlaidRefParams,
  removed: ReadonlySet<number> = new Set(),
  allowed?: readonly number[],
): Array<{ id: number; score: number }> {
  const dim = k.dim;
  const K = k.centroids.length / dim;
  const S = new Float64Array(K * lq);
  for (let c = 0; c < K; c++)
    for (let j = 0; j < lq; j++) {
      let s = 0;
      for (let d = 0; d < dim; d++) s += (k.centroids[c * dim + d] as number) * (q[j * dim + d] as number);
      S[c * lq + j] = s;
    }
  const starts = [0];
  for (let i = 0; i < lengths.length; i++) starts.push(starts[i]! + (lengths[i] as number));
  const usable = (pid: number) => !removed.has(pid) && (lengths[pid] as number) > 0;
  let cand: number[];
  if (allowed) cand = allowed.filter(usable);
  else {
    const cells = new Set<number>();
    for (let j = 0; j < lq; j++) {
      const order = Array.from({ length: K }, (_, c) => c).sort((a, b) => S[b * lq + j]! - S[a * lq + j]! || a - b);
      order.slice(0, Math.min(p.ncells, K)).forEach((c) => cells.add(c));
    }
    cand = [];
    for (let pid = 0; pid < lengths.length; pid++) {
      if (!usable(pid)) continue;
      for (let t = starts[pid]!; t < starts[pid + 1]!; t++)
        if (cells.has(codes[t] as number)) {
          cand.push(pid);
          break;
        }
    }
  }
  const keep = (c: number) => {
    let m = -Infinity;
    for (let j = 0; j < lq; j++) m = Math.max(m, S[c * lq + j]!);
    return m >= p.threshold;
  };
  const approx = (pid: number, pruned: boolean) => {
    let total = 0;
    for (let j = 0; j < lq; j++) {
      let m = -9999;
      for (let t = starts[pid]!; t < starts[pid + 1]!; t++) {
        const c = codes[t] as number;
        if (!pruned || keep(c)) m = Math.max(m, S[c * lq + j]!);
      }
      total += m;
    }
    return total;
  };
  const top = (ids: number[], n: number, score: (pid: number) => number) =>
    ids
      .map((id) => ({ id, score: score(id) }))
      .sort((a, b) => b.score - a.score || a.id - b.id)
      .slice(0, n);
  const s1 = top(cand, Math.max(p.ndocs, p.k), (pid) => approx(pid, true));
  const s2 = top(
    s1.map((h) => h.id),
    Math.max(Math.floor(p.ndocs / 4), p.k),
    (pid) => approx(pid, false),
  );
  const maxsim = (rows: ArrayLike<number>[]) => {
    let total = 0;
    for (let j = 0; j < lq; j++) {
      let m = -Infinity;
      for (const v of rows) {
        let s = 0;
        for (let d = 0; d < dim; d++) s += (v[d] as number) * (q[j * dim + d] as number);
        m = Math.max(m, s);
      }
      total += m;
    }
    return total;
  };
  const s3 = top(
    s2.map((h) => h.id),
    p.exact === undefined ? p.k : Math.max(p.exact, p.k),
    (pid) => {
      const dec = [];
      for (let t = starts[pid]!; t < starts[pid + 1]!; t++) dec.push(decodeTokenRef(x, t * dim, codes[t] as number, k));
      return maxsim(dec);
    },
  );
  if (p.exact === undefined) return s3;
  return top(
    s3.map((h) => h.id),
    p.k,
    (pid) => {
      const rows = [];
      for (let t = starts[pid]!; t < starts[pid + 1]!; t++) rows.push(Array.prototype.slice.call(x, t * dim, (t + 1) * dim) as number[]);
      return maxsim(rows);
    },
  );
}
