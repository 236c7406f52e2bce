// Per-row int8 storage against a plain reference: codes, scales, the error bound, zero rows and bad input.
import { describe, expect, it } from 'vitest';

import { dequantizeRowsInt8, quantizeRowsInt8 } from '../lib/io/int8-rows.js';
import { randomF32 } from './helpers.js';

describe('int8 rows', () => {
  it('matches a plain reference on random shapes and stays within half a step of every value', () => {
    for (const [rows, cols, seed] of [[1, 1, 1], [7, 3, 2], [50, 100, 3], [3, 257, 4]] as const) {
      const x = randomF32(rows * cols, seed);
      // Rows of very different norms: a shared scale would wipe out the small ones.
      for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) x[r * cols + c]! *= 10 ** ((r % 5) - 2);
      const { codes, scales } = quantizeRowsInt8(x, rows, cols);
      const back = dequantizeRowsInt8(codes, scales, cols);
      for (let r = 0; r < rows; r++) {
        const row = Array.from(x.subarray(r * cols, (r + 1) * cols));
        const scale = Math.fround(Math.max(...row.map(Math.abs)) / 127);
        expect(scales[r]).toBe(scale);
        for (let c = 0; c < cols; c++) {
          const i = r * cols + c;
          expect(codes[i]).toBe(Math.round(row[c]! / scale));
          expect(Math.abs(back[i]! - x[i]!)).toBeLessThanOrEqual(scale / 2 + Math.abs(x[i]!) * 1e-6);
        }
        // The row's largest magnitude is exactly representable: code +-127.
        expect(Math.max(...Array.from(codes.subarray(r * cols, (r + 1) * cols), Math.abs))).toBe(127);
      }
    }
  });

  it('stores a row of zeros with scale 0, and an empty matrix', () => {
    const { codes, scales } = quantizeRowsInt8(Float32Array.of(0, 0, 1, -2), 2, 2);
    expect(Array.from(scales)).toEqual([0, Math.fround(2 / 127)]);
    expect(Array.from(codes)).toEqual([0, 0, 64, -127]);
    expect(Array.from(dequantizeRowsInt8(codes, scales, 2).subarray(0, 2))).toEqual([0, 0]);
    expect(quantizeRowsInt8(new Float32Array(0), 0, 5).scales.length).toBe(0);
  });

  it('keeps rows near the ends of the f32 range finite: the largest decode finite, subnormal-scale rows as zeros', () => {
    const big = Float32Array.of(3.4028234e38, -1e38, 1);
    const q = quantizeRowsInt8(big, 1, 3);
    const back = dequantizeRowsInt8(q.codes, q.scales, 3);
    expect(back.every(Number.isFinite)).toBe(true);
    expect(Math.abs(back[0]! - big[0]!) / big[0]!).toBeLessThan(1 / 200);
    const tiny = quantizeRowsInt8(Float32Array.of(1e-38, -1e-39), 1, 2);
    expect(tiny.scales[0]).toBe(0);
    expect(Array.from(dequantizeRowsInt8(tiny.codes, tiny.scales, 2))).toEqual([0, 0]);
  });

  it('gives typed errors for bad shapes, non-finite values and corrupt codes or scales', () => {
    const err = (fn: () => unknown, code: string) => expect(fn).toThrow(expect.objectContaining({ code }));
    err(() => quantizeRowsInt8(new Float32Array(5), 2, 2), 'ERR_SHAPE');
    err(() => quantizeRowsInt8(Float32Array.of(1, NaN), 1, 2), 'ERR_ARG');
    err(() => quantizeRowsInt8(Float32Array.of(Infinity), 1, 1), 'ERR_ARG');
    err(() => dequantizeRowsInt8(new Float32Array(4), new Float32Array(3), 2), 'ERR_SHAPE');
    err(() => dequantizeRowsInt8(Float32Array.of(128), Float32Array.of(1), 1), 'ERR_FORMAT');
    err(() => dequantizeRowsInt8(Float32Array.of(1.5), Float32Array.of(1), 1), 'ERR_FORMAT');
    err(() => dequantizeRowsInt8(Float32Array.of(1), Float32Array.of(-1), 1), 'ERR_FORMAT');
    err(() => dequantizeRowsInt8(Float32Array.of(1), Float32Array.of(NaN), 1), 'ERR_FORMAT');
  });
});
