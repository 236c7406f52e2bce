// Issue 65, item 3: the held-out-style sweep (test/sweep-inputs.ts over test/sweep-surfaces.ts): bad values of every
// kind into every listed function, option, CLI option and saved file, each case isolated (a worker restarted after a
// crash or a hang). The run fails on any untyped error, crash or hang, or on more than 5 silent acceptances; the
// counts go to docs/results/robustness.md.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { expect, it } from 'vitest';

import { packageRoot } from '../lib/native.js';

it('bad values across the public surface: all typed, none silent, no crash or hang', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(packageRoot, 'test', 'sweep-inputs.ts')], {
    cwd: packageRoot,
    encoding: 'utf8',
    timeout: 600_000,
  });
  const summary = /^(\d+) cases: (\d+) typed, (\d+) valid values taken, (\d+) untyped, (\d+) silent, (\d+) crashes, (\d+) hangs$/m.exec(r.stdout);
  expect(summary, r.stdout + r.stderr).not.toBeNull();
  const [, cases, , , untyped, silent, crashes, hangs] = summary!.map(Number);
  expect(cases).toBeGreaterThan(700);
  expect({ untyped, crashes, hangs }, r.stdout).toEqual({ untyped: 0, crashes: 0, hangs: 0 });
  expect(silent, r.stdout).toBeLessThanOrEqual(5);
  expect(r.status).toBe(0);
}, 600_000);
