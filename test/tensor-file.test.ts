// Tensor files (native/common/tensor_file.h): Tensor.save writes them atomically, Tensor.map maps them copy-on-write.
// Round trips of every dtype, header checks (foreign, corrupt, truncated, extended files), data checks with verify,
// private writes, a save while mapped, search over a mapped corpus, and pages shared between two processes.
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { QuorumError, Tensor, scoreTopK } from '../lib/index.js';
import type { Dtype } from '../lib/index.js';
import { seededRandom } from '../lib/random.js';
import { twoProcessesMapping } from './fixtures/shared-pages.js';

const dir = mkdtempSync(join(tmpdir(), 'quorum-tensor-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return String((e as QuorumError).code);
  }
  return 'none';
}

describe('Tensor.save / Tensor.map', () => {
  it('round-trips every dtype and shape, with and without verify', async () => {
    const r = seededRandom(3);
    const cases: Array<[Dtype, number[]]> = [['f32', [37, 5]], ['bf16', [4, 3, 2]], ['f16', [9]], ['i32', [2, 2]], ['i64', [3]], ['u8', [1000]], ['f32', []], ['f32', [0, 4]]];
    for (const [dtype, shape] of cases) {
      const n = shape.reduce((a, b) => a * b, 1);
      const src = dtype === 'f32' || dtype === 'bf16' || dtype === 'f16'
        ? Tensor.from(Float32Array.from({ length: n }, () => r() * 2 - 1), shape).to(dtype)
        : dtype === 'i64' ? Tensor.from(BigInt64Array.from({ length: n }, (_, i) => BigInt(i) * 1_000_000_007n - 5n), shape)
        : dtype === 'u8' ? Tensor.from(Uint8Array.from({ length: n }, (_, i) => i % 251), shape)
        : Tensor.from(Int32Array.from({ length: n }, (_, i) => i * 7 - 3), shape);
      const path = join(dir, `${dtype}-${shape.join('x') || 'scalar'}.qtns`);
      await src.save(path);
      for (const verify of [false, true]) {
        const m = await Tensor.map(path, { verify });
        expect([m.dtype, m.shape], path).toEqual([dtype, shape]);
        expect(Array.from(m.data as ArrayLike<number | bigint>)).toEqual(Array.from(src.data as ArrayLike<number | bigint>));
        m.dispose();
        expect(m.disposed).toBe(true);
      }
      // The data sits at a page boundary after a one-page header.
      expect(readFileSync(path).length).toBe(4096 + src.data.byteLength);
    }
  });

  it('refuses foreign, corrupt, truncated and extended files; checks the data only with verify', async () => {
    const t = Tensor.from(Float32Array.from({ length: 4096 }, (_, i) => i), [1024, 4]);
    const good = join(dir, 'good.qtns');
    await t.save(good);
    const bytes = readFileSync(good);
    const variant = (name: string, edit: (b: Buffer) => Buffer) => {
      const p = join(dir, name);
      writeFileSync(p, edit(Buffer.from(bytes)));
      return p;
    };
    const foreign = variant('foreign.qtns', (b) => Buffer.concat([Buffer.from('PK\x03\x04'), b.subarray(4)]));
    const header = variant('header.qtns', (b) => ((b[20] = b[20]! ^ 1), b));
    const data = variant('data.qtns', (b) => ((b[4096 + 777] = b[4096 + 777]! ^ 0x40), b));
    const truncated = variant('truncated.qtns', (b) => b.subarray(0, b.length - 4));
    const short = variant('short.qtns', (b) => b.subarray(0, 10));
    for (const p of [foreign, header, truncated, short]) expect(await codeOf(Tensor.map(p)), p).toBe('ERR_FORMAT');
    const extended = join(dir, 'extended.qtns');
    writeFileSync(extended, bytes);
    appendFileSync(extended, 'tail');
    expect(await codeOf(Tensor.map(extended))).toBe('ERR_FORMAT');
    // A flipped data byte: the header cannot see it; verify reads every page and does.
    const m = await Tensor.map(data);
    expect(m.shape).toEqual([1024, 4]);
    m.dispose();
    expect(await codeOf(Tensor.map(data, { verify: true }))).toBe('ERR_FORMAT');
    expect(await codeOf(Tensor.map(join(dir, 'missing.qtns')))).toBe('ERR_IO');
    expect(await codeOf(Tensor.map(dir))).toBe('ERR_IO');
    expect(await codeOf(Tensor.map(''))).toBe('ERR_ARG');
    expect(await codeOf(Tensor.map(good, { verify: 'yes' } as never))).toBe('ERR_ARG');
    expect(await codeOf(Tensor.map(good, { bogus: true } as never))).toBe('ERR_ARG');
    expect(await codeOf(t.save(join(dir, 'no', 'such', 'dir', 'x.qtns')))).toBe('ERR_IO');
    expect(await codeOf(t.save(42 as never))).toBe('ERR_ARG');
    const gone = Tensor.zeros([2]);
    gone.dispose();
    expect(await codeOf(gone.save(join(dir, 'gone.qtns')))).toBe('ERR_DISPOSED');
  });

  it('keeps writes private (copy-on-write), and a save while mapped leaves the old mapping intact', async () => {
    const path = join(dir, 'cow.qtns');
    await Tensor.from(Float32Array.of(1, 2, 3, 4), [4]).save(path);
    const a = await Tensor.map(path);
    const b = await Tensor.map(path);
    (a.data as Float32Array)[0] = 99;
    expect(Array.from(b.data as Float32Array)).toEqual([1, 2, 3, 4]);
    expect((await Tensor.map(path)).data[0]).toBe(1);
    expect(readFileSync(path).readFloatLE(4096)).toBe(1);
    // Replacing the file by a new save (rename): the old mapping keeps the old inode's bytes.
    await Tensor.from(Float32Array.of(5, 6), [2]).save(path);
    expect(Array.from(b.data as Float32Array)).toEqual([1, 2, 3, 4]);
    const c = await Tensor.map(path);
    expect(Array.from(c.data as Float32Array)).toEqual([5, 6]);
    for (const t of [a, b, c]) t.dispose();
  });

  it('scoreTopK over a mapped corpus equals the search over the same corpus in memory', async () => {
    const r = seededRandom(9);
    const corpus = Tensor.from(Float32Array.from({ length: 3000 * 64 }, () => r() * 2 - 1), [3000, 64]);
    const q = Tensor.from(Float32Array.from({ length: 8 * 64 }, () => r() * 2 - 1), [8, 64]);
    const path = join(dir, 'corpus.qtns');
    await corpus.save(path);
    const mapped = await Tensor.map(path, { verify: true });
    const a = await scoreTopK(q, corpus, 10);
    const b = await scoreTopK(q, mapped, 10);
    expect(Array.from(b.ids)).toEqual(Array.from(a.ids));
    expect(Array.from(b.scores)).toEqual(Array.from(a.scores));
    mapped.dispose();
  });

  // Under qemu-user (scripts/test-arm64.sh sets QUORUM_EMULATED) a child process would start as the bare arm64 binary,
  // which only qemu can run.
  it.skipIf(process.env.QUORUM_EMULATED === '1')('two processes that map one file share its pages (each one\'s proportional share is half of what it touches)', async () => {
    const path = join(dir, 'shared.qtns');
    const mb = 32;
    await Tensor.zeros([mb * 1024, 1024], 'u8').save(path);
    const results = await twoProcessesMapping(dir, path, `
      const { Tensor } = await import(${JSON.stringify(join(import.meta.dirname, '..', 'lib', 'index.ts'))});
      const t = await Tensor.map(${JSON.stringify(path)});
      const d = t.data; for (let i = 0; i < d.length; i += 4096) value += d[i];
    `);
    for (const r of results) {
      expect(r.value).toBe(0);
      expect(r.rss).toBeGreaterThanOrEqual(mb * 1024 * 0.95); // every page touched (kB)
      expect(r.sharedClean).toBeGreaterThanOrEqual(mb * 1024 * 0.95); // and shared with the other process
      expect(r.pss).toBeLessThanOrEqual(r.rss * 0.55 + 64); // so each is charged half
    }
  }, 120_000);
});
