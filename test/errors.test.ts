import { describe, expect, it } from 'vitest';

import { QuorumError, Tensor, gatherScores, gatherScoresSync, scoreSync, scoreTopK, scoreTopKSync, setIsa, setThreads } from '../lib/index.js';
import { asyncCode, code, randomF32 } from './helpers.js';

const D = 8;
const corpus = Tensor.from(randomF32(20 * D, 1), [20, D]);
const q = Tensor.from(randomF32(2 * D, 2), [2, D]);

describe('bad input gives typed errors', () => {
  it('wrong shapes', async () => {
    expect(code(() => scoreTopKSync(q, Tensor.zeros([20 * D]), 3))).toBe('ERR_SHAPE');
    expect(code(() => scoreTopKSync(q, Tensor.zeros([20, D + 1]), 3))).toBe('ERR_SHAPE');
    expect(code(() => scoreTopKSync(Tensor.zeros([2, 0]), Tensor.zeros([20, 0]), 3))).toBe('ERR_SHAPE');
    expect(code(() => scoreTopKSync(new Float32Array(D + 1), corpus, 3))).toBe('ERR_SHAPE');
    expect(code(() => gatherScoresSync(q, corpus, new Int32Array(3)))).toBe('ERR_SHAPE');
    expect(code(() => Tensor.wrap(new Float32Array(5), [2, 3]))).toBe('ERR_SHAPE');
    expect(code(() => Tensor.zeros([2, -1]))).toBe('ERR_SHAPE');
    expect(code(() => Tensor.zeros([2, 1.5]))).toBe('ERR_SHAPE');
    expect(code(() => Tensor.from([1, 2, 3], [2, 2]))).toBe('ERR_SHAPE');
    expect(await asyncCode(scoreTopK(q, Tensor.zeros([20, D + 1]), 3))).toBe('ERR_SHAPE');
  });

  it('wrong dtypes', async () => {
    expect(code(() => scoreTopKSync(q.to('bf16'), corpus, 3))).toBe('ERR_DTYPE');
    expect(code(() => scoreTopKSync(q, Tensor.zeros([20, D], 'i32'), 3))).toBe('ERR_DTYPE');
    expect(code(() => gatherScoresSync(q, corpus, Tensor.zeros([2, 3], 'f32') as never))).toBe('ERR_DTYPE');
    expect(code(() => Tensor.zeros([2], 'f64' as never))).toBe('ERR_DTYPE');
    expect(code(() => Tensor.wrap(new Float64Array(4) as never, [4]))).toBe('ERR_DTYPE');
    expect(code(() => Tensor.wrap(new Int32Array(4) as never, [4], 'f32'))).toBe('ERR_DTYPE');
    expect(code(() => Tensor.zeros([4], 'i32').to('f32'))).toBe('ERR_DTYPE');
    expect(await asyncCode(gatherScores(q, corpus, Tensor.zeros([2, 3], 'u8') as never))).toBe('ERR_DTYPE');
  });

  it('k out of range', async () => {
    for (const k of [0, -1, 1.5, NaN, Infinity, 2 ** 21, '3' as unknown as number]) {
      expect(code(() => scoreTopKSync(q, corpus, k))).toBe('ERR_RANGE');
    }
    expect(await asyncCode(scoreTopK(q, corpus, 0))).toBe('ERR_RANGE');
  });

  it('ids outside the corpus', async () => {
    expect(code(() => gatherScoresSync(q, corpus, new Int32Array([0, 20])))).toBe('ERR_RANGE');
    expect(code(() => gatherScoresSync(q, corpus, new BigInt64Array([-1n, 0n])))).toBe('ERR_RANGE');
    expect(await asyncCode(gatherScores(q, corpus, new Int32Array([0, 99])))).toBe('ERR_RANGE');
  });

  it('disposed tensors', async () => {
    const c = Tensor.from(randomF32(20 * D, 3), [20, D]);
    const view = c.data; // cached by the tensor: a disposed one must not hand it out again
    c.dispose();
    c.dispose(); // twice is harmless
    expect(c.disposed).toBe(true);
    expect(view.length).toBe(0); // detached, so nothing can read freed memory through it
    expect(code(() => c.data)).toBe('ERR_DISPOSED');
    expect(code(() => scoreTopKSync(q, c, 3))).toBe('ERR_DISPOSED');
    expect(code(() => scoreSync(c as never, corpus))).toBe('ERR_DISPOSED');
    expect(await asyncCode(scoreTopK(q, c, 3))).toBe('ERR_DISPOSED');
    expect(code(() => c.to('bf16'))).toBe('ERR_DISPOSED');
  });

  it('NaN and Infinity are reported on request', async () => {
    const bad = randomF32(20 * D, 4);
    bad[17] = NaN;
    const c = Tensor.from(bad, [20, D]);
    expect(code(() => scoreTopKSync(q, c, 3, { checkFinite: true }))).toBe('ERR_NONFINITE');
    expect(await asyncCode(scoreTopK(q, c, 3, { checkFinite: true }))).toBe('ERR_NONFINITE');
    expect(code(() => scoreTopKSync(q, c.to('bf16'), 3, { checkFinite: true }))).toBe('ERR_NONFINITE');
    const qi = Float32Array.from(q.data);
    qi[0] = Infinity;
    expect(code(() => scoreTopKSync(qi, corpus, 3, { checkFinite: true }))).toBe('ERR_NONFINITE');
    expect(code(() => scoreSync(qi, corpus, { checkFinite: true }))).toBe('ERR_NONFINITE');
    // Without the check the NaN row never enters the top-k, and nothing throws.
    const r = scoreTopKSync(q, c, 20);
    expect(Array.from(r.ids)).not.toContain(2);
    expect(r.ids[19]).toBe(-1);
  });

  it('runtime settings', () => {
    expect(code(() => setThreads(0))).toBe('ERR_RANGE');
    expect(code(() => setThreads(1.5))).toBe('ERR_RANGE');
    expect(code(() => setIsa('sse9' as never))).toBe('ERR_ARG');
  });

  it('non-tensor operands', () => {
    expect(code(() => scoreTopKSync(q, {} as never, 3))).toBe('ERR_ARG');
    expect(code(() => scoreTopKSync(q, { data: [1, 2], shape: [1, 2] } as never, 3))).toBe('ERR_ARG');
  });

  it('leaves stored data intact after failed calls', () => {
    const before = scoreTopKSync(q, corpus, 5);
    expect(code(() => scoreTopKSync(q, corpus, 0))).toBe('ERR_RANGE');
    expect(code(() => gatherScoresSync(q, corpus, new Int32Array([0, 1000])))).toBe('ERR_RANGE');
    const after = scoreTopKSync(q, corpus, 5);
    expect(Array.from(after.ids)).toEqual(Array.from(before.ids));
  });
});
