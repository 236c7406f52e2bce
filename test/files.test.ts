// makeDirs (lib/data/files.ts): every save path is created through it, so a path that cannot be made is one typed
// ERR_IO at once. Node 20's recursive mkdirSync never returns for a path under /proc (issue 48).
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { makeDirs } from '../lib/data/files.js';
import { Retriever } from '../lib/models/retriever.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { code } from './helpers.js';

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
