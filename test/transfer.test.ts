// A plain typed array whose buffer is transferred away (and collected) while a Promise form still works on it must
// not crash the process: the Promise forms copy plain typed arrays before going off the main thread (lib/operand.ts,
// Operands.copied). Run in a child process, with GC forced after each transfer, so that a crash fails this test only.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { expect, it } from 'vitest';

import { packageRoot } from '../lib/native.js';

it('transferring a plain typed array during every kind of async call: no crash, the same results', () => {
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', join(packageRoot, 'test', 'fixtures', 'transfer-during-async.ts')], {
    cwd: packageRoot,
    encoding: 'utf8',
    timeout: 120_000,
  });
  expect(r.signal).toBeNull();
  expect(r.status, r.stderr).toBe(0);
  expect(r.stdout.trim().split('\n')).toEqual([
    'scoreTopK: same',
    'DenseIndex.add and search: 20000 2',
    'maxSim: 2x30',
    'spladePool and toSparse: 2',
    'infoNce: finite',
    'ensembleMI: 4',
    'SparseIndex.add and search: 1000 1',
    'MlpEnsemble.train and score: 2x2x5',
    // The rows were written into the addon's own array; the transferred `out` is reported, not written.
    'Retriever.encode into a transferred out: ERR_DISPOSED',
    'done',
  ]);
}, 120_000);
