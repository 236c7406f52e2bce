// Hugging Face checkpoints in and out (docs/guides/bring-your-own-model.md): directories written by
// scripts/make-tiny-hf.mjs (which imports nothing from Quorum) load and encode as the plain reference forward does;
// the exported ONNX graphs give the same vectors in ONNX Runtime; the tokenizer gives the same ids as Hugging Face's
// tokenizers.js on hard strings; an exported HF directory imports back bit for bit; bad directories get one typed line.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Tokenizer } from '@huggingface/tokenizers';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';

import { QuorumError } from '../lib/errors.js';
import { exportHf, exportOnnx } from '../lib/models/export.js';
import { readPretrained } from '../lib/models/hf.js';
import { Retriever } from '../lib/models/retriever.js';
import type { EncoderConfig } from '../lib/models/config.js';
import { readHfTokenizer } from '../lib/text/hf-tokenizer.js';
import type { EncodedBatch, WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { writeSafetensors } from '../lib/io/safetensors.js';
import { referenceEncode } from './reference/bert.js';
import { writeBeir, writeQrelsTsv } from '../lib/data/beir.js';
import { CameRetriever } from '../lib/methods/came/retriever.js';
import { initCameFromPretrained } from '../lib/methods/came/train.js';
import { RomModel } from '../lib/methods/rom/model.js';
import { loadPretrainedWeights } from '../lib/models/hf.js';
import { cameOnnx, mufHeadsOnnx, romOnnx } from '../lib/models/onnx-export.js';
import { MlpEnsemble } from '../lib/methods/muf/ensemble.js';
import { RomNetwork } from '../lib/methods/rom/network.js';

const root = join(import.meta.dirname, '..');
const scratch = mkdtempSync(join(tmpdir(), 'quorum-hf-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let made = 0;

/** A tiny checkpoint from the repository's script, in Hugging Face's exact layout. */
function tinyHf(...args: string[]): string {
  const dir = join(scratch, `ckpt-${made++}`);
  execFileSync(process.execPath, [join(root, 'scripts', 'make-tiny-hf.mjs'), '--out', dir, ...args], { stdio: 'pipe' });
  return dir;
}

function copyDir(from: string, to: string, skip: (name: string) => boolean = () => false): string {
  mkdirSync(to, { recursive: true });
  for (const f of ['config.json', 'model.safetensors', 'vocab.txt', 'tokenizer.json', 'tokenizer_config.json'])
    if (existsSync(join(from, f)) && !skip(f)) copyFileSync(join(from, f), join(to, f));
  return to;
}

// Hard strings: accents, CJK, Hangul, punctuation runs, long words, a word over 100 characters, characters outside
// the vocabulary ([UNK]), control and zero-width characters, ligatures and full-width forms (NFKC), mixed scripts.
const HARD = [
  'Héllo, Wörld! Café crème brûlée',
  'ÅNGSTRÖM façade naïve',
  '東京は日本の首都です。北京欢迎你',
  '안녕하세요 세계',
  '...!!!???---((()))',
  'e.g. U.S.A. $5.00 + 3% = ~x^2 | y`z',
  'antidisestablishmentarianism supercalifragilisticexpialidocious',
  'a'.repeat(120) + ' end',
  '🤗 emoji ☃ snow ✓ tick',
  'tab\there\nnewline\r\nzero\u200bwidth soft\u00adhyphen',
  'ﬁnancial ﬂow ligatures',
  'Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ',
  'İstanbul ß straße',
  'x\u0000y\uFFFDz',
  '   leading and trailing   ',
  'COVID-19 SARS-CoV-2 mRNA-1273',
  "don't won't it's",
  'Ελληνικά кириллица עברית العربية',
];

function hfReference(dir: string): Tokenizer {
  return new Tokenizer(JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')), JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')));
}

function expectSameIds(ours: WordPieceTokenizer, ref: Tokenizer): void {
  for (const s of HARD) expect(Array.from(ours.encode([s], { maxLength: 512 }).ids), JSON.stringify(s)).toEqual(ref.encode(s).ids);
  // Pairs: [CLS] A [SEP] B [SEP], types 0 then 1.
  const pair = ours.encode([HARD[0]!], { pairs: [HARD[2]!], maxLength: 512 });
  const r = ref.encode(HARD[0]!, { text_pair: HARD[2]! }) as { ids: number[]; token_type_ids?: number[] };
  expect(Array.from(pair.ids)).toEqual(r.ids);
  if (r.token_type_ids) expect(Array.from(pair.typeIds)).toEqual(r.token_type_ids);
}

/** Every output of a graph over a token batch (ONNX Runtime, from a file or bytes). */
async function ortRun(graph: string | Uint8Array, b: Pick<EncodedBatch, 'ids' | 'typeIds' | 'lengths' | 'rows' | 'seqLen'>): Promise<Record<string, Float32Array>> {
  const session = await ort.InferenceSession.create(graph as string);
  const ids = (a: Int32Array) => new ort.Tensor('int64', BigInt64Array.from(a, BigInt), [b.rows, b.seqLen]);
  const mask = new BigInt64Array(b.rows * b.seqLen);
  for (let r = 0; r < b.rows; r++) for (let j = 0; j < b.lengths[r]!; j++) mask[r * b.seqLen + j] = 1n;
  const out = await session.run({ input_ids: ids(b.ids), attention_mask: new ort.Tensor('int64', mask, [b.rows, b.seqLen]), token_type_ids: ids(b.typeIds) });
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.data as Float32Array]));
}

