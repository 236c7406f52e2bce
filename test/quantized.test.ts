// Quantized corpora (docs/methods/quantization.md): tables and codes against the plain-TS reference, the int8 and
// binary scorers of every ISA variant against it (random shapes, widths not a multiple of 8 or 64, zero and constant
// vectors, the ends of the int8 range), top-k against brute force, rescoring, saved and mapped corpora, bad input.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import {
  DenseIndex,
  QuantizedTensor,
  Tensor,
  capabilities,
  gatherScoresSync,
  scoreSync,
  scoreTopK,
  scoreTopKSync,
  setIsa,
  type Isa,
} from '../lib/index.js';
import { quantize, quantizeSync, quantizedRowBytes } from '../lib/entries/kernels.js';
import { asyncCode, code, randomShapes, rng } from './helpers.js';
import { topKRef } from './reference/dense.js';
import {
  binaryRowsRef,
  binaryScoresRef,
  int8S8ScoresRef,
  int8ScoresRef,
  quantizeBinaryRef,
  quantizeInt8Ref,
  ROTATION_SEED,
  RotationRef,
} from './reference/quantized.js';

const caps = capabilities();
const isas = caps.availableIsas as Isa[];
afterAll(() => setIsa(caps.isa as Isa));

/** Values with a per-dimension mean and spread (the anisotropy of real embeddings). */
function anisotropic(rows: number, dim: number, seed: number): Float32Array {
  const r = rng(seed);
  const mean = Float32Array.from({ length: dim }, () => r() * 0.5);
  const spread = Float32Array.from({ length: dim }, () => 0.05 + Math.abs(r()));
  return Float32Array.from({ length: rows * dim }, (_, i) => mean[i % dim]! + spread[i % dim]! * r());
}

/** Unit vectors from a few latent factors plus noise around a common mean: real embeddings' low intrinsic dimension. */
function embeddings(rows: number, dim: number, seed: number, latent = 24): Float32Array {
  const r = rng(seed);
  const mix = Float32Array.from({ length: latent * dim }, () => r() / Math.sqrt(latent));
  const mean = Float32Array.from({ length: dim }, () => r() * 0.3);
  const out = new Float32Array(rows * dim);
  for (let i = 0; i < rows; i++) {
    const z = Array.from({ length: latent }, () => r());
    let n = 0;
    for (let d = 0; d < dim; d++) {
      let v = mean[d]! + 0.05 * r();
      for (let l = 0; l < latent; l++) v += z[l]! * mix[l * dim + d]!;
      out[i * dim + d] = v;
      n += v * v;
    }
    for (let d = 0; d < dim; d++) out[i * dim + d]! /= Math.sqrt(n);
  }
  return out;
}

function expectClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: number): void {
  expect(got.length).toBe(want.length);
  let worst = 0;
  let at = -1;
  for (let i = 0; i < want.length; i++) {
    const e = Math.abs(got[i]! - want[i]!) / (1 + Math.abs(want[i]!));
    if (!(e <= worst)) [worst, at] = [e, i];
  }
  expect(worst, `worst relative error at ${at}: got ${got[at]}, want ${want[at]}`).toBeLessThanOrEqual(tol);
}

// Widths below, at and past the vector widths and the 64-bit words; one multiple of 8 that is not of 64.
const dims = [1, 7, 8, 15, 63, 64, 65, 100, 130, 200];

