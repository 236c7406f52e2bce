// Users' ColBERT checkpoints (lib/methods/colbert/checkpoint.ts, encoder.ts; docs/methods/colbert.md#checkpoints):
// tiny checkpoints in both published layouts, written by scripts/make-tiny-hf.mjs (which imports nothing from
// Quorum), encoded by ColbertEncoder (ONNX Runtime) and by an independent forward written here (its own safetensors
// parser, framing from vocab.txt, a BERT forward in f64 with padded keys masked out of attention), to 1e-5.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

import { ColbertEncoder } from '../lib/methods/colbert/encoder.js';
import { readColbertCheckpoint } from '../lib/methods/colbert/checkpoint.js';
import { ColbertIndex } from '../lib/methods/colbert/index.js';
import { erf } from './reference/bert.js';
import { quorumCli } from './helpers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function tiny(...args: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'quorum-colbert-ckpt-'));
  dirs.push(dir);
  execFileSync(process.execPath, [join(root, 'scripts', 'make-tiny-hf.mjs'), '--out', dir, '--layers', '2', '--hidden', '32', '--heads', '4', ...args], { stdio: 'pipe' });
  return dir;
}

/** safetensors, read here: the F32 tensors by name. */
function readTensors(path: string): Map<string, { shape: number[]; data: Float64Array }> {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const out = new Map<string, { shape: number[]; data: Float64Array }>();
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__' || t.dtype !== 'F32') continue;
    const bytes = buf.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]);
    const f = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    out.set(name, { shape: t.shape, data: Float64Array.from(f) });
  }
  return out;
}

function writeTensors(path: string, tensors: Map<string, { shape: number[]; data: Float64Array }>): void {
  const header: Record<string, unknown> = {};
  let off = 0;
  const parts: Buffer[] = [];
  for (const [name, t] of tensors) {
    const b = Buffer.from(Float32Array.from(t.data).buffer);
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [off, off + b.length] };
    off += b.length;
    parts.push(b);
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(path, Buffer.concat([head, Buffer.from(json), ...parts]));
}

/** The reference forward: a post-LN BERT over every position, keys with attention 0 masked out; then the projection and L2. */
function referenceVectors(dir: string, layout: 'colbert' | 'pylate', ids: number[], attend: number[]): Float64Array[] {
  const w = readTensors(join(dir, 'model.safetensors'));
  const P = layout === 'colbert' ? 'bert.' : '';
  const get = (name: string) => w.get(P + name)!.data;
  const proj = (layout === 'colbert' ? w : readTensors(join(dir, '1_Dense', 'model.safetensors'))).get('linear.weight')!;
  const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { hidden_size: number; num_attention_heads: number; num_hidden_layers: number; intermediate_size: number; layer_norm_eps: number };
  const H = cfg.hidden_size, heads = cfg.num_attention_heads, dh = H / heads, F = cfg.intermediate_size, T = ids.length;
  const ln = (x: Float64Array, g: Float64Array, b: Float64Array) => {
    let m = 0;
    for (const v of x) m += v;
    m /= H;
    let s = 0;
    for (const v of x) s += (v - m) ** 2;
    const inv = 1 / Math.sqrt(s / H + cfg.layer_norm_eps);
    return x.map((v, i) => (v - m) * inv * g[i]! + b[i]!);
  };
  const lin = (x: Float64Array, W: Float64Array, b: Float64Array | undefined, out: number) => {
    const y = new Float64Array(out);
    for (let o = 0; o < out; o++) {
      let s = b ? b[o]! : 0;
      for (let i = 0; i < x.length; i++) s += W[o * x.length + i]! * x[i]!;
      y[o] = s;
    }
    return y;
  };
  let h = ids.map((id, t) => {
    const x = new Float64Array(H);
    for (let d = 0; d < H; d++) x[d] = get('embeddings.word_embeddings.weight')[id * H + d]! + get('embeddings.position_embeddings.weight')[t * H + d]! + get('embeddings.token_type_embeddings.weight')[d]!;
    return ln(x, get('embeddings.LayerNorm.weight'), get('embeddings.LayerNorm.bias'));
  });
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `encoder.layer.${l}.`;
    const L = (n: string, x: Float64Array, out: number) => lin(x, get(`${p}${n}.weight`), get(`${p}${n}.bias`), out);
    const q = h.map((x) => L('attention.self.query', x, H));
    const k = h.map((x) => L('attention.self.key', x, H));
    const v = h.map((x) => L('attention.self.value', x, H));
    h = h.map((x, t) => {
      const ctx = new Float64Array(H);
      for (let a = 0; a < heads; a++) {
        const s = ids.map((_, u) => {
          if (!attend[u]) return -Infinity;
          let z = 0;
          for (let d = 0; d < dh; d++) z += q[t]![a * dh + d]! * k[u]![a * dh + d]!;
          return z / Math.sqrt(dh);
        });
        const m = Math.max(...s);
        const e = s.map((z) => Math.exp(z - m));
        const sum = e.reduce((x1, y1) => x1 + y1, 0);
        for (let u = 0; u < T; u++) for (let d = 0; d < dh; d++) ctx[a * dh + d]! += (e[u]! / sum) * v[u]![a * dh + d]!;
      }
      const o = L('attention.output.dense', ctx, H);
      const a1 = ln(o.map((z, i) => z + x[i]!), get(`${p}attention.output.LayerNorm.weight`), get(`${p}attention.output.LayerNorm.bias`));
      const mid = L('intermediate.dense', a1, F).map((z) => 0.5 * z * (1 + erf(z / Math.SQRT2)));
      const o2 = L('output.dense', mid, H);
      return ln(o2.map((z, i) => z + a1[i]!), get(`${p}output.LayerNorm.weight`), get(`${p}output.LayerNorm.bias`));
    });
  }
  const dim = proj.shape[0]!;
  return h.map((x) => {
    const y = lin(x, proj.data, undefined, dim);
    const n = Math.max(Math.hypot(...y), 1e-12);
    return y.map((z) => z / n);
  });
}

