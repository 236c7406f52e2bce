import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { DenseIndex, type Mips, QuorumError, Tensor, capabilities, setThreads } from '../lib/index.js';
import { faissBindings } from '../lib/bindings/faiss_addon.js';
import { twoProcessesMapping } from './fixtures/shared-pages.js';
import { asyncCode, code, randomF32 } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'quorum-dense-index-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Exact top-k by inner product in doubles, ties by id: the reference every index is checked against. */
function bruteForce(x: Float32Array, ids: BigInt64Array, q: Float32Array, d: number, k: number) {
  const n = ids.length;
  const rows = q.length / d;
  const out: Array<Array<{ id: bigint; score: number }>> = [];
  for (let r = 0; r < rows; r++) {
    const all = Array.from({ length: n }, (_, i) => {
      let s = 0;
      for (let j = 0; j < d; j++) s += (q[r * d + j] as number) * (x[i * d + j] as number);
      return { id: ids[i] as bigint, score: s };
    });
    all.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
    out.push(all.slice(0, k));
  }
  return out;
}

function dotOf(x: Float32Array, ids: BigInt64Array, q: Float32Array, d: number, row: number, id: bigint): number {
  const i = ids.indexOf(id);
  let s = 0;
  for (let j = 0; j < d; j++) s += (q[row * d + j] as number) * (x[i * d + j] as number);
  return s;
}

// Vectors with varied norms (as real embeddings have), so that inner product and cosine rankings differ.
function corpus(n: number, d: number, seed: number): Float32Array {
  const x = randomF32(n * d, seed);
  for (let i = 0; i < n; i++) {
    const scale = 0.5 + ((i * 7919) % 100) / 50;
    for (let j = 0; j < d; j++) x[i * d + j] = (x[i * d + j] as number) * scale;
  }
  return x;
}

const idsFor = (n: number, base = 5000) => BigInt64Array.from({ length: n }, (_, i) => BigInt(base + 3 * i));