describe('quantization: tables and codes against the reference', () => {
  it.each(dims)('int8 min/max and clipped, dim %i', (dim) => {
    const rows = 37;
    const x = anisotropic(rows, dim, dim);
    for (const clip of [0, 0.05]) {
      const q = quantizeSync(Tensor.from(x, [rows, dim]), 'int8', clip ? { clip } : {});
      const r = quantizeInt8Ref(x, rows, dim, clip);
      expect(Array.from(q.scale!.data)).toEqual(Array.from(r.scale));
      expect(Array.from(q.offset!.data)).toEqual(Array.from(r.offset));
      expect(Array.from(q.codes.data)).toEqual(Array.from(r.codes));
      expect(q.codes.shape).toEqual([rows, dim]);
      // Min/max: every value is within half a step of its reconstruction; the ends are coded 0 and 255.
      if (clip === 0) {
        const back = q.dequantize().data;
        for (let i = 0; i < x.length; i++) expect(Math.abs(back[i]! - x[i]!)).toBeLessThanOrEqual(r.scale[i % dim]! * 0.5 + 1e-6);
        for (let d = 0; d < dim; d++) {
          const col = Array.from({ length: rows }, (_, i) => q.codes.data[i * dim + d]!);
          expect(Math.min(...col)).toBe(0);
          expect(Math.max(...col)).toBe(r.scale[d]! > 0 ? 255 : 0);
        }
      }
    }
  });

  it.each(dims)('binary, centred and plain signs, rotated or not, dim %i', (dim) => {
    const rows = 29;
    const x = anisotropic(rows, dim, 100 + dim);
    for (const [center, rotate] of [
      [true, true],
      [false, true],
      [true, false],
      [false, false],
    ] as const) {
      const q = quantizeSync(Tensor.from(x, [rows, dim]), 'binary', { center, rotate });
      const r = quantizeBinaryRef(x, rows, dim, center, rotate);
      expect(q.rotation === undefined).toBe(!rotate);
      expect(q.codes.shape).toEqual([rows, quantizedRowBytes('binary', dim)]);
      expect(Array.from(q.codes.data)).toEqual(Array.from(binaryRowsRef(r, rows, dim)));
      expect(q.center === undefined).toBe(!center);
      if (center) expect(Array.from(q.center!.data)).toEqual(Array.from(r.center!));
    }
  });

  it('zero and constant vectors, and a constant dimension, code without NaN', () => {
    const dim = 70;
    const x = new Float32Array(4 * dim);
    x.fill(0.25, dim, 2 * dim); // row 1 constant
    for (let i = 2 * dim; i < 4 * dim; i++) x[i] = (i % dim) * 0.01; // rows 2, 3 equal
    const q8 = quantizeSync(Tensor.from(x, [4, dim]), 'int8');
    const back = q8.dequantize().data;
    for (let i = 0; i < x.length; i++) expect(Math.abs(back[i]! - x[i]!)).toBeLessThan(0.003);
    const bin = quantizeSync(Tensor.from(new Float32Array(3 * dim), [3, dim]), 'binary');
    const s = scoreSync(Tensor.from(anisotropic(2, dim, 5), [2, dim]), bin).data;
    expect(Array.from(s).every((v) => v === 0)).toBe(true); // alpha 0: every score is q . center = 0
    const same = quantizeSync(Tensor.from(new Float32Array(3 * dim).fill(-2), [3, dim]), 'int8');
    expect(Array.from(same.scale!.data).every((v) => v === 0)).toBe(true);
    expect(Array.from(same.dequantize().data).every((v) => v === -2)).toBe(true);
  });

  it('bf16 and f16 vectors quantize as their f32 values', () => {
    const x = anisotropic(20, 33, 9);
    const t = Tensor.from(x, [20, 33]);
    for (const dt of ['bf16', 'f16'] as const) {
      const h = t.to(dt);
      const back = h.to('f32').data as Float32Array;
      expect(Array.from(quantizeSync(h, 'int8').codes.data)).toEqual(Array.from(quantizeInt8Ref(back, 20, 33).codes));
      expect(Array.from(quantizeSync(h, 'binary').codes.data)).toEqual(Array.from(binaryRowsRef(quantizeBinaryRef(back, 20, 33), 20, 33)));
    }
  });

  it('the rotation keeps dot products and dequantize inverts it', () => {
    const dim = 100;
    const x = anisotropic(30, dim, 21);
    const rot = new RotationRef(dim, ROTATION_SEED);
    const a = rot.apply(x.subarray(0, dim)),
      b = rot.apply(x.subarray(dim, 2 * dim));
    let d0 = 0,
      d1 = 0;
    for (let i = 0; i < dim; i++) d0 += x[i]! * x[dim + i]!;
    for (let i = 0; i < rot.dp; i++) d1 += a[i]! * b[i]!;
    expect(d1).toBeCloseTo(d0, 4);
    // A binary corpus decodes to center + the inverse rotation of alpha * signs: each row's reconstruction correlates with
    // the row far above chance, and a plain-signs corpus without rotation gives back +-alpha exactly.
    for (const rotate of [true, false]) {
      const q = quantizeSync(Tensor.from(x, [30, dim]), 'binary', { rotate });
      const back = q.dequantize().data;
      const c = q.center!.data;
      for (let r = 0; r < 30; r++) {
        let xy = 0,
          xx = 0,
          yy = 0;
        for (let d = 0; d < dim; d++) {
          const u = x[r * dim + d]! - c[d]!,
            v = back[r * dim + d]! - c[d]!;
          [xy, xx, yy] = [xy + u * v, xx + u * u, yy + v * v];
        }
        expect(xy / Math.sqrt(xx * yy)).toBeGreaterThan(0.6);
      }
    }
    const plain = quantizeSync(Tensor.from(x, [30, dim]), 'binary', { center: false, rotate: false });
    const back = plain.dequantize().data;
    for (let i = 0; i < dim; i++) expect(Math.sign(back[i]!)).toBe(x[i]! > 0 ? 1 : -1);
  });

  it('encode codes new rows with the corpus tables', () => {
    const x = anisotropic(50, 40, 3);
    const base = quantizeSync(Tensor.from(x.subarray(0, 40 * 40), [40, 40]), 'int8');
    const more = base.encodeSync(Tensor.from(x.subarray(40 * 40), [10, 40]));
    expect(Array.from(more.scale!.data)).toEqual(Array.from(base.scale!.data));
    const r = quantizeInt8Ref(x.subarray(0, 40 * 40), 40, 40);
    for (let i = 0; i < 10 * 40; i++) {
      const d = i % 40;
      const want = r.scale[d]! > 0 ? Math.min(255, Math.max(0, Math.round((x[1600 + i]! - r.offset[d]!) / r.scale[d]!))) : 0;
      expect(Math.abs(more.codes.data[i]! - want)).toBeLessThanOrEqual(1); // rounding of exact halves aside
    }
    base.dispose();
    expect(more.dequantize().shape).toEqual([10, 40]); // encode's tables are its own
  });
});

