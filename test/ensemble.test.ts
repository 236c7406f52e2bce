import { afterAll, describe, expect, it } from 'vitest';

import { QuorumError, capabilities, setIsa, type Isa } from '../lib/index.js';
import { auroc, calibrateTemperature, ece, ensembleMI, ensembleMISync, mufTemperatureGrid } from '../lib/entries/kernels.js';
import { ensembleMIRef } from './reference/ensemble.js';
import { randomF32, randomShapes, rng } from './helpers.js';

const caps = capabilities();
const isas = caps.availableIsas as Isa[];
afterAll(() => setIsa(caps.isa as Isa));

/** Member scores shaped like DPR-MUF's: a shared base (the DPR scores) plus member noise. */
function memberScores(B: number, K: number, L: number, seed: number, spread = 0.02): Float32Array {
  const r = rng(seed);
  const z = new Float32Array(B * K * L);
  for (let b = 0; b < B; b++) {
    const base = Array.from({ length: L }, () => 70 + 5 * r());
    for (let k = 0; k < K; k++) for (let d = 0; d < L; d++) z[(b * K + k) * L + d] = (base[d] as number) + spread * 50 * r();
  }
  return z;
}

function rows(z: Float32Array, b: number, K: number, L: number, n: number): number[][] {
  return Array.from({ length: K }, (_, k) => Array.from(z.subarray((b * K + k) * L, (b * K + k) * L + n)));
}

// [B, K, L, temperature]
const cases: Array<[number, number, number, number]> = [
  [1, 2, 1, 1],
  [3, 5, 17, 1],
  [8, 20, 100, 1e-3],
  [4, 20, 100, 0.05],
  [5, 3, 33, 1e-3],
  [2, 20, 1000, 1e-3],
  // Four more drawn at random (seeded), at DPR-MUF's temperature.
  ...randomShapes(2029, 4, [[1, 9], [2, 24], [1, 300]]).map(([B, K, L]) => [B, K, L, 1e-3] as [number, number, number, number]),
];

describe.each(isas)('ensembleMI, %s variant', (isa) => {
  describe.each(['exact', 'muf'] as const)('%s mode', (mode) => {
    it.each(cases)('B=%i K=%i L=%i T=%f matches the reference (with ragged lengths)', (B, K, L, temperature) => {
      setIsa(isa);
      const z = memberScores(B, K, L, B * K + L);
      const r = rng(L);
      const lengths = Int32Array.from({ length: B }, (_, b) => (b === 0 ? L : 1 + Math.floor(((r() + 1) / 2) * (L - 1))));
      const got = ensembleMISync({ data: z, shape: [B, K, L] }, { temperature, lengths, mode });
      for (let b = 0; b < B; b++) {
        const ref = ensembleMIRef(rows(z, b, K, L, lengths[b] as number), temperature, mode);
        expect(Math.abs((got.mi.data[b] as number) - ref.mi)).toBeLessThan(2e-5);
        expect(Math.abs((got.confidence.data[b] as number) - ref.confidence)).toBeLessThan(2e-5);
        expect(got.confidence.data[b]).toBeGreaterThanOrEqual(0);
        expect(got.confidence.data[b]).toBeLessThanOrEqual(1);
      }
    });
  });

  it('many members with flat scores (a product of member sums far beyond f64) match the reference', () => {
    setIsa(isa);
    // Each member's sum of exp is close to L = 1000, so the product over 200 members is about 1e600.
    const K = 200, L = 1000;
    const z = memberScores(1, K, L, 77);
    for (const mode of ['exact', 'muf'] as const) {
      const got = ensembleMISync({ data: z, shape: [1, K, L] }, { temperature: 100, mode });
      const ref = ensembleMIRef(rows(z, 0, K, L, L), 100, mode);
      expect(Number.isFinite(got.mi.data[0])).toBe(true);
      expect(Math.abs((got.mi.data[0] as number) - ref.mi)).toBeLessThan(2e-5);
    }
  });

  it('huge negative scores with a ragged tail stay finite (exact mode)', () => {
    setIsa(isa);
    const z = new Float32Array(2 * 9).fill(-1e36);
    z[3] = -9.9e35;
    const r = ensembleMISync({ data: z, shape: [1, 2, 9] }, { temperature: 1e-3 });
    expect(Number.isFinite(r.mi.data[0])).toBe(true);
    expect(r.confidence.data[0]).toBeGreaterThanOrEqual(0);
    expect(r.confidence.data[0]).toBeLessThanOrEqual(1);
  });

  it('agreeing members give confidence 1; members on K distinct candidates give 0 (6e-6 with the eps)', () => {
    setIsa(isa);
    const K = 4, L = 6;
    const same = new Float32Array(K * L);
    const apart = new Float32Array(K * L);
    for (let k = 0; k < K; k++) {
      same.set([1, 5, 2, 0, 3, 1], k * L);
      for (let d = 0; d < L; d++) apart[k * L + d] = d === k ? 10 : 0;
    }
    const agree = ensembleMISync({ data: same, shape: [1, K, L] }, { temperature: 1 });
    expect(agree.confidence.data[0]).toBeCloseTo(1, 6);
    const exact = ensembleMISync({ data: apart, shape: [1, K, L] }, { temperature: 1e-3 });
    expect(exact.confidence.data[0]).toBeLessThan(1e-6);
    const muf = ensembleMISync({ data: apart, shape: [1, K, L] }, { temperature: 1e-3, mode: 'muf' });
    const ref = ensembleMIRef(rows(apart, 0, K, L, L), 1e-3, 'muf');
    expect(ref.confidence).toBeGreaterThan(1e-6);
    expect(muf.confidence.data[0]).toBeCloseTo(ref.confidence, 6);
  });
});