async function ortEncode(path: string, b: EncodedBatch): Promise<Float32Array> {
  return (await ortRun(path, b)).sentence_embedding!;
}

/** Every parameter of a model moved off its initialization (zero biases, identity heads test nothing). */
function perturb(model: { parameters(): { name: string }[]; getParameter(n: string): Float32Array; setParameter(n: string, v: Float32Array): void }, scale = 0.2): void {
  let s = 1;
  for (const p of model.parameters()) model.setParameter(p.name, model.getParameter(p.name).map((v) => v + scale * Math.sin(s++ * 12.9898)));
}

/** max |a - b| over entries where both are finite, and that a and b are infinite at the same places. */
function maxFiniteDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    expect(Number.isFinite(a[i]!), `entry ${i}`).toBe(Number.isFinite(b[i]!));
    if (Number.isFinite(a[i]!)) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  }
  return m;
}

/** Bit-identical float arrays (toEqual walks a million-element table one value at a time). */
const sameBits = (a: Float32Array, b: Float32Array) => a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};

const TEXTS = ['Who wrote Hamlet?', 'Héllo wörld, 東京 is big!', 'a', 'The quick brown fox jumps over the lazy dog near the river bank today.'];

/** An encoder's parameters without its prefix, as the reference forward takes them. */
function encoderParams(model: Retriever, prefix: string): Map<string, Float32Array> {
  return new Map(model.parameters().filter((p) => p.name.startsWith(`${prefix}.`)).map((p) => [p.name.slice(prefix.length + 1), model.getParameter(p.name)]));
}

