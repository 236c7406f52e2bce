// Issue 21: ids and term indices never wrap or pass silently. DenseIndex and SparseIndex take the same ids:
// integers in [0, 2^63), numbers only when they are safe integers, each at most once.
import { describe, expect, it } from 'vitest';

import { DenseIndex, SparseIndex } from '../lib/index.js';
import { asyncCode, code } from './helpers.js';

const badIds: Array<[string, unknown[], string]> = [
  ['2^64 + 5 (wrapped to 5)', [2n ** 64n + 5n], 'ERR_RANGE'],
  ['2^63', [2n ** 63n], 'ERR_RANGE'],
  ['-(2^63) - 1', [-(2n ** 63n) - 1n], 'ERR_RANGE'],
  ['1.7', [1.7], 'ERR_RANGE'],
  ['NaN', [Number.NaN], 'ERR_RANGE'],
  ['Infinity', [Number.POSITIVE_INFINITY], 'ERR_RANGE'],
  ['2^53 (not a safe integer)', [2 ** 53], 'ERR_RANGE'],
  ['a string', ['5'], 'ERR_ARG'],
  ['null', [null], 'ERR_ARG'],
  ['an object', [{}], 'ERR_ARG'],
  ['-1 (the padding marker)', [-1n], 'ERR_RANGE'],
  ['-7', [-7], 'ERR_RANGE'],
];

describe('SparseIndex ids', () => {
  const doc = [{ index: 1, value: 1 }];
  for (const [what, ids, want] of badIds) {
    it(`rejects ${what} (${want}), sync and async, and adds nothing`, async () => {
      const index = new SparseIndex();
      expect(code(() => index.addSync(ids as never, [doc]))).toBe(want);
      expect(await asyncCode(index.add(ids as never, [doc]))).toBe(want);
      expect(index.size).toBe(0);
    });
  }

  it('rejects an id already held, or repeated in a batch (ERR_DUPLICATE_ID), keeping what it holds', async () => {
    const index = new SparseIndex();
    index.addSync([3n], [doc]);
    expect(code(() => index.addSync([3n], [doc]))).toBe('ERR_DUPLICATE_ID');
    expect(code(() => index.addSync([4n, 4n], [doc, doc]))).toBe('ERR_DUPLICATE_ID');
    expect(await asyncCode(index.add([5n, 3n], [doc, doc]))).toBe('ERR_DUPLICATE_ID');
    expect(index.size).toBe(1);
    expect(index.searchSync([doc], 3).hits(0)).toEqual([{ id: 3n, score: 1 }]);
    // Ids survive a round trip, and stay unique after it.
    const again = SparseIndex.fromBuffer(index.toBuffer());
    expect(code(() => again.addSync([3n], [doc]))).toBe('ERR_DUPLICATE_ID');
    again.addSync([2n ** 63n - 1n], [doc]);
    expect(again.searchSync([doc], 3).hits(0).map((h) => h.id)).toEqual([3n, 2n ** 63n - 1n]);
  });

  const badTerms: Array<[string, unknown, string]> = [
    ['2^32 + 3 (wrapped to 3)', 2 ** 32 + 3, 'ERR_RANGE'],
    ['2^31', 2 ** 31, 'ERR_RANGE'],
    ['1.7 (truncated to 1)', 1.7, 'ERR_RANGE'],
    ['-1', -1, 'ERR_RANGE'],
    ['NaN', Number.NaN, 'ERR_RANGE'],
    ['"3"', '3', 'ERR_ARG'],
    ['undefined', undefined, 'ERR_ARG'],
  ];
  for (const [what, index, want] of badTerms) {
    it(`rejects the term index ${what} in documents and queries`, async () => {
      const s = new SparseIndex();
      expect(code(() => s.addSync([1n], [[{ index: index as number, value: 1 }]]))).toBe(want);
      expect(await asyncCode(s.add([1n], [[{ index: index as number, value: 1 }]]))).toBe(want);
      s.addSync([1n], [doc]);
      expect(code(() => s.searchSync([[{ index: index as number, value: 1 }]], 2))).toBe(want);
      expect(await asyncCode(s.search([[{ index: index as number, value: 1 }]], 2))).toBe(want);
    });
  }

  it('rejects values that are not numbers (a string would become NaN) and rows that are not arrays', async () => {
    const s = new SparseIndex();
    expect(code(() => s.addSync([1n], [[{ index: 1, value: '2' as never }]]))).toBe('ERR_ARG');
    expect(code(() => s.addSync([1n], [{} as never]))).toBe('ERR_ARG');
    expect(code(() => s.addSync([1n], [[null as never]]))).toBe('ERR_ARG');
    expect(code(() => s.addSync([1n], 'docs' as never))).toBe('ERR_ARG');
    expect(code(() => s.addSync([1n], [[{ index: 1, value: Number.NaN }]]))).toBe('ERR_NONFINITE');
    expect(await asyncCode(s.add([1n], [[{ index: 1, value: '2' as never }]]))).toBe('ERR_ARG');
    expect(s.size).toBe(0);
  });
});

describe('DenseIndex ids', () => {
  for (const [what, ids, want] of badIds) {
    it(`rejects ${what} (${want}) in add, sync and async`, async () => {
      const index = DenseIndex.create({ dim: 2 });
      expect(code(() => index.addSync(new Float32Array(2), ids as never))).toBe(want);
      expect(await asyncCode(index.add(new Float32Array(2), ids as never))).toBe(want);
      expect(index.size).toBe(0);
    });
  }

  it('ids that do not fit are errors in reconstruct and remove too, never a wrapped id', async () => {
    const index = DenseIndex.create({ dim: 2 });
    index.addSync(new Float32Array([1, 2]), [5n]);
    expect(code(() => index.reconstructSync([2n ** 64n + 5n]))).toBe('ERR_RANGE');
    expect(await asyncCode(index.remove([2n ** 64n + 5n]))).toBe('ERR_RANGE');
    expect(index.size).toBe(1);
    expect(Array.from(index.reconstructSync([5n]))).toEqual([1, 2]);
  });
});