/** Framing from the vocabulary: the words of `text` (whole words of vocab.txt, split at punctuation). */
function frame(dir: string, text: string, marker: number, length: number, expand: boolean) {
  const vocab = readFileSync(join(dir, 'vocab.txt'), 'utf8').split('\n');
  const words = text.toLowerCase().match(/[a-z0-9]+|[^\sa-z0-9]/g)!.map((wd) => vocab.indexOf(wd));
  expect(words.every((id) => id >= 0)).toBe(true);
  const ids = [101, marker, ...words.slice(0, length - 3), 102];
  const real = ids.length;
  while (expand && ids.length < length) ids.push(vocab.indexOf('[MASK]'));
  return { ids, real };
}

const punctuationIds = (dir: string) => {
  const vocab = readFileSync(join(dir, 'vocab.txt'), 'utf8').split('\n');
  return new Set([...'!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'].map((c) => vocab.indexOf(c)));
};

const question = 'What is the capital, of France?';
const passages = ['Paris is the capital of France.', 'the river ; the city , the bridge (old) and the school'];

describe.each([
  ['ColBERT repository', 'colbert', ['--prefix', 'bert.', '--colbert', '16', '--query-maxlen', '12', '--doc-maxlen', '16']],
  ['ColBERT repository, attending to [MASK]', 'colbert', ['--prefix', 'bert.', '--colbert', '8', '--query-maxlen', '10', '--doc-maxlen', '9', '--attend-to-mask', '--seed', '3']],
  ['PyLate', 'pylate', ['--pylate', '16', '--query-maxlen', '12', '--doc-maxlen', '16', '--seed', '5']],
] as const)('%s layout', (_, layout, args) => {
  const dir = tiny(...args);
  it('token vectors equal the independent forward to 1e-5 (query expansion, markers, punctuation skipped)', async () => {
    const enc = await ColbertEncoder.load(dir);
    const s = enc.settings;
    expect(s.layout).toBe(layout);
    const added = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')).added_tokens as Array<{ id: number; content: string }>;
    const markerOf = (text: string, unused: number) => (layout === 'pylate' ? added.find((t) => t.content === text)!.id : unused);
    // questions: every position of the [MASK]-expanded row
    const q = frame(dir, question, markerOf('[Q] ', 1), s.queryLength, true);
    const attendAll = (args as readonly string[]).includes('--attend-to-mask');
    const ref = referenceVectors(dir, layout, q.ids, q.ids.map((_, t) => (attendAll || t < q.real ? 1 : 0)));
    const got = await enc.encodeQueries([question]);
    expect(Array.from(got.lengths)).toEqual([s.queryLength]);
    let worst = 0;
    ref.forEach((v, t) => v.forEach((x, d) => (worst = Math.max(worst, Math.abs(x - got.vectors[t * s.dim + d]!)))));
    expect(worst).toBeLessThan(1e-5);
    // passages: every real token but punctuation, rows packed
    const p = await enc.encodePassages(passages);
    const skip = punctuationIds(dir);
    let at = 0;
    passages.forEach((text, i) => {
      const f = frame(dir, text, markerOf('[D] ', 2), s.documentLength, false);
      const r = referenceVectors(dir, layout, f.ids, f.ids.map(() => 1));
      const kept = r.filter((_, t) => !skip.has(f.ids[t]!));
      expect(p.lengths[i]).toBe(kept.length);
      kept.forEach((v) => {
        v.forEach((x, d) => (worst = Math.max(worst, Math.abs(x - p.vectors[at * s.dim + d]!))));
        at++;
      });
    });
    expect(worst).toBeLessThan(1e-5);
    // the vectors index and search: the passage asked about comes first
    const index = await ColbertIndex.build(p, { centroids: 4, model: enc.model });
    const hits = await index.search(got, 2, { model: enc.model });
    expect(hits[0]!.length).toBe(2);
    await expect(index.search(got, 2, { model: 'another' })).rejects.toMatchObject({ code: 'ERR_ARG' });
    index.dispose();
    // bad texts
    await expect(enc.encodeQueries('x' as unknown as string[])).rejects.toMatchObject({ code: 'ERR_ARG' });
    await expect(enc.encodeQueries([])).rejects.toMatchObject({ code: 'ERR_ARG' });
    await expect(enc.encodePassages([5] as unknown as string[])).rejects.toMatchObject({ code: 'ERR_ARG' });
    await enc.release();
  });
});