describe('importing a Hugging Face directory', () => {
  it('a sentence-transformers directory (mean pooling, Normalize) encodes as the plain reference forward', async () => {
    const dir = tinyHf('--pooling', 'mean', '--normalize');
    const model = await Retriever.load(dir);
    expect(model.config.encoder).toMatchObject({ pooling: 'mean', normalize: true, layers: 2, hiddenSize: 32, heads: 4, ffnSize: 64, maxPositions: 128, vocabSize: 8000 });
    const b = model.loaded!.tokenizer.encode(TEXTS, { maxLength: 64 });
    const ours = await model.encode(b, 'query');
    const ref = referenceEncode(model.config.encoder, encoderParams(model, 'encoder'), { ids: b.ids, typeIds: b.typeIds, lengths: b.lengths, batch: b.rows, seqLen: b.seqLen, side: 'query' });
    expect(maxAbsDiff(ours, ref)).toBeLessThan(1e-5);
    // encodeQueries applies the same tokenizer (its own lengths).
    const q = await model.encodeQueries(TEXTS);
    expect(maxAbsDiff(q.data, ours)).toBeLessThan(1e-6);
  });

  it('reads `bert.`-prefixed shards with vocab.txt only, [CLS] pooling by default, and skips the pooler and position_ids', async () => {
    const sharded = tinyHf('--prefix', 'bert.', '--shards', '3', '--tokenizer', 'vocab', '--seed', '7');
    const single = tinyHf('--seed', '7');
    const a = await Retriever.load(sharded);
    const b = await Retriever.load(single);
    expect(a.config.encoder.pooling).toBe('cls');
    expect(a.config.encoder.normalize).toBe(false);
    for (const p of a.parameters()) expect(sameBits(a.getParameter(p.name), b.getParameter(p.name)), p.name).toBe(true);
    const batch = a.loaded!.tokenizer.encode(TEXTS, { maxLength: 32 });
    expect(await a.encode(batch, 'passage')).toEqual(await b.encode(batch, 'passage'));
    // --pooling / options override the default.
    const mean = await Retriever.load(single, { pooling: 'mean', normalize: true });
    expect(mean.config.encoder).toMatchObject({ pooling: 'mean', normalize: true });
  });

  it('bfloat16 and float16 checkpoints load as f32 within their rounding', async () => {
    const f32 = await Retriever.load(tinyHf('--seed', '5'));
    for (const [dtype, ulp] of [['BF16', 2 ** -8], ['F16', 2 ** -11]] as const) {
      const half = await Retriever.load(tinyHf('--seed', '5', '--dtype', dtype));
      for (const p of f32.parameters()) {
        const a = half.getParameter(p.name), b = f32.getParameter(p.name);
        let worst = 0;
        for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!) / Math.max(Math.abs(b[i]!), 2 ** -14));
        expect(worst, `${dtype} ${p.name}`).toBeLessThanOrEqual(ulp);
        expect(worst, `${dtype} ${p.name}`).toBeGreaterThan(0);
      }
    }
  });

  it('a cased checkpoint keeps case and accents, as its tokenizer.json says', async () => {
    const dir = tinyHf('--cased', '--vocab-size', '30522');
    const tok = readHfTokenizer(dir);
    expect(tok.normalization).toMatchObject({ lowercase: false, stripAccents: false });
    expect(tok.normalize('Héllo World')).toBe('Héllo World');
    expect(readPretrained(dir).tokenizer.normalization.lowercase).toBe(false);
  });

  it('bad directories get one typed line naming the file and the tensor', async () => {
    const good = tinyHf();
    const variant = (name: string, edit: (dir: string) => void, skip?: (f: string) => boolean) => {
      const dir = copyDir(good, join(scratch, name), skip);
      edit(dir);
      return dir;
    };
    const editConfig = (dir: string, change: Record<string, unknown>) => {
      const c = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
      writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...c, ...change }));
    };
    const failure = async (dir: string) => {
      const e = await Retriever.load(dir).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(QuorumError);
      expect((e as Error).message).not.toContain('\n');
      return e as QuorumError;
    };
    let e = await failure(variant('roberta', (d) => editConfig(d, { model_type: 'roberta' })));
    expect([e.code, e.message]).toEqual(['ERR_FORMAT', expect.stringMatching(/config\.json: model_type "roberta" is not supported/)]);
    e = await failure(variant('gelu-new', (d) => editConfig(d, { hidden_act: 'gelu_new' })));
    expect(e.message).toMatch(/hidden_act "gelu_new"/);
    e = await failure(variant('relative', (d) => editConfig(d, { position_embedding_type: 'relative_key' })));
    expect(e.message).toMatch(/position_embedding_type "relative_key"/);
    // A tensor of the wrong shape: the config says 48 wide, the weights are 32.
    e = await failure(variant('shape', (d) => editConfig(d, { hidden_size: 48, num_attention_heads: 4 })));
    expect([e.code, e.message]).toEqual(['ERR_FORMAT', expect.stringMatching(/embeddings\.word_embeddings\.weight: checkpoint tensor .* has shape \[8000, 32\], the encoder needs \[8000, 48\]/)]);
    // Missing weights: one layer more than the file holds.
    e = await failure(variant('missing', (d) => editConfig(d, { num_hidden_layers: 3 })));
    expect(e.message).toMatch(/the weights have no encoder\.layer\.2\.attention\.self\.query\.weight/);
    // A BPE tokenizer.
    e = await failure(
      variant('bpe', (d) => {
        const t = JSON.parse(readFileSync(join(d, 'tokenizer.json'), 'utf8'));
        writeFileSync(join(d, 'tokenizer.json'), JSON.stringify({ ...t, model: { type: 'BPE', vocab: {}, merges: [] } }));
      }),
    );
    expect(e.message).toMatch(/tokenizer\.json: a BPE tokenizer: Quorum reads WordPiece/);
    // pytorch_model.bin only: refused with the conversion command.
    e = await failure(variant('pickle', (d) => writeFileSync(join(d, 'pytorch_model.bin'), 'PK'), (f) => f === 'model.safetensors'));
    expect([e.code, e.message]).toEqual(['ERR_FORMAT', expect.stringMatching(/pytorch_model\.bin: PyTorch pickle weights are not read .*safe_serialization=True/)]);
    // No tokenizer at all.
    e = await failure(variant('no-tokenizer', () => {}, (f) => f === 'vocab.txt' || f === 'tokenizer.json'));
    expect(e.message).toMatch(/has neither tokenizer\.json nor vocab\.txt/);
    // An integer tensor where a weight belongs.
    e = await failure(
      variant('int-weights', (d) => {
        const t = new Map([['embeddings.word_embeddings.weight', { shape: [8000, 32], data: new Float32Array(8000 * 32), dtype: 'I8' as const }]]);
        writeFileSync(join(d, 'model.safetensors'), writeSafetensors(t));
      }),
    );
    expect(e.code).toBe('ERR_FORMAT');
  });
});

describe('the tokenizer against Hugging Face tokenizers.js', () => {
  it('gives the same ids on hard strings: uncased, cased, and a Quorum model exported with NFKC', async () => {
    for (const dir of [tinyHf('--vocab-size', '30522'), tinyHf('--cased', '--vocab-size', '30522')]) expectSameIds(readHfTokenizer(dir), hfReference(dir));
    const shipped = await Retriever.load('default');
    const out = join(scratch, 'default-onnx');
    exportOnnx(shipped, shipped.loaded!.tokenizer, shipped.loaded!.card.text, out);
    expect(shipped.loaded!.tokenizer.nfkc).toBe(true);
    expectSameIds(shipped.loaded!.tokenizer, hfReference(out));
    // The exported tokenizer.json reads back as the same tokenizer.
    const again = readHfTokenizer(out);
    expect(again.vocabulary).toEqual(shipped.loaded!.tokenizer.vocabulary);
    expect(again.normalization).toEqual(shipped.loaded!.tokenizer.normalization);
  });

  it('task markers are added tokens in the export, so "[unused1] question" gets the marker id there', async () => {
    const tok = readHfTokenizer(tinyHf('--vocab-size', '30522'));
    const model = Retriever.create({ preset: 'siamese', encoder: { vocabSize: tok.size, layers: 0, hiddenSize: 16 }, tasks: ['a', 'b'] });
    const out = join(scratch, 'markers');
    exportOnnx(model, tok, { maxQueryLength: 32, maxPassageLength: 64, taskMarkers: true }, out);
    const ref = hfReference(out);
    const q = 'who wrote hamlet?';
    expect(Array.from(tok.encode([q], { marker: tok.markerId(2) }).ids)).toEqual(ref.encode(`[unused2] ${q}`).ids);
    // A deliberate difference: Quorum never reads special tokens out of text ("[SEP]" in a passage is three words).
    expect(Array.from(tok.encode(['a [SEP] b']).ids)).not.toEqual(ref.encode('a [SEP] b').ids);
  });
});

