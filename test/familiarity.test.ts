// DPR-MUF's familiarity (lib/methods/muf/familiarity.ts) against a plain reference (cosines, top-k means), and the
// calibration helpers it uses: Platt scaling (the penalized likelihood's gradient vanishes at the fit), AUROC's
// companion precisionCoverage (brute force), with their bad input.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { fitPlatt, plattProbability, precisionCoverage } from '../lib/entries/kernels.js';
import { FamiliarityBank, sampleTexts } from '../lib/methods/muf/familiarity.js';
import { asyncCode, randomF32, rng } from './helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'quorum-familiarity-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Mean of the k largest cosines of q against the rows. */
function meanTopCos(q: Float32Array, rows: Float32Array, dim: number, k: number): number {
  const norm = (v: Float32Array, o: number) => Math.hypot(...v.subarray(o, o + dim));
  const s: number[] = [];
  for (let r = 0; r < rows.length / dim; r++) {
    let d = 0;
    for (let j = 0; j < dim; j++) d += q[j]! * rows[r * dim + j]!;
    s.push(d / (norm(q, 0) * norm(rows, r * dim)));
  }
  s.sort((a, b) => b - a);
  const top = s.slice(0, Math.min(k, s.length));
  return top.reduce((a, b) => a + b, 0) / top.length;
}

describe('FamiliarityBank', () => {
  it('the margin equals the reference (own top-k mean cosine minus the others\'), for several k; save and load', async () => {
    const dim = 7;
    const own = randomF32(40 * dim, 1);
    const other = randomF32(25 * dim, 2);
    const q = randomF32(6 * dim, 3);
    const bank = FamiliarityBank.fromVectors(own, other, dim);
    expect(bank.sizes).toEqual([40, 25]);
    for (const k of [1, 5, 30, 100]) {
      const m = await bank.margin(q, k);
      for (let b = 0; b < 6; b++) {
        const qb = q.subarray(b * dim, (b + 1) * dim);
        expect(m[b]!).toBeCloseTo(meanTopCos(qb, own, dim, k) - meanTopCos(qb, other, dim, k), 5);
      }
    }
    const path = join(scratch, 'familiarity.safetensors');
    bank.save(path);
    const again = FamiliarityBank.load(path, dim);
    expect(Array.from(await again.margin(q, 5))).toEqual(Array.from(await bank.margin(q, 5)));
    const p = await again.probability(q, { k: 5, platt: { weights: [4], bias: -0.5 }, auroc: 1, ece: 0, own: 1, other: 1 });
    const m5 = await bank.margin(q, 5);
    p.forEach((v, b) => expect(v).toBeCloseTo(1 / (1 + Math.exp(-(-0.5 + 4 * m5[b]!))), 6));
    bank.dispose();
    again.dispose();
  });

  it("to('int8') quarters the tables; the margin moves by the codes' rounding only", async () => {
    const dim = 24;
    const own = randomF32(300 * dim, 11);
    const other = randomF32(200 * dim, 12);
    const q = randomF32(20 * dim, 13);
    const bank = FamiliarityBank.fromVectors(own, other, dim);
    const q8 = bank.to('int8');
    expect(q8.dtype).toBe('int8');
    expect(q8.sizes).toEqual([300, 200]);
    const [a, b] = [await bank.margin(q, 10), await q8.margin(q, 10)];
    let most = 0;
    a.forEach((v, i) => (most = Math.max(most, Math.abs(v - b[i]!))));
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThan(0.02);
    expect(() => q8.save(join(scratch, 'q8.safetensors'))).toThrow(expect.objectContaining({ code: 'ERR_UNSUPPORTED' }));
    expect(() => q8.to('f32')).toThrow(expect.objectContaining({ code: 'ERR_UNSUPPORTED' }));
    expect(() => bank.to('f16' as never)).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    bank.dispose();
    q8.dispose();
  });

  it('gives typed errors', async () => {
    expect(() => FamiliarityBank.fromVectors(new Float32Array(0), randomF32(4, 1), 2)).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
    expect(() => FamiliarityBank.fromVectors(randomF32(5, 1), randomF32(4, 1), 2)).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
    expect(() => FamiliarityBank.fromVectors(randomF32(4, 1), randomF32(4, 1), 0)).toThrow(expect.objectContaining({ code: 'ERR_RANGE' }));
    const bank = FamiliarityBank.fromVectors(randomF32(8, 1), randomF32(8, 2), 4);
    expect(await asyncCode(bank.margin(randomF32(5, 3)))).toBe('ERR_SHAPE');
    expect(await asyncCode(bank.margin(randomF32(4, 3), 0))).toBe('ERR_RANGE');
    expect(() => FamiliarityBank.load(join(scratch, 'none.safetensors'), 4)).toThrow(expect.objectContaining({ code: 'ERR_IO' }));
    const path = join(scratch, 'f.safetensors');
    bank.save(path);
    expect(() => FamiliarityBank.load(path, 5)).toThrow(expect.objectContaining({ code: 'ERR_FORMAT' }));
    writeFileSync(path, 'not a safetensors file');
    expect(() => FamiliarityBank.load(path, 4)).toThrow(expect.objectContaining({ code: 'ERR_FORMAT' }));
  });

  it('samples a cap of texts the same way every time', () => {
    const texts = Array.from({ length: 50 }, (_, i) => `q${i}`);
    expect(sampleTexts(texts, 100)).toEqual(texts);
    const a = sampleTexts(texts, 10);
    expect(a).toHaveLength(10);
    expect(new Set(a).size).toBe(10);
    expect(sampleTexts(texts, 10)).toEqual(a);
  });
});

