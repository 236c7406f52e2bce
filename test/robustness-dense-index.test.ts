// Issue 21: DenseIndex under bad input. Every case once crashed the process or returned garbage; the ones that
// crashed run in a child process (test/isolated.ts).
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

import { afterAll, describe, expect, it } from 'vitest';

import { DenseIndex } from '../lib/index.js';
import { packageRoot } from '../lib/native.js';
import { asyncCode, code, randomF32 } from './helpers.js';
import { CODE_OF, runIsolated } from './isolated.js';

const dir = mkdtempSync(join(tmpdir(), 'quorum-robust-dense-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('faiss factory strings that faiss accepts and that crashed later', () => {
  // [factory, code at create]. Each then also gets a train / add / search, which must not crash either.
  const cases: Array<[string, string]> = [
    ['NSG32', 'ERR_UNSUPPORTED'], // SIGFPE on a first add of <= 100 vectors
    ['NSG0', 'ERR_UNSUPPORTED'], // add hung
    ['HNSW0', 'ERR_ARG'], // SIGSEGV on the second add
    ['HNSW1', 'ERR_ARG'],
    ['IVF0,Flat', 'ERR_ARG'], // faiss assertion, SIGABRT
    ['PQ4x0', 'ERR_ARG'], // SIGSEGV on search
    ['IVF4,PQ2x0', 'ERR_ARG'], // SIGSEGV on search
    ['PQ4x17', 'ERR_ARG'],
    ['LSH', 'ERR_ARG'], // faiss 1.7.3 cannot parse it
    ['HNSW8_PQ2', 'ERR_UNSUPPORTED'], // faiss's reader casts its storage unchecked
    ['IVF4,Flat,Refine(Flat)', 'ERR_UNSUPPORTED'],
    ['PQ4x4fs', 'ERR_UNSUPPORTED'],
    ['RQ2x4', 'ERR_UNSUPPORTED'],
    ['NoSuchIndex', 'ERR_ARG'],
  ];
  it('are rejected at create() with a typed error, in a process that survives using them', () => {
    const r = runIsolated(`${CODE_OF}
import { DenseIndex } from '$lib/index.js';
const x = new Float32Array(80 * 8).map((_, i) => Math.sin(i));
const ids = BigInt64Array.from({ length: 80 }, (_, i) => BigInt(i));
const out: Record<string, string> = {};
for (const f of ${JSON.stringify(cases.map((c) => c[0]))}) {
  out[f] = codeOf(() => {
    const index = DenseIndex.create({ dim: 8, factory: f });
    if (!index.info.trained) index.trainSync(x);
    index.addSync(x.subarray(0, 8), ids.subarray(0, 1));
    index.addSync(x.subarray(8), ids.subarray(1));
    index.searchSync(x.subarray(0, 16), 5);
  });
}
console.log(JSON.stringify(out));
`);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(r.result).toEqual(Object.fromEntries(cases));
  });

  it('supported families still build, search and round-trip', () => {
    const d = 8;
    const x = randomF32(300 * d, 3);
    const ids = BigInt64Array.from({ length: 300 }, (_, i) => BigInt(i));
    for (const factory of ['Flat', 'HNSW8', 'IVF4,Flat', 'IVF4,PQ2x4', 'IVF4,SQ8', 'PQ2x4', 'SQ8', 'SQfp16', 'PCA4,Flat', 'OPQ2,IVF4,PQ2x4', 'IVF4_HNSW8,Flat', 'HNSW8_SQ8', 'L2norm,Flat']) {
      const index = DenseIndex.create({ dim: d, factory });
      if (!index.info.trained) index.trainSync(x);
      index.addSync(x, ids);
      const top = index.searchSync(x.subarray(0, d), 3);
      expect(top.ids[0], factory).toBeGreaterThanOrEqual(0n);
      const again = DenseIndex.fromBuffer(index.toBuffer());
      expect(Array.from(again.searchSync(x.subarray(0, d), 3).ids), factory).toEqual(Array.from(top.ids));
    }
  });
});

