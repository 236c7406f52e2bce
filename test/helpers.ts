import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { expect } from 'vitest';

import { QuorumError, Tensor, type Dtype } from '../lib/index.js';
import { packageRoot } from '../lib/native.js';
import { bf16ToF32, f16ToF32 } from './reference/dense.js';
import { rng } from './basics.js';

export { asyncCode, code, rejection, rng } from './basics.js';

/** The `quorum` CLI through tsx, from the sources: its exit status and output. */
export function quorumCli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(packageRoot, 'lib', 'cli', 'main.ts'), ...args], {
    cwd: packageRoot,
    encoding: 'utf8',
    timeout: 240_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}


export function randomF32(n: number, seed: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, r);
}

/** The values a corpus tensor of this dtype really holds, decoded to numbers. */
export function decoded(t: Tensor): Float64Array {
  const d = t.data as ArrayLike<number>;
  const dec = t.dtype === 'bf16' ? bf16ToF32 : t.dtype === 'f16' ? f16ToF32 : (x: number) => x;
  return Float64Array.from({ length: t.size }, (_, i) => dec(d[i] as number));
}

/** Sum over d of |q_d * c_d| for every (query, row): the scale of a dot product's rounding error. */
export function absDot(Q: Float32Array, C: Float64Array, B: number, N: number, D: number): Float64Array {
  const out = new Float64Array(B * N);
  for (let b = 0; b < B; b++)
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let d = 0; d < D; d++) s += Math.abs((Q[b * D + d] as number) * (C[n * D + d] as number));
      out[b * N + n] = s;
    }
  return out;
}

export const floatDtypes: Dtype[] = ['f32', 'bf16', 'f16'];

/**
 * `count` shapes drawn with a seed, each dimension an integer in its [lo, hi]: appended to the kernels' hand-picked
 * shape tables, for the combinations those did not think of.
 */
export function randomShapes(seed: number, count: number, ranges: ReadonlyArray<readonly [number, number]>): number[][] {
  const r = rng(seed);
  return Array.from({ length: count }, () => ranges.map(([lo, hi]) => lo + Math.floor(((r() + 1) / 2) * (hi - lo + 1))));
}



/**
 * Runs an ES-module script (TypeScript through tsx) in a fresh Node process at the package root and returns its last
 * stdout line parsed as JSON; its stderr must be empty. For what only a separate process shows (/proc/self/maps).
 */
export function runModuleScript(script: string): unknown {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: packageRoot, encoding: 'utf8', timeout: 120_000 });
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}
