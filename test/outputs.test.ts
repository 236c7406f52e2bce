// Issue 65, item 1: nothing a user owns is replaced by an output. A directory output onto a regular file, a FIFO or a
// device is ERR_IO with nothing written; into someone else's directory the files go one by one and nothing else is
// touched (the directory keeps its inode and mode); an earlier output of the same kind (its card says so) is replaced
// whole. File outputs replace only an earlier file of their kind. Each command and API save that writes is tried.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import {
  checkOutputFile,
  readFileBytes,
  readJsonFile,
  readTextFile,
  replaceDirectory,
  replaceDirectorySync,
  writeFileAtomic,
} from '../lib/data/files.js';
import { readLines } from '../lib/data/lines.js';
import { writeRun } from '../lib/data/trec-files.js';
import { DenseIndex } from '../lib/dense-index.js';
import { Bm25Index } from '../lib/bm25/bm25.js';
import { Retriever } from '../lib/models/retriever.js';
import { packageRoot } from '../lib/native.js';
import { Tensor } from '../lib/tensor.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { asyncCode, code, quorumCli as quorum } from './helpers.js';

const root = mkdtempSync(join(tmpdir(), 'quorum-outputs-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A fresh path under root. */
const fresh = (name: string) => join(root, `${n++}-${name}`);
/** A regular file holding text the user cares about. */
function precious(name = 'notes.txt'): string {
  const p = fresh(name);
  writeFileSync(p, 'precious data\n');
  return p;
}
/** A FIFO (named pipe): opening it for reading blocks until a writer comes. */
function fifo(): string {
  const p = fresh('pipe');
  expect(spawnSync('mkfifo', [p]).status).toBe(0);
  return p;
}
/** Someone else's directory: a file, a subdirectory with a file, a mode of its own. */
function foreignDir(): { dir: string; ino: number } {
  const dir = fresh('src');
  mkdirSync(join(dir, 'sub'), { recursive: true });
  writeFileSync(join(dir, 'main.c'), 'int main() {}\n');
  writeFileSync(join(dir, 'sub', 'keep.txt'), 'keep\n');
  chmodSync(dir, 0o750);
  return { dir, ino: statSync(dir).ino };
}
function expectForeignIntact(dir: string, ino: number): void {
  expect(statSync(dir).ino).toBe(ino);
  expect(statSync(dir).mode & 0o777).toBe(0o750);
  expect(readFileSync(join(dir, 'main.c'), 'utf8')).toBe('int main() {}\n');
  expect(readFileSync(join(dir, 'sub', 'keep.txt'), 'utf8')).toBe('keep\n');
  expect(readdirSync(dir).filter((f) => f.includes('.quorum-tmp') || f.includes('.tmp-'))).toEqual([]);
}
const kind = { card: 'card.json', format: 'quorum-test' };
const writeKind = (tmp: string, extra = 'a') => {
  writeFileSync(join(tmp, 'card.json'), JSON.stringify({ format: 'quorum-test' }));
  writeFileSync(join(tmp, `${extra}.bin`), extra);
};

describe('replaceDirectory: what it may replace', () => {
  it('refuses a regular file, a FIFO, a device and a link to nothing (ERR_IO, nothing written)', async () => {
    const file = precious();
    expect(code(() => replaceDirectorySync(file, (tmp) => writeKind(tmp), { kind }))).toBe('ERR_IO');
    expect(readFileSync(file, 'utf8')).toBe('precious data\n');
    expect(await asyncCode(replaceDirectory(file, async (tmp) => writeKind(tmp), { kind }))).toBe('ERR_IO');
    expect(statSync(file).isFile()).toBe(true);
    const pipe = fifo();
    expect(code(() => replaceDirectorySync(pipe, (tmp) => writeKind(tmp)))).toBe('ERR_IO');
    expect(lstatSync(pipe).isFIFO()).toBe(true);
    if (existsSync('/dev/null')) {
      expect(code(() => replaceDirectorySync('/dev/null', (tmp) => writeKind(tmp)))).toBe('ERR_IO');
      expect(statSync('/dev/null').isCharacterDevice()).toBe(true);
    }
    const dangling = fresh('dangling');
    symlinkSync(join(root, 'nowhere'), dangling);
    expect(code(() => replaceDirectorySync(dangling, (tmp) => writeKind(tmp)))).toBe('ERR_IO');
    expect(readlinkSync(dangling)).toBe(join(root, 'nowhere'));
    // The one-line message names the path.
    expect(() => replaceDirectorySync(file, (tmp) => writeKind(tmp))).toThrow(/notes\.txt exists and is not a directory/);
  });

  it("refuses an empty path and a NUL byte (ERR_ARG): '' would name the working directory", () => {
    expect(code(() => replaceDirectorySync('', (tmp) => writeKind(tmp)))).toBe('ERR_ARG');
    expect(code(() => replaceDirectorySync(`${root}/a\0b`, (tmp) => writeKind(tmp)))).toBe('ERR_ARG');
    expect(code(() => writeFileAtomic('', Buffer.from('x')))).toBe('ERR_ARG');
  });

  it("writes into someone else's directory file by file: the directory, its mode and its other files stay", () => {
    const { dir, ino } = foreignDir();
    replaceDirectorySync(
      dir,
      (tmp) => {
        writeKind(tmp);
        mkdirSync(join(tmp, 'sub'));
        writeFileSync(join(tmp, 'sub', 'ours.txt'), 'ours');
        mkdirSync(join(tmp, 'newdir'));
        writeFileSync(join(tmp, 'newdir', 'x'), 'x');
      },
      { kind, keepOthers: true },
    );
    expectForeignIntact(dir, ino);
    expect(readFileSync(join(dir, 'a.bin'), 'utf8')).toBe('a');
    expect(readFileSync(join(dir, 'sub', 'ours.txt'), 'utf8')).toBe('ours');
    expect(readFileSync(join(dir, 'newdir', 'x'), 'utf8')).toBe('x');
    // Written again: the files of the same name are replaced, nothing else. (The directory now holds this kind's card,
    // so an output of this kind would count it as its own: docs/api.md, "Where outputs go".)
    replaceDirectorySync(dir, (tmp) => writeFileSync(join(tmp, 'a.bin'), 'b'), { keepOthers: true });
    expect(readFileSync(join(dir, 'a.bin'), 'utf8')).toBe('b');
    expectForeignIntact(dir, ino);
  });

  it("refuses to put a file where someone else's directory is (or the reverse) before anything moves", () => {
    const { dir, ino } = foreignDir();
    expect(code(() => replaceDirectorySync(dir, (tmp) => [writeKind(tmp), writeFileSync(join(tmp, 'sub'), 'file')]))).toBe('ERR_IO');
    expect(existsSync(join(dir, 'a.bin'))).toBe(false);
    expect(code(() => replaceDirectorySync(dir, (tmp) => [writeKind(tmp), mkdirSync(join(tmp, 'main.c'))]))).toBe('ERR_IO');
    expect(existsSync(join(dir, 'card.json'))).toBe(false);
    expectForeignIntact(dir, ino);
  });

  it('replaces an earlier output of the same kind whole (keeping what it does not write, with keepOthers)', () => {
    const dir = fresh('out');
    replaceDirectorySync(dir, (tmp) => writeKind(tmp, 'a'), { kind });
    writeFileSync(join(dir, 'user-added.txt'), 'mine');
    const ino = statSync(dir).ino;
    replaceDirectorySync(dir, (tmp) => writeKind(tmp, 'b'), { kind, keepOthers: true });
    expect(statSync(dir).ino).not.toBe(ino); // swapped in whole
    expect(readdirSync(dir).sort()).toEqual(['a.bin', 'b.bin', 'card.json', 'user-added.txt']);
    // A card of another kind is not ours to swap: the files go in one by one.
    const other = fresh('other');
    mkdirSync(other);
    writeFileSync(join(other, 'card.json'), JSON.stringify({ format: 'quorum-something-else' }));
    const otherIno = statSync(other).ino;
    replaceDirectorySync(other, (tmp) => writeFileSync(join(tmp, 'x.bin'), 'x'), { kind });
    expect(statSync(other).ino).toBe(otherIno);
  });

  it('a failed write leaves the directory as it was and no temporary behind', () => {
    const { dir, ino } = foreignDir();
    expect(() =>
      replaceDirectorySync(dir, (tmp) => {
        writeKind(tmp);
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(existsSync(join(dir, 'a.bin'))).toBe(false);
    expectForeignIntact(dir, ino);
  });
});

describe('file outputs and readers: only regular files', () => {
  it('writeFileAtomic refuses a directory, a FIFO and a device, and writes through a link to a file', () => {
    const { dir, ino } = foreignDir();
    expect(code(() => writeFileAtomic(dir, Buffer.from('x')))).toBe('ERR_IO');
    expectForeignIntact(dir, ino);
    const pipe = fifo();
    expect(code(() => writeFileAtomic(pipe, Buffer.from('x')))).toBe('ERR_IO');
    expect(lstatSync(pipe).isFIFO()).toBe(true);
    if (existsSync('/dev/null')) expect(code(() => writeFileAtomic('/dev/null', Buffer.from('x')))).toBe('ERR_IO');
    const target = precious('target.txt');
    const link = fresh('link');
    symlinkSync(target, link);
    writeFileAtomic(link, Buffer.from('new'));
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('new');
  });

  it('the native saves (dense index, tensor file) refuse a directory and a FIFO', async () => {
    const { dir, ino } = foreignDir();
    const index = DenseIndex.create({ dim: 4 });
    await index.add(new Float32Array(8).fill(1), [0, 1]);
    expect(await asyncCode(index.save(dir))).toBe('ERR_IO');
    const pipe = fifo();
    expect(await asyncCode(index.save(pipe))).toBe('ERR_IO');
    expect(await asyncCode(index.save(`${root}/x\0y`))).toBe('ERR_ARG');
    index.dispose();
    const t = Tensor.from(new Float32Array(4), [1, 4]);
    expect(await asyncCode(t.save(dir))).toBe('ERR_IO');
    expect(await asyncCode(t.save(pipe))).toBe('ERR_IO');
    t.dispose();
    const bm25 = await Bm25Index.build([{ id: 'a', text: 'hello world' }]);
    expect(code(() => bm25.save(pipe))).toBe('ERR_IO');
    expect(code(() => writeRun(pipe, new Map([['q', [{ id: 'a', score: 1 }]]])))).toBe('ERR_IO');
    expect(lstatSync(pipe).isFIFO()).toBe(true);
    expectForeignIntact(dir, ino);
  });

  it('readers refuse a FIFO at once (it blocked open) and a link to /dev/zero (it never ended)', async () => {
    const pipe = fifo();
    const t0 = Date.now();
    expect(code(() => readFileBytes(pipe))).toBe('ERR_IO');
    expect(code(() => readTextFile(pipe))).toBe('ERR_IO');
    expect(code(() => readJsonFile(pipe))).toBe('ERR_IO');
    expect(
      await asyncCode(
        (async () => {
          for await (const _ of readLines(pipe)) break;
        })(),
      ),
    ).toBe('ERR_IO');
    expect(await asyncCode(DenseIndex.load(pipe))).toBe('ERR_IO');
    expect(await asyncCode(Tensor.map(pipe))).toBe('ERR_IO');
    expect(Date.now() - t0).toBeLessThan(5000);
    if (existsSync('/dev/zero')) {
      const zero = fresh('model.safetensors');
      symlinkSync('/dev/zero', zero);
      expect(code(() => readFileBytes(zero))).toBe('ERR_IO');
      expect(await asyncCode(DenseIndex.load(zero))).toBe('ERR_IO');
    }
  });

  it('checkOutputFile lets a command replace an earlier file of its kind, never anything else', () => {
    const looksLike = (head: Buffer) => head.toString('latin1').startsWith('QBM25V01');
    checkOutputFile(fresh('missing'), 'a BM25 index', looksLike);
    const empty = fresh('empty');
    writeFileSync(empty, '');
    checkOutputFile(empty, 'a BM25 index', looksLike);
    const earlier = fresh('earlier');
    writeFileSync(earlier, 'QBM25V01...');
    checkOutputFile(earlier, 'a BM25 index', looksLike);
    expect(() => checkOutputFile(precious(), 'a BM25 index', looksLike)).toThrow(/notes\.txt exists and is not a BM25 index/);
    expect(code(() => checkOutputFile(fifo(), 'a BM25 index', looksLike))).toBe('ERR_IO');
    expect(code(() => checkOutputFile(root, 'a BM25 index', looksLike))).toBe('ERR_IO');
  });
});

describe('API saves onto what is not theirs', () => {
  it('Retriever.saveModel onto a file is ERR_IO; into a foreign directory it leaves the rest; over itself it swaps', () => {
    const vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'a', 'b'];
    const model = Retriever.create({ preset: 'siamese', encoder: { vocabSize: vocab.length, hiddenSize: 8, embeddingSize: 8, layers: 0, maxPositions: 16 } });
    const text = { tokenizer: new WordPieceTokenizer(vocab), maxQueryLength: 8, maxPassageLength: 8 };
    try {
      const file = precious();
      expect(code(() => model.saveModel(file, text))).toBe('ERR_IO');
      expect(readFileSync(file, 'utf8')).toBe('precious data\n');
      const { dir, ino } = foreignDir();
      model.saveModel(dir, text);
      expectForeignIntact(dir, ino);
      expect(existsSync(join(dir, 'model.json'))).toBe(true);
      const own = fresh('model');
      model.saveModel(own, text);
      const ownIno = statSync(own).ino;
      model.saveModel(own, text);
      expect(statSync(own).ino).not.toBe(ownIno);
    } finally {
      model.dispose();
    }
  });
});

describe('the CLI: --out onto what is not its own', () => {
  const data = join(packageRoot, 'data', 'multidomain-mini');
  const model = join(packageRoot, 'data', 'models', 'default');

  it('every command that writes a directory refuses a regular file, before its work (exit 1, ERR_IO, the file intact)', () => {
    const commands: string[][] = [
      ['eval', '--data', data, '--methods', 'bm25'],
      ['train', '--data', data, '--preset', 'siamese'],
      ['encode', '--model', model, '--data', data],
      ['export', '--model', model, '--format', 'onnx'],
      ['muf', 'train', '--data', data, '--experts', model],
    ];
    for (const args of commands) {
      const file = precious();
      const r = quorum(...args, '--out', file);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr.trim(), args.join(' ')).toMatch(/^quorum: ERR_IO: .*notes\.txt exists and is not a directory/);
      expect(readFileSync(file, 'utf8')).toBe('precious data\n');
    }
    expect(quorum('eval', '--data', data, '--methods', 'bm25', '--out', '').stderr.trim()).toMatch(/^quorum: ERR_ARG: the output directory must not be empty/);
  });

  it('eval --out into a foreign directory adds its files and leaves the rest; again, it replaces only its own', () => {
    const { dir, ino } = foreignDir();
    const r = quorum('eval', '--data', data, '--methods', 'bm25', '--out', dir);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expectForeignIntact(dir, ino);
    expect(readdirSync(dir).sort()).toEqual(['bm25.trec', 'main.c', 'metrics.json', 'sub']);
  });

  it('file outputs (index bm25, search, fuse, report) refuse a file of another kind and replace their own', () => {
    const index = fresh('index.bm25');
    expect(quorum('index', 'bm25', '--data', data, '--out', index).status).toBe(0);
    expect(quorum('index', 'bm25', '--data', data, '--out', index).status).toBe(0); // an earlier index: replaced
    const notes = precious();
    const cases: string[][] = [
      ['index', 'bm25', '--data', data, '--out', notes],
      ['search', '--index', index, '--data', data, '--out', notes],
      ['fuse', join(root, 'none.trec'), '--method', 'rrf', '--out', notes],
      ['report', join(root, 'none'), '--out', notes],
    ];
    for (const args of cases) {
      const r = quorum(...args);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr.trim(), args.join(' ')).toMatch(/^quorum: ERR_IO: .*notes\.txt exists and is not (a Quorum BM25 index|a TREC run|an HTML report)/);
      expect(readFileSync(notes, 'utf8')).toBe('precious data\n');
    }
    const run = fresh('run.trec');
    expect(quorum('search', '--index', index, '--data', data, '--out', run).status).toBe(0);
    expect(quorum('search', '--index', index, '--data', data, '--out', run).status).toBe(0);
    expect(readFileSync(run, 'utf8')).toMatch(/^\S+ Q0 \S+ 1 /);
  });
});

describe('mapped files truncated in place (was SIGBUS)', () => {
  it('a mapped tensor or DenseIndex whose file shrinks is ERR_IO at its next use; a fault from JavaScript reads zeros', () => {
    const dir = fresh('mapped');
    mkdirSync(dir);
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(packageRoot, 'test', 'fixtures', 'truncate-mapped.ts'), dir], {
      cwd: packageRoot,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual([
      'tensor-before ok',
      'tensor-truncated code ERR_IO',
      'tensor-js-read ok',
      'tensor-after-fault code ERR_IO',
      'index-before ok',
      'index-truncated code ERR_IO',
      'done',
    ]);
  });
});
