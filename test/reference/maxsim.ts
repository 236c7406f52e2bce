// Plain TypeScript reference of MaxSim (f64), for tests and the benchmark's plain-JS baseline.

export interface MaxSimRefInput {
  /** [nq, lq, dim] */
  q: ArrayLike<number>;
  nq: number;
  lq: number;
  dim: number;
  /** token rows [rows, dim] (decoded to numbers) */
  tokens: ArrayLike<number>;
  start: ArrayLike<number>;
  length: ArrayLike<number>;
  queryMask?: ArrayLike<number>;
  tokenMask?: ArrayLike<number>;
  clampZero?: boolean;
}

/** scores [nq, N] and argmax [nq, N, lq], with the conventions of native/kernels/maxsim.h. */
export function maxSimRef(a: MaxSimRefInput): { scores: Float64Array; argmax: Int32Array } {
  const N = a.start.length;
  const scores = new Float64Array(a.nq * N);
  const argmax = new Int32Array(a.nq * N * a.lq);
  for (let b = 0; b < a.nq; b++)
    for (let n = 0; n < N; n++) {
      let total = 0;
      for (let i = 0; i < a.lq; i++) {
        let best = -Infinity;
        let arg = -1;
        const qo = (b * a.lq + i) * a.dim;
        for (let t = 0; t < (a.length[n] as number); t++) {
          const row = (a.start[n] as number) + t;
          if (a.tokenMask && !a.tokenMask[row]) continue;
          let s = 0;
          for (let j = 0; j < a.dim; j++) s += (a.q[qo + j] as number) * (a.tokens[row * a.dim + j] as number);
          if (s > best) {
            best = s;
            arg = t;
          }
        }
        if (a.queryMask && !a.queryMask[b * a.lq + i]) {
          best = 0;
          arg = -1;
        } else if (a.clampZero && !(best > 0)) {
          best = 0;
          arg = -1;
        }
        total += best;
        argmax[(b * N + n) * a.lq + i] = arg;
      }
      scores[b * N + n] = total;
    }
  return { scores, argmax };
}
