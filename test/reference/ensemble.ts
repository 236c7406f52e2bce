// Plain TypeScript reference of DPR-MUF's ensemble mutual information (f64), exact and eps ("muf") modes.

/** MI and confidence of one query: z[k][d], K members over n candidates. */
export function ensembleMIRef(z: number[][], temperature: number, mode: 'exact' | 'muf' = 'exact'): { mi: number; confidence: number } {
  const K = z.length;
  const n = (z[0] as number[]).length;
  const eps = mode === 'muf' ? 1e-6 : 0;
  const xlogx = (x: number) => (eps ? x * Math.log(x + eps) : x > 0 ? x * Math.log(x) : 0);
  const mix = new Float64Array(n);
  let memberEntropy = 0;
  for (const row of z) {
    const m = Math.max(...row);
    const e = row.map((v) => Math.exp((v - m) / temperature));
    const s = e.reduce((a, b) => a + b, 0);
    let h = 0;
    e.forEach((x, d) => {
      const p = x / s;
      mix[d]! += p / K;
      h -= xlogx(p);
    });
    memberEntropy += h / K;
  }
  let hm = 0;
  for (const x of mix) hm -= xlogx(x);
  const mi = hm - memberEntropy;
  return { mi, confidence: Math.min(1, Math.max(0, 1 - mi / Math.log(K))) };
}
