// A BERT-base-shaped checkpoint (random weights at BERT's initial scale, Hugging Face layout from scripts/make-tiny-hf.mjs) through Quorum:
// import time and memory, encoding at B = 1 (32 tokens) and B = 64 (128 tokens) in libtorch and in ONNX Runtime on
// the exported graph (same run, same batches, outputs checked equal), and training tokens/s of one contrastive step.
//   node --import tsx bench/hf-encode.ts [--layers 12 --hidden 768 --heads 12 --ffn 3072] [--reps 20] [--keep DIR]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as ort from 'onnxruntime-node';

import { capabilities } from '../lib/runtime.js';
import { exportOnnx } from '../lib/models/export.js';
import { Retriever } from '../lib/models/retriever.js';
import { ServingEncoder } from '../lib/models/serving-encoder.js';
import type { TokenBatchArg } from '../lib/bindings/torch_addon.js';
import { arg, writeResults } from './harness.js';

const shape = { layers: arg('layers', '12'), hidden: arg('hidden', '768'), heads: arg('heads', '12'), ffn: arg('ffn', '3072') };
const reps = Number(arg('reps', '20'));
const keep = arg('keep', '');

const caps = capabilities();
console.log(`isa ${caps.isa}, ${caps.threads} threads, ${JSON.stringify(caps.cpu)}, node ${process.version}, onnxruntime-node ${ort.env.versions.common}`);

