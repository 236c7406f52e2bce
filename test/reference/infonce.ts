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

/** Dot-product InfoNCE forward and backward in plain loops (the benchmark's plain-JS contender), per-row weights included. */
export function infoNceGradRef(a: InfoNceRefInput): { loss: number; dq: Float64Array; dp: Float64Array } {
  const { B, M, D } = a;
  const t = a.temperature ?? 1;
  const G = new Float64Array(B * M);
  let loss = 0;
  for (let i = 0; i < B; i++) {
    let m = -Infinity;
    for (let j = 0; j < M; j++) {
      let d = 0;
      for (let k = 0; k < D; k++) d += (a.q[i * D + k] as number) * (a.p[j * D + k] as number);
      G[i * M + j] = d / t;
      m = Math.max(m, d / t);
    }
    let sum = 0;
    for (let j = 0; j < M; j++) sum += Math.exp((G[i * M + j] as number) - m);
    const pos = a.pos[i] as number;
    const w = a.weights ? (a.weights[i] as number) : 1;
    loss += w * (m + Math.log(sum) - (G[i * M + pos] as number));
    for (let j = 0; j < M; j++) G[i * M + j] = (w * (Math.exp((G[i * M + j] as number) - m) / sum - (j === pos ? 1 : 0))) / (B * t);
  }
  const dq = new Float64Array(B * D);
  const dp = new Float64Array(M * D);
  for (let i = 0; i < B; i++)
    for (let j = 0; j < M; j++) {
      const g = G[i * M + j] as number;
      for (let k = 0; k < D; k++) {
        dq[i * D + k]! += g * (a.p[j * D + k] as number);
        dp[j * D + k]! += g * (a.q[i * D + k] as number);
      }
    }
  return { loss: loss / B, dq, dp };
}
