// The one-pair distance kernel under DenseIndex's HNSW storage (native/kernels/pair_distance.h), every ISA
// variant against a double-precision reference, on lengths that exercise the unrolled body, the single-vector
// loop and the masked tail.
import { afterAll, describe, expect, it } from 'vitest';

import { Tensor, capabilities, setIsa, type Isa } from '../lib/index.js';
import { callNative } from '../lib/errors.js';
import { denseBindings } from '../lib/bindings/dense_bindings.js';
import { code, randomF32 } from './helpers.js';

const caps = capabilities();
afterAll(() => setIsa(caps.isa as Isa));

function reference(a: Float32Array, b: Float32Array, kind: 'dot' | 'l2sq'): { value: number; scale: number } {
  let value = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    const t = kind === 'dot' ? (a[i] as number) * (b[i] as number) : ((a[i] as number) - (b[i] as number)) ** 2;
    value += t;
    scale += Math.abs(t);
  }
  return { value, scale };
}

describe('pairDistance', () => {
  for (const isa of caps.availableIsas as Isa[]) {
    it(`${isa}: dot and squared L2 match the reference for every length 0..200 and 768`, () => {
      setIsa(isa);
      const lengths = [...Array.from({ length: 201 }, (_, i) => i), 768, 1023];
      for (const n of lengths) {
        const a = randomF32(n, n + 1);
        const b = randomF32(n, n + 1000);
        const ta = Tensor.wrap(a, [n], 'f32');
        const tb = Tensor.wrap(b, [n], 'f32');
        for (const kind of ['dot', 'l2sq'] as const) {
          const got = denseBindings().pairDistance(ta.handle, tb.handle, kind);
          const { value, scale } = reference(a, b, kind);
          // f32 accumulation: error bounded by a few ulps of the sum of magnitudes.
          expect(Math.abs(got - value), `${isa} ${kind} n=${n}`).toBeLessThanOrEqual(4e-7 * (n + 4) * scale + 1e-30);
        }
      }
    });
  }

  it('a vector with itself: squared L2 is exactly 0, dot is its squared norm', () => {
    const a = randomF32(777, 5);
    const t = Tensor.wrap(a, [777], 'f32');
    expect(denseBindings().pairDistance(t.handle, t.handle, 'l2sq')).toBe(0);
    expect(denseBindings().pairDistance(t.handle, t.handle, 'dot')).toBeCloseTo(reference(a, a, 'dot').value, 3);
  });

  it('rejects mismatched lengths and unknown kinds', () => {
    const a = Tensor.zeros([3]);
    const b = Tensor.zeros([4]);
    expect(code(() => callNative(() => denseBindings().pairDistance(a.handle, b.handle, 'dot')))).toBe('ERR_SHAPE');
    expect(code(() => callNative(() => denseBindings().pairDistance(a.handle, a.handle, 'cos' as never)))).toBe('ERR_ARG');
  });
});