describe('ensembleMI API', () => {
  it('exact and muf modes differ by at most ~1.2e-4 at temperature 1 (docs/methods/kernels.md#ensemble-mutual-information-and-confidence)', () => {
    const z = memberScores(50, 20, 100, 3, 0.2);
    const a = ensembleMISync({ data: z, shape: [50, 20, 100] }, { temperature: 1 });
    const b = ensembleMISync({ data: z, shape: [50, 20, 100] }, { temperature: 1, mode: 'muf' });
    for (let i = 0; i < 50; i++) expect(Math.abs((a.confidence.data[i] as number) - (b.confidence.data[i] as number))).toBeLessThan(1.3e-4);
  });

  it('async equals sync; the default temperature is 1e-3', async () => {
    const z = { data: memberScores(6, 5, 20, 8), shape: [6, 5, 20] as const };
    const a = await ensembleMI(z);
    const s = ensembleMISync(z, { temperature: 1e-3 });
    expect(Array.from(a.confidence.data)).toEqual(Array.from(s.confidence.data));
    expect(Array.from(a.mi.data)).toEqual(Array.from(s.mi.data));
  });

  const z = { data: randomF32(2 * 3 * 4, 1), shape: [2, 3, 4] as const };
  const bad: Array<[string, () => unknown, string]> = [
    ['one member', () => ensembleMISync({ data: randomF32(8, 1), shape: [2, 1, 4] }), 'ERR_SHAPE'],
    ['no candidates', () => ensembleMISync({ data: new Float32Array(0), shape: [2, 3, 0] }), 'ERR_SHAPE'],
    ['2-D scores', () => ensembleMISync({ data: randomF32(8, 1), shape: [2, 4] }), 'ERR_SHAPE'],
    ['temperature 0', () => ensembleMISync(z, { temperature: 0 }), 'ERR_RANGE'],
    ['a length of 0', () => ensembleMISync(z, { lengths: [4, 0] }), 'ERR_RANGE'],
    ['a length above L', () => ensembleMISync(z, { lengths: [4, 5] }), 'ERR_RANGE'],
    ['lengths of the wrong size', () => ensembleMISync(z, { lengths: [4] }), 'ERR_SHAPE'],
    ['an unknown mode', () => ensembleMISync(z, { mode: 'approx' as never }), 'ERR_ARG'],
  ];
  it.each(bad)('rejects %s', (_n, fn, code) => {
    expect(fn).toThrow(QuorumError);
    expect(fn).toThrow(expect.objectContaining({ code }));
  });
});