describe('export', () => {
  it('hf: a sentence-transformers directory that imports back bit for bit, with its pooling, head and normalization', async () => {
    const tok = readHfTokenizer(tinyHf('--vocab-size', '30522'));
    for (const encoder of [
      { pooling: 'mean', normalize: true, projectionDim: 0 },
      { pooling: 'cls', normalize: false, projectionDim: 24 },
      { pooling: 'max', normalize: true, projectionDim: 8 },
    ] as const) {
      const model = Retriever.create({ preset: 'siamese', encoder: { vocabSize: tok.size, layers: 2, hiddenSize: 32, heads: 4, ffnSize: 64, ...encoder } });
      const out = join(scratch, `hf-${encoder.pooling}`);
      exportHf(model, tok, { maxQueryLength: 32, maxPassageLength: 128, taskMarkers: false }, out);
      const modules = JSON.parse(readFileSync(join(out, 'modules.json'), 'utf8')) as Array<{ type: string }>;
      expect(modules.map((m) => m.type.split('.').pop())).toEqual(['Transformer', 'Pooling', ...(encoder.projectionDim ? ['Dense'] : []), ...(encoder.normalize ? ['Normalize'] : [])]);
      const pooling = JSON.parse(readFileSync(join(out, '1_Pooling', 'config.json'), 'utf8'));
      expect(pooling[`pooling_mode_${{ mean: 'mean_tokens', cls: 'cls_token', max: 'max_tokens' }[encoder.pooling]}`]).toBe(true);
      for (const f of ['config.json', 'model.safetensors', 'vocab.txt', 'tokenizer_config.json', 'special_tokens_map.json', 'tokenizer.json', 'sentence_bert_config.json'])
        expect(existsSync(join(out, f)), f).toBe(true);
      const back = await Retriever.load(out);
      expect(back.config.encoder).toMatchObject(encoder);
      for (const p of model.parameters()) expect(sameBits(back.getParameter(p.name), model.getParameter(p.name)), p.name).toBe(true);
      expect(back.loaded!.tokenizer.vocabulary).toEqual(tok.vocabulary);
    }
  });

  it('hf: a bi-encoder becomes one directory per encoder; what BertModel cannot hold is refused with the way out', async () => {
    const tok = readHfTokenizer(tinyHf());
    const bi = Retriever.create({ preset: 'bi-encoder', encoder: { vocabSize: tok.size, layers: 1, hiddenSize: 16, heads: 2, ffnSize: 32 } });
    const out = join(scratch, 'hf-bi');
    expect(exportHf(bi, tok, { maxQueryLength: 16, maxPassageLength: 64, taskMarkers: false }, out).files).toEqual({ query: 'query', passage: 'passage' });
    const passage = await Retriever.load(join(out, 'passage'));
    for (const p of passage.parameters()) expect(sameBits(passage.getParameter(p.name), bi.getParameter(p.name.replace(/^encoder\./, 'passage.'))), p.name).toBe(true);
    const taser = Retriever.create({ preset: 'taser', encoder: { vocabSize: tok.size, layers: 2, hiddenSize: 16, heads: 2, ffnSize: 32 } });
    expect(() => exportHf(taser, tok, { maxQueryLength: 16, maxPassageLength: 64, taskMarkers: false }, join(scratch, 'hf-taser'))).toThrow(/cannot hold TASER routed blocks: export this model with --format onnx/);
  });

  // Every architecture and preset: ONNX Runtime on the exported graph against libtorch, 1e-5 in f32.
  const cases: Array<[string, Parameters<typeof Retriever.create>[0]]> = [
    ['siamese, mean, normalized', { preset: 'siamese', encoder: { layers: 2, pooling: 'mean', normalize: true } }],
    ['siamese, cls, linear head', { preset: 'siamese', encoder: { layers: 2, pooling: 'cls', normalize: false, projectionDim: 12 } }],
    ['siamese, max, MLP head', { preset: 'siamese', encoder: { layers: 1, pooling: 'max', projectionDim: 8, projectionHidden: 20 } }],
    ['0 layers, token weights, centre, factorized embeddings', { preset: 'siamese', encoder: { layers: 0, embeddingSize: 10, tokenWeights: true, center: true } }],
    ['bi-encoder, per-task question encoders', { preset: 'bi-encoder', encoder: { layers: 1 }, tasks: ['a', 'b'], perTaskQueryEncoders: true }],
    ['TASER Det-R', { preset: 'taser', encoder: { layers: 2 }, taser: { routing: 'det', experts: 4 } }],
    ['TASER Seq-R', { preset: 'taser', encoder: { layers: 2 }, taser: { routing: 'seq', perLayerGate: true } }],
    ['TASER Tok-R', { preset: 'taser', encoder: { layers: 3 }, taser: { routing: 'tok', every: 1, experts: 3 } }],
  ];
  it.each(cases)('onnx: %s from a tiny checkpoint gives libtorch\'s vectors in ONNX Runtime', async (name, options) => {
    // Each preset starts from a checkpoint in Hugging Face's layout (as `--init` does), where its shapes allow.
    const bert = readPretrained(tinyHf('--vocab-size', '2000', '--layers', '3', '--hidden', '16', '--heads', '2', '--ffn', '32', '--positions', '64'));
    const tok = bert.tokenizer;
    const base: Partial<EncoderConfig> = { vocabSize: tok.size, hiddenSize: 16, heads: 2, ffnSize: 32, maxPositions: 64, ...options.encoder };
    Retriever.seed(3);
    const model = Retriever.create({ ...options, encoder: base });
    const layersFit = (base.layers ?? 0) <= 3 && (base.embeddingSize ?? 16) === 16;
    if (layersFit) expect(loadPretrainedWeights(model, bert, { strict: false }).missing.every((n) => /gate|projection|center|token_weights/.test(n))).toBe(true);
    // What the checkpoint lacks starts at zero (biases, token weights, centres) and TASER's experts as copies of one
    // FFN: move every parameter a little, so that each one shows in the output.
    perturb(model, layersFit ? 0.05 : 0.2);
    const out = join(scratch, `onnx-${name.replace(/\W+/g, '-')}`);
    const card = exportOnnx(model, tok, { maxQueryLength: 16, maxPassageLength: 48, taskMarkers: false }, out);
    const b = tok.encode(TEXTS, { maxLength: 48 });
    const sides: Array<['query' | 'passage', string, number]> = [['passage', card.graphs.passage, 0], ['query', card.graphs.query, 0]];
    for (const [i, file] of Object.values(card.graphs.tasks ?? {}).entries()) sides.push(['query', file, i]);
    for (const [side, file, task] of sides) {
      const torch = await model.encode(b, side, { task });
      const onnx = await ortEncode(join(out, file), b);
      expect(maxAbsDiff(onnx, torch), `${side} ${file}`).toBeLessThan(1e-5);
    }
    expect(card.dim).toBe(model.dim);
  });

  it('onnx: CAME\'s three experts (shared bottom, own blocks, SPLADE / MaxSim / global heads) as libtorch computes them', async () => {
    const tok = readHfTokenizer(tinyHf('--vocab-size', '2000'));
    for (const [expertLayers, experts] of [[1, ['lexical', 'local', 'global']], [0, ['lexical', 'global']]] as const) {
      const came = CameRetriever.create({ tokenizer: tok, model: { encoder: { hiddenSize: 16, embeddingSize: 16, heads: 2, ffnSize: 32, maxPositions: 64, layers: 1 }, expertLayers, experts: [...experts], localDim: 8 }, text: { maxQueryLength: 16, maxPassageLength: 48 } });
      const m = came.models[0]!;
      perturb(m, 0.1);
      const b = tok.encode(TEXTS, { maxLength: 48 });
      const torch = await m.encode(b, 'passage');
      const onnx = await ortRun(cameOnnx(m, m.config), b);
      for (const e of experts) expect(maxAbsDiff(onnx[e]!, torch[e]!), `${expertLayers} layers: ${e}`).toBeLessThan(1e-5);
      // The lexical expert is sparse and non-negative, as SPLADE's weights are.
      expect(onnx.lexical!.every((v) => v >= 0)).toBe(true);
    }
  });

  it('onnx: ROM\'s retrieval head and reader (span logits -inf outside the passage, relevance) as libtorch computes them', async () => {
    const tok = readHfTokenizer(tinyHf('--vocab-size', '2000'));
    const net = RomNetwork.create({ encoder: { vocabSize: tok.size, hiddenSize: 16, embeddingSize: 16, heads: 2, ffnSize: 32, maxPositions: 64, layers: 2 }, headDim: 12 });
    perturb(net, 0.1);
    const q = tok.encode(TEXTS, { maxLength: 48 });
    expect(maxAbsDiff((await ortRun(romOnnx(net, net.config, 'retrieval'), q)).embedding!, await net.encode(q, 'query'))).toBeLessThan(1e-5);
    // Reader rows: question, then the passage (type 1), with some passage tokens marked as question words (type 2).
    const rows = tok.encode(TEXTS, { pairs: ['the river bank', 'big', 'a b c d', 'who knows'], maxLength: 40 });
    const types = rows.typeIds.map((t, i) => (t === 1 && i % 3 === 0 ? 2 : t));
    const reader = { ...rows, typeIds: types };
    const torch = await net.read(reader);
    const onnx = await ortRun(romOnnx(net, net.config, 'reader'), reader);
    expect(maxFiniteDiff(onnx.start_logits!, torch.start)).toBeLessThan(1e-5);
    expect(maxFiniteDiff(onnx.end_logits!, torch.end)).toBeLessThan(1e-5);
    expect(maxAbsDiff(onnx.relevance!, torch.relevance)).toBeLessThan(1e-5);
  });

  it('onnx: MUF\'s K heads as one graph of batched MatMuls give the members\' vectors', async () => {
    for (const layers of [0, 2]) {
      const heads = MlpEnsemble.create({ dim: 12, hidden: 10, layers, members: 5 });
      perturb(heads, 0.1);
      const q = Float32Array.from({ length: 3 * 12 }, (_, i) => Math.cos(i));
      const session = await ort.InferenceSession.create(mufHeadsOnnx(heads, heads.config));
      const out = await session.run({ query_embedding: new ort.Tensor('float32', q, [3, 12]) });
      expect(out.member_embeddings!.dims).toEqual([3, 5, 12]);
      expect(maxAbsDiff(out.member_embeddings!.data as Float32Array, heads.membersSync(q)), `${layers} hidden layers`).toBeLessThan(1e-5);
    }
  });

  it('onnx: the shipped model and an imported checkpoint, through the CLI, match quorum encode', async () => {
    const out = join(scratch, 'cli-onnx');
    const dir = tinyHf('--pooling', 'mean', '--normalize');
    quorum('export', '--model', dir, '--format', 'onnx', '--out', out);
    const model = await Retriever.load(dir);
    const b = model.loaded!.tokenizer.encode(TEXTS, { maxLength: 64 });
    expect(maxAbsDiff(await ortEncode(join(out, 'model.onnx'), b), await model.encode(b, 'query'))).toBeLessThan(1e-5);
    const shipped = await Retriever.load('default');
    const shippedOut = join(scratch, 'default-cli-onnx');
    quorum('export', '--model', 'default', '--format', 'onnx', '--out', shippedOut);
    const sb = shipped.loaded!.tokenizer.encode(TEXTS, { maxLength: 64 });
    expect(maxAbsDiff(await ortEncode(join(shippedOut, 'model.onnx'), sb), await shipped.encode(sb, 'query'))).toBeLessThan(1e-5);
  });
});

