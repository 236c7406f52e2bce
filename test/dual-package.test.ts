// One process that both imports and requires the package loads two copies of it (the dual-package hazard). The
// classes a user hands back (Tensor, WordPieceTokenizer) and the error they catch (QuorumError) answer instanceof
// across the copies (lib/brand.ts). Runs against dist/, as a user's process would.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { expect, it } from 'vitest';

import { packageRoot } from '../lib/native.js';

it('a Tensor, a tokenizer, a Retriever and a QuorumError of one copy are accepted and recognised by the other', () => {
  const r = spawnSync(process.execPath, [join(packageRoot, 'test', 'fixtures', 'dual-package.mjs'), packageRoot], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout)).toEqual({ twoCopies: true, tensorAcross: true, added: 2, errorAcross: true, tokenizerAcross: 2, notATensor: true, retrieverAcross: true });
});
