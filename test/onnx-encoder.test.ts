// OnnxEncoder (lib/models/onnx-encoder.ts): a saved model served by ONNX Runtime from graphs built in memory, without
// libtorch: the same vectors as the libtorch Retriever for the shipped model, a per-task bi-encoder, TASER Det-R and a
// Hugging Face directory; and a process that serves this way maps no libtorch.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { OnnxEncoder } from '../lib/models/onnx-encoder.js';
import { Retriever, type RetrieverOptions } from '../lib/models/retriever.js';
import { readTokenizerFiles } from '../lib/text/tokenizer-files.js';
import { packageRoot } from '../lib/native.js';
import { asyncCode } from './basics.js';

const scratch = mkdtempSync(join(tmpdir(), 'quorum-onnx-encoder-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const QUESTIONS = ['what is the incubation period of covid-19?', 'who wrote hamlet', 'Héllo wörld, 東京!'];
const PASSAGES = [
  { title: 'Coronavirus', text: 'The incubation period is 2 to 14 days.' },
  { title: '', text: 'Hamlet is a tragedy written by William Shakespeare.' },
  { title: 'Tokyo', text: '東京 is the capital of Japan.' },
];

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

async function expectSame(dir: string, tasks: Array<string | undefined> = [undefined]): Promise<void> {
  const torch = await Retriever.load(dir);
  const onnx = await OnnxEncoder.load(dir);
  try {
    expect(onnx.dim).toBe(torch.dim);
    for (const task of tasks) {
      const o = task === undefined ? {} : { task };
      expect(maxAbsDiff(await onnx.encodeQueries(QUESTIONS, o), (await torch.encodeQueries(QUESTIONS, o)).data), `questions, task ${task}`).toBeLessThan(1e-5);
    }
    expect(maxAbsDiff(await onnx.encodePassages(PASSAGES), (await torch.encodePassages(PASSAGES)).data), 'passages').toBeLessThan(1e-5);
  } finally {
    await onnx.dispose();
    torch.dispose();
  }
}

describe('OnnxEncoder', () => {
  it('serves the shipped model (0 layers, token weights, centre, task markers) as the libtorch Retriever does', async () => {
    await expectSame('default', [undefined, 'covid', 'selqa']);
  });

  it('serves saved per-task bi-encoders and TASER Det-R (one graph per side) and a Hugging Face directory', async () => {
    const tok = await readTokenizerFiles(join(packageRoot, 'data', 'models', 'default'));
    const cases: RetrieverOptions[] = [
      { preset: 'bi-encoder', encoder: { vocabSize: tok.size, layers: 1, hiddenSize: 16, heads: 2, ffnSize: 32 }, tasks: ['covid', 'selqa'], perTaskQueryEncoders: true },
      { preset: 'taser', encoder: { vocabSize: tok.size, layers: 2, hiddenSize: 16, heads: 2, ffnSize: 32 }, taser: { routing: 'det', experts: 2 } },
    ];
    for (const [i, options] of cases.entries()) {
      const model = Retriever.create(options);
      let s = 1;
      for (const p of model.parameters()) model.setParameter(p.name, model.getParameter(p.name).map((v) => v + 0.05 * Math.sin(s++)));
      const dir = join(scratch, `model-${i}`);
      model.saveModel(dir, { tokenizer: tok, maxQueryLength: 16, maxPassageLength: 48, taskMarkers: options.tasks !== undefined });
      await expectSame(dir, options.tasks ?? [undefined]);
    }
    const hf = join(scratch, 'hf');
    execFileSync(process.execPath, [join(packageRoot, 'scripts', 'make-tiny-hf.mjs'), '--out', hf, '--pooling', 'mean', '--normalize'], { stdio: 'pipe' });
    await expectSame(hf);
  });

  it('a process that serves through OnnxEncoder maps no libtorch', () => {
    const script = `
      import { readFileSync } from 'node:fs';
      import { OnnxEncoder } from ${JSON.stringify(join(packageRoot, 'lib', 'models', 'onnx-encoder.ts'))};
      const enc = await OnnxEncoder.load('default');
      const v = await enc.encodeQueries(['who wrote hamlet?']);
      const maps = readFileSync('/proc/self/maps', 'utf8');
      console.log(JSON.stringify({ dim: v.length, torch: /libtorch|libc10/.test(maps), ort: /onnxruntime/.test(maps) }));
    `;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: packageRoot, encoding: 'utf8', timeout: 120_000 });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toEqual({ dim: 100, torch: false, ort: true });
  });

  it('bad input is a typed error', async () => {
    expect(await asyncCode(OnnxEncoder.load(join(scratch, 'nowhere')))).toBe('ERR_IO');
    expect(await asyncCode(OnnxEncoder.load('default', { threads: 0 }))).toBe('ERR_RANGE');
    expect(await asyncCode(OnnxEncoder.load('default', { pooling: 'cls' }))).toBe('ERR_ARG');
    const enc = await OnnxEncoder.load('default');
    try {
      expect(await asyncCode(enc.encodeQueries([]))).toBe('ERR_ARG');
      expect(await asyncCode(enc.encodeQueries([5 as unknown as string]))).toBe('ERR_ARG');
      expect(await asyncCode(enc.encodePassages([{ text: 3 } as never]))).toBe('ERR_ARG');
    } finally {
      await enc.dispose();
    }
  });
});
