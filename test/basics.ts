// Test helpers with no native dependency (helpers.ts re-exports them): error codes and seeded numbers.
import { expect } from 'vitest';

import { QuorumError } from '../lib/errors.js';
import { seededRandom } from '../lib/random.js';

/** Seeded uniform floats in [-1, 1) (mulberry32), so failures reproduce. */
export function rng(seed: number): () => number {
  const u = seededRandom(seed);
  return () => u() * 2 - 1;
}

/** The QuorumError fn throws (undefined when it does not throw; anything else fails the test). */
function thrown(fn: () => unknown): QuorumError | undefined {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(QuorumError);
    return e as QuorumError;
  }
  return undefined;
}

/** The `code` of the QuorumError fn throws (undefined when it does not throw; anything else fails the test). */
export function code(fn: () => unknown): string | undefined {
  return thrown(fn)?.code;
}

/** The message of the QuorumError fn throws (undefined when it does not throw; anything else fails the test). */
export function errorMessage(fn: () => unknown): string | undefined {
  return thrown(fn)?.message;
}

/** {@link code} for a Promise. */
export async function asyncCode(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(QuorumError);
    return (e as QuorumError).code;
  }
  return undefined;
}

/**
 * The code a Promise form rejects with. The call must return a Promise rather than throw synchronously, and reject
 * with a QuorumError ('resolved' when it does not reject).
 */
export async function rejection(make: () => unknown): Promise<string> {
  let p: unknown;
  expect(() => {
    p = make();
  }).not.toThrow();
  expect(p).toBeInstanceOf(Promise);
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(QuorumError);
    return (e as QuorumError).code;
  }
  return 'resolved';
}

/** The largest |a[i] - b[i]| (the lengths must match; a NaN anywhere makes it NaN, which fails any bound). */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}