const work = mkdtempSync(join(tmpdir(), 'quorum-bert-base-'));
const ckpt = keep || join(work, 'ckpt');
if (!existsSync(join(ckpt, 'config.json'))) {
  const t0 = performance.now();
  execFileSync(process.execPath, [join(import.meta.dirname, '..', 'scripts', 'make-tiny-hf.mjs'), '--out', ckpt, '--vocab-size', '30522', '--positions', '512',
    '--layers', shape.layers, '--hidden', shape.hidden, '--heads', shape.heads, '--ffn', shape.ffn, '--pooling', 'mean', '--normalize', '--std', '0.02'], { stdio: 'inherit' });
  console.log(`checkpoint written in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
const bytes = statSync(join(ckpt, 'model.safetensors')).size;

const rss = () => process.memoryUsage().rss / 2 ** 20;
const rss0 = rss();
let t = performance.now();
const model = await Retriever.load(ckpt);
const loadSeconds = (performance.now() - t) / 1000;
const rssLoaded = rss();
console.log(`Retriever.load: ${loadSeconds.toFixed(1)} s, ${(bytes / 2 ** 20).toFixed(0)} MB of weights, RSS ${rss0.toFixed(0)} -> ${rssLoaded.toFixed(0)} MB, ${model.parameterCount.toLocaleString()} parameters`);

t = performance.now();
const onnxDir = join(work, 'onnx');
exportOnnx(model, model.loaded!.tokenizer, model.loaded!.card.text, onnxDir);
const exportSeconds = (performance.now() - t) / 1000;
const session = await ort.InferenceSession.create(join(onnxDir, 'model.onnx'), { intraOpNumThreads: caps.threads, graphOptimizationLevel: 'all' });
console.log(`export --format onnx: ${exportSeconds.toFixed(1)} s; ONNX Runtime session with ${caps.threads} threads`);

// Random ids from the word range of BERT's vocabulary, every row full (no padding), [CLS] first.
function batch(rows: number, len: number, seed: number): TokenBatchArg {
  let s = seed;
  const ids = new Int32Array(rows * len);
  for (let i = 0; i < ids.length; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    ids[i] = i % len === 0 ? 101 : 1996 + (s % 20000);
  }
  return { ids, typeIds: new Int32Array(rows * len), lengths: new Int32Array(rows).fill(len), rows, seqLen: len };
}

async function ortRun(b: TokenBatchArg): Promise<Float32Array> {
  const ids = new ort.Tensor('int64', BigInt64Array.from(b.ids, BigInt), [b.rows, b.seqLen]);
  const mask = new ort.Tensor('int64', new BigInt64Array(b.rows * b.seqLen).fill(1n), [b.rows, b.seqLen]);
  const types = new ort.Tensor('int64', new BigInt64Array(b.rows * b.seqLen), [b.rows, b.seqLen]);
  const out = await session.run({ input_ids: ids, attention_mask: mask, token_type_ids: types }, ['sentence_embedding']);
  return out.sentence_embedding!.data as Float32Array;
}

async function time(f: () => Promise<unknown>, n: number): Promise<number[]> {
  await f(); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const s = performance.now();
    await f();
    ms.push(performance.now() - s);
  }
  return ms.sort((a, b) => a - b);
}
const median = (xs: number[]) => xs[Math.floor(xs.length / 2)]!;

const encoding: Array<Record<string, number | string>> = [];
for (const [rows, len, n] of [[1, 32, reps * 5], [64, 128, Math.max(3, Math.floor(reps / 4))]] as const) {
  const b = batch(rows, len, rows * 7 + len);
  const a = await model.encode(b, 'query');
  const o = await ortRun(b);
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff = Math.max(diff, Math.abs(a[i]! - o[i]!));
  const torchMs = median(await time(() => model.encode(b, 'query'), n));
  const ortMs = median(await time(() => ortRun(b), n));
  const row = { batch: rows, tokens: len, libtorchMs: +torchMs.toFixed(2), onnxRuntimeMs: +ortMs.toFixed(2), libtorchTextsPerS: +((rows * 1000) / torchMs).toFixed(1), onnxRuntimeTextsPerS: +((rows * 1000) / ortMs).toFixed(1), ratio: +(torchMs / ortMs).toFixed(2), maxAbsDiff: diff };
  encoding.push(row);
  console.log(`B=${rows} x ${len} tokens: libtorch ${torchMs.toFixed(2)} ms (${row.libtorchTextsPerS} texts/s), ONNX Runtime ${ortMs.toFixed(2)} ms (${row.onnxRuntimeTextsPerS} texts/s), libtorch/ORT ${row.ratio}, max |diff| ${diff.toExponential(1)}`);
}

// The serving path (ServingEncoder: graphs built from the weights file, no libtorch) against a bare session.run on the
// exported graph, same batches: the wrapper's cost (issue 44: within 10%).
const serving = await ServingEncoder.load(ckpt, { threads: caps.threads });
const servingRows: Array<Record<string, number>> = [];
for (const [rows, len, n] of [[1, 32, reps * 5], [16, 64, reps]] as const) {
  const b = batch(rows, len, rows * 11 + len);
  const bareMs = median(await time(() => ortRun(b), n));
  const servingMs = median(await time(() => serving.encodeBatch(b, 'query'), n));
  const textsMs = rows === 1 ? median(await time(() => serving.encodeQueries(['who wrote the play hamlet and when was it first performed in london']), n)) : Number.NaN;
  servingRows.push({ batch: rows, tokens: len, bareMs: +bareMs.toFixed(3), servingMs: +servingMs.toFixed(3), overhead: +(servingMs / bareMs - 1).toFixed(3), ...(rows === 1 ? { textToVectorMs: +textsMs.toFixed(3) } : {}) });
  console.log(`serving path B=${rows} x ${len}: ServingEncoder ${servingMs.toFixed(2)} ms, bare session.run ${bareMs.toFixed(2)} ms (${((servingMs / bareMs - 1) * 100).toFixed(1)}%)${rows === 1 ? `; a question's text to its vector ${textsMs.toFixed(2)} ms` : ''}`);
}
await serving.dispose();

// One contrastive step: 8 questions of 32 tokens against 16 passages of 128 (a positive and a hard negative each).
const q = batch(8, 32, 3);
const p = batch(16, 128, 5);
const trainBatch = { queries: q, passages: p, positives: Int32Array.from({ length: 8 }, (_, i) => 2 * i), temperature: 0.05 };
model.setOptimizer({});
const rssBeforeTraining = rss();
const steps = Math.max(2, Math.floor(reps / 5));
await model.accumulate(trainBatch);
await model.step(1e-5, 1);
const stepMs = median(await time(async () => {
  await model.accumulate(trainBatch);
  await model.step(1e-5, 1);
}, steps));
const tokens = 8 * 32 + 16 * 128;
const rssTrain = rss();
console.log(
  `training: ${stepMs.toFixed(0)} ms a step of ${tokens} tokens = ${Math.round((tokens * 1000) / stepMs)} tokens/s; ` +
    `RSS ${rssBeforeTraining.toFixed(0)} MB before the first step (model, ONNX Runtime session, encoding buffers), ${rssTrain.toFixed(0)} MB after (+ gradients, Adam's two moments, activations)`,
);

const path = writeResults('hf-encode', {
  date: new Date().toISOString(),
  machine: { isa: caps.isa, threads: caps.threads, cpu: caps.cpu, node: process.version, onnxruntime: ort.env.versions.common },
  shape,
  weightsMB: bytes / 2 ** 20,
  parameters: model.parameterCount,
  loadSeconds,
  exportSeconds,
  rssMB: { before: rss0, loaded: rssLoaded, beforeTraining: rssBeforeTraining, training: rssTrain },
  encoding,
  serving: servingRows,
  training: { stepMs, tokensPerStep: tokens, tokensPerSecond: (tokens * 1000) / stepMs },
});
console.log(`results written to ${path}`);
if (!keep) rmSync(work, { recursive: true, force: true });