/** A BEIR dataset of 48 passages; question i (task a or b, answer w<i>) is about passage i. */
function tinyBeir(): string {
  const dir = join(scratch, 'beir');
  const N = 48;
  const corpus = Array.from({ length: N }, (_, i) => ({ id: `p${i}`, title: `topic ${i}`, text: `the city of k${i} is known for w${i} and its river` }));
  const queries = Array.from({ length: N }, (_, i) => ({ id: `q${i}`, text: `what is k${i} known for?`, task: i % 2 ? 'b' : 'a', answers: [`w${i}`] }));
  const qrels = (lo: number, hi: number) => new Map(Array.from({ length: hi - lo }, (_, j) => [`q${lo + j}`, new Map([[`p${lo + j}`, 1]])]));
  writeBeir(dir, { corpus, queries, qrels: qrels(0, 32) }, 'train');
  writeQrelsTsv(join(dir, 'qrels', 'dev.tsv'), qrels(32, 40));
  writeQrelsTsv(join(dir, 'qrels', 'test.tsv'), qrels(40, 48));
  return dir;
}

function quorum(...args: string[]): string {
  return execFileSync(process.execPath, ['--import', 'tsx', join(root, 'lib', 'cli', 'main.ts'), ...args], { cwd: root, encoding: 'utf8', stdio: 'pipe', timeout: 240_000 });
}

