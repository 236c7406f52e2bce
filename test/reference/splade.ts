// Plain TypeScript references of SPLADE pooling and its regularizers (f64).

/** w [B, V] and argmax [B, V] from logits [B, L, V] (numbers) and an optional mask [B * L]. */
export function spladePoolRef(x: ArrayLike<number>, B: number, L: number, V: number, mask?: ArrayLike<number>) {
  const w = new Float64Array(B * V);
  const argmax = new Int32Array(B * V).fill(-1);
  for (let b = 0; b < B; b++)
    for (let v = 0; v < V; v++) {
      let best = 0;
      for (let t = 0; t < L; t++) {
        if (mask && !mask[b * L + t]) continue;
        const a = Math.log1p(Math.max(x[(b * L + t) * V + v] as number, 0));
        if (a > best) {
          best = a;
          argmax[b * V + v] = t;
        }
      }
      w[b * V + v] = best;
    }
  return { w, argmax };
}

export function flopsRef(w: ArrayLike<number>, B: number, V: number): number {
  let total = 0;
  for (let v = 0; v < V; v++) {
    let m = 0;
    for (let b = 0; b < B; b++) m += Math.abs(w[b * V + v] as number);
    total += (m / B) ** 2;
  }
  return total;
}

export function l1Ref(w: ArrayLike<number>, B: number, V: number): number {
  let total = 0;
  for (let i = 0; i < B * V; i++) total += Math.abs(w[i] as number);
  return total / B;
}
