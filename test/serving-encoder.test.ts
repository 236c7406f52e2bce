// ServingEncoder (lib/models/serving-encoder.ts): a saved model served by ONNX Runtime from graphs built in memory, without
// libtorch: the same vectors as the libtorch Retriever for the shipped model, a per-task bi-encoder, TASER Det-R and a
// Hugging Face directory; and a process that serves this way maps no libtorch.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { ServingEncoder } from '../lib/models/serving-encoder.js';
import { Retriever, type RetrieverOptions } from '../lib/models/retriever.js';
import { readTokenizerFiles } from '../lib/text/tokenizer-files.js';
import { packageRoot } from '../lib/native.js';
import { asyncCode } from './basics.js';
import { runModuleScript } from './helpers.js';

const scratch = mkdtempSync(join(tmpdir(), 'quorum-serving-encoder-'));
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

async function expectSame(dir: string, tasks: Array<string | undefined> = [undefined], backend?: 'core' | 'onnx-runtime'): Promise<void> {
  const torch = await Retriever.load(dir);
  const onnx = await ServingEncoder.load(dir);
  try {
    expect(onnx.dim).toBe(torch.dim);
    if (backend) expect(onnx.backend).toBe(backend);
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

describe('ServingEncoder', () => {
  it('serves the shipped model (0 layers, token weights, centre, task markers) as the libtorch Retriever does', async () => {
    await expectSame('default', [undefined, 'covid', 'selqa'], 'core');
  });

  it('serves saved per-task bi-encoders and TASER Det-R (one graph per side) and a Hugging Face directory', async () => {
    const tok = await readTokenizerFiles(join(packageRoot, 'data', 'models', 'default'));
    const cases: RetrieverOptions[] = [
      { preset: 'bi-encoder', encoder: { vocabSize: tok.size, layers: 1, hiddenSize: 16, heads: 2, ffnSize: 32 }, tasks: ['covid', 'selqa'], perTaskQueryEncoders: true },
      { preset: 'taser', encoder: { vocabSize: tok.size, layers: 2, hiddenSize: 16, heads: 2, ffnSize: 32 }, taser: { routing: 'det', experts: 2 } },
      // 0-layer encoders run on the plain forward: factorized embeddings, max pooling, an MLP head; per-task queries.
      { preset: 'bi-encoder', encoder: { vocabSize: tok.size, layers: 0, hiddenSize: 16, embeddingSize: 8, pooling: 'max', projectionDim: 12, projectionHidden: 20 }, tasks: ['covid', 'selqa'], perTaskQueryEncoders: true },
      { preset: 'siamese', encoder: { vocabSize: tok.size, layers: 0, hiddenSize: 16, tokenWeights: true, center: true, projectionDim: 16, normalize: false } },
    ];
    for (const [i, options] of cases.entries()) {
      const model = Retriever.create(options);
      let s = 1;
      for (const p of model.parameters()) model.setParameter(p.name, model.getParameter(p.name).map((v) => v + 0.05 * Math.sin(s++)));
      const dir = join(scratch, `model-${i}`);
      model.saveModel(dir, { tokenizer: tok, maxQueryLength: 16, maxPassageLength: 48, taskMarkers: options.tasks !== undefined });
      await expectSame(dir, options.tasks ?? [undefined], options.encoder!.layers === 0 ? 'core' : 'onnx-runtime');
    }
    const hf = join(scratch, 'hf');
    execFileSync(process.execPath, [join(packageRoot, 'scripts', 'make-tiny-hf.mjs'), '--out', hf, '--pooling', 'mean', '--normalize'], { stdio: 'pipe' });
    await expectSame(hf, [undefined], 'onnx-runtime');
  });

  it('a process that serves through ServingEncoder maps no libtorch (and, for a 0-layer model, no ONNX Runtime either)', () => {
    const hf = join(scratch, 'hf-maps');
    execFileSync(process.execPath, [join(packageRoot, 'scripts', 'make-tiny-hf.mjs'), '--out', hf], { stdio: 'pipe' });
    const serve = (dir: string) => {
      const script = `
        import { readFileSync } from 'node:fs';
        import { ServingEncoder } from ${JSON.stringify(join(packageRoot, 'lib', 'models', 'serving-encoder.ts'))};
        const enc = await ServingEncoder.load(${JSON.stringify(dir)});
        const v = await enc.encodeQueries(['who wrote hamlet?']);
        const maps = readFileSync('/proc/self/maps', 'utf8');
        console.log(JSON.stringify({ dim: v.length, torch: /libtorch|libc10/.test(maps), ort: /onnxruntime/.test(maps) }));
      `;
      return runModuleScript(script);
    };
    expect(serve('default')).toEqual({ dim: 100, torch: false, ort: false });
    expect(serve(hf)).toEqual({ dim: 32, torch: false, ort: true });
  });

  it('bad input is a typed error', async () => {
    expect(await asyncCode(ServingEncoder.load(join(scratch, 'nowhere')))).toBe('ERR_IO');
    expect(await asyncCode(ServingEncoder.load('default', { threads: 0 }))).toBe('ERR_RANGE');
    expect(await asyncCode(ServingEncoder.load('default', { pooling: 'cls' }))).toBe('ERR_ARG');
    const enc = await ServingEncoder.load('default');
    try {
      expect(await asyncCode(enc.encodeQueries([]))).toBe('ERR_ARG');
      expect(await asyncCode(enc.encodeQueries([5 as unknown as string]))).toBe('ERR_ARG');
      expect(await asyncCode(enc.encodePassages([{ text: 3 } as never]))).toBe('ERR_ARG');
    } finally {
      await enc.dispose();
    }
  });
});
