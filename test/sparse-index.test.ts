import { describe, expect, it } from 'vitest';

import { QuorumError, SparseIndex, setThreads, capabilities } from '../lib/index.js';
import { rng } from './helpers.js';

type Row = Array<{ index: number; value: number }>;

function randomRows(n: number, vocab: number, perRow: number, seed: number): Row[] {
  const r = rng(seed);
  return Array.from({ length: n }, () =>
    Array.from({ length: 1 + Math.floor(((r() + 1) / 2) * perRow) }, () => ({ index: Math.floor(((r() + 1) / 2) * vocab), value: Math.round((r() + 1) * 8) / 4 })),
  );
}

function dot(q: Row, d: Row): { score: number; touched: boolean } {
  let score = 0;
  let touched = false;
  for (const a of q)
    for (const b of d)
      if (a.index === b.index) {
        score += a.value * b.value;
        touched = true;
      }
  return { score, touched };
}

describe('SparseIndex', () => {
  it('matches brute force on random data (repeated terms add up, ties by id, unreached documents absent)', async () => {
    const docs = randomRows(300, 60, 12, 1);
    const ids = BigInt64Array.from(docs, (_, i) => BigInt(1000 - i)); // ids not in insertion order
    const index = new SparseIndex();
    index.addSync(ids.subarray(0, 150), docs.slice(0, 150));
    await index.add(ids.subarray(150), docs.slice(150));
    expect(index.size).toBe(300);
    const queries = randomRows(25, 70, 5, 2); // some terms beyond the vocabulary
    const k = 20;
    const got = index.searchSync(queries, k);
    expect([got.rows, got.k]).toEqual([25, k]);
    queries.forEach((q, row) => {
      const want = docs
        .map((d, i) => ({ id: ids[i] as bigint, ...dot(q, d) }))
        .filter((x) => x.touched)
        .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
        .slice(0, k);
      const hits = got.hits(row);
      expect(hits.map((h) => h.id)).toEqual(want.map((w) => w.id));
      hits.forEach((h, j) => expect(h.score).toBeCloseTo(want[j]!.score, 4));
      for (let j = want.length; j < k; j++) {
        expect(got.ids[row * k + j]).toBe(-1n);
        expect(got.scores[row * k + j]).toBe(-Infinity);
      }
    });
  });

  it('an empty index returns only padding; k larger than the index pads', () => {
    const index = new SparseIndex();
    const r = index.searchSync([[{ index: 1, value: 1 }]], 3);
    expect(Array.from(r.ids)).toEqual([-1n, -1n, -1n]);
    index.addSync([7], [[{ index: 1, value: 2 }]]);
    const s = index.searchSync([[{ index: 1, value: 1.5 }], []], 4);
    expect(s.hits(0)).toEqual([{ id: 7n, score: 3 }]);
    expect(s.hits(1)).toEqual([]);
  });

  it('rejects bad input with a code and keeps what was stored', () => {
    const index = new SparseIndex();
    index.addSync([1], [[{ index: 0, value: 1 }]]);
    const bad: Array<[() => unknown, string]> = [
      [() => index.addSync([2], [[{ index: -1, value: 1 }]]), 'ERR_RANGE'],
      [() => index.addSync([2], [[{ index: 3, value: NaN }]]), 'ERR_NONFINITE'],
      [() => index.addSync([2, 3], [[{ index: 3, value: 1 }]]), 'ERR_SHAPE'],
      [() => index.searchSync([[{ index: 0, value: 1 }]], 0), 'ERR_RANGE'],
      [() => index.searchSync([[{ index: -5, value: 1 }]], 2), 'ERR_RANGE'],
    ];
    for (const [fn, code] of bad) {
      expect(fn).toThrow(QuorumError);
      expect(fn).toThrow(expect.objectContaining({ code }));
    }
    expect(index.size).toBe(1);
    expect(index.searchSync([[{ index: 0, value: 1 }]], 1).hits(0)).toEqual([{ id: 1n, score: 1 }]);
  });

  it('many concurrent async adds and searches', async () => {
    const before = capabilities().threads;
    setThreads(2);
    try {
      const index = new SparseIndex();
      const docs = randomRows(400, 50, 8, 3);
      const work: Array<Promise<unknown>> = [];
      for (let b = 0; b < 40; b++) {
        work.push(index.add(BigInt64Array.from({ length: 10 }, (_, i) => BigInt(b * 10 + i)), docs.slice(b * 10, b * 10 + 10)));
        work.push(index.search(randomRows(4, 50, 4, 100 + b), 5));
      }
      await Promise.all(work);
      expect(index.size).toBe(400);
      // After all adds, results equal brute force.
      const q = randomRows(3, 50, 4, 9);
      const got = await index.search(q, 5);
      q.forEach((row, r) => {
        const best = docs
          .map((d, i) => ({ id: BigInt(i), ...dot(row, d) }))
          .filter((x) => x.touched)
          .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))[0];
        expect(got.hits(r)[0]?.id).toBe(best?.id);
      });
    } finally {
      setThreads(before);
    }
  });
});
