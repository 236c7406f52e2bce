// Issue 48, item 6: faults in the middle of a save. A full disk (the child's file-size limit, RLIMIT_FSIZE, with
// SIGXFSZ ignored, so writes fail with EFBIG as they would with ENOSPC) gives ERR_IO and leaves the old file intact;
// kill -9 at a random moment of a loop of saves leaves the old version or the new one, whole. For each saved kind:
// a DenseIndex, a SparseIndex, a tensor file, a file written by writeFileAtomic, a directory replaced whole by
// replaceDirectory, and a model directory saved over itself (saveModelDir, which MUF, CAME and ROM saves, exports,
// checkpoints and the CLI's outputs share: replaceDirectory keeping what the save does not write).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { DenseIndex } from '../lib/dense-index.js';
import { readSafetensors } from '../lib/io/safetensors.js';
import { readModelCard } from '../lib/models/model-dir.js';
import { packageRoot } from '../lib/native.js';
import { SparseIndex } from '../lib/sparse-index.js';
import { Tensor } from '../lib/tensor.js';
import { content } from './fixtures/fault-saver.js';

const root = mkdtempSync(join(tmpdir(), 'quorum-faults-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const saver = join(packageRoot, 'test', 'fixtures', 'fault-saver.ts');
const KINDS = ['dense', 'sparse', 'tensor', 'file', 'dir', 'model'] as const;
type Kind = (typeof KINDS)[number];

/** Which version (0 or 1) the file at `path` holds, read back whole; throws when it is torn or unreadable. */
async function versionOf(kind: Kind, path: string): Promise<number> {
  let first: number;
  if (kind === 'dense') first = (await (await DenseIndex.load(path)).reconstruct([0n]))[0]!;
  else if (kind === 'sparse') {
    const index = await SparseIndex.load(path);
    first = index.searchSync([[{ index: 0, value: 1 }]], 1).hits(0)[0]!.score;
    expect(index.size).toBe(4096);
  } else if (kind === 'tensor') first = (await Tensor.map(path, { verify: true })).data[0] as number;
  else if (kind === 'model') {
    // The card's version, the weights' and the tokenizer beside them all of one save; the file saved beside kept.
    const card = readModelCard(path);
    const w = readSafetensors(readFileSync(join(path, card.weights.file))).get('w')!;
    expect(w.data.length).toBe(content(0).length);
    first = w.data[0]!;
    expect(card.training?.version).toBe(first >= 1000 ? 1 : 0);
    expect(w.data[w.data.length - 1]).toBe(content(card.training!.version as number)[w.data.length - 1]);
    expect(readdirSync(path).sort()).toEqual(['extra.txt', 'model.json', 'tokenizer.json', 'vocab.txt', 'weights.safetensors']);
  } else if (kind === 'dir') {
    const a = new Float32Array(readFileSync(join(path, 'a.bin')).buffer.slice(0));
    const b = new Float32Array(readFileSync(join(path, 'b.bin')).buffer.slice(0));
    const v = a[0]! >= 1000 ? 1 : 0;
    expect([...a, ...b].slice(0, 5000)).toEqual([...content(v).subarray(0, 5000)]);
    expect(b[b.length - 1]).toBe(content(v)[content(v).length - 1]);
    first = a[0]!;
  } else {
    const bytes = readFileSync(path);
    expect(bytes.length).toBe(content(0).byteLength);
    const f = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
    expect([...f.subarray(0, 5000)]).toEqual([...content(f[0]! >= 1000 ? 1 : 0).subarray(0, 5000)]);
    first = f[0]!;
  }
  // Version 1's values start at 1000; for the sparse index the best score of term 0 is one of the version's values.
  return first >= 1000 ? 1 : 0;
}

function saveOnce(kind: Kind, path: string, version: number, limitKb?: number): string {
  const node = `${JSON.stringify(process.execPath)} --import tsx ${JSON.stringify(saver)} ${kind} ${JSON.stringify(path)} ${version}`;
  // `trap '' XFSZ` is inherited across exec: the kernel then fails the write instead of killing the process.
  const cmd = limitKb ? `ulimit -f ${limitKb}; trap '' XFSZ; exec ${node}` : `exec ${node}`;
  const r = spawnSync('bash', ['-c', cmd], { cwd: packageRoot, encoding: 'utf8', timeout: 60_000 });
  return r.stdout.trim();
}

describe('a full disk during a save', () => {
  it.each(KINDS)('%s: ERR_IO, the old file intact, no temporary file left', async (kind) => {
    const dir = join(root, `full-${kind}`);
    const path = join(dir, 'saved.bin');
    mkdirSync(dir, { recursive: true });
    expect(saveOnce(kind, path, 0)).toBe('saved');
    if (kind === 'model') writeFileSync(join(path, 'extra.txt'), 'kept');
    expect(await versionOf(kind, path)).toBe(0);
    // 512 KB a file: the 2 MB payload (two 1 MB halves for the directory) cannot be written.
    expect(saveOnce(kind, path, 1, 512)).toBe('ERR_IO');
    expect(await versionOf(kind, path)).toBe(0);
    expect(readdirSync(dir)).toEqual(['saved.bin']);
  });
});

describe('kill -9 during saves', () => {
  it.each(KINDS)('%s: the old version or the new one, whole, at every kill', async (kind) => {
    const dir = join(root, `kill-${kind}`);
    const path = join(dir, 'saved.bin');
    mkdirSync(dir, { recursive: true });
    expect(saveOnce(kind, path, 0)).toBe('saved');
    if (kind === 'model') writeFileSync(join(path, 'extra.txt'), 'kept');
    const seen = new Set<number>();
    for (let trial = 0; trial < 4; trial++) {
      const child = spawn(process.execPath, ['--import', 'tsx', saver, kind, path, '0', 'loop'], { cwd: packageRoot, stdio: 'ignore' });
      // Past the child's start (about 1 s), at a different point of a save each time.
      await new Promise((r) => setTimeout(r, 1500 + trial * 230));
      child.kill('SIGKILL');
      await new Promise((r) => child.on('close', r));
      seen.add(await versionOf(kind, path));
    }
    expect([...seen].every((v) => v === 0 || v === 1)).toBe(true);
    // A later save cleans the killed saves' temporary files.
    expect(saveOnce(kind, path, 1)).toBe('saved');
    expect(await versionOf(kind, path)).toBe(1);
    expect(readdirSync(dir)).toEqual(['saved.bin']);
  }, 60_000);
});