describe('DenseIndex', () => {
  const d = 16;
  const n = 600;
  const x = corpus(n, d, 1);
  const ids = idsFor(n);
  const q = randomF32(12 * d, 2);

  it('Flat matches brute force from every input form, Sync and async', async () => {
    const ref = bruteForce(x, ids, q, d, 10);
    const a = DenseIndex.create({ dim: d });
    a.addSync(x.subarray(0, 300 * d), ids.subarray(0, 300));
    await a.add(Tensor.wrap(x.subarray(300 * d), [300, d], 'f32'), Array.from(ids.subarray(300), Number));
    expect(a.size).toBe(n);
    const rowsInput = Array.from({ length: 12 }, (_, r) => Array.from(q.subarray(r * d, (r + 1) * d)));
    for (const top of [a.searchSync(q, 10), await a.search(rowsInput, 10)]) {
      expect(top.rows).toBe(12);
      expect(top.k).toBe(10);
      for (let r = 0; r < 12; r++) {
        const hits = top.hits(r);
        expect(hits.map((h) => h.id)).toEqual(ref[r]!.map((h) => h.id));
        hits.forEach((h, j) => expect(h.score).toBeCloseTo(ref[r]![j]!.score, 4));
      }
    }
  });

  it('orders ties by id and pads results beyond the index with id -1 and -Infinity', () => {
    const v = new Float32Array([1, 0, 1, 0, 0, 1, 1, 0]); // ids 9 and 4 and 7 tie on query [1, 0]
    const index = DenseIndex.create({ dim: 2 });
    index.addSync(v, [9n, 4n, 8n, 7n]);
    const top = index.searchSync(new Float32Array([1, 0]), 6);
    expect(Array.from(top.ids)).toEqual([4n, 7n, 9n, 8n, -1n, -1n]);
    expect(Array.from(top.scores)).toEqual([1, 1, 1, 0, -Infinity, -Infinity]);
    expect(top.hits(0)).toHaveLength(4);
    const empty = DenseIndex.create({ dim: 2, factory: 'HNSW8' }).searchSync(new Float32Array([1, 0, 0, 1]), 3);
    expect(Array.from(empty.ids)).toEqual([-1n, -1n, -1n, -1n, -1n, -1n]);
    expect(empty.hits(1)).toEqual([]);
  });

  for (const mips of ['inner-product', 'l2'] as Mips[]) {
    it(`HNSW with mips '${mips}' finds the true neighbours and returns true inner products`, () => {
      const index = DenseIndex.create({ dim: d, factory: 'HNSW16', mips, efConstruction: 80 });
      index.addSync(x, ids);
      expect(index.info.mips).toBe(mips);
      if (mips === 'l2') {
        let phi = 0;
        for (let i = 0; i < n; i++) {
          let s = 0;
          for (let j = 0; j < d; j++) s += (x[i * d + j] as number) ** 2;
          phi = Math.max(phi, s);
        }
        expect(index.info.phi).toBeCloseTo(phi, 3);
      }
      const ref = bruteForce(x, ids, q, d, 10);
      const top = index.searchSync(q, 10, { efSearch: 128 });
      let found = 0;
      for (let r = 0; r < 12; r++) {
        const truth = new Set(ref[r]!.map((h) => h.id));
        for (const h of top.hits(r)) {
          if (truth.has(h.id)) found++;
          expect(h.score).toBeCloseTo(dotOf(x, ids, q, d, r, h.id), 3);
        }
      }
      expect(found / 120).toBeGreaterThanOrEqual(0.95);
      // efSearch below k still returns k results.
      expect(index.searchSync(q, 50, { efSearch: 4 }).hits(0)).toHaveLength(50);
      expect(index.size).toBe(n);
      expect(index.info.supportsRemove).toBe(true);
    });

    it(`HNSW (mips '${mips}') removes through tombstones: removed ids never return, re-adds and updates work, compaction and saves keep the results`, async () => {
      // phi (l2): the largest squared norm of the corpus and of the re-added vectors below, no larger (a loose phi
      // flattens the transform's geometry and costs the graph recall).
      const sq = (v: Float32Array) => v.reduce((a, b) => a + b * b, 0);
      let phi = 0;
      for (let i = 0; i < n; i++) phi = Math.max(phi, sq(x.subarray(i * d, (i + 1) * d)));
      for (let r = 0; r < 4; r++) phi = Math.max(phi, 25 * sq(q.subarray(r * d, (r + 1) * d)));
      const index = DenseIndex.create({ dim: d, factory: 'HNSW16', mips, efConstruction: 80, phi: mips === 'l2' ? phi * 1.001 : undefined });
      index.addSync(x, ids);
      // Live vectors: what the brute-force reference searches after each change.
      const live = new Map<bigint, Float32Array>(Array.from(ids, (id, i) => [id, x.subarray(i * d, (i + 1) * d)]));
      const check = (top: { hits(r: number): Array<{ id: bigint; score: number }> }, stage: string) => {
        const keys = [...live.keys()];
        const flat = new Float32Array(keys.length * d);
        keys.forEach((k, i) => flat.set(live.get(k)!, i * d));
        const ref = bruteForce(flat, BigInt64Array.from(keys), q, d, 10);
        let found = 0;
        for (let r = 0; r < 12; r++) {
          const truth = new Set(ref[r]!.map((h) => h.id));
          for (const h of top.hits(r)) {
            expect(live.has(h.id), `removed id ${h.id} returned`).toBe(true);
            if (truth.has(h.id)) found++;
          }
        }
        expect(found / 120, stage).toBeGreaterThanOrEqual(0.95);
      };
      // 100 of 600 removed (under a quarter: tombstones stay).
      const gone = Array.from(ids.subarray(0, 100));
      expect(index.removeSync([...gone, gone[0]!, 123456789n])).toBe(100);
      gone.forEach((id) => live.delete(id));
      expect(index.size).toBe(500);
      check(index.searchSync(q, 10, { efSearch: 256 }), 'tombstones');
      expect(code(() => index.reconstructSync([gone[3]!]))).toBe('ERR_NOT_FOUND');
      // Filtered searches skip tombstones too (the filter names removed and live ids).
      const allowed = [...gone.slice(0, 50), ...Array.from(ids.subarray(100, 150))];
      for (const h of index.searchSync(q, 10, { allowedIds: allowed }).hits(0)) expect(live.has(h.id)).toBe(true);
      // A removed id added again with a new vector (an update): 5 times the query, so it is each query's best hit
      // (5 |q|^2 is above |q| |x| for every stored x here).
      for (let r = 0; r < 4; r++) {
        const v = q.subarray(r * d, (r + 1) * d).map((a) => 5 * a);
        index.addSync(v, [gone[r]!]);
        live.set(gone[r]!, v);
      }
      const top = index.searchSync(q, 10, { efSearch: 256 });
      for (let r = 0; r < 4; r++) expect(top.hits(r)[0]!.id).toBe(gone[r]);
      check(top, 're-added');
      // A save writes no tombstones: the loaded index holds the live vectors, with the same results.
      const loaded = DenseIndex.fromBuffer(index.toBuffer());
      expect(loaded.size).toBe(504);
      check(loaded.searchSync(q, 10, { efSearch: 256 }), 'loaded');
      expect(await index.compact()).toBe(0); // the save compacted already
      // Past a quarter of the nodes, a remove compacts on its own.
      const more = Array.from(ids.subarray(100, 260));
      expect(await index.remove(more)).toBe(160);
      more.forEach((id) => live.delete(id));
      expect(index.size).toBe(344);
      expect(await index.compact()).toBe(0);
      check(index.searchSync(q, 10, { efSearch: 256 }), 'compacted');
      expect(await index.remove(ids.subarray(300, 310))).toBe(10);
      expect(await index.compact()).toBe(10);
      expect(index.size).toBe(334);
    });
  }

  it('HNSW over SQ codes cannot remove (compaction needs exact vectors)', () => {
    const sq = DenseIndex.create({ dim: d, factory: 'HNSW8_SQ8' });
    sq.trainSync(x);
    sq.addSync(x, ids);
    expect(sq.info.supportsRemove).toBe(false);
    expect(code(() => sq.removeSync([ids[0]!]))).toBe('ERR_UNSUPPORTED');
    expect(sq.size).toBe(n);
  });

  it("defaults to mips 'inner-product' and reports the search settings", () => {
    const h = DenseIndex.create({ dim: 4, factory: 'HNSW8', efSearch: 40 });
    expect(h.info).toMatchObject({ mips: 'inner-product', efSearch: 40, supportsRemove: true });
    expect(DenseIndex.create({ dim: 4 }).info).toMatchObject({ mips: 'inner-product', supportsRemove: true });
    expect(DenseIndex.create({ dim: 4, factory: 'IVF4,Flat', nprobe: 3 }).info).toMatchObject({ nprobe: 3, trained: false });
    h.setSearchDefaults({ efSearch: 90 });
    expect(h.info.efSearch).toBe(90);
    expect(DenseIndex.fromBuffer(h.toBuffer()).info.efSearch).toBe(90);
    expect(code(() => h.setSearchDefaults({ nprobe: 4 }))).toBe('ERR_ARG');
    expect(code(() => h.setSearchDefaults({ efSearch: -1 }))).toBe('ERR_RANGE');
  });

  it("'l2' refuses a vector longer than phi (it would rank wrong) and adds nothing from that batch", () => {
    const index = DenseIndex.create({ dim: 2, factory: 'HNSW8', mips: 'l2' });
    index.addSync(new Float32Array([1, 0, 0, 2]), [1n, 2n]);
    expect(index.info.phi).toBeCloseTo(4, 6);
    expect(code(() => index.addSync(new Float32Array([0.5, 0, 3, 0]), [3n, 4n]))).toBe('ERR_RANGE');
    expect(index.size).toBe(2);
    const roomy = DenseIndex.create({ dim: 2, factory: 'HNSW8', mips: 'l2', phi: 100 });
    roomy.addSync(new Float32Array([1, 0]), [1n]);
    roomy.addSync(new Float32Array([0, 9]), [2n]);
    const top = roomy.searchSync(new Float32Array([0, 1]), 2);
    expect(Array.from(top.ids)).toEqual([2n, 1n]);
    expect(top.scores[0]).toBeCloseTo(9, 4);
    expect(code(() => DenseIndex.create({ dim: 2, phi: 3 }))).toBe('ERR_ARG');
  });

  it('IVF: needs training, searches exactly with nprobe = nlist, removes, reconstructs and re-adds', async () => {
    const index = DenseIndex.create({ dim: d, factory: 'IVF8,Flat' });
    expect(index.info.trained).toBe(false);
    expect(code(() => index.addSync(x, ids))).toBe('ERR_STATE');
    await index.train(x);
    expect(code(() => index.trainSync(x))).toBe('ERR_STATE');
    await index.add(x, ids);
    const ref = bruteForce(x, ids, q, d, 10);
    const top = index.searchSync(q, 10, { nprobe: 8 });
    for (let r = 0; r < 12; r++) expect(top.hits(r).map((h) => h.id)).toEqual(ref[r]!.map((h) => h.id));
    // nprobe 1 looks at one list only: fewer true neighbours, never more.
    expect(index.searchSync(q, 10, { nprobe: 1 }).hits(0).length).toBeGreaterThan(0);

    const gone = [ids[0]!, ids[5]!, 123456789n, ids[5]!];
    expect(await index.remove(gone)).toBe(2);
    expect(index.size).toBe(n - 2);
    const after = index.searchSync(q, 50, { nprobe: 8 });
    for (const id of after.ids) expect(id === ids[0] || id === ids[5]).toBe(false);
    expect(code(() => index.reconstructSync(ids[0]!))).toBe('ERR_NOT_FOUND');
    const back = await index.reconstruct([ids[7]!, ids[1]!]);
    expect(Array.from(back)).toEqual([...x.subarray(7 * d, 8 * d), ...x.subarray(d, 2 * d)]);
    index.addSync(x.subarray(0, d), [ids[0]!]); // a removed id can come back
    expect(index.size).toBe(n - 1);
    expect(Array.from(index.reconstructSync(ids[0]!))).toEqual(Array.from(x.subarray(0, d)));
  });

  // These factories call LAPACK (eigen-decomposition, SVD, QR), which the prebuilt module links statically with a
  // stand-in for the one Fortran runtime function it needs (native/index/gfortran_shim.cc).
  it('the transforms that need LAPACK: PCA, random rotation and OPQ train and search', () => {
    // A full-width PCA is a rotation about the mean: reconstruct gives the vector back.
    const pca = DenseIndex.create({ dim: d, factory: 'PCA16,Flat' });
    pca.trainSync(x);
    pca.addSync(x, ids);
    for (const i of [0, 17, 599]) {
      const back = pca.reconstructSync(ids[i]!);
      for (let j = 0; j < d; j++) expect(back[j]).toBeCloseTo(x[i * d + j] as number, 3);
    }
    // A random rotation keeps inner products: the ranking is brute force's.
    const rr = DenseIndex.create({ dim: d, factory: 'RR16,Flat' });
    rr.trainSync(x);
    rr.addSync(x, ids);
    const ref = bruteForce(x, ids, q, d, 10);
    const top = rr.searchSync(q, 10);
    for (let r = 0; r < 12; r++) expect(top.hits(r).map((h) => h.id)).toEqual(ref[r]!.map((h) => h.id));
    // OPQ's rotation comes from an SVD; its codes still reconstruct the vectors roughly.
    const opq = DenseIndex.create({ dim: d, factory: 'OPQ4,PQ4x4' });
    opq.trainSync(x);
    opq.addSync(x, ids);
    let err = 0;
    let norm = 0;
    for (const i of [3, 100, 250]) {
      const back = opq.reconstructSync(ids[i]!);
      for (let j = 0; j < d; j++) {
        err += ((back[j] as number) - (x[i * d + j] as number)) ** 2;
        norm += (x[i * d + j] as number) ** 2;
      }
    }
    expect(err / norm).toBeLessThan(0.5);
    expect(opq.searchSync(q, 5).hits(0)).toHaveLength(5);
    for (const index of [pca, rr, opq]) index.dispose();
  });

  it('Flat and PQ remove and reconstruct by id', () => {
    const flat = DenseIndex.create({ dim: d });
    flat.addSync(x, ids);
    expect(flat.removeSync(ids.subarray(10, 20))).toBe(10);
    expect(flat.size).toBe(n - 10);
    // The ids after the removed ones still map to their own vectors.
    expect(Array.from(flat.reconstructSync(ids[25]!))).toEqual(Array.from(x.subarray(25 * d, 26 * d)));
    // Search agrees with brute force over what is left.
    const keep = Array.from({ length: n }, (_, i) => i).filter((i) => i < 10 || i >= 20);
    const kx = new Float32Array(keep.length * d);
    keep.forEach((i, r) => kx.set(x.subarray(i * d, (i + 1) * d), r * d));
    const kids = BigInt64Array.from(keep, (i) => ids[i]!);
    const top = flat.searchSync(q, 15);
    const ref = bruteForce(kx, kids, q, d, 15);
    for (let r = 0; r < 12; r++) expect(top.hits(r).map((h) => h.id)).toEqual(ref[r]!.map((h) => h.id));
    const pq = DenseIndex.create({ dim: d, factory: 'PQ4x4' });
    pq.trainSync(x);
    pq.addSync(x, ids);
    const approx = pq.reconstructSync(ids[3]!);
    let err = 0;
    let norm = 0;
    for (let j = 0; j < d; j++) {
      err += ((approx[j] as number) - (x[3 * d + j] as number)) ** 2;
      norm += (x[3 * d + j] as number) ** 2;
    }
    expect(err / norm).toBeLessThan(0.5);
  });

  it('rejects bad input with typed errors and keeps what it holds', async () => {
    const index = DenseIndex.create({ dim: 4 });
    index.addSync(new Float32Array(8).fill(1), [1n, 2n]);
    expect(code(() => index.addSync(new Float32Array(8), [3n, 3n]))).toBe('ERR_DUPLICATE_ID');
    expect(code(() => index.addSync(new Float32Array(8), [3n, 2n]))).toBe('ERR_DUPLICATE_ID');
    expect(code(() => index.addSync(new Float32Array(4), [-5n]))).toBe('ERR_RANGE');
    expect(code(() => index.addSync(new Float32Array([1, NaN, 0, 0]), [5n]))).toBe('ERR_NONFINITE');
    expect(code(() => index.addSync(new Float32Array(6), [5n]))).toBe('ERR_SHAPE');
    expect(code(() => index.addSync(new Float32Array(8), [5n]))).toBe('ERR_SHAPE');
    expect(await asyncCode(index.add(new Float32Array(4), [1n]))).toBe('ERR_DUPLICATE_ID');
    expect(index.size).toBe(2);
    expect(code(() => index.searchSync(new Float32Array(4), 0))).toBe('ERR_RANGE');
    expect(code(() => index.searchSync(new Float32Array([Infinity, 0, 0, 0]), 1))).toBe('ERR_NONFINITE');
    expect(code(() => index.searchSync(new Float32Array(4), 1, { efSearch: 10 }))).toBe('ERR_ARG');
    expect(code(() => index.searchSync(new Float32Array(4), 1, { nprobe: 2 }))).toBe('ERR_ARG');
    expect(code(() => index.searchSync(Tensor.zeros([1, 4], 'bf16') as never, 1))).toBe('ERR_DTYPE');
    expect(code(() => index.searchSync(Tensor.zeros([1, 5]), 1))).toBe('ERR_SHAPE');
    expect(code(() => index.reconstructSync([1n, 77n]))).toBe('ERR_NOT_FOUND');
    expect(code(() => DenseIndex.create({ dim: 4, factory: 'NoSuchIndex' }))).toBe('ERR_ARG');
    expect(code(() => DenseIndex.create({ dim: 4, factory: 'IDMap,Flat' }))).toBe('ERR_ARG');
    expect(code(() => DenseIndex.create({ dim: 0 }))).toBe('ERR_RANGE');
    expect(code(() => DenseIndex.create({ dim: 4, efSearch: 8 }))).toBe('ERR_ARG');
    expect(code(() => DenseIndex.create({ dim: 4, factory: 'IVF2,Flat', efConstruction: -1 }))).toBe('ERR_RANGE');
    expect(code(() => DenseIndex.create({ dim: 4, mips: 'cosine' as Mips }))).toBe('ERR_ARG');
    expect(index.size).toBe(2);
    expect(Array.from(index.searchSync(new Float32Array([1, 1, 1, 1]), 5).ids.subarray(0, 2))).toEqual([1n, 2n]);
  });

  it('round-trips through files and Buffers (Flat, HNSW under the L2 transform, IVF + PQ)', async () => {
    const cases: Array<[string, Mips]> = [
      ['Flat', 'inner-product'],
      ['HNSW16', 'l2'],
      ['IVF4,PQ4x4', 'inner-product'],
    ];
    for (const [factory, mips] of cases) {
      const index = DenseIndex.create({ dim: d, factory, mips, ...(factory.startsWith('IVF') ? { nprobe: 3 } : {}) });
      if (!index.info.trained) index.trainSync(x);
      index.addSync(x, ids);
      const before = index.searchSync(q, 10);
      const path = join(dir, `${factory.replace(/\W/g, '_')}.qdx`);
      await index.save(path);
      for (const again of [await DenseIndex.load(path), DenseIndex.loadSync(path), DenseIndex.fromBuffer(index.toBuffer())]) {
        expect(again.info).toEqual(index.info);
        const after = again.searchSync(q, 10);
        expect(Array.from(after.ids)).toEqual(Array.from(before.ids));
        expect(Array.from(after.scores)).toEqual(Array.from(before.scores));
      }
      expect(new Uint8Array(readFileSync(path))).toEqual(new Uint8Array(index.toBuffer()));
    }
    expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
    const empty = DenseIndex.fromBuffer(DenseIndex.create({ dim: 3, factory: 'HNSW8' }).toBuffer());
    expect(empty.size).toBe(0);
    expect(empty.searchSync(new Float32Array(3), 2).hits(0)).toEqual([]);
  });

  it('corrupt, truncated, foreign and missing files give ERR_FORMAT / ERR_IO, never a crash', async () => {
    const index = DenseIndex.create({ dim: d, factory: 'HNSW8' });
    index.addSync(x.subarray(0, 50 * d), ids.subarray(0, 50));
    const bytes = index.toBuffer();
    const cases: Array<[string, Uint8Array]> = [
      ['empty', new Uint8Array(0)],
      ['foreign', new TextEncoder().encode('{"not": "an index"}')],
      ['header only', bytes.subarray(0, 40)],
      ['truncated', bytes.subarray(0, bytes.length - 9)],
      ['one byte short', bytes.subarray(0, bytes.length - 1)],
      ['sparse index magic', new TextEncoder().encode('QSPIDX01' + ' '.repeat(64))],
    ];
    for (let i = 0; i < 20; i++) {
      const c = new Uint8Array(bytes);
      const at = (i * 7919) % c.length;
      c[at] = (c[at] as number) ^ (1 << i % 8);
      cases.push([`bit flip ${i}`, c]);
    }
    for (const [what, b] of cases) {
      expect(code(() => DenseIndex.fromBuffer(b)), what).toBe('ERR_FORMAT');
      const path = join(dir, 'bad.qdx');
      writeFileSync(path, b);
      expect(await asyncCode(DenseIndex.load(path)), what).toBe('ERR_FORMAT');
    }
    expect(await asyncCode(DenseIndex.load(join(dir, 'missing.qdx')))).toBe('ERR_IO');
    expect(code(() => DenseIndex.loadSync(dir))).toBe('ERR_IO');
    expect(await asyncCode(index.save(join(dir, 'no-such-dir', 'x.qdx')))).toBe('ERR_IO');
    expect(existsSync(join(dir, 'no-such-dir'))).toBe(false);
    expect(index.size).toBe(50);
  });

  it('many concurrent async adds and searches', async () => {
    const index = DenseIndex.create({ dim: d, factory: 'HNSW16' });
    await index.add(x.subarray(0, 100 * d), ids.subarray(0, 100));
    const work: Array<Promise<unknown>> = [];
    for (let b = 1; b < 6; b++) work.push(index.add(x.subarray(b * 100 * d, (b + 1) * 100 * d), ids.subarray(b * 100, (b + 1) * 100)));
    for (let s = 0; s < 30; s++)
      work.push(
        index.search(q.subarray((s % 12) * d, ((s % 12) + 1) * d), 5).then((top) => {
          const hits = top.hits(0);
          expect(hits.length).toBe(5);
          for (const h of hits) expect(ids.includes(h.id)).toBe(true);
        }),
      );
    await Promise.all(work);
    expect(index.size).toBe(n);
  });

  it('keeps a Tensor alive while an async call reads it, even if it is disposed meanwhile', async () => {
    const index = DenseIndex.create({ dim: d });
    const t = Tensor.from(x, [n, d]);
    const pending = index.add(t, ids);
    t.dispose();
    await pending;
    const top = index.searchSync(q, 3);
    expect(top.hits(0).map((h) => h.id)).toEqual(bruteForce(x, ids, q, d, 3)[0]!.map((h) => h.id));
  });

  it('follows the library-wide thread setting', () => {
    const before = capabilities().threads;
    faissBindings(); // loaded with the core's setting
    setThreads(1);
    expect(faissBindings().threads()).toBe(1);
    setThreads(before);
    expect(faissBindings().threads()).toBe(before);
  });
});

