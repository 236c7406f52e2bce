import { brandClass } from './brand.js';

/** Machine-readable error codes carried by every {@link QuorumError}. */
export type ErrorCode =
  | 'ERR_ARG'
  | 'ERR_SHAPE'
  | 'ERR_DTYPE'
  | 'ERR_RANGE'
  | 'ERR_DISPOSED'
  | 'ERR_NONFINITE'
  | 'ERR_UNSUPPORTED'
  | 'ERR_NOMEM'
  | 'ERR_FORMAT'
  | 'ERR_IO'
  | 'ERR_STATE'
  | 'ERR_NOT_FOUND'
  | 'ERR_DUPLICATE_ID'
  | 'ERR_NATIVE'
  | 'ERR_BACKEND_UNAVAILABLE'
  /** A bounded queue is full (RequestBatcher): try again later. */
  | 'ERR_BUSY'
  /** A request was not answered within its deadline (RequestBatcher). */
  | 'ERR_TIMEOUT'
  /** A rank of a data-parallel group exited or did not answer within the group's timeout (ProcessGroup). */
  | 'ERR_DISTRIBUTED';

/**
 * The error Quorum throws (or rejects with) for bad input or an unavailable backend. Check `code` rather
 * than the message.
 *
 * @example
 * try { scoreTopKSync(q, corpus, 0); } catch (e) { if (e instanceof QuorumError && e.code === 'ERR_RANGE') ... }
 */
export class QuorumError extends Error {
  /** What went wrong, stable across versions (the message is for people and may change). */
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'QuorumError';
    this.code = code;
  }
}
// `e instanceof QuorumError` holds for the errors of the package's other copy too (ESM and CommonJS in one process).
brandClass(QuorumError, 'QuorumError');

/** Re-throws a native error as a QuorumError, keeping its code; anything else passes through unchanged. */
function asQuorumError(e: unknown): unknown {
  if (e instanceof QuorumError) return e;
  if (e instanceof Error) {
    const code: unknown = (e as Error & { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_')) return new QuorumError(code as ErrorCode, e.message, { cause: e });
  }
  return e;
}

/** Runs a native call, mapping its errors to QuorumError. */
export function callNative<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw asQuorumError(e);
  }
}

/** Awaits a native Promise, mapping its rejection to QuorumError. */
export async function awaitNative<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    throw asQuorumError(e);
  }
}
