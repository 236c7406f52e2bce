// Issue 21: memory the caller hands over, and files a killed save leaves behind.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { SparseIndex } from '../lib/index.js';
import { writeFileAtomic } from '../lib/data/files.js';
import { Retriever } from '../lib/models/retriever.js';
import { CODE_OF, runIsolated } from './isolated.js';

const dir = mkdtempSync(join(tmpdir(), 'quorum-robust-memory-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('Tensor.wrap after the wrapped buffer is transferred', () => {
  it('is ERR_DISPOSED in every kernel (it read freed memory: SIGSEGV, heap-use-after-free)', () => {
    const r = runIsolated(`${CODE_OF}
import { Tensor, scoreTopKSync, scoreSync, DenseIndex } from '$lib/index.js';
import { infoNceSync } from '$lib/entries/kernels.js';
const out: Record<string, string> = {};
const make = () => {
  const data = new Float32Array(4 * 64).fill(0.5);
  const t = Tensor.wrap(data, [4, 64]);
  structuredClone(data.buffer, { transfer: [data.buffer] });
  return t;
};
const corpus = Tensor.from(new Float32Array(8 * 64).fill(1), [8, 64]);
out.scoreTopKQueries = codeOf(() => scoreTopKSync(make(), corpus, 3));
out.scoreTopKCorpus = codeOf(() => scoreTopKSync(Tensor.from(new Float32Array(64), [1, 64]), make(), 3));
out.score = codeOf(() => scoreSync(make(), corpus));
out.infoNce = codeOf(() => infoNceSync(make(), Tensor.from(new Float32Array(4 * 64), [4, 64]), [0, 1, 2, 3]));
out.data = codeOf(() => make().data.length);
out.dense = codeOf(() => { const i = DenseIndex.create({ dim: 64 }); i.addSync(make(), [1n, 2n, 3n, 4n]); });
// A wrap whose buffer is still in place works as before.
const ok = Tensor.wrap(new Float32Array(4 * 64).fill(0.5), [4, 64]);
out.untouched = codeOf(() => scoreTopKSync(ok, corpus, 3));
console.log(JSON.stringify(out));
`);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(r.result).toEqual({
      scoreTopKQueries: 'ERR_DISPOSED',
      scoreTopKCorpus: 'ERR_DISPOSED',
      score: 'ERR_DISPOSED',
      infoNce: 'ERR_DISPOSED',
      data: 'ok',
      dense: 'ERR_SHAPE',
      untouched: 'ok',
    });
  });
});

describe('temporary files of killed saves', () => {
  const deadPid = () => spawnSync('true').pid as number;

  function check(name: string, save: (path: string) => Promise<void> | void) {
    it(`${name}: the next save to the path removes them; a live process's stay`, async () => {
      const path = join(dir, name);
      const stale = [`${name}.tmp-${deadPid()}-1`, `${name}.tmp-${deadPid()}-abc`];
      const live = `${name}.tmp-${process.ppid}-2`;
      const unrelated = `other-${name}.tmp-${deadPid()}-3`;
      for (const f of [...stale, live, unrelated]) writeFileSync(join(dir, f), 'partial');
      await save(path);
      const names = readdirSync(dir);
      for (const f of stale) expect(names).not.toContain(f);
      expect(names).toContain(live);
      expect(names).toContain(unrelated);
      expect(names).toContain(name);
      expect(names.filter((f) => f.startsWith(`${name}.tmp-${process.pid}-`))).toEqual([]);
    });
  }
  check('sparse.qsx', async (p) => {
    const s = new SparseIndex();
    s.addSync([1n], [[{ index: 2, value: 1 }]]);
    await s.save(p);
  });
  check('model.json', (p) => writeFileAtomic(p, new TextEncoder().encode('{}')));
  check('checkpoint.pt', async (p) => {
    const model = Retriever.create({ preset: 'siamese', encoder: { vocabSize: 8, hiddenSize: 4, heads: 1, ffnSize: 8, layers: 1, maxPositions: 8, dropout: 0 } });
    await model.save(p);
  });
});
