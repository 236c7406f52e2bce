// Runs a TypeScript snippet in its own Node process, for cases that once crashed the process (SIGSEGV, SIGABRT):
// should one regress, the child dies and the test fails, while the suite goes on.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { packageRoot } from '../lib/native.js';

export interface Isolated {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The last stdout line, parsed as JSON (what the snippet reports). */
  result: unknown;
}

/**
 * Runs `source` (an ES module; `$lib` in it is replaced by the absolute path of lib/, so it can import
 * `$lib/index.js`) with tsx, and returns how the process ended.
 */
export function runIsolated(source: string, timeoutMs = 120_000): Isolated {
  const dir = mkdtempSync(join(tmpdir(), 'quorum-isolated-'));
  try {
    const file = join(dir, 'case.ts');
    writeFileSync(file, source.replaceAll('$lib', join(packageRoot, 'lib')));
    const r = spawnSync(process.execPath, ['--import', 'tsx', file], { cwd: packageRoot, encoding: 'utf8', timeout: timeoutMs });
    const last = r.stdout.trim().split('\n').pop() ?? '';
    let result: unknown;
    try {
      result = JSON.parse(last);
    } catch {
      result = undefined;
    }
    return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, result };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A snippet line that runs `expr` and prints its QuorumError code ('ok' when it does not throw). */
export const CODE_OF = `
import { QuorumError } from '$lib/errors.js';
function codeOf(fn: () => unknown): string {
  try { fn(); return 'ok'; } catch (e) { return e instanceof QuorumError ? e.code : 'untyped: ' + String(e); }
}
`;