function quorumError(...args: string[]): string {
  try {
    quorum(...args);
  } catch (e) {
    return String((e as { stderr?: string }).stderr).trim();
  }
  throw new Error(`quorum ${args.join(' ')} succeeded`);
}

describe('training from a checkpoint', () => {
  it('train --init (a few steps) -> export --format onnx -> ONNX Runtime gives the vectors of quorum encode; encode --model reads HF directories', async () => {
    const data = tinyBeir();
    const ckpt = tinyHf('--pooling', 'mean', '--normalize');
    const trained = join(scratch, 'trained');
    const log = quorum('train', '--data', data, '--preset', 'siamese', '--init', ckpt, '--out', trained, '--epochs', '1', '--batch', '8', '--lr', '1e-4', '--max-passage-length', '32', '--max-query-length', '16');
    expect(log).toMatch(/initialized from/);
    // The hybrid's alpha, tuned on the same dev split, is stored with the model.
    expect(log).toMatch(/hybrid alpha .* stored in /);
    expect(JSON.parse(readFileSync(join(trained, 'model.json'), 'utf8')).hybrid.tunedOn).toEqual({ data, questions: 8 });
    const model = await Retriever.load(trained);
    expect(model.config.encoder).toMatchObject({ layers: 2, hiddenSize: 32, pooling: 'mean', normalize: true });
    // Training moved the weights away from the checkpoint's.
    const start = await Retriever.load(ckpt);
    expect(sameBits(model.getParameter('encoder.encoder.layer.1.output.dense.weight'), start.getParameter('encoder.encoder.layer.1.output.dense.weight'))).toBe(false);
    const onnxDir = join(scratch, 'trained-onnx');
    quorum('export', '--model', trained, '--format', 'onnx', '--out', onnxDir);
    const encoded = join(scratch, 'trained-encoded');
    quorum('encode', '--model', trained, '--data', data, '--out', encoded);
    const bytes = readFileSync(join(encoded, 'vectors.f32'));
    const vectors = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    const corpus = readFileSync(join(data, 'corpus.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { title: string; text: string });
    const tok = readHfTokenizer(onnxDir);
    const b = tok.encode(corpus.map((p) => p.title), { pairs: corpus.map((p) => p.text), maxLength: model.loaded!.card.text.maxPassageLength });
    expect(maxAbsDiff(await ortEncode(join(onnxDir, 'model.onnx'), b), vectors)).toBeLessThan(1e-5);
    // quorum encode straight from the Hugging Face directory.
    quorum('encode', '--model', ckpt, '--data', data, '--out', join(scratch, 'hf-encoded'));
    const hfBytes = readFileSync(join(scratch, 'hf-encoded', 'vectors.f32'));
    expect(hfBytes.byteLength).toBe(48 * 32 * 4);
  }, 240_000);

  it('train --init a Quorum model directory: trained further with its configuration, tokenizer and lengths', async () => {
    const data = tinyBeir();
    const first = join(scratch, 'trained');   // the previous test's model (from the Hugging Face checkpoint)
    const again = join(scratch, 'trained-again');
    const log = quorum('train', '--data', data, '--preset', 'siamese', '--init', first, '--out', again, '--epochs', '1', '--batch', '8', '--lr', '1e-4');
    expect(log).toMatch(/initialized from .*a Quorum model directory/);
    const [a, b] = [await Retriever.load(first), await Retriever.load(again)];
    expect(b.config).toEqual(a.config);
    expect(b.loaded!.tokenizer.vocabulary).toEqual(a.loaded!.tokenizer.vocabulary);
    // Lengths the command line does not give come from the model's card (32 / 16 there, not the 192 / 32 defaults).
    expect(b.loaded!.card.text).toMatchObject({ maxPassageLength: 32, maxQueryLength: 16 });
    const name = 'encoder.encoder.layer.1.output.dense.weight';
    expect(sameBits(b.getParameter(name), a.getParameter(name))).toBe(false);
    expect(quorumError('train', '--data', data, '--preset', 'bi-encoder', '--init', first, '--out', join(scratch, 'x'))).toMatch(/^quorum: ERR_ARG: --init .* is a siamese model: give --preset siamese$/);
    expect(quorumError('train', '--data', data, '--preset', 'siamese', '--pooling', 'max', '--init', first, '--out', join(scratch, 'x'))).toMatch(/^quorum: ERR_ARG: --init .* pools by mean/);
    expect(quorumError('train', '--data', data, '--preset', 'siamese', '--init', join(scratch, 'nowhere'), '--out', join(scratch, 'x'))).toMatch(/^quorum: ERR_IO: --init .*: neither a Quorum model directory/);
  }, 120_000);

  it('--init is refused with options the checkpoint decides, and with a checkpoint that is not BERT', () => {
    const data = tinyBeir();
    const ckpt = tinyHf();
    expect(quorumError('train', '--data', data, '--preset', 'siamese', '--init', ckpt, '--out', join(scratch, 'x'), '--hidden', '64')).toMatch(/^quorum: ERR_ARG: --init .* drop --hidden$/);
    expect(quorumError('came', 'train', '--data', data, '--init', ckpt, '--out', join(scratch, 'x'), '--shared-layers', '2')).toMatch(/^quorum: ERR_ARG: --init .* drop --shared-layers$/);
    expect(quorumError('rom', 'train', '--data', data, '--init', ckpt, '--out', join(scratch, 'x'), '--layers', '1')).toMatch(/^quorum: ERR_ARG: --init .* drop --layers$/);
    const notBert = copyDir(ckpt, join(scratch, 'not-bert'));
    writeFileSync(join(notBert, 'config.json'), JSON.stringify({ model_type: 't5' }));
    expect(quorumError('train', '--data', data, '--preset', 'siamese', '--init', notBert, '--out', join(scratch, 'x'))).toMatch(/^quorum: ERR_FORMAT: .*config\.json: model_type "t5" is not supported/);
  }, 60_000);

  it('CAME: the bottom takes the lower blocks, every expert the upper ones, the lexical head the masked-LM transform', () => {
    const ckpt = tinyHf('--layers', '3', '--hidden', '16', '--heads', '2');
    const bert = readPretrained(ckpt);
    const came = CameRetriever.create({ tokenizer: bert.tokenizer, model: { encoder: { vocabSize: bert.encoder.vocabSize, hiddenSize: 16, embeddingSize: 16, heads: 2, ffnSize: 32, maxPositions: 128, layers: 2 }, expertLayers: 1 }, text: { maxQueryLength: 16, maxPassageLength: 64 } });
    const mlm = new Float32Array(16 * 16).map((_, i) => i / 256);
    bert.weights.set('cls.predictions.transform.dense.weight', { dtype: 'F32', shape: [16, 16], data: mlm });
    const { missing } = initCameFromPretrained(came, bert);
    const m = came.models[0]!;
    const ck = (n: string) => bert.weights.get(n)!.data;
    expect(sameBits(m.getParameter('bottom.embeddings.word_embeddings.weight'), ck('embeddings.word_embeddings.weight'))).toBe(true);
    expect(sameBits(m.getParameter('bottom.encoder.layer.1.attention.self.key.weight'), ck('encoder.layer.1.attention.self.key.weight'))).toBe(true);
    for (const e of m.experts) expect(sameBits(m.getParameter(`${e}.encoder.layer.0.output.dense.weight`), ck('encoder.layer.2.output.dense.weight')), e).toBe(true);
    expect(sameBits(m.getParameter('lexical.head.transform.dense.weight'), mlm)).toBe(true);
    // What BERT has nothing for: the local head, the decoder bias, the MLM LayerNorm (this checkpoint has no MLM head).
    expect(missing[0]!.sort()).toEqual(['lexical.head.decoder.bias', 'lexical.head.transform.LayerNorm.bias', 'lexical.head.transform.LayerNorm.weight', 'lexical.head.transform.dense.bias', 'local.head.bias', 'local.head.weight']);
  });

  it('ROM: the encoder takes the checkpoint; the reader\'s third token type starts as type 0', () => {
    const ckpt = tinyHf('--layers', '1', '--hidden', '16', '--heads', '2');
    const bert = readPretrained(ckpt);
    const rom = RomModel.create({ tokenizer: bert.tokenizer, network: { encoder: { vocabSize: bert.encoder.vocabSize, hiddenSize: 16, embeddingSize: 16, heads: 2, ffnSize: 32, maxPositions: 128, layers: 1 } } });
    const { missing } = loadPretrainedWeights(rom.network, bert, { strict: false });
    expect(missing).toEqual([]);
    const types = rom.network.getParameter('encoder.embeddings.token_type_embeddings.weight');
    const ck = bert.weights.get('embeddings.token_type_embeddings.weight')!.data;
    expect(types.length).toBe(3 * 16);
    expect(sameBits(types.subarray(0, 32), ck)).toBe(true);
    expect(sameBits(types.subarray(32), ck.subarray(0, 16))).toBe(true);
  });

  it('came train --init, rom train --init and muf train over experts trained with --init run end to end, and export as ONNX', async () => {
    const data = tinyBeir();
    const ckpt = tinyHf('--layers', '2', '--hidden', '16', '--heads', '2');
    expect(quorum('came', 'train', '--data', data, '--init', ckpt, '--out', join(scratch, 'came'), '--epochs', '1', '--hard-epochs', '0', '--negatives', '1', '--batch', '8', '--max-passage-length', '24', '--max-query-length', '16', '--lr', '1e-4')).toMatch(/initialized from .*: 1 shared and 1 per-expert blocks/);
    expect(quorum('rom', 'train', '--data', data, '--init', ckpt, '--out', join(scratch, 'rom'), '--retrieval-epochs', '1', '--joint-epochs', '1', '--reader-length', '48', '--batch', '8', '--lr', '1e-4')).toMatch(/ROM: .* 2 blocks of 16 from /);
    const experts = ['a', 'b'].map((task) => {
      const out = join(scratch, `expert-${task}`);
      quorum('train', '--data', data, '--preset', 'siamese', '--tasks', task, '--init', ckpt, '--pooling', 'mean', '--out', out, '--epochs', '1', '--batch', '8', '--max-passage-length', '24', '--max-query-length', '16');
      return out;
    });
    expect(quorum('muf', 'train', '--data', data, '--experts', experts.join(','), '--out', join(scratch, 'muf'), '--members', '2', '--hidden', '8', '--layers', '0', '--epochs', '2', '--top-l', '8')).toMatch(/wrote .*muf/);
    // Each method's directory exports as ONNX graphs that ONNX Runtime loads; Hugging Face's format is refused.
    for (const [method, graphs] of [['came', ['came.onnx']], ['rom', ['retrieval.onnx', 'reader.onnx']], ['muf', ['experts/a/model.onnx', 'experts/a/heads.onnx', 'experts/b/heads.onnx']]] as const) {
      const out = join(scratch, `${method}-onnx`);
      quorum('export', '--model', join(scratch, method), '--format', 'onnx', '--out', out);
      const card = JSON.parse(readFileSync(join(out, 'quorum-onnx.json'), 'utf8'));
      expect(card).toMatchObject({ format: 'quorum-onnx', version: 1, method });
      for (const g of graphs) await ort.InferenceSession.create(join(out, g));
      expect(quorumError('export', '--model', join(scratch, method), '--format', 'hf', '--out', join(out, 'hf'))).toMatch(/^quorum: ERR_ARG: a .* directory exports as ONNX graphs only/);
    }
  }, 240_000);
});
