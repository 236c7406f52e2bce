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

/**
 * What a JavaScript developer would write: one pass over a Float32Array corpus per query, keeping the k
 * best in a binary min-heap. The plain-JS baseline of the benchmark.
 */
export function plainJsTopK(Q: Float32Array, C: Float32Array, D: number, k: number): { ids: Int32Array; scores: Float32Array } {
  const B = Q.length / D;
  const N = C.length / D;
  const ids = new Int32Array(B * k).fill(-1);
  const scores = new Float32Array(B * k).fill(-Infinity);
  const hs = new Float64Array(k);
  const hi = new Int32Array(k);
  for (let b = 0; b < B; b++) {
    let size = 0;
    const qo = b * D;
    for (let n = 0; n < N; n++) {
      let acc = 0;
      const co = n * D;
      for (let d = 0; d < D; d++) acc += (Q[qo + d] as number) * (C[co + d] as number);
      if (size < k) {
        let i = size++;
        while (i > 0) {
          const p = (i - 1) >> 1;
          if ((hs[p] as number) <= acc) break;
          hs[i] = hs[p] as number;
          hi[i] = hi[p] as number;
          i = p;
        }
        hs[i] = acc;
        hi[i] = n;
      } else if (acc > (hs[0] as number)) {
        let i = 0;
        for (;;) {
          const l = 2 * i + 1;
          if (l >= size) break;
          const c = l + 1 < size && (hs[l + 1] as number) < (hs[l] as number) ? l + 1 : l;
          if ((hs[c] as number) >= acc) break;
          hs[i] = hs[c] as number;
          hi[i] = hi[c] as number;
          i = c;
        }
        hs[i] = acc;
        hi[i] = n;
      }
    }
    const order = Array.from({ length: size }, (_, j) => j).sort((x, y) => (hs[y] as number) - (hs[x] as number) || (hi[x] as number) - (hi[y] as number));
    order.forEach((j, r) => {
      ids[b * k + r] = hi[j] as number;
      scores[b * k + r] = hs[j] as number;
    });
  }
  return { ids, scores };
}
