// One-line error reports for the command line: `ERR_CODE: message`, with system errors in words rather than
// errno names ("no such file or directory", not "ENOENT: ..., open 'x'").
import { QuorumError } from '../errors.js';

const REASONS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  EEXIST: 'already exists',
  ENOSPC: 'no space left on the device',
  EROFS: 'read-only file system',
  EMFILE: 'too many open files',
};

/** A system error's reason in words ("no such file or directory"), or undefined for other errors. */
function systemReason(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^E[A-Z]+$/.test(code) ? (REASONS[code] ?? code.toLowerCase()) : undefined;
}

/** Replaces Node's "ENOENT: no such file or directory, open '/x'" fragments in a message by the reason alone. */
function withoutErrno(message: string): string {
  return message.replace(/\b(E[A-Z]{2,}): ([^,]+), \w+ '[^']*'/g, (_m, _code: string, reason: string) => reason);
}

/** `ERR_CODE: message` for anything a command may throw. */
export function describeError(e: unknown): string {
  if (e instanceof QuorumError) return `${e.code}: ${withoutErrno(e.message)}`;
  const reason = systemReason(e);
  if (reason) {
    const path = (e as { path?: unknown }).path;
    return `ERR_IO: ${typeof path === 'string' ? `${path}: ` : ''}${reason}`;
  }
  return `ERR_NATIVE: ${e instanceof Error ? e.message : String(e)}`;
}
