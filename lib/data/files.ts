// Small file helpers shared by the TypeScript-side formats.
import { constants as bufferConstants } from 'node:buffer';
import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fstatSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
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
  removeDeadEntries(dirname(path), `${basename(path)}.tmp-`);
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

/**
 * What kind of output a directory is, so that an earlier output of the same kind may be replaced whole (issue 65):
 * Quorum's own directories carry a card, a JSON file whose `format` names their kind. A directory without it (the
 * user's `src/`, their home) is never swapped: the output's files go into it one by one, and nothing else is touched.
 */
export interface OutputKind {
  /** The file that says what the directory is (moved in last when writing into someone else's directory). */
  card: string;
  /** The card's `format` field for this kind (a JSON card). */
  format?: string;
  /** Instead of `format`: whether `dir` is an earlier output of this kind, for outputs whose card is not JSON. */
  owns?: (dir: string) => boolean;
}

/** Options of {@link replaceDirectory}. */
interface ReplaceDirectoryOptions {
  /**
   * Keep what the old directory holds and the new one does not write (default false: the new directory alone).
   * Kept files are hard links (copies where the file system refuses links), subdirectories merged entry by entry:
   * a method's directory saved again keeps its `index/`, `checkpoints/` and exports.
   */
  keepOthers?: boolean;
  /** The output's kind: an existing directory of this kind is replaced whole; any other one is written into. */
  kind?: OutputKind;
}

/** `dir/name` parsed as a JSON object, or undefined when it is missing, unreadable or not one (never throws). */
export function jsonCardIn(dir: string, name: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(readTextFile(join(dir, name))) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the existing directory `dir` is an output of `kind` (its card says so). */
function isOwnOutput(dir: string, kind: OutputKind | undefined): boolean {
  if (!kind || !statSync(join(dir, kind.card), { throwIfNoEntry: false })?.isFile()) return false;
  return kind.owns ? kind.owns(dir) : jsonCardIn(dir, kind.card)?.format === kind.format;
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

/**
 * A path a caller names for a file or directory: a non-empty string without NUL bytes (which the system would cut
 * the path at), else ERR_ARG naming `what`. `--out ''` would otherwise name the current directory.
 */
export function checkPath(path: unknown, what = 'path'): asserts path is string {
  if (typeof path !== 'string') throw new QuorumError('ERR_ARG', `${what} must be a string, got ${typeof path}`);
  if (path === '') throw new QuorumError('ERR_ARG', `${what} must not be empty`);
  if (path.includes('\0')) throw new QuorumError('ERR_ARG', `${what} must not contain a NUL byte`);
}

/**
 * Checks that a directory output may go to `dir`: nothing there, or a directory (through links). A regular file, a
 * FIFO, a device or a link to nothing is the user's: ERR_IO naming it. Commands call it before their work; every
 * {@link replaceDirectory} calls it again. Returns the real path of the directory to write.
 */
export function checkOutputDirectory(dir: string): string {
  checkPath(dir, 'the output directory');
  try {
    return outputDirectory(dir);
  } catch (e) {
    throw asIoError(e, dir); // ENOTDIR: a parent is a file
  }
}

/** The path a symbolic link names (the link itself stays), or `path` itself; ERR_IO for a link to nothing. */
function followLink(path: string): string {
  if (!lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink()) return path;
  try {
    return realpathSync(path);
  } catch {
    throw new QuorumError('ERR_IO', `${path} is a symbolic link to nothing: Quorum does not replace it`);
  }
}

function outputDirectory(dir: string): string {
  const target = followLink(resolve(dir));
  const st = statSync(target, { throwIfNoEntry: false });
  if (st && !st.isDirectory())
    throw new QuorumError('ERR_IO', `${dir} exists and is not a directory: Quorum does not replace it (choose another output path)`);
  return target;
}

/** How a replacement of `dir` goes: `swap` writes beside it and renames; `merge` writes inside it and moves each file in. */
interface ReplacePlan {
  mode: 'swap' | 'merge';
  target: string;
  tmp: string;
  tag: string;
}

/** Where a replacement of `dir` writes: beside the directory `dir` names (through a symbolic link), or inside it. */
function beginReplace(dir: string, kind: OutputKind | undefined): ReplacePlan {
  let target = checkOutputDirectory(dir);
  let mode: ReplacePlan['mode'] = 'swap';
  try {
    makeDirs(dirname(target));
    recoverDirectory(target);
    target = checkOutputDirectory(target); // recovery may have put a directory back
    if (existsSync(target) && !isOwnOutput(target, kind)) {
      mode = 'merge';
      removeDeadEntries(target, '.quorum-tmp-');
    }
  } catch (e) {
    throw asIoError(e, dir);
  }
  const tag = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  const tmp = mode === 'swap' ? `${target}.tmp-${tag}` : join(target, `.quorum-tmp-${tag}`);
  makeDirs(tmp);
  return { mode, target, tmp, tag };
}

/**
 * Removes the entries `<prefix><pid>-...` of `dir` whose process is gone: a save's temporary file, or a merge's
 * temporary directory, left by a process killed mid-way. Best effort.
 */
function removeDeadEntries(dir: string, prefix: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(prefix.length))?.[1]);
    if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && !alive(pid)) removeQuietly(join(dir, name));
  }
}

