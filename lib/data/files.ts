// Small file helpers shared by the TypeScript-side formats.
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

import { QuorumError } from '../errors.js';

/** Whether process `pid` is still running (EPERM: it is, under another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes `<name>.tmp-<pid>-<n>` files beside `path` left by saves whose process is gone (killed mid-write, so
 * their cleanup never ran). The native indexes do the same (native/common/persist.cc). Best effort.
 */
export function removeStaleTemporaries(path: string): void {
  const prefix = `${basename(path)}.tmp-`;
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(prefix.length))?.[1]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || alive(pid)) continue;
    try {
      unlinkSync(join(dirname(path), name));
    } catch {
      // raced with another cleaner, or not ours to remove
    }
  }
}

/**
 * Replaces the directory `dir` with the one `write` fills: it is written beside `dir` (`<dir>.tmp-<pid>-<r>`), then
 * swapped in by two renames (the old directory moves aside and is removed). A failure or crash while writing leaves
 * `dir` as it was (a failure removes the new copy; ERR_IO for a file-system error); only a crash between the two
 * renames, with no I/O between them, leaves `dir` missing, the old and new copies beside it.
 */
export async function replaceDirectory(dir: string, write: (tmp: string) => Promise<void>): Promise<void> {
  const tag = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  const tmp = `${dir}.tmp-${tag}`;
  try {
    await write(tmp);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  const old = `${dir}.old-${tag}`;
  let moved = false;
  try {
    renameSync(dir, old);
    moved = true;
    renameSync(tmp, dir);
  } catch (e) {
    if (moved) renameSync(old, dir);
    rmSync(tmp, { recursive: true, force: true });
    throw new QuorumError('ERR_IO', `cannot replace ${dir}: ${(e as Error).message}`);
  }
  syncDirectory(dir);
  rmSync(old, { recursive: true, force: true });
}

/** fsync of `path`'s directory, so that a rename into it survives a power loss. */
function syncDirectory(path: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dirname(path), 'r');
    fsyncSync(fd);
  } catch {
    // some file systems refuse to open or sync a directory; the rename itself happened
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Writes `bytes` to `path` so that a crash leaves the old file or the new one: a temporary file, fsync, rename,
 * directory fsync. Temporary files of earlier, killed saves to the same path are removed first.
 */
export function writeFileAtomic(path: string, bytes: Uint8Array): void {
  removeStaleTemporaries(path);
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  let fd: number | undefined;
  try {
    fd = openSync(tmp, 'w', 0o644);
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
  } catch (e) {
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      // nothing was created
    }
    throw new QuorumError('ERR_IO', `cannot write ${path}: ${(e as Error).message}`);
  }
  syncDirectory(path);
}

/** FNV-1a 32 over bytes (a corruption check, not a cryptographic one). */
export function fnv1a32(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193) >>> 0;
  return h >>> 0;
}

/** The file's bytes; ERR_IO when it cannot be read. */
export function readFileBytes(path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new QuorumError('ERR_IO', `cannot read ${path}: ${(e as Error).message}`);
  }
}

/** The file as UTF-8 text; ERR_IO when it cannot be read. */
export function readTextFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new QuorumError('ERR_IO', `cannot read ${path}: ${(e as Error).message}`);
  }
}

/** The file parsed as one JSON document: ERR_IO when it cannot be read, ERR_FORMAT when it is not JSON. */
export function readJsonFile(path: string): unknown {
  const text = readTextFile(path);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new QuorumError('ERR_FORMAT', `${path}: not valid JSON (${(e as Error).message})`);
  }
}

/**
 * Creates `path` and its missing parents, one level at a time, as ERR_IO naming the path when one cannot be made.
 * (Node 20's recursive mkdirSync never returns for a path under /proc, where mkdir fails with ENOENT: issue 48.)
 */
export function makeDirs(path: string): void {
  const missing: string[] = [];
  let p = resolve(path);
  for (;;) {
    let st;
    try {
      st = statSync(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new QuorumError('ERR_IO', `cannot create directory ${path}: ${(e as Error).message}`);
    }
    if (st) {
      if (!st.isDirectory()) throw new QuorumError('ERR_IO', `cannot create directory ${path}: ${p} is not a directory`);
      break;
    }
    missing.push(p);
    const up = dirname(p);
    if (up === p) break;
    p = up;
  }
  for (const dir of missing.reverse()) {
    try {
      mkdirSync(dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST' && statSync(dir, { throwIfNoEntry: false })?.isDirectory()) continue;
      throw new QuorumError('ERR_IO', `cannot create directory ${path}: ${(e as Error).message}`);
    }
  }
}
