import { describe, expect, it } from 'vitest';

import { Tensor, capabilities, scoreTopK, scoreTopKSync } from '../lib/index.js';
import { infoNceSync } from '../lib/entries/kernels.js';
import { bf16ToF32, f16ToF32 } from './reference/dense.js';
import { elementCount } from '../lib/shape.js';
import { randomF32 } from './helpers.js';

describe('elementCount', () => {
  it('multiplies the dimensions; a scalar has one element, a zero dimension none', () => {
    expect(elementCount([])).toBe(1);
    expect(elementCount([7])).toBe(7);
    expect(elementCount([2, 3, 4])).toBe(24);
    expect(elementCount([5, 0, 3])).toBe(0);
    expect(Tensor.zeros([2, 3, 4]).size).toBe(24);
  });
});

describe('Tensor', () => {
  it('exposes native memory as a zero-copy typed array', () => {
    const t = Tensor.zeros([3, 4]);
    expect(t.shape).toEqual([3, 4]);
    expect(t.dtype).toBe('f32');
    expect(t.device).toBe('cpu');
    expect(t.size).toBe(12);
    expect(t.data).toBeInstanceOf(Float32Array);
    expect(t.data).toBe(t.data); // one cached view
    t.data[5] = 2.5;
    // A kernel sees the write: no copy between JS and native memory.
    const r2 = scoreTopKSync(new Float32Array([0, 1, 0, 0]), t, 1);
    expect(r2.ids[0]).toBe(1);
    expect(r2.scores[0]).toBe(2.5);
    expect(t.data.byteOffset % 64).toBe(0);
  });

  it('wrap borrows a typed array without copying', () => {
    const arr = new Float32Array(8);
    const t = Tensor.wrap(arr, [2, 4]);
    expect(t.data).toBe(arr);
    arr[6] = 3;
    expect(scoreTopKSync(new Float32Array([0, 0, 1, 0]), t, 1).ids[0]).toBe(1);
    t.dispose();
    expect(arr[6]).toBe(3); // the borrowed array is untouched
  });

  it('dispose empties every view and frees at once', () => {
    const t = Tensor.zeros([1000]);
    const view = t.data;
    expect(view.length).toBe(1000);
    t.dispose();
    expect(view.length).toBe(0);
    expect(() => t.data).toThrow(/disposed/);
  });

  it('dispose while an async kernel runs is safe', async () => {
    const c = Tensor.from(randomF32(50_000 * 64, 9), [50_000, 64]);
    const expected = scoreTopKSync(randomF32(64, 10), c, 5);
    const pending = scoreTopK(randomF32(64, 10), c, 5);
    c.dispose(); // memory is freed only after the search completes
    const r = await pending;
    expect(Array.from(r.ids)).toEqual(Array.from(expected.ids));
    expect(c.disposed).toBe(true);
  });

  it('supports using / Symbol.dispose', () => {
    let view: Float32Array;
    {
      using t = Tensor.zeros([4]);
      view = t.data;
      expect(view.length).toBe(4);
    }
    expect(view.length).toBe(0);
  });

  it('converts between f32, bf16 and f16 with round-to-nearest-even', () => {
    const values = [0, -0, 1, -2.5, 1 / 3, 65504, 1e-8, 3.0e38, Infinity, -Infinity, NaN, 6.1e-5, 5.96e-8];
    const f = Tensor.from(values, [values.length]);
    const bf = f.to('bf16');
    const h = f.to('f16');
    expect(bf.data).toBeInstanceOf(Uint16Array);
    for (let i = 0; i < values.length; i++) {
      const v = f.data[i] as number;
      const b = bf16ToF32(bf.data[i] as number);
      const hv = f16ToF32(h.data[i] as number);
      if (Number.isNaN(v)) {
        expect(Number.isNaN(b)).toBe(true);
        expect(Number.isNaN(hv)).toBe(true);
        continue;
      }
      // Nearest representable: relative error at most half an ulp (2^-9 bf16, 2^-11 f16 when normal).
      if (Number.isFinite(v) && v !== 0) expect(Math.abs(b - v) / Math.abs(v)).toBeLessThanOrEqual(2 ** -9);
      else expect(b).toBe(v);
      if (Math.abs(v) >= 6.104e-5 && Math.abs(v) <= 65504) expect(Math.abs(hv - v) / Math.abs(v)).toBeLessThanOrEqual(2 ** -11);
    }
    expect(f16ToF32(h.data[7] as number)).toBe(Infinity); // 3e38 overflows f16
    expect(f16ToF32(h.data[12] as number)).toBeCloseTo(5.96e-8, 10); // smallest subnormal survives
    // Round trip of representable values is exact.
    expect(Array.from(bf.to('f32').data)).toEqual(Array.from(bf.data, bf16ToF32));
    expect(Array.from(h.to('f32').data)).toEqual(Array.from(h.data, f16ToF32));
    expect(bf.toArray()).toEqual(Array.from(bf.data, bf16ToF32));
  });

  it('rounds ties to even in bf16', () => {
    // 1 + 2^-8 lies halfway between bf16 1 and 1 + 2^-7: rounds to the even mantissa (1).
    const t = Tensor.from([1 + 2 ** -8, 1 + 3 * 2 ** -8], [2]).to('bf16');
    expect(bf16ToF32(t.data[0] as number)).toBe(1);
    expect(bf16ToF32(t.data[1] as number)).toBe(1 + 2 ** -6);
  });

  it('toAsync converts off the main thread', async () => {
    const f = Tensor.from(randomF32(1000, 3), [10, 100]);
    const a = await f.toAsync('bf16');
    expect(Array.from(a.data)).toEqual(Array.from(f.to('bf16').data));
  });

  it('holds every dtype with the matching view', () => {
    expect(Tensor.zeros([2], 'i32').data).toBeInstanceOf(Int32Array);
    expect(Tensor.zeros([2], 'i64').data).toBeInstanceOf(BigInt64Array);
    expect(Tensor.zeros([2], 'u8').data).toBeInstanceOf(Uint8Array);
    expect(Tensor.zeros([2], 'f16').data).toBeInstanceOf(Uint16Array);
    expect(Tensor.from([1n, -2n], [2], 'i64').toArray()).toEqual([1, -2]);
    expect(Tensor.zeros([0, 5]).data.length).toBe(0);
  });

  it('from() keeps a typed array its own dtype unless one is given', () => {
    const i = Tensor.from(Int32Array.of(3, -1, 7), [3]);
    expect(i.dtype).toBe('i32');
    expect(Array.from(i.data)).toEqual([3, -1, 7]);
    expect(Tensor.from(BigInt64Array.of(5n), [1]).dtype).toBe('i64');
    expect(Tensor.from(Uint8Array.of(1, 0), [2]).dtype).toBe('u8');
    const bits = Tensor.from(Uint16Array.of(0x3f80), [1]);  // raw bf16 bits, as Tensor.wrap reads them
    expect(bits.dtype).toBe('bf16');
    expect(bits.toArray()).toEqual([1]);
    expect(Tensor.from(Float64Array.of(0.5), [1]).dtype).toBe('f32');
    expect(Tensor.from([1, 2], [2]).dtype).toBe('f32');
    // An explicit dtype still converts.
    const f = Tensor.from(Int32Array.of(3, -1), [2], 'f32');
    expect(f.dtype).toBe('f32');
    expect(Array.from(f.data)).toEqual([3, -1]);
    // The positives of infoNce can now be given as an i32 Tensor built from an Int32Array.
    const r = infoNceSync(Tensor.from(Float32Array.of(1, 0, 0, 1), [2, 2]), Tensor.from(Float32Array.of(1, 0, 0, 1), [2, 2]), Tensor.from(Int32Array.of(0, 1), [2]));
    expect(r.accuracy).toBe(1);
  });

  it('reports capabilities', () => {
    const c = capabilities();
    expect(c.availableIsas).toContain('scalar');
    expect(c.availableIsas).toContain(c.isa);
    expect(c.threads).toBeGreaterThanOrEqual(1);
    expect(c.devices).toEqual(['cpu']);
  });
});
