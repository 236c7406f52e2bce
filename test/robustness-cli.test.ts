// Issue 48, item 7: the CLI against damaged inputs, in CI (test/sweep-cli.ts): every command that reads a dataset,
// queries, qrels, a run or a model card, against empty, blank, header-only, cut-off, huge-line, non-UTF-8,
// duplicate-id and missing-field copies; every command that writes, against an output it cannot write. Each case in
// its own process with a 60 s limit: exit 1 and one typed line, never a hang, a stack or an exit 0 on damaged input.
// Runs the compiled CLI (npm run build:ts). Then every field of model.json, removed, null or mistyped, through the
// card reader in this process (the CLI cases show that reader's errors reach the command line).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { expect, it } from 'vitest';

import { readModelCard, readModelParameters } from '../lib/models/model-dir.js';
import { packageRoot } from '../lib/native.js';
import { code } from './basics.js';

it('every CLI command ends damaged input with one typed error line, within 60 s each', () => {
  if (!existsSync(join(packageRoot, 'dist', 'lib', 'cli', 'main.js'))) throw new Error('the sweep runs the compiled CLI: run npm run build:ts first');
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(packageRoot, 'test', 'sweep-cli.ts')], { cwd: packageRoot, encoding: 'utf8', timeout: 600_000 });
  const summary = /^(\d+) cases; (\d+) failed$/m.exec(r.stdout);
  expect(r.stdout.split('\n').filter((l) => l.startsWith('FAIL'))).toEqual([]);
  expect(summary, r.stderr.slice(-2000)).not.toBeNull();
  expect(Number(summary![1])).toBeGreaterThan(100);
  expect(r.status).toBe(0);
}, 620_000);

it('model.json: every field removed, null or of another type is ERR_FORMAT naming it, or what the card may do', () => {
  const modelDir = join(packageRoot, 'data', 'models', 'default');
  const card = JSON.parse(readFileSync(join(modelDir, 'model.json'), 'utf8')) as Record<string, unknown>;
  // Absent: normalize, token weights, centre, attention window (off, as EncoderConfig says), a task's own alpha (the
  // overall one), the hybrid and the training record. null: the hybrid's "BM25 alone".
  const optional = new Set(['training', 'hybrid', 'hybrid.byTask', 'hybrid.byTask.covid', 'hybrid.byTask.selqa', 'config.encoder.normalize', 'config.encoder.tokenWeights', 'config.encoder.center', 'config.encoder.attentionWindow']);
  const nullable = new Set(['hybrid.alpha', 'hybrid.byTask.covid', 'hybrid.byTask.selqa']);
  const fields = (o: unknown, prefix: string): string[] =>
    o === null || typeof o !== 'object' || Array.isArray(o) ? [] : Object.entries(o).flatMap(([k, v]) => [`${prefix}${k}`, ...(k === 'training' ? [] : fields(v, `${prefix}${k}.`))]);
  const root = mkdtempSync(join(tmpdir(), 'quorum-model-card-'));
  const dir = join(root, 'model');
  cpSync(modelDir, dir, { recursive: true });
  let checked = 0;
  try {
    for (const field of fields(card, '')) {
      const keys = field.split('.');
      for (const how of ['removed', 'null', 'another type'] as const) {
        const copy = JSON.parse(JSON.stringify(card)) as Record<string, unknown>;
        const parent = keys.slice(0, -1).reduce((o, k) => o[k] as Record<string, unknown>, copy);
        const last = keys.at(-1)!;
        if (how === 'removed') delete parent[last];
        else parent[last] = how === 'null' ? null : typeof parent[last] === 'string' ? 7 : 'x';
        writeFileSync(join(dir, 'model.json'), JSON.stringify(copy));
        const valid = (how === 'removed' && optional.has(field)) || (how === 'null' && nullable.has(field));
        const got = code(() => readModelCard(dir));
        expect(got, `${field} ${how}`).toBe(valid ? undefined : 'ERR_FORMAT');
        if (!valid) {
          try {
            readModelCard(dir);
          } catch (e) {
            expect((e as Error).message, `${field} ${how}`).toContain(keys[0]);
          }
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(90);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

it('weights must hold the dtypes the card names: a relabelled tensor or a card of another storage is ERR_FORMAT', () => {
  const modelDir = join(packageRoot, 'data', 'models', 'default');
  const root = mkdtempSync(join(tmpdir(), 'quorum-weights-dtype-'));
  const dir = join(root, 'model');
  cpSync(modelDir, dir, { recursive: true });
  try {
    expect(readModelParameters(dir, readModelCard(dir)).size).toBeGreaterThan(0);
    // The shipped model is Q8 (int8 tables, their f32 row scales, bf16 elsewhere): a card saying F32 or BF16 is wrong.
    const card = JSON.parse(readFileSync(join(dir, 'model.json'), 'utf8'));
    for (const dtype of ['F32', 'BF16']) {
      writeFileSync(join(dir, 'model.json'), JSON.stringify({ ...card, weights: { ...card.weights, dtype } }));
      expect(code(() => readModelParameters(dir, readModelCard(dir))), dtype).toBe('ERR_FORMAT');
    }
    writeFileSync(join(dir, 'model.json'), JSON.stringify(card));
    // An f32 tensor relabelled i32 in the header (same size: the bytes would read as other numbers).
    const bytes = readFileSync(join(dir, 'weights.safetensors'));
    const headerEnd = 8 + Number(bytes.readBigUInt64LE(0));
    const header = bytes.subarray(8, headerEnd).toString('utf8');
    expect(header).toContain('"dtype":"F32"');
    writeFileSync(join(dir, 'weights.safetensors'), Buffer.concat([bytes.subarray(0, 8), Buffer.from(header.replace('"dtype":"F32"', '"dtype":"I32"'), 'utf8'), bytes.subarray(headerEnd)]));
    expect(code(() => readModelParameters(dir, readModelCard(dir)))).toBe('ERR_FORMAT');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
