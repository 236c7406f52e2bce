// The 0-layer encoder's forward on the core (native/kernels/embedding_bag.h) against its plain f64 reference
// (test/reference/embedding-bag.ts), on every ISA variant, over the encoder features it computes: factorized
// embeddings, mean / weighted mean / max pooling, centre, linear and MLP heads, normalization; and bad input.
import { afterAll, describe, expect, it } from 'vitest';

import { capabilities, setIsa, type Isa } from '../lib/index.js';
import { EmbeddingBagEncoder, type TokenRows } from '../lib/models/embedding-bag.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { defaultEncoderConfig, type EncoderConfig } from '../lib/models/config.js';
import { EmbeddingBagReference, randomBagParameters } from './reference/embedding-bag.js';
import { asyncCode, rng } from './helpers.js';

const caps = capabilities();
afterAll(() => setIsa(caps.isa as Isa));

const base: EncoderConfig = { ...defaultEncoderConfig, layers: 0, vocabSize: 50, maxPositions: 12, typeVocabSize: 3, hiddenSize: 17, embeddingSize: 17, layerNormEps: 1e-12 };

function batch(c: EncoderConfig, rows: number, seqLen: number, seed: number): TokenRows {
  const r = rng(seed);
  const u = () => (r() + 1) / 2;
  const ids = Int32Array.from({ length: rows * seqLen }, () => Math.floor(u() * c.vocabSize) % c.vocabSize);
  const typeIds = Int32Array.from({ length: rows * seqLen }, () => Math.floor(u() * c.typeVocabSize) % c.typeVocabSize);
  const lengths = Int32Array.from({ length: rows }, (_, i) => (i === 0 ? seqLen : 1 + (Math.floor(u() * seqLen) % seqLen)));
  return { ids, typeIds, lengths, rows, seqLen };
}

const cases: Array<[string, Partial<EncoderConfig>]> = [
  ['plain mean', {}],
  ['factorized embeddings, max pooling', { embeddingSize: 6, pooling: 'max' }],
  ['token weights, centre, linear head, normalized', { tokenWeights: true, center: true, projectionDim: 9, normalize: true }],
  ['MLP head (GELU), not normalized', { projectionDim: 5, projectionHidden: 23, normalize: false }],
  ['everything', { embeddingSize: 4, tokenWeights: true, center: true, projectionDim: 7, projectionHidden: 11, normalize: true }],
];

describe.each(caps.availableIsas as Isa[])('embeddingBag, %s variant', (isa) => {
  it.each(cases)('%s equals the reference', async (_name, over) => {
    setIsa(isa);
    const c = { ...base, ...over };
    const param = randomBagParameters(c, 3 + Object.keys(over).length);
    const enc = new EmbeddingBagEncoder(c, param, 'enc');
    const ref = new EmbeddingBagReference(c, param, 'enc');
    for (const [rows, seqLen] of [[1, 1], [5, 12], [9, 7]] as const) {
      const b = batch(c, rows, seqLen, rows * 31 + seqLen);
      const got = await enc.encode(b);
      const want = ref.encode(b);
      expect(got.length).toBe(rows * enc.dim);
      for (let i = 0; i < want.length; i++) expect(Math.abs(got[i]! - want[i]!), `${rows}x${seqLen} [${i}]`).toBeLessThan(2e-5 * (1 + Math.abs(want[i]!)));
    }
    enc.dispose();
  });
});

describe('embeddingBag input', () => {
  const c = { ...base, projectionDim: 4 };
  const enc = new EmbeddingBagEncoder(c, randomBagParameters(c, 9), 'enc');
  const good = batch(c, 2, 5, 1);
  it.each([
    ['a token id outside the vocabulary', { ...good, ids: Int32Array.from(good.ids, (v, i) => (i === 3 ? 50 : v)) }],
    ['a negative type id', { ...good, typeIds: Int32Array.from(good.typeIds, (v, i) => (i === 0 ? -1 : v)) }],
    ['a row with no tokens', { ...good, lengths: Int32Array.from([5, 0]) }],
    ['a row longer than its batch', { ...good, lengths: Int32Array.from([6, 1]) }],
  ])('%s is ERR_RANGE, and nothing is computed', async (_name, b) => {
    expect(await asyncCode(enc.encode(b))).toBe('ERR_RANGE');
  });
  it('rows longer than the model\'s positions are ERR_RANGE; ids of the wrong size ERR_SHAPE', async () => {
    expect(await asyncCode(enc.encode(batch(c, 1, 13, 2)))).toBe('ERR_RANGE');
    expect(await asyncCode(enc.encode({ ...good, ids: good.ids.subarray(1) }))).toBe('ERR_SHAPE');
  });
  it('a wrongly sized weight is refused when the encoder is made', () => {
    const param = randomBagParameters(c, 4);
    expect(() => new EmbeddingBagEncoder({ ...c, hiddenSize: 18 }, param, 'enc')).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
  });
});

// encodeTexts: the tokenizer's segmentation and the forward in one native call (embedTexts) equal tokenizer.encode
// followed by encode, value for value: single texts, pairs, a task marker, truncation, a batch.
describe('encodeTexts (one call: tokenize and embed)', () => {
  const words = ['the', 'cat', 'sat', 'on', 'mat', 'dog', 'ran', 'far', 'away', 'quick', '##ly', 'fox'];
  const vocab = ['[PAD]', '[unused0]', '[unused1]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', ...words];
  const c = { ...base, vocabSize: vocab.length, maxPositions: 12, projectionDim: 5, tokenWeights: true, normalize: true };
  const enc = new EmbeddingBagEncoder(c, randomBagParameters(c, 21), 'enc');
  const tok = new WordPieceTokenizer(vocab);
  const texts = ['The cat sat on the mat', 'quickly!', 'a fox', 'the dog ran far far away the dog ran far far away'];
  it.each([
    ['single texts', {}],
    ['a task marker', { marker: 1 }],
    ['pairs', { pairs: ['the mat', 'fox', 'dog', 'cat sat'] }],
    ['a short maximum length', { maxLength: 4 }],
  ] as const)('%s: equals tokenizer.encode then encode', async (_name, o) => {
    const options = { maxLength: 12, ...o };
    const direct = await enc.encodeTexts(tok, texts, options);
    const twoSteps = await enc.encode(tok.encode(texts, options));
    expect(direct).toBeInstanceOf(Float32Array);
    expect(Array.from(direct)).toEqual(Array.from(twoSteps));
    expect(direct.length).toBe(texts.length * 5);
  });
  it('bad input: typed errors', async () => {
    expect(await asyncCode(enc.encodeTexts(tok, []))).toBe('ERR_ARG');
    expect(await asyncCode(enc.encodeTexts(tok, texts, { pairs: ['x'] }))).toBe('ERR_SHAPE');
    expect(await asyncCode(enc.encodeTexts(tok, texts, { maxLength: 0 }))).toBe('ERR_RANGE');
    expect(await asyncCode(enc.encodeTexts(tok, texts, { maxLength: 40 }))).toBe('ERR_RANGE'); // rows past the 12 positions
    expect(await asyncCode(enc.encodeTexts({ nativeInputs: () => ({ native: {}, first: ['x'], second: null, maxLength: 8, marker: -1 }) } as never, ['x']))).toBe('ERR_ARG');
    // A tokenizer whose vocabulary is larger than the model's table: the id is outside it.
    const big = new WordPieceTokenizer([...vocab, 'zebra']);
    expect(await asyncCode(enc.encodeTexts(big, ['zebra']))).toBe('ERR_RANGE');
  });
});
