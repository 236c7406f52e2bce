import { afterAll, describe, expect, it } from 'vitest';

import { QuorumError, capabilities, setIsa, type Isa } from '../lib/index.js';
import { infoNce, infoNceSync } from '../lib/entries/kernels.js';
import { infoNceGradRef, infoNceRef } from './reference/infonce.js';
import { randomF32, randomShapes } from './helpers.js';

const caps = capabilities();
const isas = caps.availableIsas as Isa[];
afterAll(() => setIsa(caps.isa as Isa));

// [B, M, D, temperature, cosine, weighted]
const cases: Array<[number, number, number, number, boolean, boolean]> = [
  [1, 1, 1, 1, false, false],
  [4, 8, 17, 1, false, false],
  [16, 32, 64, 1, false, true],
  [5, 5, 100, 0.05, true, false],
  [7, 20, 33, 0.01, true, true],
  [128, 256, 768, 1, false, false], // the benchmark shape: B rows, a positive and a hard negative each
  // Shapes for the GEMM behind the scores and gradients: tails of the 12 x 32 tile in every product, and more
  // than one 256-deep block of k in S = Q Pᵀ (D), dQ = G P (M) and dP = Gᵀ Q (B).
  [13, 37, 50, 0.5, false, false],
  [25, 70, 300, 1, false, false],
  [20, 300, 40, 1, false, false],
  [270, 30, 20, 1, false, false],
  // dP = Gᵀ Q with M = 800 rows: more than one task-sized block of row tiles (64 x 12), so every panel is
  // packed by two tasks and only the last block has a tail.
  [9, 800, 40, 1, false, false],
  // Per-row weights (CAME's specialized loss) at GEMM sizes, against the weighted reference gradient.
  [25, 70, 300, 0.5, false, true],
  [128, 256, 768, 1, false, true],
  // Four more drawn at random (seeded): dot or cosine, weighted or not.
  ...randomShapes(2030, 4, [[1, 60], [1, 150], [1, 300], [0, 1], [0, 1]]).map(
    ([B, M, D, c, w]) => [B!, Math.max(M!, B!), D!, c ? 0.05 : 1, c === 1, w === 1] as [number, number, number, number, boolean, boolean],
  ),
];

function positives(B: number, M: number): Int32Array {
  // Irregular layout: row i's positive is not at a fixed stride.
  return Int32Array.from({ length: B }, (_, i) => Math.min(M - 1, Math.floor((i * M) / B) + (i % 2)));
}

// Cosine InfoNCE is dot-product InfoNCE on x̂ = x / max(|x|, eps): its gradient is the dot-product reference's,
// taken at the normalized rows, times the Jacobian of the normalization, (g - x̂ (x̂ . g)) / |x| (g / eps below
// the clamp).
function cosineGradRef(q: Float32Array, p: Float32Array, B: number, M: number, D: number, pos: Int32Array, temperature: number) {
  const norms = (x: Float32Array, rows: number) => Float64Array.from({ length: rows }, (_, r) => Math.max(Math.hypot(...x.subarray(r * D, (r + 1) * D)), 1e-12));
  const nq = norms(q, B), np = norms(p, M);
  const unit = (x: Float32Array, n: Float64Array) => Float64Array.from(x, (v, k) => v / n[Math.floor(k / D)]!);
  const qh = unit(q, nq), ph = unit(p, np);
  const g = infoNceGradRef({ q: qh, p: ph, B, M, D, pos, temperature });
  const chain = (x: Float64Array, n: Float64Array, gr: Float64Array, rows: number) => {
    const out = new Float64Array(gr.length);
    for (let r = 0; r < rows; r++) {
      let dot = 0;
      for (let k = 0; k < D; k++) dot += x[r * D + k]! * gr[r * D + k]!;
      const c = n[r]! <= 1e-12 ? 0 : dot;
      for (let k = 0; k < D; k++) out[r * D + k] = (gr[r * D + k]! - x[r * D + k]! * c) / n[r]!;
    }
    return out;
  };
  return { loss: g.loss, dq: chain(qh, nq, g.dq, B), dp: chain(ph, np, g.dp, M) };
}

// Largest |x - ref| within rel times the largest |ref| (plus a floor for all-zero references).
function expectClose(x: ArrayLike<number>, ref: Float64Array, rel: number): void {
  const scale = ref.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  let worst = 0;
  for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs((x[i] as number) - (ref[i] as number)));
  expect(worst).toBeLessThanOrEqual(rel * scale + 1e-7);
}

