// Issue 21: every function of every entry point, called with garbage (no argument, undefined, null, a string, a
// number, {}, [], NaN, ...), throws or rejects with a QuorumError, never a TypeError from deep inside
// (test/sweep-errors.ts; it found 55 functions that did).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { expect, it } from 'vitest';

import { packageRoot } from '../lib/native.js';

it('every exported function gives typed errors on garbage arguments', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(packageRoot, 'test', 'sweep-errors.ts')], { cwd: packageRoot, encoding: 'utf8', timeout: 120_000 });
  const summary = r.stdout.split('\n').find((l) => /untyped;/.test(l)) ?? '';
  expect(r.stdout).toMatch(/^0 untyped; 0 functions; \d+ calls$/m);
  expect(Number(/(\d+) calls/.exec(summary)?.[1])).toBeGreaterThan(1000);
  expect(r.status).toBe(0);
});
