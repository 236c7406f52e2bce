import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { QuorumError, SparseIndex, setThreads, capabilities } from '../lib/index.js';
import { code, rng } from './helpers.js';

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

/** The k best documents any query term reaches, by score descending then id ascending. */
function bruteTopK(q: Row, docs: Row[], ids: BigInt64Array, k: number) {
  return docs
    .map((d, i) => ({ id: ids[i] as bigint, ...dot(q, d) }))
    .filter((x) => x.touched)
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
    .slice(0, k);
}

describe('SparseIndex', () => {
  for (const algorithm of ['taat', 'maxscore'] as const)
  it(`${algorithm}: matches brute force on random data (repeated terms add up, ties by id, unreached documents absent)`, async () => {
    const docs = randomRows(300, 60, 12, 1);
    const ids = BigInt64Array.from(docs, (_, i) => BigInt(1000 - i)); // ids not in insertion order
    const index = new SparseIndex();
    index.addSync(ids.subarray(0, 150), docs.slice(0, 150));
    await index.add(ids.subarray(150), docs.slice(150));
    expect(index.size).toBe(300);
    const queries = randomRows(25, 70, 5, 2); // some terms beyond the vocabulary
    const k = 20;
    const got = index.searchSync(queries, k, { algorithm });
    expect([got.rows, got.k]).toEqual([25, k]);
    queries.forEach((q, row) => {
      const want = bruteTopK(q, docs, ids, k);
      const hits = got.hits(row);
      expect(hits.map((h) => h.id)).toEqual(want.map((w) => w.id));
      hits.forEach((h, j) => expect(h.score).toBeCloseTo(want[j]!.score, 4));
      for (let j = want.length; j < k; j++) {
        expect(got.ids[row * k + j]).toBe(-1n);
        expect(got.scores[row * k + j]).toBe(-Infinity);
      }
    });
  });

  it('maxscore equals brute force with negative weights, repeated query terms and every k', () => {
    const r = (seed: number) => randomRows(200, 40, 10, seed).map((row) => row.map((e, j) => ({ ...e, value: j % 3 === 0 ? -e.value : e.value })));
    const docs = r(7);
    const ids = BigInt64Array.from(docs, (_, i) => BigInt(i * 7 % 200));
    const index = new SparseIndex();
    index.addSync(ids, docs);
    const queries = r(8).slice(0, 30).map((q) => [...q, ...q.slice(0, 2)]); // repeated terms add up
    for (const k of [1, 5, 50, 250]) {
      const got = index.searchSync(queries, k, { algorithm: 'maxscore' });
      queries.forEach((q, row) => {
        const want = bruteTopK(q, docs, ids, k);
        const hits = got.hits(row);
        expect(hits.length).toBe(want.length);
        // Scores equal up to f32 summation order; ids equal wherever the scores are not within rounding.
        hits.forEach((h, j) => expect(h.score).toBeCloseTo(want[j]!.score, 3));
        hits.forEach((h, j) => {
          const near = want.filter((w) => Math.abs(w.score - h.score) < 1e-3).map((w) => w.id);
          if (near.length === 1) expect(h.id).toBe(want[j]!.id);
        });
      });
    }
    expect(code(() => index.searchSync(queries, 3, { algorithm: 'wand' as never }))).toBe('ERR_ARG');
  });

  it('an empty index returns only padding; k larger than the index pads', () => {
    for (const algorithm of ['taat', 'maxscore'] as const) {
      const index = new SparseIndex();
      const r = index.searchSync([[{ index: 1, value: 1 }]], 3, { algorithm });
      expect(Array.from(r.ids)).toEqual([-1n, -1n, -1n]);
      index.addSync([7], [[{ index: 1, value: 2 }]]);
      const s = index.searchSync([[{ index: 1, value: 1.5 }], [], [{ index: 99, value: 1 }]], 4, { algorithm });
      expect(s.hits(0)).toEqual([{ id: 7n, score: 3 }]);
      expect(s.hits(1)).toEqual([]);
      expect(s.hits(2)).toEqual([]);
    }
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

describe('SparseIndex persistence', () => {
  const dir = mkdtempSync(join(tmpdir(), 'quorum-sparse-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const docs = randomRows(120, 40, 6, 5);
  const ids = BigInt64Array.from(docs, (_, i) => BigInt(i * 7 + 50));
  const queries = randomRows(6, 40, 4, 6);

  function built(): SparseIndex {
    const index = new SparseIndex();
    index.addSync(ids, docs);
    return index;
  }

  it('round-trips through a file (async and sync) and a buffer with identical results', async () => {
    const index = built();
    const want = index.searchSync(queries, 10);
    const path = join(dir, 'a.qsi');
    await index.save(path);
    expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]); // no temporary file left
    for (const loaded of [await SparseIndex.load(path), SparseIndex.loadSync(path), SparseIndex.fromBuffer(index.toBuffer())]) {
      expect([loaded.size, loaded.postings, loaded.vocab]).toEqual([index.size, index.postings, index.vocab]);
      const got = loaded.searchSync(queries, 10);
      expect(Array.from(got.ids)).toEqual(Array.from(want.ids));
      expect(Array.from(got.scores)).toEqual(Array.from(want.scores));
      // MaxScore's per-term bounds come back with the postings.
      const pruned = loaded.searchSync(queries, 10, { algorithm: 'maxscore' });
      expect(Array.from(pruned.ids)).toEqual(Array.from(index.searchSync(queries, 10, { algorithm: 'maxscore' }).ids));
    }
    index.saveSync(path); // overwrite in place
    expect(SparseIndex.loadSync(path).size).toBe(120);
    const empty = SparseIndex.fromBuffer(new SparseIndex().toBuffer());
    expect(empty.size).toBe(0);
  });

  it('corrupt, truncated, foreign and missing files give ERR_FORMAT / ERR_IO, never a crash', async () => {
    const bytes = built().toBuffer();
    const cases: Array<[string, Uint8Array]> = [
      ['truncated', bytes.subarray(0, bytes.length - 9)],
      ['cut to the header', bytes.subarray(0, 20)],
      ['empty', new Uint8Array(0)],
      ['foreign', new TextEncoder().encode('{"not": "an index"}')],
    ];
    const flipped = Uint8Array.from(bytes);
    flipped[60] = (flipped[60] as number) ^ 0x40;
    cases.push(['one flipped bit', flipped]);
    for (let i = 0; i < 40; i++) {
      const c = Uint8Array.from(bytes);
      c[(i * 7919) % c.length] = (c[(i * 7919) % c.length] as number) ^ (1 + (i % 255));
      cases.push([`random corruption ${i}`, c]);
    }
    for (const [name, data] of cases) {
      expect(() => SparseIndex.fromBuffer(data), name).toThrow(expect.objectContaining({ code: 'ERR_FORMAT' }));
      const path = join(dir, 'bad.qsi');
      writeFileSync(path, data);
      await expect(SparseIndex.load(path), name).rejects.toMatchObject({ code: 'ERR_FORMAT' });
    }
    await expect(SparseIndex.load(join(dir, 'missing.qsi'))).rejects.toMatchObject({ code: 'ERR_IO' });
    await expect(built().save(join(dir, 'no-such-dir', 'x.qsi'))).rejects.toMatchObject({ code: 'ERR_IO' });
    // A failed load reads, never writes: the last damaged file is still what was written.
    expect(Buffer.compare(readFileSync(join(dir, 'bad.qsi')), Buffer.from(cases.at(-1)![1]))).toBe(0);
  });
});

describe('SparseIndex and Bm25Index filters inside the search', () => {
  it.each(['taat', 'maxscore', 'auto'] as const)('%s: exactly the brute-force top-k of the allowed documents', async (algorithm) => {
    const docs = randomRows(600, 40, 6, 21);
    const ids = BigInt64Array.from({ length: docs.length }, (_, i) => BigInt(100 + 7 * i));
    const index = new SparseIndex();
    await index.add(ids, docs);
    const queries = randomRows(12, 40, 4, 22);
    const allowedRows = docs.map((_, i) => i).filter((i) => i % 9 === 2);
    const allowed = BigInt64Array.from([...allowedRows.map((i) => ids[i]!), 5n]);  // 5n: not held, ignored
    const sub = allowedRows.map((i) => docs[i]!);
    const subIds = BigInt64Array.from(allowedRows, (i) => ids[i]!);
    for (const k of [3, 200]) {
      const r = await index.search(queries, k, { algorithm, allowedIds: allowed });
      const s = index.searchSync(queries, k, { algorithm, allowedIds: Array.from(allowed) });
      queries.forEach((q, row) => {
        const want = bruteTopK(q, sub, subIds, k);
        for (const got of [r.hits(row), s.hits(row)]) {
          expect(got.map((h) => h.id), `${algorithm} k ${k} row ${row}`).toEqual(want.map((w) => w.id));
          got.forEach((h, j) => expect(h.score).toBeCloseTo(want[j]!.score, 4));
        }
      });
    }
    expect(code(() => index.searchSync(queries, 3, { allowedIds: 'x' as never }))).toBe('ERR_ARG');
    expect(code(() => index.searchSync(queries, 3, { allowedIds: [1.5] }))).toBe('ERR_RANGE');
    index.dispose();
  });

  it('Bm25Index takes the allowed document rows (as compileFilter gives them)', async () => {
    const { Bm25Index, MetadataTable, compileFilter } = await import('../lib/index.js');
    const texts = ['the cat sat on the mat', 'a cat and a dog', 'dogs chase cats', 'the mat is red', 'red cats and red dogs'];
    const bm25 = await Bm25Index.build(texts.map((text, i) => ({ id: `d${i}`, text })));
    const table = MetadataTable.from(texts.map((_, i) => ({ lang: i % 2 ? 'de' : 'en' })));
    const rows = compileFilter({ field: 'lang', eq: 'en' }, table);   // rows 0, 2, 4
    const all = (await bm25.search(['cat dog'], 5))[0]!;
    const filtered = (await bm25.search(['cat dog'], 5, { rows }))[0]!;
    expect(filtered.map((h) => h.id)).toEqual(all.filter((h) => ['d0', 'd2', 'd4'].includes(h.id)).map((h) => h.id));
    expect(bm25.searchSync(['cat dog'], 5, { rows: [] })[0]).toEqual([]);
    expect(code(() => bm25.searchSync(['cat'], 5, { rows: 'x' as never }))).toBe('ERR_ARG');
  });
});

describe('SparseIndex deletes and updates', () => {
  it('removed documents never return; results equal brute force over the live ones, before and after compaction and a save', async () => {
    const docs = randomRows(300, 120, 8, 71);
    const ids = BigInt64Array.from({ length: 300 }, (_, i) => BigInt(1000 + 7 * i));
    const index = new SparseIndex();
    index.addSync(ids, docs);
    const queries = randomRows(12, 120, 5, 72);
    const live = new Map<bigint, Row>(Array.from(ids, (id, i) => [id, docs[i]!]));
    const check = (got: SparseIndex, stage: string) => {
      const keys = [...live.keys()];
      for (const algorithm of ['taat', 'maxscore'] as const) {
        const top = got.searchSync(queries, 10, { algorithm });
        queries.forEach((q, r) => {
          const want = bruteTopK(q, keys.map((k) => live.get(k)!), BigInt64Array.from(keys), 10);
          expect(top.hits(r).map((h) => h.id), `${stage} ${algorithm} row ${r}`).toEqual(want.map((w) => w.id));
        });
      }
      expect(got.size).toBe(live.size);
    };
    // 60 of 300 removed: under a quarter, the postings stay (searches skip them).
    const gone = Array.from(ids.subarray(0, 60));
    expect(index.removeSync([...gone, gone[0]!, 5n])).toBe(60);
    gone.forEach((id) => live.delete(id));
    check(index, 'removed');
    const postingsBefore = index.postings;
    // Filters skip removed documents too.
    const allowed = [...gone.slice(0, 20), ...Array.from(ids.subarray(60, 100))];
    for (const h of index.searchSync(queries, 10, { allowedIds: allowed }).hits(0)) expect(live.has(h.id)).toBe(true);
    // An update: a removed id comes back with a new document.
    const fresh: Row = [{ index: 3, value: 9 }];
    await index.add([gone[0]!], [fresh]);
    live.set(gone[0]!, fresh);
    check(index, 'updated');
    // A save writes the live documents only.
    const copy = SparseIndex.fromBuffer(index.toBuffer());
    check(copy, 'loaded');
    expect(copy.postings).toBeLessThan(postingsBefore);
    // Past a quarter removed, the postings are rebuilt without them.
    const more = Array.from(ids.subarray(60, 120));
    expect(await index.remove(more)).toBe(60);
    more.forEach((id) => live.delete(id));
    expect(index.postings).toBeLessThan(postingsBefore);
    check(index, 'compacted');
    expect(code(() => index.removeSync('x' as never))).toBe('ERR_ARG');
    expect(code(() => index.removeSync([1.5]))).toBe('ERR_RANGE');
  });

  it('relabel renumbers the live documents (rows after removals), atomically; errors change nothing', async () => {
    const docs = randomRows(40, 30, 5, 81);
    const index = new SparseIndex();
    index.addSync(Array.from({ length: 40 }, (_, i) => i), docs);
    index.removeSync([3, 17]);
    const kept = Array.from({ length: 40 }, (_, i) => i).filter((i) => i !== 3 && i !== 17);
    index.relabel(kept, kept.map((_, i) => i));
    const queries = randomRows(6, 30, 4, 82);
    const top = index.searchSync(queries, 8);
    queries.forEach((q, r) => {
      const want = bruteTopK(q, kept.map((i) => docs[i]!), BigInt64Array.from(kept, (_, i) => BigInt(i)), 8);
      expect(top.hits(r).map((h) => h.id)).toEqual(want.map((w) => w.id));
    });
    const copy = SparseIndex.fromBuffer(index.toBuffer());
    expect(copy.searchSync(queries, 8).hits(0)).toEqual(top.hits(0));
    // A swap of two ids is one renumbering, not a collision midway.
    index.relabel([0, 1], [1, 0]);
    expect(index.searchSync(queries, 8).hits(0).map((h) => h.id)).toEqual(top.hits(0).map((h) => (h.id === 0n ? 1n : h.id === 1n ? 0n : h.id)));
    index.relabel([0, 1], [1, 0]);
    for (const [from, to, want] of [
      [[39], [0], 'ERR_ARG'],   // 39 is no longer an id (38 is the last)
      [[0, 0], [50, 51], 'ERR_ARG'],
      [[0], [-2], 'ERR_RANGE'],
      [[0], [1], 'ERR_DUPLICATE_ID'],
      [[0, 1], [5], 'ERR_SHAPE'],
    ] as const) expect(code(() => index.relabel([...from], [...to])), `${from} -> ${to}`).toBe(want);
    expect(index.searchSync(queries, 8).hits(0)).toEqual(top.hits(0));
  });
});
