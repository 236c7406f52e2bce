// RequestBatcher (lib/batcher.ts): concurrent requests coalesce into batches of at most maxBatch, in arrival order;
// an error stays with its request; the queue is bounded; deadlines and close() reject what waits.
import { describe, expect, it } from 'vitest';

import { QuorumError, RequestBatcher } from '../lib/index.js';
import { asyncCode, code } from './basics.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('RequestBatcher', () => {
  it('serves concurrent requests in batches of at most maxBatch, each its own result, in order', async () => {
    const batches: number[][] = [];
    const b = new RequestBatcher(async (xs: number[]) => {
      batches.push(xs);
      await sleep(5);
      return xs.map((x) => x * 10);
    }, { maxBatch: 4, maxWaitMs: 20 });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => b.submit(i)));
    expect(results).toEqual(Array.from({ length: 10 }, (_, i) => i * 10));
    expect(batches.flat()).toEqual(Array.from({ length: 10 }, (_, i) => i));
    expect(batches.map((x) => x.length)).toEqual([4, 4, 2]);
    expect(b.stats()).toEqual({ batches: 3, requests: 10, refused: 0, timedOut: 0, largestBatch: 4 });
  });

  it('waits maxWaitMs for company, and with maxWaitMs 0 runs what is queued at once', async () => {
    const sizes: number[] = [];
    const run = async (xs: string[]) => {
      sizes.push(xs.length);
      return xs;
    };
    const waiting = new RequestBatcher(run, { maxWaitMs: 30 });
    const first = waiting.submit('a');
    await sleep(5);
    const second = waiting.submit('b');
    expect(await Promise.all([first, second])).toEqual(['a', 'b']);
    expect(sizes).toEqual([2]);
    sizes.length = 0;
    const eager = new RequestBatcher(run, { maxWaitMs: 0 });
    await eager.submit('c');
    await eager.submit('d');
    expect(sizes).toEqual([1, 1]);
  });

  it('an Error in the results rejects that request alone; a thrown error rejects its whole batch', async () => {
    const b = new RequestBatcher(async (xs: number[]) => xs.map((x) => (x === 2 ? new QuorumError('ERR_RANGE', 'two is bad') : x)), { maxWaitMs: 5 });
    const settled = await Promise.allSettled([1, 2, 3].map((x) => b.submit(x)));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(((settled[1] as PromiseRejectedResult).reason as QuorumError).code).toBe('ERR_RANGE');
    const failing = new RequestBatcher(async () => {
      throw new QuorumError('ERR_IO', 'disk gone');
    }, { maxWaitMs: 5 });
    const all = await Promise.allSettled([failing.submit(1), failing.submit(2)]);
    expect(all.map((s) => (s as PromiseRejectedResult).reason.code)).toEqual(['ERR_IO', 'ERR_IO']);
    // A batch function that answers with the wrong count rejects the batch with ERR_SHAPE.
    const short = new RequestBatcher(async () => [1], { maxWaitMs: 5 });
    expect(await Promise.all([asyncCode(short.submit(1)), asyncCode(short.submit(2))])).toEqual(['ERR_SHAPE', 'ERR_SHAPE']);
    // The next batch still runs after a failed one.
    expect(await b.submit(5)).toBe(5);
  });

  it('a full queue refuses at once (ERR_BUSY); a request past its deadline rejects (ERR_TIMEOUT); close() rejects what waits', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const b = new RequestBatcher(async (xs: number[]) => {
      await gate;
      return xs;
    }, { maxBatch: 1, maxWaitMs: 0, maxQueue: 2, timeoutMs: 60 });
    const running = b.submit(0); // taken at once; blocks on the gate
    await sleep(1);
    const queued = [b.submit(1), b.submit(2)];
    expect(b.pending).toBe(2);
    expect(await asyncCode(b.submit(3))).toBe('ERR_BUSY');
    // Nothing runs while the gate is shut: all three reach their deadline.
    expect(await Promise.all([asyncCode(running), ...queued.map(asyncCode)])).toEqual(['ERR_TIMEOUT', 'ERR_TIMEOUT', 'ERR_TIMEOUT']);
    expect(b.pending).toBe(0);
    release();
    await sleep(5);
    expect(b.stats()).toMatchObject({ refused: 1, timedOut: 3 });
    const c = new RequestBatcher(async (xs: number[]) => xs, { maxWaitMs: 50 });
    const waiting = c.submit(1);
    c.close();
    expect(await asyncCode(waiting)).toBe('ERR_STATE');
    expect(await asyncCode(c.submit(2))).toBe('ERR_STATE');
  });

  it('bad options and a missing batch function are ERR_ARG / ERR_RANGE', () => {
    const run = async (xs: number[]) => xs;
    expect(code(() => new RequestBatcher(undefined as never))).toBe('ERR_ARG');
    expect(code(() => new RequestBatcher(run, { maxbatch: 4 } as never))).toBe('ERR_ARG');
    for (const o of [{ maxBatch: 0 }, { maxBatch: 1.5 }, { maxQueue: 0 }, { maxWaitMs: -1 }, { timeoutMs: Number.NaN }])
      expect(code(() => new RequestBatcher(run, o)), JSON.stringify(o)).toBe('ERR_RANGE');
  });
});
