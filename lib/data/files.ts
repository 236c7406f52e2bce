// Small file helpers shared by the TypeScript-side formats.
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
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
function removeStaleTemporaries(path: string): void {
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

/** rm -rf that never throws (cleanup after a failure must not replace the failure's error). */
function removeQuietly(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch {
    // nothing to remove, or not ours
  }
}

/**
 * What replaceDirectory calls left beside `dir` when their process died (kill -9, power loss): a finished copy not
 * yet swapped in when `dir` itself is missing (the kill fell between the two renames: `<dir>.old-T` and, complete,
 * `<dir>.tmp-T`), which is put in place, and then every leftover of a dead process, removed.
 */
function recoverDirectory(dir: string): void {
  const base = basename(dir);
  let names: string[];
  try {
    names = readdirSync(dirname(dir));
  } catch {
    return;
  }
  const dead = (name: string, kind: string) => {
    if (!name.startsWith(`${base}.${kind}-`)) return undefined;
    const tag = name.slice(base.length + kind.length + 2);
    const pid = Number(/^(\d+)-/.exec(tag)?.[1]);
    return Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && !alive(pid) ? tag : undefined;
  };
  if (!existsSync(dir))
    for (const name of names) {
      const tag = dead(name, 'old');
      if (tag === undefined) continue;
      // A .tmp of the same tag exists only once it was complete (it is renamed only after its write).
      const done = join(dirname(dir), `${base}.tmp-${tag}`);
      renameSync(existsSync(done) ? done : join(dirname(dir), name), dir);
      break;
    }
  for (const name of readdirSync(dirname(dir)))
    if (dead(name, 'tmp') !== undefined || dead(name, 'old') !== undefined) removeQuietly(join(dirname(dir), name));
}

/** Options of {@link replaceDirectory}. */
interface ReplaceDirectoryOptions {
  /**
   * Keep what the old directory holds and the new one does not write (default false: the new directory alone).
   * Kept files are hard links (copies where the file system refuses links), subdirectories merged entry by entry:
   * a method's directory saved again keeps its `index/`, `checkpoints/` and exports.
   */
  keepOthers?: boolean;
}

/** The entries of `from` that `to` lacks, into `to` (hard links, else copies; directories merged). */
function carryOver(from: string, to: string): void {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const src = join(from, entry.name);
    const dst = join(to, entry.name);
    const there = lstatSync(dst, { throwIfNoEntry: false });
    if (entry.isDirectory()) {
      if (!there) mkdirSync(dst);
      if (!there || there.isDirectory()) carryOver(src, dst);
    } else if (!there) {
      if (entry.isSymbolicLink()) symlinkSync(readlinkSync(src), dst);
      else
        try {
          linkSync(src, dst);
        } catch {
          copyFileSync(src, dst);
        }
    }
  }
}

/** A file-system error (ENOSPC, EACCES...) thrown while writing `dir` as ERR_IO naming it; other errors as they are. */
function asIoError(e: unknown, dir: string): unknown {
  if (e instanceof QuorumError || typeof (e as NodeJS.ErrnoException)?.syscall !== 'string') return e;
  return new QuorumError('ERR_IO', `cannot write ${dir}: ${(e as Error).message}`, { cause: e });
}

/** Where a replacement of `dir` writes: beside the directory `dir` names (through a symbolic link), created. */
function beginReplace(dir: string): { target: string; tmp: string; tag: string } {
  let target = resolve(dir);
  try {
    if (lstatSync(target, { throwIfNoEntry: false })?.isSymbolicLink()) target = realpathOrSelf(target);
    makeDirs(dirname(target));
    recoverDirectory(target);
  } catch (e) {
    throw asIoError(e, dir);
  }
  const tag = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  const tmp = `${target}.tmp-${tag}`;
  makeDirs(tmp);
  return { target, tmp, tag };
}

function realpathOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path; // a dangling link: replaced as it is
  }
}

/** The written copy `tmp` swapped in for `target` (after {@link carryOver} when keeping). */
function finishReplace(dir: string, { target, tmp, tag }: { target: string; tmp: string; tag: string }, keepOthers: boolean): void {
  const old = `${target}.old-${tag}`;
  let moved = false;
  try {
    if (keepOthers && statSync(target, { throwIfNoEntry: false })?.isDirectory()) carryOver(target, tmp);
    if (existsSync(target)) {
      renameSync(target, old);
      moved = true;
    }
    renameSync(tmp, target);
  } catch (e) {
    if (moved) renameSync(old, target);
    removeQuietly(tmp);
    throw new QuorumError('ERR_IO', `cannot replace ${dir}: ${(e as Error).message}`);
  }
  syncDirectory(target);
  removeQuietly(old);
}

/**
 * Replaces the directory `dir` (or creates it, and its parents) with the one `write` fills: it is written beside
 * `dir` (`<dir>.tmp-<pid>-<r>`, created before `write` is called), then swapped in by two renames (the old directory
 * moves aside and is removed). A failure while writing leaves `dir` as it was and removes the new copy (ERR_IO for a
 * file-system error); a process killed at any point leaves `dir` old or new, whole: one killed between the two
 * renames leaves both copies beside a missing `dir`, and the next replaceDirectory of `dir` puts the new one in
 * place first. With `keepOthers`, what the old directory holds and `write` does not replace stays
 * ({@link ReplaceDirectoryOptions}).
 */
export async function replaceDirectory(
  dir: string,
  write: (tmp: string) => Promise<void>,
  options: ReplaceDirectoryOptions = {},
): Promise<void> {
  const r = beginReplace(dir);
  try {
    await write(r.tmp);
  } catch (e) {
    removeQuietly(r.tmp);
    throw asIoError(e, dir);
  }
  finishReplace(dir, r, !!options.keepOthers);
}

/** {@link replaceDirectory} for a synchronous `write`; returns what `write` returns. */
export function replaceDirectorySync<T>(dir: string, write: (tmp: string) => T, options: ReplaceDirectoryOptions = {}): T {
  const r = beginReplace(dir);
  let out: T;
  try {
    out = write(r.tmp);
  } catch (e) {
    removeQuietly(r.tmp);
    throw asIoError(e, dir);
  }
  finishReplace(dir, r, !!options.keepOthers);
  return out;
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
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
        throw new QuorumError('ERR_IO', `cannot create directory ${path}: ${(e as Error).message}`);
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