describe('DenseIndex filters inside the search (allowedIds)', () => {
  const d = 24, n = 3000;
  const x = corpus(n, d, 61);
  const ids = idsFor(n);
  const q = randomF32(6 * d, 62);
  // 10% of the ids, plus ids the index does not hold (ignored).
  const allowedRows = Array.from({ length: n }, (_, i) => i).filter((i) => (i * 7919) % 10 === 3);
  const allowed = BigInt64Array.from([...allowedRows.map((i) => ids[i]!), 1n, 999_999n]);
  const sub = Float32Array.from(allowedRows.flatMap((i) => Array.from(x.subarray(i * d, (i + 1) * d))));
  const subIds = BigInt64Array.from(allowedRows, (i) => ids[i]!);

  it.each([
    ['Flat', 'inner-product'],
    ['Flat', 'l2'],
    ['IVF16,Flat', 'inner-product'],  // every list probed: exact
  ] as const)('%s (%s) gives exactly the brute-force top-k of the allowed ids', async (factory, mips) => {
    const index = DenseIndex.create({ dim: d, factory, mips: mips as Mips, ...(factory.startsWith('IVF') ? { nprobe: 16 } : {}) });
    if (!index.info.trained) await index.train(x);
    await index.add(x, ids);
    const want = bruteForce(sub, subIds, q, d, 10);
    for (const r of [await index.search(q, 10, { allowedIds: allowed }), index.searchSync(q, 10, { allowedIds: Array.from(allowed) })])
      want.forEach((w, b) => {
        const got = r.hits(b);
        expect(got.map((h) => h.id), `${factory} row ${b}`).toEqual(w.map((h) => h.id));
        got.forEach((h, j) => expect(h.score).toBeCloseTo(w[j]!.score, mips === 'l2' ? 2 : 4));
      });
    // k beyond the allowed ids: padding after them; no allowed id held: only padding.
    const few = await index.search(q, 5, { allowedIds: [ids[10]!, ids[20]!] });
    expect(few.hits(0).map((h) => h.id).sort()).toEqual([ids[10]!, ids[20]!].sort());
    expect(Array.from(few.ids.subarray(2, 5))).toEqual([-1n, -1n, -1n]);
    expect(Array.from((await index.search(q, 3, { allowedIds: [7n] })).ids.subarray(0, 3))).toEqual([-1n, -1n, -1n]);
    index.dispose();
  });

  it('HNSW: few allowed vectors are scanned exactly; many are filtered inside the graph walk (recall@10 >= 0.9 here)', async () => {
    const index = DenseIndex.create({ dim: d, factory: 'HNSW32', efSearch: 128 });
    await index.add(x, ids);
    const want = bruteForce(sub, subIds, q, d, 10);
    // 300 allowed of 3,000: the default scans them in the graph's flat storage, exactly.
    const exact = await index.search(q, 10, { allowedIds: allowed });
    want.forEach((w, b) => expect(exact.hits(b).map((h) => h.id)).toEqual(w.map((h) => h.id)));
    // filterScanBelow 0: the graph walk with faiss's selector.
    const r = await index.search(q, 10, { allowedIds: allowed, filterScanBelow: 0 });
    const set = new Set(allowed);
    let found = 0;
    want.forEach((w, b) => {
      const got = r.hits(b);
      expect(got.every((h) => set.has(h.id))).toBe(true);
      found += got.filter((h) => w.some((x) => x.id === h.id)).length;
    });
    expect(found / 60).toBeGreaterThanOrEqual(0.9);
    expect(code(() => index.searchSync(q, 3, { filterScanBelow: 5 }))).toBe('ERR_ARG');
    expect(code(() => index.searchSync(q, 3, { allowedIds: allowed, filterScanBelow: -1 }))).toBe('ERR_RANGE');
    index.dispose();
  });

  it('after remove, a removed id is never returned; bad allowed ids are typed errors', async () => {
    const index = DenseIndex.create({ dim: d, factory: 'Flat' });
    await index.add(x, ids);
    await index.remove([ids[allowedRows[0]!]!]);
    const r = await index.search(q, 400, { allowedIds: allowed });
    expect(r.hits(0).some((h) => h.id === ids[allowedRows[0]!])).toBe(false);
    expect(r.hits(0)).toHaveLength(allowedRows.length - 1);
    expect(await asyncCode(index.search(q, 3, { allowedIds: 'x' as never }))).toBe('ERR_ARG');
    expect(code(() => index.searchSync(q, 3, { allowedIds: [1.5] }))).toBe('ERR_RANGE');
    index.dispose();
  });
});