describe.each(isas)('infoNce, %s variant', (isa) => {
  it.each(cases)('B=%i M=%i D=%i tau=%f cosine=%s weighted=%s matches the reference', (B, M, D, temperature, cosine, weighted) => {
    setIsa(isa);
    const q = randomF32(B * D, B + D);
    const p = randomF32(M * D, M + D + 1);
    const pos = positives(B, M);
    const weights = weighted ? Float32Array.from({ length: B }, (_, i) => 0.5 + (i % 3)) : undefined;
    const ref = infoNceRef({ q, p, B, M, D, pos, temperature, cosine, ...(weights ? { weights } : {}) });
    const got = infoNceSync({ data: q, shape: [B, D] }, { data: p, shape: [M, D] }, pos, { temperature, cosine, ...(weights ? { weights } : {}) });
    expect(Math.abs(got.loss - ref.loss)).toBeLessThanOrEqual(1e-5 * (1 + Math.abs(ref.loss)));
    for (let i = 0; i < B; i++) expect(Math.abs((got.rowLoss.data[i] as number) - (ref.rowLoss[i] as number))).toBeLessThanOrEqual(1e-4 * (1 + Math.abs(ref.rowLoss[i] as number)));
    // Ranks agree except where a score is within rounding of the positive's.
    let same = 0;
    for (let i = 0; i < B; i++) same += got.rank.data[i] === ref.rank[i] ? 1 : 0;
    expect(same).toBeGreaterThanOrEqual(B - 1);
    expect(got.accuracy).toBeCloseTo(Array.from(got.rank.data).filter((r) => r === 1).length / B, 12);
    expect(got.dQ!.shape).toEqual([B, D]);
    expect(got.dP!.shape).toEqual([M, D]);
    if (!cosine) {
      const g = infoNceGradRef({ q, p, B, M, D, pos, temperature, ...(weights ? { weights } : {}) });
      expectClose(got.dQ!.data, g.dq, 1e-4);
      expectClose(got.dP!.data, g.dp, 1e-4);
    }
  });

  // Cosine gradients at shapes with many pool tasks per pass (the kernel scales the score matrix instead of
  // normalizing copies): against the dot-product reference on normalized rows, chained through the
  // normalization in f64. A zero query row and a zero passage row hit F.normalize's eps clamp.
  it.each([
    [37, 75, 130, 0.05, true],
    [128, 256, 768, 0.05, false],
  ])('cosine B=%i M=%i D=%i tau=%f (zero rows: %s): dQ and dP match the chained reference', (B, M, D, temperature, zeroRows) => {
    setIsa(isa);
    const q = randomF32(B * D, 5 + B), p = randomF32(M * D, 6 + M);
    if (zeroRows) {
      q.fill(0, 3 * D, 4 * D);
      p.fill(0, 10 * D, 11 * D);
    }
    const pos = positives(B, M);
    const got = infoNceSync({ data: q, shape: [B, D] }, { data: p, shape: [M, D] }, pos, { temperature, cosine: true });
    const ref = cosineGradRef(q, p, B, M, D, pos, temperature);
    expect(Math.abs(got.loss - ref.loss)).toBeLessThanOrEqual(1e-5 * (1 + Math.abs(ref.loss)));
    expectClose(got.dQ!.data, ref.dq, 2e-4);
    expectClose(got.dP!.data, ref.dp, 2e-4);
  });

  it('ranks exactly over a row of more than 2^20 passages (the rank count runs in blocks)', () => {
    setIsa(isa);
    const M = (1 << 20) + 37;
    // D = 1 and q = [1]: the scores are the passages themselves, integers, so every comparison is exact.
    const p = Float32Array.from({ length: M }, (_, j) => (j * 7919) % 1000);
    const pos = [12345];
    const r = infoNceSync({ data: Float32Array.of(1), shape: [1, 1] }, { data: p, shape: [M, 1] }, pos, { grad: false });
    const sp = p[pos[0]!]!;
    let above = 0;
    for (let j = 0; j < M; j++) above += p[j]! > sp ? 1 : 0;
    expect(above).toBeGreaterThan(0);
    expect(r.rank.data[0]).toBe(1 + above);
  });
});