describe('ece and the temperature search', () => {
  it("bins like DPR-MUF: first closed bin, float ticks, N counts values outside [0, 1]", () => {
    // 0.1 -> bin 0 (boundary goes low); 0.15 -> 1; 0.3 -> 2 (tick 3 is 0.30000000000000004); 0.95, 1.0 -> 9.
    expect(ece([0.1, 0.15, 0.95, 1.0, 0.3], [1, 0, 1, 1, 0])).toBeCloseTo((0.9 + 0.15 + 0.3 + 0.05) / 5, 12);
    expect(ece([0.1, 1.2], [1, 1])).toBeCloseTo(0.9 / 2, 12);
    expect(ece([0.7], [true])).toBeCloseTo(0.3, 12);
    expect(() => ece([0.5], [1, 0])).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
    expect(() => ece([], [])).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
  });

  it('calibrateTemperature returns the grid argmin of ECE on the calibration split', async () => {
    const B = 40, K = 5, L = 30;
    const z = memberScores(B, K, L, 12, 0.05);
    const r = rng(4);
    const hit = Array.from({ length: B }, () => (r() > 0 ? 1 : 0));
    const split = { scores: { data: z, shape: [B, K, L] as const }, hit };
    const res = await calibrateTemperature(split);
    expect(res.tried.map((t) => t.temperature)).toEqual([...mufTemperatureGrid]);
    for (const t of res.tried) {
      const c = ensembleMISync(split.scores, { temperature: t.temperature });
      expect(t.ece).toBeCloseTo(ece(c.confidence.data, hit), 12);
      expect(res.ece).toBeLessThanOrEqual(t.ece);
    }
    expect(mufTemperatureGrid[0]).toBeCloseTo(0.001, 15);
    expect(mufTemperatureGrid[9]).toBeCloseTo(0.01, 15);
  });
});

describe('auroc', () => {
  // Brute force over every (positive, negative) pair, ties one half.
  function pairs(s: number[], y: number[]): number {
    let num = 0, den = 0;
    for (let i = 0; i < s.length; i++)
      for (let j = 0; j < s.length; j++)
        if (y[i] && !y[j]) {
          den++;
          num += s[i]! > s[j]! ? 1 : s[i] === s[j] ? 0.5 : 0;
        }
    return num / den;
  }
  it('equals the pairwise count on random data with ties, and the known small cases', () => {
    const r = rng(12);
    for (const n of [2, 7, 50, 301]) {
      const s = Array.from({ length: n }, () => Math.round(5 * r()) / 5);
      const y = Array.from({ length: n }, (_, i) => (i === 0 ? 1 : i === 1 ? 0 : r() > 0 ? 1 : 0));
      expect(auroc(s, y)).toBeCloseTo(pairs(s, y), 12);
    }
    expect(auroc([0.9, 0.4, 0.4, 0.1], [1, 1, 0, 0])).toBe(0.875);
    expect(auroc([1, 2, 3], [true, false, false])).toBe(0);
    expect(auroc([3, 3, 3], [1, 0, 1])).toBe(0.5);
  });
  it('refuses one class only, NaN scores and a length mismatch', () => {
    expect(() => auroc([1, 2], [1, 1])).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(() => auroc([1, Number.NaN], [1, 0])).toThrow(expect.objectContaining({ code: 'ERR_RANGE' }));
    expect(() => auroc([1, 2], [1])).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
    expect(() => auroc([], [])).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
  });
});