/**
 * The entries of `from` that cannot go into `to` without replacing something of another kind: a directory where a
 * file goes, a file (or a FIFO, a device) where a directory goes. Checked before anything moves.
 */
function checkMerge(from: string, to: string): void {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const dst = join(to, entry.name);
    const there = lstatSync(dst, { throwIfNoEntry: false });
    if (!there) continue;
    if (entry.isDirectory()) {
      if (!there.isDirectory()) throw new QuorumError('ERR_IO', `cannot write ${dst}: it exists and is not a directory`);
      checkMerge(join(from, entry.name), dst);
    } else if (!there.isFile() && !there.isSymbolicLink())
      throw new QuorumError('ERR_IO', `cannot write ${dst}: it exists and is not a regular file`);
  }
}

/** Moves the entries of `from` into `to`, each by one rename (a new subdirectory whole), `last` after the others. */
function moveInto(from: string, to: string, last?: string): void {
  const names = readdirSync(from).sort((a, b) => Number(a === last) - Number(b === last));
  for (const name of names) {
    const src = join(from, name);
    const dst = join(to, name);
    if (statSync(src).isDirectory() && existsSync(dst)) moveInto(src, dst);
    else renameSync(src, dst);
  }
  syncDirectory(join(to, '.'));
}

/** The written copy swapped in for the target (after {@link carryOver} when keeping), or its files moved into it. */
function finishReplace(dir: string, plan: ReplacePlan, keepOthers: boolean, kind: OutputKind | undefined): void {
  const { target, tmp, tag } = plan;
  if (plan.mode === 'merge') {
    try {
      checkMerge(tmp, target);
      moveInto(tmp, target, kind?.card);
    } catch (e) {
      throw asIoError(e, dir);
    } finally {
      removeQuietly(tmp);
    }
    return;
  }
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
 * Writes the directory `dir` (created, with its parents, when missing) with the files `write` puts in the temporary
 * directory it is given. What happens to an existing `dir` depends on what it is (issue 65):
 * - nothing, or an earlier output of the same `kind` (its card says so): the new copy is written beside it
 *   (`<dir>.tmp-<pid>-<r>`) and swapped in by two renames (the old one moves aside and is removed). A process killed at
 *   any point leaves `dir` old or new, whole: one killed between the two renames leaves both copies beside a missing
 *   `dir`, and the next replacement puts the new one in place first. With `keepOthers`, what the old directory holds
 *   and `write` does not replace stays ({@link ReplaceDirectoryOptions}).
 * - any other directory (the user's): the files are written inside it (`.quorum-tmp-<pid>-<r>/`), then each moved in
 *   by one rename, the kind's card last; nothing else in it is touched, the directory itself stays.
 * - a regular file, a FIFO, a device, a link to nothing: ERR_IO naming it, nothing written.
 * A failure while writing leaves `dir` as it was and removes the new copy (ERR_IO for a file-system error).
 */
export async function replaceDirectory(
  dir: string,
  write: (tmp: string) => Promise<void>,
  options: ReplaceDirectoryOptions = {},
): Promise<void> {
  const r = beginReplace(dir, options.kind);
  try {
    await write(r.tmp);
  } catch (e) {
    removeQuietly(r.tmp);
    throw asIoError(e, dir);
  }
  finishReplace(dir, r, !!options.keepOthers, options.kind);
}

/** {@link replaceDirectory} for a synchronous `write`; returns what `write` returns. */
export function replaceDirectorySync<T>(dir: string, write: (tmp: string) => T, options: ReplaceDirectoryOptions = {}): T {
  const r = beginReplace(dir, options.kind);
  let out: T;
  try {
    out = write(r.tmp);
  } catch (e) {
    removeQuietly(r.tmp);
    throw asIoError(e, dir);
  }
  finishReplace(dir, r, !!options.keepOthers, options.kind);
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
  checkPath(path, 'the output file');
  path = followLink(path); // the file a link names is written, the link stays
  const there = statSync(path, { throwIfNoEntry: false });
  if (there && !there.isFile()) throw new QuorumError('ERR_IO', `cannot write ${path}: it exists and is not a regular file`);
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

/**
 * Checks that `path` names a regular file (through links), else ERR_IO: opening a FIFO blocks until a writer comes
 * (a server's event loop would stop), and a device such as /dev/zero never ends. Readers that stream call this first.
 */
export function checkRegularFile(path: string): void {
  checkPath(path, 'the file path');
  let st;
  try {
    st = statSync(path);
  } catch (e) {
    throw new QuorumError('ERR_IO', `cannot read ${path}: ${(e as Error).message}`);
  }
  if (!st.isFile()) throw new QuorumError('ERR_IO', `cannot read ${path}: not a regular file`);
}

/**
 * The bytes of the regular file `path` (`{ limit }`: all of them, ERR_IO past the limit; `{ head }`: at most the first
 * `head`), read through one descriptor opened without blocking (so a FIFO swapped in after a check cannot stall the
 * open) and checked to be a regular file; ERR_IO otherwise.
 */
function readRegularFile(path: string, size: { limit: number } | { head: number }): Buffer {
  checkPath(path, 'the file path');
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile()) throw new QuorumError('ERR_IO', `cannot read ${path}: not a regular file`);
    if ('limit' in size && st.size > size.limit)
      throw new QuorumError('ERR_IO', `cannot read ${path}: ${st.size} bytes, more than the ${size.limit} this reader holds`);
    const out = Buffer.allocUnsafe('head' in size ? Math.min(st.size, size.head) : st.size);
    let off = 0;
    while (off < out.length) {
      const n = readSync(fd, out, off, out.length - off, off);
      if (n === 0) break; // shrank meanwhile: the format's own checks will tell
      off += n;
    }
    return off === out.length ? out : out.subarray(0, off);
  } catch (e) {
    if (e instanceof QuorumError) throw e;
    throw new QuorumError('ERR_IO', `cannot read ${path}: ${(e as Error).message}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Checks that a command may write its file output at `path`: nothing is there, or a regular file that is empty or
 * already of this kind (`looksLike` its first 4 KiB: an earlier index, run or report). Anything else is the user's
 * (notes.txt, a directory, a FIFO, /dev/null): ERR_IO naming it, before any work is written (issue 65).
 */
export function checkOutputFile(path: string, what: string, looksLike: (head: Buffer) => boolean): void {
  checkPath(path, 'the output file');
  const st = statSync(path, { throwIfNoEntry: false });
  if (!st) return;
  if (!st.isFile()) throw new QuorumError('ERR_IO', `${path} exists and is not a regular file: Quorum does not replace it`);
  if (st.size === 0) return;
  const bytes = readRegularFile(path, { head: 4096 });
  if (!looksLike(bytes))
    throw new QuorumError('ERR_IO', `${path} exists and is not ${what}: Quorum does not replace it (choose another output path)`);
}

/** The file's bytes; ERR_IO when it cannot be read or is not a regular file. */
export function readFileBytes(path: string): Uint8Array {
  return readRegularFile(path, { limit: bufferConstants.MAX_LENGTH });
}

/** The file as UTF-8 text; ERR_IO when it cannot be read, is not a regular file or is longer than a string holds. */
export function readTextFile(path: string): string {
  return readRegularFile(path, { limit: bufferConstants.MAX_STRING_LENGTH }).toString('utf8');
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

const directoryLocks = new Map<string, Promise<unknown>>();

/**
 * Runs `update` (a read-change-write of the directory `dir`) alone: updates of one directory in this process wait for
 * each other, and one in another process is ERR_BUSY naming its pid (a lock file `<dir>.lock` beside it, removed
 * after; a dead holder's is taken over). Two concurrent passage updates both resolved and one was lost (issue 65).
 */
export async function withDirectoryLock<T>(dir: string, update: () => Promise<T>): Promise<T> {
  checkPath(dir, 'the directory');
  const key = resolve(dir);
  const before = directoryLocks.get(key) ?? Promise.resolve();
  const run = before.then(() => lockedAcrossProcesses(key, dir, update));
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  directoryLocks.set(key, settled);
  try {
    return await run;
  } finally {
    if (directoryLocks.get(key) === settled) directoryLocks.delete(key);
  }
}

async function lockedAcrossProcesses<T>(key: string, dir: string, update: () => Promise<T>): Promise<T> {
  const lock = `${key}.lock`;
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(lock, 'wx', 0o644);
      writeSync(fd, Buffer.from(String(process.pid)));
      closeSync(fd);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw asIoError(e, lock);
      const pid = Number(readFileSync(lock, 'utf8').trim());
      if (attempt === 0 && !(Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && alive(pid))) {
        removeQuietly(lock); // its holder died mid-update
        continue;
      }
      throw new QuorumError('ERR_BUSY', `${dir} is being updated by another process (pid ${pid}): try again when it is done`);
    }
  }
  try {
    return await update();
  } finally {
    removeQuietly(lock);
  }
}