describe('quorum export of a ColBERT checkpoint', () => {
  it('writes the token-vector graph that onnxruntime-node runs to the independent forward, with the framing files and card', async () => {
    const dir = tiny('--pylate', '16', '--query-maxlen', '12', '--doc-maxlen', '16', '--seed', '9');
    const out = mkdtempSync(join(tmpdir(), 'quorum-colbert-export-'));
    dirs.push(out);
    const r = quorumCli('export', '--model', dir, '--format', 'onnx', '--out', out);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const card = JSON.parse(readFileSync(join(out, 'quorum-onnx.json'), 'utf8'));
    expect(card).toMatchObject({ format: 'quorum-onnx', method: 'colbert', graph: 'colbert.onnx', settings: { layout: 'pylate', dim: 16, queryLength: 12 } });
    expect(readFileSync(join(out, 'config_sentence_transformers.json'), 'utf8')).toBe(readFileSync(join(dir, 'config_sentence_transformers.json'), 'utf8'));
    const ort = (await import('onnxruntime-node')).default;
    const session = await ort.InferenceSession.create(join(out, 'colbert.onnx'));
    const q = frame(dir, question, card.settings.queryMarker, 12, true);
    const T = q.ids.length;
    const attention = q.ids.map((_, t) => (t < q.real ? 1 : 0));
    const res = await session.run({
      input_ids: new ort.Tensor('int64', BigInt64Array.from(q.ids, BigInt), [1, T]),
      attention_mask: new ort.Tensor('int64', BigInt64Array.from(attention, BigInt), [1, T]),
      token_type_ids: new ort.Tensor('int64', new BigInt64Array(T), [1, T]),
    });
    const got = res.token_vectors!.data as Float32Array;
    const ref = referenceVectors(dir, 'pylate', q.ids, attention);
    let worst = 0;
    ref.forEach((v, t) => v.forEach((x, d) => (worst = Math.max(worst, Math.abs(x - got[t * 16 + d]!)))));
    expect(worst).toBeLessThan(1e-5);
    await session.release();
    const bad = quorumCli('export', '--model', dir, '--format', 'hf', '--out', out);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/ERR_ARG/);
  });
});

describe('bad checkpoints', () => {
  it('typed one-line errors: no projection, a dim that disagrees, an unsupported Dense, no ColBERT settings', async () => {
    const noProj = tiny('--prefix', 'bert.', '--colbert', '16');
    const t = readTensors(join(noProj, 'model.safetensors'));
    t.delete('linear.weight');
    writeTensors(join(noProj, 'model.safetensors'), t);
    expect(() => readColbertCheckpoint(noProj)).toThrow(expect.objectContaining({ code: 'ERR_FORMAT', message: expect.stringContaining('linear.weight') }));

    const wrongDim = tiny('--prefix', 'bert.', '--colbert', '16');
    const meta = JSON.parse(readFileSync(join(wrongDim, 'artifact.metadata'), 'utf8'));
    writeFileSync(join(wrongDim, 'artifact.metadata'), JSON.stringify({ ...meta, dim: 128 }));
    expect(() => readColbertCheckpoint(wrongDim)).toThrow(expect.objectContaining({ code: 'ERR_FORMAT', message: expect.stringContaining('dim is 128') }));

    const biased = tiny('--pylate', '16');
    const dc = JSON.parse(readFileSync(join(biased, '1_Dense', 'config.json'), 'utf8'));
    writeFileSync(join(biased, '1_Dense', 'config.json'), JSON.stringify({ ...dc, bias: true }));
    expect(() => readColbertCheckpoint(biased)).toThrow(expect.objectContaining({ code: 'ERR_FORMAT' }));
    writeFileSync(join(biased, '1_Dense', 'config.json'), JSON.stringify({ ...dc, activation_function: 'torch.nn.modules.activation.Tanh' }));
    expect(() => readColbertCheckpoint(biased)).toThrow(expect.objectContaining({ code: 'ERR_FORMAT', message: expect.stringContaining('Tanh') }));
    writeFileSync(join(biased, '1_Dense', 'config.json'), JSON.stringify(dc));
    rmSync(join(biased, '1_Dense', 'model.safetensors'));
    expect(() => readColbertCheckpoint(biased)).toThrow(expect.objectContaining({ code: 'ERR_IO' }));

    const plain = tiny('--pooling', 'mean');
    expect(() => readColbertCheckpoint(plain)).toThrow(expect.objectContaining({ code: 'ERR_FORMAT' }));
    expect(() => readColbertCheckpoint(join(plain, 'nothing'))).toThrow(expect.objectContaining({ code: 'ERR_IO' }));
    await expect(ColbertEncoder.load(noProj)).rejects.toMatchObject({ code: 'ERR_FORMAT' });
  });
});