describe('infoNce gradients', () => {
  it.each([
    [1, false, false],
    [0.1, true, false],
    [0.5, false, true],
    [0.01, true, true],
  ])('tau=%f cosine=%s weighted=%s: dQ and dP match central finite differences', (temperature, cosine, weighted) => {
    const B = 3, M = 6, D = 5;
    const q = Float32Array.from(randomF32(B * D, 21), (x) => x * 0.5);
    const p = Float32Array.from(randomF32(M * D, 22), (x) => x * 0.5);
    const pos = Int32Array.from([0, 3, 4]);
    const weights = weighted ? Float32Array.from([1, 0.25, 2]) : undefined;
    const got = infoNceSync({ data: q, shape: [B, D] }, { data: p, shape: [M, D] }, pos, { temperature, cosine, ...(weights ? { weights } : {}) });
    const loss = (qq: ArrayLike<number>, pp: ArrayLike<number>) => infoNceRef({ q: qq, p: pp, B, M, D, pos, temperature, cosine, ...(weights ? { weights } : {}) }).loss;
    const h = 1e-5;
    // Central differences on the f64 reference; the kernel's gradients are f32.
    const tol = cosine && temperature < 0.05 ? 5e-4 : 1e-5;
    for (let i = 0; i < q.length; i++) {
      const a = Float64Array.from(q), b = Float64Array.from(q);
      a[i]! += h;
      b[i]! -= h;
      const fd = (loss(a, p) - loss(b, p)) / (2 * h);
      expect(Math.abs((got.dQ!.data[i] as number) - fd)).toBeLessThan(tol * (1 + Math.abs(fd)));
    }
    for (let i = 0; i < p.length; i++) {
      const a = Float64Array.from(p), b = Float64Array.from(p);
      a[i]! += h;
      b[i]! -= h;
      const fd = (loss(q, a) - loss(q, b)) / (2 * h);
      expect(Math.abs((got.dP!.data[i] as number) - fd)).toBeLessThan(tol * (1 + Math.abs(fd)));
    }
  });

  it('the plain-loop reference gradients (the benchmark baseline) agree with the kernel', () => {
    const B = 4, M = 8, D = 6;
    const q = randomF32(B * D, 3), p = randomF32(M * D, 4);
    const pos = Int32Array.from([1, 0, 5, 7]);
    const ref = infoNceGradRef({ q, p, B, M, D, pos, temperature: 0.5 });
    const got = infoNceSync({ data: q, shape: [B, D] }, { data: p, shape: [M, D] }, pos, { temperature: 0.5 });
    expect(got.loss).toBeCloseTo(ref.loss, 5);
    ref.dq.forEach((v, i) => expect(got.dQ!.data[i]).toBeCloseTo(v, 5));
    ref.dp.forEach((v, i) => expect(got.dP!.data[i]).toBeCloseTo(v, 5));
  });

  it('stays finite for large scores (dot ~ 100 at tau = 0.01) and counts ties in the positive favour', () => {
    const D = 4;
    const q = Float32Array.from([10, 10, 0, 0]);
    const p = Float32Array.from([5, 5, 0, 0, /* tie */ 5, 5, 0, 0, -5, 0, 0, 0]);
    const r = infoNceSync({ data: q, shape: [1, D] }, { data: p, shape: [3, D] }, [1], { temperature: 0.01 });
    expect(Number.isFinite(r.loss)).toBe(true);
    expect(r.loss).toBeCloseTo(Math.log(2), 5);
    expect(r.rank.data[0]).toBe(1);
    expect(r.accuracy).toBe(1);
  });

  it('grad: false skips the gradients; async equals sync', async () => {
    const q = { data: randomF32(12, 1), shape: [3, 4] as const };
    const p = { data: randomF32(24, 2), shape: [6, 4] as const };
    const nog = infoNceSync(q, p, [0, 2, 4], { grad: false });
    expect(nog.dQ).toBeUndefined();
    const a = await infoNce(q, p, [0, 2, 4]);
    const s = infoNceSync(q, p, [0, 2, 4]);
    expect(a.loss).toBe(s.loss);
    expect(Array.from(a.dQ!.data)).toEqual(Array.from(s.dQ!.data));
    expect(Array.from(a.dP!.data)).toEqual(Array.from(s.dP!.data));
  });
});

describe('infoNce errors', () => {
  const q = { data: randomF32(12, 1), shape: [3, 4] as const };
  const p = { data: randomF32(24, 2), shape: [6, 4] as const };
  const bad: Array<[string, () => unknown, string]> = [
    ['a positive outside the passages', () => infoNceSync(q, p, [0, 2, 6]), 'ERR_RANGE'],
    ['a negative positive index', () => infoNceSync(q, p, [0, -1, 2]), 'ERR_RANGE'],
    ['temperature 0', () => infoNceSync(q, p, [0, 1, 2], { temperature: 0 }), 'ERR_RANGE'],
    ['a dimension mismatch', () => infoNceSync(q, { data: randomF32(30, 2), shape: [6, 5] }, [0, 1, 2]), 'ERR_SHAPE'],
    ['too few positives', () => infoNceSync(q, p, [0, 1]), 'ERR_SHAPE'],
    ['weights of the wrong length', () => infoNceSync(q, p, [0, 1, 2], { weights: [1, 1] }), 'ERR_SHAPE'],
    ['zero-dimensional vectors', () => infoNceSync({ data: new Float32Array(0), shape: [3, 0] }, { data: new Float32Array(0), shape: [6, 0] }, [0, 1, 2]), 'ERR_SHAPE'],
    ['no passages', () => infoNceSync(q, { data: new Float32Array(0), shape: [0, 4] }, [0, 0, 0]), 'ERR_SHAPE'],
    ['bf16 queries', () => infoNceSync({ data: new Uint16Array(12), shape: [3, 4], dtype: 'bf16' }, p, [0, 1, 2]), 'ERR_DTYPE'],
  ];
  it.each(bad)('rejects %s', (_n, fn, code) => {
    expect(fn).toThrow(QuorumError);
    expect(fn).toThrow(expect.objectContaining({ code }));
  });
});
