// makeDirs (lib/data/files.ts): every save path is created through it, so a path that cannot be made is one typed
// ERR_IO at once. Node 20's recursive mkdirSync never returns for a path under /proc (issue 48).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { makeDirs, replaceDirectory } from '../lib/data/files.js';
import { Retriever } from '../lib/models/retriever.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { asyncCode, code } from './helpers.js';

const root = mkdtempSync(join(tmpdir(), 'quorum-files-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('makeDirs', () => {
  it('creates missing parents, accepts an existing directory, and refuses what cannot be made with ERR_IO', () => {
    const deep = join(root, 'a', 'b', 'c');
    makeDirs(deep);
    expect(statSync(deep).isDirectory()).toBe(true);
    makeDirs(deep);
    const file = join(root, 'file');
    writeFileSync(file, 'x');
    expect(code(() => makeDirs(join(file, 'sub')))).toBe('ERR_IO');
    expect(code(() => makeDirs(file))).toBe('ERR_IO');
    // Under /proc mkdir fails with ENOENT at the first level: an error now, not a hang.
    if (existsSync('/proc/self')) expect(code(() => makeDirs('/proc/quorum-test/x/y'))).toBe('ERR_IO');
  });

  it('a model saved under /proc is ERR_IO (it hung)', () => {
    if (!existsSync('/proc/self')) return;
    const vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'a', 'b'];
    const model = Retriever.create({ preset: 'siamese', encoder: { vocabSize: vocab.length, hiddenSize: 8, embeddingSize: 8, layers: 0, maxPositions: 16 } });
    try {
      expect(code(() => model.saveModel('/proc/quorum-test/model', { tokenizer: new WordPieceTokenizer(vocab), maxQueryLength: 8, maxPassageLength: 8 }))).toBe('ERR_IO');
    } finally {
      model.dispose();
    }
  });
});

describe('replaceDirectory', () => {
  it('swaps in the new directory whole, or leaves the old one as it was when writing fails', async () => {
    const dir = join(root, 'swap', 'index');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'a.txt'), 'old');
    await replaceDirectory(dir, async (tmp) => {
      mkdirSync(tmp);
      writeFileSync(join(tmp, 'b.txt'), 'new');
      expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('old');  // nothing visible until the swap
    });
    expect(readdirSync(dir)).toEqual(['b.txt']);
    await expect(
      replaceDirectory(dir, async (tmp) => {
        mkdirSync(tmp);
        writeFileSync(join(tmp, 'c.txt'), 'half');
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect(readdirSync(dir)).toEqual(['b.txt']);
    expect(readdirSync(join(root, 'swap'))).toEqual(['index']);  // no temporary left
    // Nothing to replace: ERR_IO, and the new copy is removed.
    expect(await asyncCode(replaceDirectory(join(root, 'swap', 'missing'), async (tmp) => mkdirSync(tmp)))).toBe('ERR_IO');
    expect(readdirSync(join(root, 'swap'))).toEqual(['index']);
  });
});
