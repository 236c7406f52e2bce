// Live: a value swapped while calls use it. Calls in flight finish on the value they began with, which is freed
// only after the last of them; calls begun after a swap see the new value; a failed refresh changes nothing.
import { describe, expect, it } from 'vitest';

import { DenseIndex, Live, QuorumError, Tensor } from '../lib/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    return String((e as QuorumError).code);
  }
  return 'none';
}

class Resource {
  disposed = false;
  constructor(readonly name: string, readonly log: string[]) {}
  dispose() {
    this.disposed = true;
    this.log.push(`dispose ${this.name}`);
  }
}

describe('Live', () => {
  it('keeps the old value for calls in flight and frees it after the last one', async () => {
    const log: string[] = [];
    const a = new Resource('a', log);
    const b = new Resource('b', log);
    const live = new Live(a);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = live.use(async (v, version) => {
      await gate;
      expect(v.disposed).toBe(false); // still alive after the swap
      log.push(`slow done on ${v.name}`);
      return [v.name, version];
    });
    let swapped = false;
    const swap = live.swap(b).then(() => (swapped = true));
    expect(live.version).toBe(2);
    expect(await live.use((v) => v.name)).toBe('b');
    await sleep(5);
    expect(swapped).toBe(false);
    expect(a.disposed).toBe(false);
    expect(live.stats()).toEqual({ version: 2, inFlight: 1, retiring: 1, refreshing: false });
    release();
    expect(await slow).toEqual(['a', 1]);
    await swap;
    expect(log).toEqual(['slow done on a', 'dispose a']);
    expect(b.disposed).toBe(false);
    expect(live.stats()).toEqual({ version: 2, inFlight: 0, retiring: 0, refreshing: false });
    await live.close();
    expect(b.disposed).toBe(true);
  });

  it('frees at once when nothing is in flight, and a failed call still releases its value', async () => {
    const log: string[] = [];
    const live = new Live(new Resource('a', log));
    expect(await codeOf(live.use(() => Promise.reject(new QuorumError('ERR_ARG', 'bad'))))).toBe('ERR_ARG');
    await live.swap(new Resource('b', log));
    expect(log).toEqual(['dispose a']);
    await live.close();
  });

  it('refresh builds in the background, one at a time; a failed build changes nothing', async () => {
    const log: string[] = [];
    const live = new Live(new Resource('a', log));
    let finish!: () => void;
    const building = live.refresh(async () => {
      await new Promise<void>((r) => (finish = r));
      return new Resource('b', log);
    });
    await sleep(1);
    expect(live.stats().refreshing).toBe(true);
    expect(await live.use((v) => v.name)).toBe('a'); // the old value serves while the next one builds
    expect(await codeOf(live.refresh(() => new Resource('c', log)))).toBe('ERR_STATE');
    finish();
    expect(await building).toBe(2);
    expect(await codeOf(live.refresh(() => Promise.reject(new QuorumError('ERR_IO', 'no such directory'))))).toBe('ERR_IO');
    expect(live.version).toBe(2);
    expect(await live.use((v) => v.name)).toBe('b');
    expect(log).toEqual(['dispose a']);
    await live.close();
  });

  it('close waits for calls in flight; afterwards use, swap and refresh are ERR_DISPOSED', async () => {
    const log: string[] = [];
    const live = new Live(new Resource('a', log));
    const slow = live.use(async (v) => {
      await sleep(20);
      return v.disposed;
    });
    const closing = live.close();
    expect(await codeOf(live.use((v) => v))).toBe('ERR_DISPOSED');
    expect(await slow).toBe(false);
    await closing;
    expect(log).toEqual(['dispose a']);
    await live.close(); // again: nothing more
    const spare = new Resource('s', log);
    expect(await codeOf(live.swap(spare))).toBe('ERR_DISPOSED');
    expect(spare.disposed).toBe(false); // a refused value stays the caller's
    expect(await codeOf(live.refresh(() => spare))).toBe('ERR_DISPOSED');
    expect(await codeOf(() => new Live(1, { dispose: 3 as never }))).toBe('ERR_ARG');
    expect(await codeOf(() => new Live(1, { bogus: 1 } as never))).toBe('ERR_ARG');
    expect(await codeOf(live.use(undefined as never))).toBe('ERR_ARG');
  });

  it('a custom dispose, and a value built after close is freed', async () => {
    const freed: number[] = [];
    const live = new Live(1, { dispose: (v) => void freed.push(v) });
    let finish!: () => void;
    const building = live.refresh(async () => {
      await new Promise<void>((r) => (finish = r));
      return 2;
    });
    await sleep(1);
    await live.close();
    finish();
    expect(await codeOf(building)).toBe('ERR_DISPOSED');
    expect(freed).toEqual([1, 2]);
  });

  it('swaps a DenseIndex under concurrent searches: every search answers from one whole index', async () => {
    const dim = 8;
    const make = (offset: number) => {
      const idx = DenseIndex.create({ dim, factory: 'Flat', mips: 'inner-product' });
      // Row i is the unit vector e_(i % dim) scaled by i + 1, ids offset: the top hit of e_j is the largest row of j.
      const n = 64;
      const data = new Float32Array(n * dim);
      for (let i = 0; i < n; i++) data[i * dim + (i % dim)] = i + 1;
      idx.addSync(Tensor.from(data, [n, dim]), BigInt64Array.from({ length: n }, (_, i) => BigInt(offset + i)));
      return idx;
    };
    const live = new Live(make(0));
    const q = Tensor.from(Float32Array.from({ length: dim }, (_, j) => (j === 3 ? 1 : 0)), [1, dim]);
    const searches: Array<Promise<bigint>> = [];
    for (let round = 0; round < 40; round++) {
      searches.push(live.use(async (idx) => (await idx.search(q, 1)).ids[0]!));
      if (round % 10 === 5) void live.swap(make(1000 * live.version));
    }
    const top = await Promise.all(searches);
    // Row 59 is the largest multiple-of-8-plus-3 below 64: id 59 plus the index's offset.
    for (const id of top) expect([59n, 1059n, 2059n, 3059n, 4059n]).toContain(id);
    expect(new Set(top).size).toBeGreaterThan(1);
    await live.close();
  });
});
