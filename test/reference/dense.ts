// Plain TypeScript reference of the dense kernels: one loop, a sorted insertion list. Tests compare the
// native kernels against it, and the benchmark uses it as the plain-JS baseline.

/** Decodes a bf16 bit pattern. */
export function bf16ToF32(h: number): number {
  const u = new Uint32Array([h << 16]);
  return new Float32Array(u.buffer)[0] as number;
}

/** Decodes an IEEE binary16 bit pattern. */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const man = h & 0x3ff;
  if (exp === 0) return sign * man * 2 ** -24;
  if (exp === 31) return man ? NaN : sign * Infinity;
  return sign * (1 + man / 1024) * 2 ** (exp - 15);
}

/** S[b, n] = dot(Q[b], C[n]) with f64 accumulation (the exact value the f32 kernels approximate). */
export function scoreMatrixRef(Q: Float32Array, C: ArrayLike<number>, B: number, N: number, D: number): Float64Array {
  const S = new Float64Array(B * N);
  for (let b = 0; b < B; b++) {
    for (let n = 0; n < N; n++) {
      let acc = 0;
      for (let d = 0; d < D; d++) acc += (Q[b * D + d] as number) * (C[n * D + d] as number);
      S[b * N + n] = acc;
    }
  }
  return S;
}

/** Top-k of each row of a score matrix: score descending, id ascending; pads with -1 / -Infinity. */
export function topKRef(S: ArrayLike<number>, B: number, N: number, k: number): { ids: Int32Array; scores: Float64Array } {
  const ids = new Int32Array(B * k).fill(-1);
  const scores = new Float64Array(B * k).fill(-Infinity);
  for (let b = 0; b < B; b++) {
    const order: number[] = [];
    for (let n = 0; n < N; n++) if (!Number.isNaN(S[b * N + n])) order.push(n);
    order.sort((x, y) => (S[b * N + y] as number) - (S[b * N + x] as number) || x - y);
    for (let j = 0; j < Math.min(k, order.length); j++) {
      ids[b * k + j] = order[j] as number;
      scores[b * k + j] = S[b * N + (order[j] as number)] as number;
    }
  }
  return { ids, scores };
}