describe.each(isas)('quantized scorers, %s variant', (isa) => {
  const shapes = randomShapes(isa.length * 7, 6, [
    [1, 9],
    [1, 70],
    [1, 300],
  ]);
  it.each(shapes)('int8, f32 and int8 queries: B=%i N=%i D=%i', (B, N, D) => {
    setIsa(isa);
    const x = anisotropic(N, D, B * N + D);
    const q = anisotropic(B, D, D + 1);
    const c = quantizeSync(Tensor.from(x, [N, D]), 'int8');
    const r = quantizeInt8Ref(x, N, D);
    const qt = Tensor.from(q, [B, D]);
    expectClose(scoreTopKSync(qt, c, N, { queryBits: 32 }).scores, sortedRows(int8ScoresRef(q, B, r, N, D), B, N), 2e-5);
    expectClose(scoreTopKSync(qt, c, N, { queryBits: 8 }).scores, sortedRows(int8S8ScoresRef(q, B, r, N, D), B, N), 1e-6);
    // score and gatherScores take the same corpus, top-k is the top of the matrix
    const S = scoreSync(qt, c).data;
    const top = scoreTopKSync(qt, c, 5);
    const ref = topKRef(S, B, N, 5);
    expect(Array.from(top.ids)).toEqual(Array.from(ref.ids));
    const ids = Int32Array.from({ length: B * 3 }, (_, i) => (i * 7) % N);
    const g = gatherScoresSync(qt, c, ids).data;
    for (let i = 0; i < B * 3; i++) expect(g[i]).toBeCloseTo(S[Math.floor(i / 3) * N + ids[i]!]!, 4);
  });

  it.each(shapes)('binary, 1 and 4 query planes: B=%i N=%i D=%i', (B, N, D) => {
    setIsa(isa);
    const x = anisotropic(N, D, B + N * D);
    const q = anisotropic(B, D, D + 2);
    const qt = Tensor.from(q, [B, D]);
    for (const rotate of [true, false]) {
      const c = quantizeSync(Tensor.from(x, [N, D]), 'binary', { rotate });
      const r = quantizeBinaryRef(x, N, D, true, rotate);
      for (const planes of [1, 4] as const)
        expectClose(scoreTopKSync(qt, c, N, { queryBits: planes }).scores, sortedRows(binaryScoresRef(q, B, r, N, D, planes), B, N), 2e-5);
    }
  });

  // Up to 31 queries (or over 384 dimensions), the 4 x 4 dot tile with partial tiles of queries and rows; from 32 on,
  // the int8 GEMM tile of 12 rows x 32 queries (quant_dot.h s8_tile): partial tiles of both, widths not a multiple of 4,
  // more than one panel.
  it.each([
    [8, 31, 100],
    [13, 64, 64],
    [16, 12, 4],
    [29, 77, 130],
    [33, 25, 3],
    [40, 33, 768],
    [64, 50, 384],
    [70, 130, 101],
    [97, 13, 1],
  ])('int8 queries, many at once: B=%i N=%i D=%i', (B, N, D) => {
    setIsa(isa);
    const x = anisotropic(N, D, B + N + D);
    const q = anisotropic(B, D, D + 3);
    const c = quantizeSync(Tensor.from(x, [N, D]), 'int8');
    const r = quantizeInt8Ref(x, N, D);
    expectClose(
      scoreTopKSync(Tensor.from(q, [B, D]), c, N, { queryBits: 8 }).scores,
      sortedRows(int8S8ScoresRef(q, B, r, N, D), B, N),
      1e-6,
    );
  });

  it('extremes of the int8 range: codes 0 and 255 in every lane and tail', () => {
    setIsa(isa);
    for (const D of [64, 65, 127, 128, 129]) {
      const N = 9;
      const x = new Float32Array(N * D);
      for (let i = 0; i < x.length; i++) x[i] = (Math.floor(i / D) + (i % D)) % 2 ? 1 : -1; // alternating 0 / 255 codes
      const c = quantizeSync(Tensor.from(x, [N, D]), 'int8');
      const q = Float32Array.from({ length: 3 * D }, (_, i) => (i % 3 === 0 ? -1 : 1) * (1 + (i % 5)));
      const r = quantizeInt8Ref(x, N, D);
      expect(Array.from(c.codes.data).every((v) => v === 0 || v === 255)).toBe(true);
      const qt = Tensor.from(q, [3, D]);
      expectClose(
        scoreSync(qt, c).data,
        isaUsesS8() ? int8S8ScoresRef(q, 3, r, N, D) : int8ScoresRef(q, 3, r, N, D),
        isaUsesS8() ? 1e-6 : 2e-5,
      );
      expectClose(scoreTopKSync(qt, c, N, { queryBits: 8 }).scores, sortedRows(int8S8ScoresRef(q, 3, r, N, D), 3, N), 1e-6);
    }
  });
});