describe('DenseIndex.map (a saved Flat index read in place)', () => {
  const d = 24;
  const n = 700;
  const x = corpus(n, d, 91);
  const ids = BigInt64Array.from({ length: n }, (_, i) => BigInt(i * 7 + 3));
  const q = randomF32(5 * d, 92);

  it('searches, filters and reconstructs as the loaded index, and refuses every change', async () => {
    const path = join(dir, 'mapped.qdx');
    const built = DenseIndex.create({ dim: d });
    await built.add(x, ids);
    await built.save(path);
    const loaded = await DenseIndex.load(path);
    const mapped = await DenseIndex.map(path);
    expect(mapped.info).toMatchObject({ dim: d, size: n, factory: 'Flat', mips: 'inner-product', mapped: true, supportsRemove: false });
    expect(loaded.info.mapped).toBe(false);
    const same = (a: { ids: BigInt64Array; scores: Float32Array }, b: { ids: BigInt64Array; scores: Float32Array }) => {
      expect(Array.from(a.ids)).toEqual(Array.from(b.ids));
      expect(Array.from(a.scores)).toEqual(Array.from(b.scores));
    };
    same(await mapped.search(q, 10), await loaded.search(q, 10));
    const want = bruteForce(x, ids, q, d, 10);
    (await mapped.search(q, 10)).hits(2).forEach((h, i) => expect(h.id).toBe(want[2]![i]!.id));
    const allowed = ids.filter((_, i) => i % 5 === 0);
    same(await mapped.search(q, 10, { allowedIds: allowed }), await loaded.search(q, 10, { allowedIds: allowed }));
    expect(Array.from(await mapped.reconstruct(ids.subarray(10, 13)))).toEqual(Array.from(x.subarray(10 * d, 13 * d)));
    for (const change of [() => mapped.add(x.subarray(0, d), [1n]), () => mapped.remove([3n]), () => mapped.train(x), () => mapped.save(join(dir, 'copy.qdx'))])
      expect(await asyncCode(change())).toBe('ERR_UNSUPPORTED');
    expect(code(() => mapped.toBuffer())).toBe('ERR_UNSUPPORTED');
    // A new save under the same name replaces the file (rename): the mapping keeps the old inode's vectors.
    const other = DenseIndex.create({ dim: d });
    await other.add(x.subarray(0, 10 * d), ids.subarray(0, 10));
    await other.save(path);
    same(await mapped.search(q, 10), await loaded.search(q, 10));
    expect((await DenseIndex.map(path)).size).toBe(10);
    mapped.dispose();
    expect(await asyncCode(mapped.search(q, 1))).toBe('ERR_DISPOSED');
    for (const ix of [built, loaded, other]) ix.dispose();
  });

  it('refuses other factories and damaged files with typed errors; verify reads the checksum', async () => {
    const hnsw = DenseIndex.create({ dim: d, factory: 'HNSW16' });
    await hnsw.add(x, ids);
    await hnsw.save(join(dir, 'hnsw.qdx'));
    expect(await asyncCode(DenseIndex.map(join(dir, 'hnsw.qdx')))).toBe('ERR_UNSUPPORTED');
    const l2 = DenseIndex.create({ dim: d, mips: 'l2' });
    await l2.add(x, ids);
    await l2.save(join(dir, 'l2.qdx'));
    expect(await asyncCode(DenseIndex.map(join(dir, 'l2.qdx')))).toBe('ERR_UNSUPPORTED');
    const flat = DenseIndex.create({ dim: d });
    await flat.add(x, ids);
    // A copy: a Buffer's slice() would share the bytes.
    const bytes = new Uint8Array(flat.toBuffer());
    const write = (name: string, b: Uint8Array) => {
      writeFileSync(join(dir, name), b);
      return join(dir, name);
    };
    // One vector byte changed: the header and sizes are intact (a plain map serves it), the checksum is not.
    const flipped = bytes.slice();
    const at = bytes.length - 8 * n - 16 - 100;
    flipped[at] = flipped[at]! ^ 0xff;
    expect((await DenseIndex.map(write('flipped.qdx', flipped))).size).toBe(n);
    expect(await asyncCode(DenseIndex.map(join(dir, 'flipped.qdx'), { verify: true }))).toBe('ERR_FORMAT');
    expect((await DenseIndex.map(write('good.qdx', bytes), { verify: true })).size).toBe(n);
    for (const cut of [0, 7, 60, bytes.length - 9, bytes.length - 1]) expect(await asyncCode(DenseIndex.map(write(`cut${cut}.qdx`, bytes.subarray(0, cut)))), `cut at ${cut}`).toBe('ERR_FORMAT');
    // An id repeated inside the id map.
    const twice = bytes.slice();
    twice.set(twice.subarray(bytes.length - 16 - 8 * n, bytes.length - 16 - 8 * n + 8), bytes.length - 16 - 8 * n + 8);
    expect(await asyncCode(DenseIndex.map(write('twice.qdx', twice)))).toBe('ERR_FORMAT');
    expect(await asyncCode(DenseIndex.map(write('text.qdx', new TextEncoder().encode('hello, this is not an index at all, not at all'))))).toBe('ERR_FORMAT');
    expect(await asyncCode(DenseIndex.map(join(dir, 'nowhere.qdx')))).toBe('ERR_IO');
    expect(await asyncCode(DenseIndex.map(dir))).toBe('ERR_IO');
    expect(await asyncCode(DenseIndex.map(join(dir, 'good.qdx'), { check: true } as never))).toBe('ERR_ARG');
    for (const ix of [hnsw, l2, flat]) ix.dispose();
  });

  it('two processes that map one index share its vectors\' pages', async () => {
    const path = join(dir, 'shared.qdx');
    const rows = 16_384;
    const dim = 256; // 16 MiB of vectors
    const ix = DenseIndex.create({ dim });
    await ix.add(new Float32Array(rows * dim).fill(0.5), BigInt64Array.from({ length: rows }, (_, i) => BigInt(i)));
    await ix.save(path);
    ix.dispose();
    const results = await twoProcessesMapping(dir, path, `
      const { DenseIndex } = await import(${JSON.stringify(join(import.meta.dirname, '..', 'lib', 'index.ts'))});
      const index = await DenseIndex.map(${JSON.stringify(path)});
      value = (await index.search(new Float32Array(${dim}).fill(1), 1)).scores[0];   // a scan reads every vector
    `);
    const kb = (rows * dim * 4) / 1024;
    for (const r of results) {
      expect(r.value).toBe(0.5 * dim);
      expect(r.rss).toBeGreaterThanOrEqual(kb * 0.95);
      expect(r.sharedClean).toBeGreaterThanOrEqual(kb * 0.95);
      expect(r.pss).toBeLessThanOrEqual(r.rss * 0.55 + 64);
    }
  }, 120_000);
});
