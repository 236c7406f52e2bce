// makeDirs (lib/data/files.ts): every save path is created through it, so a path that cannot be made is one typed
// ERR_IO at once. Node 20's recursive mkdirSync never returns for a path under /proc (issue 48).
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { makeDirs, replaceDirectory, replaceDirectorySync } from '../lib/data/files.js';
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

// An output kind whose card is card.json: a directory holding it is an earlier output, replaced whole (a directory
// without it is the user's, written into file by file: test/outputs.test.ts).
const kind = { card: 'card.json', format: 'quorum-test' };
const card = (dir: string) => writeFileSync(join(dir, 'card.json'), JSON.stringify({ format: 'quorum-test' }));

describe('replaceDirectory', () => {
  it('swaps in the new directory whole, or leaves the old one as it was when writing fails', async () => {
    const dir = join(root, 'swap', 'index');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'a.txt'), 'old');
    card(dir);
    await replaceDirectory(
      dir,
      async (tmp) => {
        writeFileSync(join(tmp, 'b.txt'), 'new');
        card(tmp);
        expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('old'); // nothing visible until the swap
      },
      { kind },
    );
    expect(readdirSync(dir).sort()).toEqual(['b.txt', 'card.json']);
    await expect(
      replaceDirectory(dir, async (tmp) => {
          writeFileSync(join(tmp, 'c.txt'), 'half');
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect(readdirSync(dir).sort()).toEqual(['b.txt', 'card.json']);
    expect(readdirSync(join(root, 'swap'))).toEqual(['index']);  // no temporary left
    // Nothing to replace: created. A parent that is a file: ERR_IO, nothing left.
    await replaceDirectory(join(root, 'swap', 'fresh'), async () => {});
    expect(readdirSync(join(root, 'swap')).sort()).toEqual(['fresh', 'index']);
    writeFileSync(join(root, 'swap', 'file'), 'x');
    expect(await asyncCode(replaceDirectory(join(root, 'swap', 'file', 'd'), async (tmp) => makeDirs(tmp)))).toBe('ERR_IO');
    expect(readdirSync(join(root, 'swap')).sort()).toEqual(['file', 'fresh', 'index']);
  });

  it('recovers a directory whose replacement was killed between its two renames: the finished copy goes in place', async () => {
    const parent = join(root, 'recover');
    mkdirSync(parent, { recursive: true });
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;  // a process that has exited
    const dir = join(parent, 'index');
    for (const [name, text] of [[`index.old-${dead}-a`, 'old'], [`index.tmp-${dead}-a`, 'new']] as const) {
      mkdirSync(join(parent, name));
      writeFileSync(join(parent, name, 'v.txt'), text);
      card(join(parent, name));
    }
    await replaceDirectory(
      dir,
      async (tmp) => {
        expect(readFileSync(join(dir, 'v.txt'), 'utf8')).toBe('new'); // recovered before this write began
        writeFileSync(join(tmp, 'v.txt'), 'newer');
        card(tmp);
      },
      { kind },
    );
    expect(readdirSync(parent)).toEqual(['index']);
    expect(readFileSync(join(dir, 'v.txt'), 'utf8')).toBe('newer');
    // Killed before its write finished (only .old and no .tmp of that tag cannot happen; a lone .tmp is unfinished).
    mkdirSync(join(parent, `index.tmp-${dead}-b`));
    await replaceDirectory(dir, async (tmp) => {
      writeFileSync(join(tmp, 'v.txt'), 'newest');
    });
    expect(readdirSync(parent)).toEqual(['index']);
  });
});

describe('replaceDirectory keeping what the save does not write', () => {
  it('keeps the old entries the new directory lacks (files linked, directories merged), the written ones new', async () => {
    const dir = join(root, 'keep', 'model');
    mkdirSync(join(dir, 'index', 'local'), { recursive: true });
    writeFileSync(join(dir, 'weights.bin'), 'old weights');
    writeFileSync(join(dir, 'extra.onnx'), 'export');
    writeFileSync(join(dir, 'index', 'ids.txt'), 'old ids');
    writeFileSync(join(dir, 'index', 'local', 'tokens.bin'), 'tokens');
    card(dir);
    const before = statSync(join(dir, 'extra.onnx')).ino;
    const result = replaceDirectorySync(
      dir,
      (tmp) => {
        expect(readdirSync(tmp)).toEqual([]);  // created empty for the write
        writeFileSync(join(tmp, 'weights.bin'), 'new weights');
        mkdirSync(join(tmp, 'index'));
        writeFileSync(join(tmp, 'index', 'ids.txt'), 'new ids');
        card(tmp);
        return 'card';
      },
      { keepOthers: true, kind },
    );
    expect(result).toBe('card');
    expect(readFileSync(join(dir, 'weights.bin'), 'utf8')).toBe('new weights');
    expect(readFileSync(join(dir, 'index', 'ids.txt'), 'utf8')).toBe('new ids');
    expect(readFileSync(join(dir, 'index', 'local', 'tokens.bin'), 'utf8')).toBe('tokens');
    expect(statSync(join(dir, 'extra.onnx')).ino).toBe(before);  // a link, not a copy
    expect(readdirSync(join(root, 'keep'))).toEqual(['model']);
    // Without keepOthers the new directory alone.
    replaceDirectorySync(dir, (tmp) => [writeFileSync(join(tmp, 'only.txt'), 'x'), card(tmp)], { kind });
    expect(readdirSync(dir).sort()).toEqual(['card.json', 'only.txt']);
  });

  it('replaces the directory a symbolic link names (the link stays), and a file-system error while writing is ERR_IO', async () => {
    const real = join(root, 'linked', 'real');
    mkdirSync(real, { recursive: true });
    writeFileSync(join(real, 'a.txt'), 'old');
    symlinkSync(real, join(root, 'linked', 'link'));
    replaceDirectorySync(join(root, 'linked', 'link'), (tmp) => writeFileSync(join(tmp, 'a.txt'), 'new'), { keepOthers: true });
    expect(lstatSync(join(root, 'linked', 'link')).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(real, 'a.txt'), 'utf8')).toBe('new');
    expect(code(() => replaceDirectorySync(real, (tmp) => readFileSync(join(tmp, 'missing'))))).toBe('ERR_IO');
    expect(readFileSync(join(real, 'a.txt'), 'utf8')).toBe('new');
    expect(readdirSync(join(root, 'linked')).sort()).toEqual(['link', 'real']);
  });
});