describe('result sizes are checked before anything is allocated', () => {
  it('search: rows x k past 2^31 slots is ERR_RANGE (it was V8 FATAL ERROR, SIGABRT), sync and async', async () => {
    const index = DenseIndex.create({ dim: 4 });
    const q = new Float32Array(4 * 5000);
    expect(code(() => index.searchSync(q, 1 << 20))).toBe('ERR_RANGE');
    expect(await asyncCode(index.search(q, 1 << 20))).toBe('ERR_RANGE');
    expect(code(() => index.searchSync(q, (1 << 20) + 1))).toBe('ERR_RANGE');
    // Within the limit, the result holds every slot (-1 / -inf beyond the index's size).
    const r = index.searchSync(new Float32Array(4 * 3), 1000);
    expect(r.ids.length).toBe(3000);
    expect(r.ids.every((id) => id === -1n)).toBe(true);
  });

  it('reconstruct: ids are checked before the output exists (an empty index of dim 65536 aborted)', async () => {
    const big = DenseIndex.create({ dim: 65536 });
    expect(code(() => big.reconstructSync(new BigInt64Array(2 ** 20)))).toBe('ERR_RANGE');
    expect(await asyncCode(big.reconstruct(new BigInt64Array(2 ** 20)))).toBe('ERR_RANGE');
    // 2^14 x 65536 floats = 4 GiB would be allocated before the check: now the unknown id comes first.
    expect(code(() => big.reconstructSync(new BigInt64Array(2 ** 14)))).toBe('ERR_NOT_FOUND');
    expect(await asyncCode(big.reconstruct(new BigInt64Array(2 ** 14)))).toBe('ERR_NOT_FOUND');
    const small = DenseIndex.create({ dim: 3 });
    small.addSync(new Float32Array([1, 2, 3, 4, 5, 6]), [7n, 9n]);
    expect(Array.from(small.reconstructSync([9n, 7n]))).toEqual([4, 5, 6, 1, 2, 3]);
    expect(Array.from(await small.reconstruct([]))).toEqual([]);
  });
});

describe('loading untrusted index files', () => {
  // Single-byte changes of a small index (every byte of the HNSW file, every other one of the IVF files), checksum rebuilt so that the change reaches faiss's parser and
  // the graph checks: every one loads and works, or is ERR_FORMAT. An altered HNSW graph crashed search before.
  for (const [seed, stride] of [['HNSW4', 1], ['IVF4,Flat', 2], ['IVF2,PQ4x4', 2]] as const) {
    it(`single-byte changes of a ${seed} file are ERR_FORMAT or a working index (child process)`, () => {
      const args = ['--import', 'tsx', join(packageRoot, 'bench', 'fuzz-loaders.ts'), '--flips', seed, '--stride', String(stride)];
      const r = spawnSync(process.execPath, args, {
        cwd: packageRoot,
        encoding: 'utf8',
        timeout: 300_000,
      });
      expect(r.signal).toBeNull();
      expect(r.status).toBe(0);
      const report = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))) as {
        untyped: string[];
        bySeed: Record<string, { tried: number; accepted: number; codes: Record<string, number> }>;
      };
      expect(report.untyped).toEqual([]);
      const row = report.bySeed[seed]!;
      expect(row.tried).toBeGreaterThan(1000);
      expect(Object.keys(row.codes)).toEqual(['ERR_FORMAT']);
      expect(row.codes.ERR_FORMAT).toBeGreaterThan(row.tried / 10);
      expect(row.accepted).toBeGreaterThan(0);
    });
  }

  it('random mutations of every index type (2,000 inputs, seeded) leave the process standing', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(packageRoot, 'bench', 'fuzz-loaders.ts'), '--iterations', '2000', '--seed', '7'], {
      cwd: packageRoot,
      encoding: 'utf8',
      timeout: 300_000,
    });
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))).untyped).toEqual([]);
  });
});

describe('saves', () => {
  it('remove the temporary files of killed saves to the same path, and leave a live writer’s alone', async () => {
    const dead = spawnSync('true').pid; // a process that has exited
    const path = join(dir, 'index.qdx');
    const stale = `${path}.tmp-${dead}-123`;
    const live = `${path}.tmp-${process.ppid}-456`;
    const other = join(dir, `other.qdx.tmp-${dead}-1`);
    for (const f of [stale, live, other]) writeFileSync(f, 'partial');
    const index = DenseIndex.create({ dim: 2 });
    index.addSync(new Float32Array([1, 0]), [1n]);
    await index.save(path);
    const names = readdirSync(dir);
    expect(names).not.toContain('index.qdx.tmp-' + `${dead}-123`);
    expect(names).toContain(`index.qdx.tmp-${process.ppid}-456`);
    expect(names).toContain(`other.qdx.tmp-${dead}-1`);
    expect(names).toContain('index.qdx');
    expect(DenseIndex.loadSync(path).size).toBe(1);
  });
});
