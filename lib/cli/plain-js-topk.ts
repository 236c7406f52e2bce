// The plain-JavaScript contender the demo (and bench/dense.ts) measure the dense kernel against: the same
// inner products and a size-k min-heap per query, in idiomatic typed-array JavaScript.

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
    const order = Array.from({ length: size }, (_, j) => j).sort(
      (x, y) => (hs[y] as number) - (hs[x] as number) || (hi[x] as number) - (hi[y] as number),
    );
    order.forEach((j, r) => {
      ids[b * k + r] = hi[j] as number;
      scores[b * k + r] = hs[j] as number;
    });
  }
  return { ids, scores };
}