describe('fitPlatt', () => {
  it('the gradient of the penalized log-likelihood vanishes at the fit (one and two features)', () => {
    const r = rng(5);
    for (const d of [1, 2]) {
      const x = Array.from({ length: 300 }, () => Array.from({ length: d }, () => r()));
      const y = x.map((f) => (f[0]! + 0.3 * (f[1] ?? 0) + 0.4 * r() > 0 ? 1 : 0));
      const l2 = 0.5;
      const p = fitPlatt(x, y, { l2 });
      const grad = new Array(d + 1).fill(0);
      x.forEach((f, i) => {
        const e = plattProbability(p, f) - y[i]!;
        grad[0] += e;
        f.forEach((v, j) => (grad[j + 1] += e * v));
      });
      p.weights.forEach((w, j) => (grad[j + 1] += l2 * w));
      grad.forEach((g) => expect(Math.abs(g)).toBeLessThan(1e-6));
      expect(p.weights[0]!).toBeGreaterThan(0);
    }
  });

  it('converges on separable data, and gives typed errors', () => {
    const p = fitPlatt([[0], [1], [2], [3]], [0, 0, 1, 1]);
    expect(plattProbability(p, [3])).toBeGreaterThan(0.9);
    expect(plattProbability(p, [0])).toBeLessThan(0.1);
    expect(Number.isFinite(p.weights[0]!)).toBe(true);
    expect(() => fitPlatt([[0], [1]], [1, 1])).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(() => fitPlatt([[0], [1, 2]], [0, 1])).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
    expect(() => fitPlatt([[0], [Number.NaN]], [0, 1])).toThrow(expect.objectContaining({ code: 'ERR_RANGE' }));
    expect(() => fitPlatt([[0]], [0, 1])).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
    expect(() => fitPlatt([], [])).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(() => plattProbability(p, [1, 2])).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
  });
});

describe('precisionCoverage', () => {
  it('equals answering at each threshold by brute force, ties answered together', () => {
    const r = rng(9);
    const conf = Array.from({ length: 60 }, () => Math.round(10 * (r() + 1)) / 20);
    const right = conf.map((c) => c + 0.3 * r() > 0.5);
    const c = precisionCoverage(conf, right);
    for (const p of c.points) {
      const answered = conf.map((v, i) => [v, right[i]] as const).filter(([v]) => v >= p.threshold);
      expect(p.coverage).toBeCloseTo(answered.length / conf.length, 12);
      expect(p.precision).toBeCloseTo(answered.filter(([, h]) => h).length / answered.length, 12);
    }
    expect(c.points.map((p) => p.threshold)).toEqual([...new Set(conf)].sort((a, b) => b - a));
    for (const target of [0.3, 0.6, 0.9]) expect(c.coverageAt(target)).toBe(Math.max(0, ...c.points.filter((p) => p.precision >= target).map((p) => p.coverage)));
    expect(c.points.at(-1)!.coverage).toBe(1);
    expect(() => precisionCoverage([], [])).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(() => precisionCoverage([0.5], [])).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
  });
});