/** Whether score() (no queryBits option) takes int8 queries on the active ISA. */
function isaUsesS8(): boolean {
  const c = capabilities();
  const s8 = (c.isa === 'avx512' && c.cpu.avx512vnni) || (c.isa === 'neon' && c.cpu.dotprod);
  expect(c.int8Queries).toBe(s8);
  return s8;
}

/** Each row of a score matrix sorted descending (what a top-N lists). */
function sortedRows(S: Float64Array, B: number, N: number): Float64Array {
  const out = new Float64Array(B * N);
  for (let b = 0; b < B; b++)
    out.set(
      Array.from(S.subarray(b * N, (b + 1) * N)).sort((a, c) => c - a),
      b * N,
    );
  return out;
}

describe('quantized search: recall, rescoring, filters', () => {
  const N = 3000,
    D = 96,
    B = 40,
    k = 10;
  const x = embeddings(N + B, D, 77);
  const corpus = Tensor.from(x.slice(0, N * D), [N, D]);
  const queries = Tensor.from(x.slice(N * D), [B, D]);
  const exact = scoreTopKSync(queries, corpus, k);
  const recall = (ids: Int32Array) => {
    let hit = 0;
    for (let b = 0; b < B; b++) {
      const want = new Set(exact.ids.subarray(b * k, (b + 1) * k));
      for (let j = 0; j < k; j++) if (want.has(ids[b * k + j]!)) hit++;
    }
    return hit / (B * k);
  };

  // 96 dimensions and 400 hits: the 768-d goals (recall@10 >= 0.99) are the benchmark's (bench/quantized.ts).
  it('int8 keeps recall@10 >= 0.98 without rescoring, with f32 and int8 queries', () => {
    const c = quantizeSync(corpus, 'int8');
    expect(recall(scoreTopKSync(queries, c, k, { queryBits: 32 }).ids)).toBeGreaterThanOrEqual(0.98);
    expect(recall(scoreTopKSync(queries, c, k, { queryBits: 8 }).ids)).toBeGreaterThanOrEqual(0.98);
    expect(c.bytes / (N * D * 4)).toBeLessThanOrEqual(0.27);
  });

  it('binary rescored with the full vectors returns exact scores and reaches the full recall as candidates grow', () => {
    const c = quantizeSync(corpus, 'binary');
    const r4 = scoreTopKSync(queries, c, k, { rescore: corpus, oversample: 4 });
    const all = scoreTopKSync(queries, c, k, { rescore: corpus, oversample: N / k });
    expect(recall(all.ids)).toBe(1);
    expectClose(all.scores, exact.scores, 1e-6); // the f32 scores (summed in another order than the B = 40 search's)
    expect(recall(r4.ids)).toBeGreaterThan(recall(scoreTopKSync(queries, c, k).ids));
    // Each rescored hit carries its exact f32 score.
    const g = gatherScoresSync(queries, corpus, r4.ids).data;
    expectClose(r4.scores, g, 1e-6);
    expect(c.bytes).toBe(N * (Math.ceil(D / 64) * 8 + 8) + D * 4); // bits, a row's scale and count, the mean
  });

  it('rescoring with int8 full vectors and with a mapped file', async () => {
    const c = quantizeSync(corpus, 'binary');
    const q8 = quantizeSync(corpus, 'int8');
    const viaInt8 = scoreTopKSync(queries, c, k, { rescore: q8, oversample: 8 });
    const viaF32 = scoreTopKSync(queries, c, k, { rescore: corpus, oversample: 8 });
    expect(recall(viaInt8.ids)).toBeGreaterThanOrEqual(recall(viaF32.ids) - 0.02);
    expect(recall(viaF32.ids)).toBeGreaterThan(0.9);
    const dir = mkdtempSync(join(tmpdir(), 'quorum-q-'));
    try {
      await corpus.save(join(dir, 'full.qtns'));
      const mapped = await Tensor.map(join(dir, 'full.qtns'));
      const a = await scoreTopK(queries, c, k, { rescore: mapped });
      const b = scoreTopKSync(queries, c, k, { rescore: corpus });
      expect(Array.from(a.ids)).toEqual(Array.from(b.ids));
      mapped.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('filters: exactly the top-k of the allowed rows, for both quantizations', () => {
    const rows = Int32Array.from({ length: N / 3 }, (_, i) => i * 3 + 1);
    for (const kind of ['int8', 'binary'] as const) {
      const c = quantizeSync(corpus, kind);
      const S = scoreSync(queries, c).data;
      const masked = Float64Array.from(S, (v, i) => (rows.includes(i % N) ? v : NaN));
      const got = scoreTopKSync(queries, c, k, { rows });
      expect(Array.from(got.ids)).toEqual(Array.from(topKRef(masked, B, N, k).ids));
      const resc = scoreTopKSync(queries, c, k, { rows, rescore: corpus });
      for (const id of resc.ids) expect(id % 3).toBe(1);
    }
  });

  it('Promise and Sync forms agree', async () => {
    const c = await quantize(corpus, 'binary');
    const a = await scoreTopK(queries, c, k, { rescore: corpus });
    expect(Array.from(a.ids)).toEqual(Array.from(scoreTopKSync(queries, c, k, { rescore: corpus }).ids));
  });
});

describe('saved and mapped quantized corpora', () => {
  const x = anisotropic(200, 50, 11);
  const corpus = Tensor.from(x, [200, 50]);
  const q = Tensor.from(anisotropic(3, 50, 12), [3, 50]);

  it.each(['int8', 'binary'] as const)('%s: save, load (mapped) and search the same', async (kind) => {
    const dir = mkdtempSync(join(tmpdir(), 'quorum-q-'));
    try {
      const c = quantizeSync(corpus, kind);
      await c.save(join(dir, 'q'));
      const back = await QuantizedTensor.load(join(dir, 'q'), { verify: true });
      expect([back.kind, back.rows, back.dim, back.bytes]).toEqual([kind, 200, 50, c.bytes]);
      expect(Array.from(scoreTopKSync(q, back, 5).ids)).toEqual(Array.from(scoreTopKSync(q, c, 5).ids));
      // saved again over itself: replaced whole
      await back.save(join(dir, 'q'));
      back.dispose();
      expect((await QuantizedTensor.load(join(dir, 'q'))).rows).toBe(200);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a missing or corrupt table, a card of another dimension: ERR_IO / ERR_FORMAT', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quorum-q-'));
    try {
      const d = join(dir, 'q');
      await quantizeSync(corpus, 'int8').save(d);
      const card = JSON.parse(readFileSync(join(d, 'quantized.json'), 'utf8'));
      expect(await asyncCode(QuantizedTensor.load(join(dir, 'none')))).toBe('ERR_IO');
      writeFileSync(join(d, 'quantized.json'), JSON.stringify({ ...card, dim: 51 }));
      expect(await asyncCode(QuantizedTensor.load(d))).toBe('ERR_FORMAT');
      const { scale, ...noScale } = card;
      expect(scale).toBe('scale.qtns');
      writeFileSync(join(d, 'quantized.json'), JSON.stringify(noScale));
      expect(await asyncCode(QuantizedTensor.load(d))).toBe('ERR_FORMAT');
      writeFileSync(join(d, 'quantized.json'), JSON.stringify(card));
      const bytes = readFileSync(join(d, 'scale.qtns'));
      bytes[4101] = bytes[4101]! ^ 0xff; // a flipped byte in the table's data
      writeFileSync(join(d, 'scale.qtns'), bytes);
      expect(await asyncCode(QuantizedTensor.load(d))).toBe('ERR_FORMAT');
      rmSync(join(d, 'offset.qtns'));
      expect(await asyncCode(QuantizedTensor.load(d))).toMatch(/ERR_IO|ERR_FORMAT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('quantization: bad input is a typed error', () => {
  const ok = Tensor.from(anisotropic(10, 16, 1), [10, 16]);
  it('NaN / Inf, empty, wrong dtype, bad options', () => {
    const nan = Tensor.from(
      Float32Array.from({ length: 32 }, (_, i) => (i === 7 ? NaN : i)),
      [2, 16],
    );
    const inf = Tensor.from(
      Float32Array.from({ length: 32 }, (_, i) => (i === 9 ? -Infinity : i)),
      [2, 16],
    );
    for (const kind of ['int8', 'binary'] as const) {
      expect(code(() => quantizeSync(nan, kind))).toBe('ERR_NONFINITE');
      expect(code(() => quantizeSync(inf, kind))).toBe('ERR_NONFINITE');
      expect(code(() => quantizeSync(Tensor.zeros([0, 16]), kind))).toBe('ERR_SHAPE');
      expect(code(() => quantizeSync(Tensor.zeros([4, 0]), kind))).toBe('ERR_SHAPE');
      expect(code(() => quantizeSync(Tensor.zeros([4], 'f32'), kind))).toBe('ERR_SHAPE');
      expect(code(() => quantizeSync(Tensor.zeros([4, 4], 'i32'), kind))).toBe('ERR_DTYPE');
    }
    expect(code(() => quantizeSync(ok, 'int4' as never))).toBe('ERR_ARG');
    expect(code(() => quantizeSync(ok, 'int8', { clip: 0.5 }))).toBe('ERR_ARG');
    expect(code(() => quantizeSync(ok, 'int8', { clip: NaN }))).toBe('ERR_ARG');
    expect(code(() => quantizeSync(ok, 'int8', { center: true }))).toBe('ERR_ARG');
    expect(code(() => quantizeSync(ok, 'binary', { center: 1 as never }))).toBe('ERR_ARG');
    expect(code(() => quantizeSync(ok, 'binary', { bits: 2 } as never))).toBe('ERR_ARG');
  });

  it('searches: another dimension, wrong query form, rescore of another size or kind', () => {
    const c = quantizeSync(ok, 'int8');
    const b = quantizeSync(ok, 'binary');
    const q = Tensor.from(anisotropic(2, 16, 2), [2, 16]);
    expect(code(() => scoreTopKSync(Tensor.zeros([1, 15]), c, 3))).toBe('ERR_SHAPE');
    expect(code(() => scoreTopKSync(new Float32Array(15), c, 3))).toBe('ERR_SHAPE');
    expect(code(() => scoreTopKSync(q, c, 3, { queryBits: 4 }))).toBe('ERR_ARG');
    expect(code(() => scoreTopKSync(q, b, 3, { queryBits: 8 }))).toBe('ERR_ARG');
    expect(code(() => scoreTopKSync(q, ok, 3, { queryBits: 8 }))).toBe('ERR_ARG');
    expect(code(() => scoreTopKSync(q, b, 3, { rescore: Tensor.zeros([9, 16]) }))).toBe('ERR_SHAPE');
    expect(code(() => scoreTopKSync(q, b, 3, { rescore: b }))).toBe('ERR_ARG');
    expect(code(() => scoreTopKSync(q, b, 3, { oversample: 2 }))).toBe('ERR_ARG');
    expect(code(() => scoreTopKSync(q, b, 3, { rescore: ok, oversample: 0.5 }))).toBe('ERR_ARG');
    expect(code(() => scoreTopKSync(Tensor.from(new Float32Array(16).fill(NaN), [1, 16]), c, 3))).toBe('ERR_NONFINITE');
    expect(code(() => c.encodeSync(Tensor.zeros([2, 17])))).toBe('ERR_SHAPE');
    c.dispose();
    expect(code(() => scoreTopKSync(q, c, 3))).toBe('ERR_DISPOSED');
  });
});

describe("DenseIndex { quantization: 'int8' }", () => {
  const N = 500,
    D = 48,
    B = 6,
    k = 8;
  const x = embeddings(N + B, D, 31);
  const corpus = Tensor.from(x.slice(0, N * D), [N, D]);
  const queries = x.slice(N * D);
  const ids = Array.from({ length: N }, (_, i) => 1000 + i);

  it('Flat: faiss SQ8 codes searched by the int8 kernels give the scores of faiss’s own decoding', async () => {
    const ix = DenseIndex.create({ dim: D, quantization: 'int8' });
    expect(ix.info.factory).toBe('SQ8');
    expect(await asyncCode(ix.add(corpus, ids))).toBe('ERR_STATE'); // the min / max are fitted by train
    await ix.train(corpus);
    await ix.add(corpus, ids);
    const r = await ix.search(queries, k);
    // faiss's reconstruction of every vector, scored exactly: the reference the kernel must match.
    const decoded = Tensor.from(await ix.reconstruct(ids), [N, D]);
    const S = scoreSync(Tensor.from(queries, [B, D]), decoded).data;
    const ref = topKRef(S, B, N, k);
    expect(Array.from(r.ids, Number)).toEqual(Array.from(ref.ids, (i) => ids[i]!));
    expectClose(r.scores, ref.scores, 1e-5);
    // filters: exactly the allowed rows' top-k
    const allowed = ids.filter((_, i) => i % 5 === 0);
    const f = await ix.search(queries, k, { allowedIds: allowed });
    const masked = Float64Array.from(S, (v, i) => ((i % N) % 5 === 0 ? v : NaN));
    expect(Array.from(f.ids, Number)).toEqual(Array.from(topKRef(masked, B, N, k).ids, (i) => ids[i]!));
    // remove, then save and load: the same results from the loaded copy (its storage adopted again)
    expect(await ix.remove([ids[0]!, ids[1]!])).toBe(2);
    const dir = mkdtempSync(join(tmpdir(), 'quorum-q-'));
    try {
      await ix.save(join(dir, 'ix.qdx'));
      const back = await DenseIndex.load(join(dir, 'ix.qdx'));
      expect(back.info.factory).toBe('SQ8');
      const a = await ix.search(queries, k);
      const b = await back.search(queries, k);
      expect(Array.from(b.ids)).toEqual(Array.from(a.ids));
      expect(Array.from(a.ids).some((id) => id === BigInt(ids[0]!))).toBe(false);
      back.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // recall against exact f32 search
    const exact = scoreTopKSync(Tensor.from(queries, [B, D]), corpus, k).ids;
    let hit = 0;
    for (let b = 0; b < B; b++) {
      const want = new Set(Array.from(exact.subarray(b * k, (b + 1) * k), (i) => i + 1000));
      for (let j = 0; j < k; j++) if (want.has(Number(r.ids[b * k + j]))) hit++;
    }
    expect(hit / (B * k)).toBeGreaterThanOrEqual(0.9);
    ix.dispose();
  });

  it("HNSW: faiss's HNSW over SQ8 codes; bad combinations are ERR_ARG", async () => {
    const ix = DenseIndex.create({ dim: D, factory: 'HNSW16', quantization: 'int8', efSearch: 64 });
    expect(ix.info.factory).toBe('HNSW16,SQ8');
    await ix.train(corpus);
    await ix.add(corpus, ids);
    const r = await ix.search(queries, k);
    // The graph's distances are the core's f32 x u8 scores of faiss's decoding: each hit's score is its decoded
    // vector's exact inner product, and the walk finds nearly all of the codes' exact top-k.
    const decoded = Tensor.from(await ix.reconstruct(ids), [N, D]);
    const S = scoreSync(Tensor.from(queries, [B, D]), decoded).data;
    const ref = topKRef(S, B, N, k);
    let found = 0;
    for (let i = 0; i < B * k; i++) {
      const row = ids.indexOf(Number(r.ids[i]));
      expect(r.scores[i]!).toBeCloseTo(S[Math.floor(i / k) * N + row]!, 4);
      if (Array.from(ref.ids.subarray(Math.floor(i / k) * k, Math.floor(i / k) * k + k)).includes(row)) found++;
    }
    expect(found / (B * k)).toBeGreaterThanOrEqual(0.9);
    // saved and loaded, the graph searches its storage the same way
    const dir = mkdtempSync(join(tmpdir(), 'quorum-q-'));
    try {
      await ix.save(join(dir, 'h.qdx'));
      const back = await DenseIndex.load(join(dir, 'h.qdx'));
      expect(Array.from((await back.search(queries, k)).ids)).toEqual(Array.from(r.ids));
      back.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    ix.dispose();
    expect(code(() => DenseIndex.create({ dim: D, quantization: 'int4' as never }))).toBe('ERR_ARG');
    expect(code(() => DenseIndex.create({ dim: D, quantization: 'int8', mips: 'l2' }))).toBe('ERR_ARG');
    expect(code(() => DenseIndex.create({ dim: D, quantization: 'int8', factory: 'IVF4,Flat' }))).toBe('ERR_ARG');
  });
});

describe("DenseIndex { quantization: 'binary' }", () => {
  const N = 700,
    D = 72,
    B = 9,
    k = 7;
  const x = embeddings(N + B, D, 41);
  const corpus = Tensor.from(x.slice(0, N * D), [N, D]);
  const queries = x.slice(N * D);
  const qt = Tensor.from(queries, [B, D]);
  const ids = Array.from({ length: N }, (_, i) => 5000 + 3 * i);
  // The reference: the same codes (centred on the corpus mean, the default rotation) scanned by scoreTopK for 4 x k
  // candidates, rescored with the f32 vectors.
  const bits = quantizeSync(corpus, 'binary');
  const reference = (rows?: Int32Array) => scoreTopKSync(qt, bits, k, { rescore: corpus, oversample: 4, ...(rows ? { rows } : {}) });
  const same = (got: { ids: BigInt64Array; scores: Float32Array }, want: { ids: Int32Array; scores: Float32Array }) => {
    expect(Array.from(got.ids, Number)).toEqual(Array.from(want.ids, (i) => (i < 0 ? -1 : ids[i]!)));
    expectClose(got.scores, want.scores, 1e-6);
  };

  it('scans 1-bit codes for 4 x k candidates and returns their exact f32 scores; filters, remove, save, load, map', async () => {
    const ix = DenseIndex.create({ dim: D, quantization: 'binary' });
    expect(ix.info.factory).toBe('BinaryFlat');
    expect(await asyncCode(ix.add(corpus, ids))).toBe('ERR_STATE'); // the centre is the train sample's mean
    await ix.train(corpus);
    expect(await asyncCode(ix.train(corpus))).toBe('ERR_STATE');
    await ix.add(corpus, ids);
    same(await ix.search(queries, k), reference());
    // its hits carry exact scores, and reconstruct gives the f32 vectors back
    expect(Array.from(await ix.reconstruct([ids[3]!]))).toEqual(Array.from(x.slice(3 * D, 4 * D)));
    // a filter scans only the allowed rows' codes
    const allowedRows = Int32Array.from({ length: N }, (_, i) => i).filter((i) => i % 3 === 1);
    same(await ix.search(queries, k, { allowedIds: Array.from(allowedRows, (i) => ids[i]!) }), reference(allowedRows));
    // remove: the codes move with the vectors (faiss keeps the survivors in order)
    const gone = [0, 1, 350, N - 1];
    const kept = Int32Array.from({ length: N }, (_, i) => i).filter((i) => !gone.includes(i));
    expect(await ix.remove(gone.map((i) => ids[i]!))).toBe(gone.length);
    same(await ix.search(queries, k), reference(kept));
    const dir = mkdtempSync(join(tmpdir(), 'quorum-qb-'));
    try {
      const path = join(dir, 'ix.qdx');
      await ix.save(path);
      const back = await DenseIndex.load(path);
      expect(back.info.factory).toBe('BinaryFlat');
      same(await back.search(queries, k), reference(kept));
      await back.add(Tensor.from(x.slice(0, D), [1, D]), [ids[0]!]); // coded around the saved centre
      expect(Number((await back.search(x.slice(0, D), 1)).ids[0])).toBe(ids[0]);
      back.dispose();
      const mapped = await DenseIndex.map(path, { verify: true });
      expect(mapped.info.mapped).toBe(true);
      same(await mapped.search(queries, k), reference(kept));
      expect(await asyncCode(mapped.add(corpus, ids))).toBe('ERR_UNSUPPORTED');
      mapped.dispose();
      // a version-1 header on a binary index (no centre) is damage, not a plain Flat
      const bytes = readFileSync(path);
      bytes.writeUInt32LE(1, 8);
      writeFileSync(join(dir, 'bad.qdx'), bytes);
      expect(await asyncCode(DenseIndex.load(join(dir, 'bad.qdx')))).toBe('ERR_FORMAT');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    ix.dispose();
  });

  it('an empty index saves, loads and maps; bad combinations are ERR_ARG', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quorum-qb-'));
    try {
      const ix = DenseIndex.create({ dim: D, quantization: 'binary' });
      await ix.save(join(dir, 'empty.qdx'));
      const back = await DenseIndex.load(join(dir, 'empty.qdx'));
      expect(back.info.trained).toBe(false);
      expect((await back.search(queries, k)).ids.every((id) => id === -1n)).toBe(true);
      const mapped = await DenseIndex.map(join(dir, 'empty.qdx'));
      expect(mapped.info.size).toBe(0);
      for (const i of [ix, back, mapped]) i.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(code(() => DenseIndex.create({ dim: D, quantization: 'binary', factory: 'HNSW16' }))).toBe('ERR_ARG');
    expect(code(() => DenseIndex.create({ dim: D, quantization: 'binary', mips: 'l2' }))).toBe('ERR_ARG');
  });
});
