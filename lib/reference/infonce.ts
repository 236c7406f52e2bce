// Plain TypeScript reference of the DPR InfoNCE loss (f64), used with finite differences in the tests.

export interface InfoNceRefInput {
  q: ArrayLike<number>;
  p: ArrayLike<number>;
  B: number;
  M: number;
  D: number;
  pos: ArrayLike<number>;
  temperature?: number;
  cosine?: boolean;
  weights?: ArrayLike<number>;
}

function norm(x: ArrayLike<number>, o: number, D: number): number {
  let s = 0;
  for (let j = 0; j < D; j++) s += (x[o + j] as number) ** 2;
  return Math.max(Math.sqrt(s), 1e-12);
}

export function infoNceRef(a: InfoNceRefInput): { loss: number; rowLoss: Float64Array; rank: Int32Array } {
  const t = a.temperature ?? 1;
  const rowLoss = new Float64Array(a.B);
  const rank = new Int32Array(a.B);
  let loss = 0;
  for (let i = 0; i < a.B; i++) {
    const s = new Float64Array(a.M);
    const nq = a.cosine ? norm(a.q, i * a.D, a.D) : 1;
    for (let j = 0; j < a.M; j++) {
      let d = 0;
      for (let k = 0; k < a.D; k++) d += (a.q[i * a.D + k] as number) * (a.p[j * a.D + k] as number);
      s[j] = d / (a.cosine ? nq * norm(a.p, j * a.D, a.D) : 1) / t;
    }
    let m = -Infinity;
    for (const v of s) m = Math.max(m, v);
    let sum = 0;
    for (const v of s) sum += Math.exp(v - m);
    const sp = s[a.pos[i] as number] as number;
    rowLoss[i] = m + Math.log(sum) - sp;
    let r = 1;
    for (const v of s) if (v > sp) r++;
    rank[i] = r;
    loss += (a.weights ? (a.weights[i] as number) : 1) * (rowLoss[i] as number);
  }
  return { loss: loss / a.B, rowLoss, rank };
}
