// Issue 21: the torch and tokenizer modules under bad input: QuorumErrors with codes, Promise forms that reject.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { DenseIndex, QuorumError, SparseIndex } from '../lib/index.js';
import { readSafetensors } from '../lib/io/safetensors.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { Retriever } from '../lib/models/retriever.js';
import { Bm25Index } from '../lib/bm25/bm25.js';
import { loadBeir } from '../lib/data/beir.js';
import { code, rejection } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'quorum-robust-train-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'the', 'cat', 'sat', '##s'];
const enc = { vocabSize: VOCAB.length, hiddenSize: 8, heads: 2, ffnSize: 16, layers: 1, maxPositions: 16, dropout: 0 };

describe('Retriever.create rejects impossible configurations', () => {
  const cases: Array<[string, unknown, string]> = [
    ['no options', undefined, 'ERR_ARG'],
    ['an unknown preset', { preset: 'colbert', encoder: enc }, 'ERR_ARG'],
    ['hidden size 0', { preset: 'siamese', encoder: { ...enc, hiddenSize: 0 } }, 'ERR_RANGE'],
    ['hidden size not divisible by heads', { preset: 'siamese', encoder: { ...enc, hiddenSize: 9 } }, 'ERR_ARG'],
    ['negative layers', { preset: 'siamese', encoder: { ...enc, layers: -1 } }, 'ERR_RANGE'],
    ['fractional layers', { preset: 'siamese', encoder: { ...enc, layers: 1.5 } }, 'ERR_ARG'],
    ['vocabulary 0', { preset: 'siamese', encoder: { ...enc, vocabSize: 0 } }, 'ERR_RANGE'],
    ['dropout 1.5', { preset: 'siamese', encoder: { ...enc, dropout: 1.5 } }, 'ERR_RANGE'],
    ['dropout NaN', { preset: 'siamese', encoder: { ...enc, dropout: Number.NaN } }, 'ERR_ARG'],
    ['an unknown pooling', { preset: 'siamese', encoder: { ...enc, pooling: 'first' } }, 'ERR_ARG'],
    ['cls pooling over 0 layers', { preset: 'siamese', encoder: { ...enc, layers: 0, pooling: 'cls' } }, 'ERR_ARG'],
    ['hidden size a string', { preset: 'siamese', encoder: { ...enc, hiddenSize: '8' } }, 'ERR_ARG'],
  ];
  for (const [name, options, want] of cases) it(name, () => expect(code(() => Retriever.create(options as never))).toBe(want));
});

describe('Retriever calls', () => {
  const model = () => Retriever.create({ preset: 'siamese', encoder: enc });
  const batch = { ids: new Int32Array(2 * 4), mask: new Uint8Array(2 * 4).fill(1), rows: 2, length: 4 };
  const cases: Array<[string, (m: Retriever) => unknown, string]> = [
    ['encode: a batch that is not an object', (m) => m.encode(5 as never, 'query'), 'ERR_ARG'],
    ['encode: an unknown side', (m) => m.encode(batch as never, 'answer' as never), 'ERR_ARG'],
    ['encode: token ids past the vocabulary', (m) => m.encode({ ...batch, ids: new Int32Array(8).fill(99) } as never, 'query'), 'ERR_ARG'],
    ['encode: negative token ids', (m) => m.encode({ ...batch, ids: new Int32Array(8).fill(-1) } as never, 'query'), 'ERR_ARG'],
    ['encode: ids and shape that differ', (m) => m.encode({ ...batch, rows: 3 } as never, 'query'), 'ERR_ARG'],
    ['encode: a task past the encoders', (m) => m.encode(batch as never, 'query', { task: 7 }), 'ERR_ARG'],
    ['accumulate: no batch', (m) => m.accumulate(undefined as never), 'ERR_ARG'],
    ['step: lr NaN', (m) => m.step(Number.NaN, 1), 'ERR_ARG'],
    ['step: lr -1', (m) => m.step(-1, 1), 'ERR_RANGE'],
    ['save: a directory that does not exist', (m) => m.save(join(dir, 'none', 'x.pt')), 'ERR_IO'],
    ['load: a missing checkpoint', (m) => m.load(join(dir, 'missing.pt')), 'ERR_IO'],
    ['load: a checkpoint that is not one', (m) => { writeFileSync(join(dir, 'junk.pt'), 'junk'); return m.load(join(dir, 'junk.pt')); }, 'ERR_FORMAT'],
  ];
  for (const [name, call, want] of cases) it(name, async () => expect(await rejection(() => call(model()))).toBe(want));

  it('Retriever.load: a missing model directory, or a name that is not one', async () => {
    expect(await rejection(() => Retriever.load(join(dir, 'no-model')))).toBe('ERR_IO');
    expect(await rejection(() => Retriever.load(''))).toBe('ERR_IO');
  });
});

describe('WordPieceTokenizer', () => {
  it('rejects vocabularies it cannot use', () => {
    expect(code(() => new WordPieceTokenizer('the cat' as never))).toBe('ERR_ARG');
    expect(code(() => new WordPieceTokenizer([]))).toBe('ERR_ARG');
    expect(code(() => new WordPieceTokenizer(['the', 5 as never]))).toBe('ERR_ARG');
    expect(code(() => new WordPieceTokenizer(['the', 'cat']))).toBe('ERR_ARG'); // no [PAD] / [UNK] / [CLS] / [SEP]
    expect(code(() => new WordPieceTokenizer(VOCAB, { maxWordChars: 0 }))).toBe('ERR_RANGE');
  });

  const tok = () => new WordPieceTokenizer(VOCAB);
  const cases: Array<[string, (t: WordPieceTokenizer) => unknown, string]> = [
    ['encode: texts not an array', (t) => t.encode('the cat' as never), 'ERR_ARG'],
    ['encode: a null text', (t) => t.encode([null as never]), 'ERR_ARG'],
    ['encode: a number text', (t) => t.encode([5 as never]), 'ERR_ARG'],
    ['encode: maxLength 0', (t) => t.encode(['the'], { maxLength: 0 }), 'ERR_RANGE'],
    ['encode: maxLength 2.5', (t) => t.encode(['the'], { maxLength: 2.5 }), 'ERR_RANGE'],
    ['encode: pairs of another count', (t) => t.encode(['the', 'cat'], { pairs: ['sat'] }), 'ERR_SHAPE'],
    ['ids: a number', (t) => t.ids(5 as never), 'ERR_ARG'],
    ['decode: an id past the vocabulary', (t) => t.decode([99]), 'ERR_RANGE'],
    ['markerId: past the [unused] tokens', (t) => t.markerId(3), 'ERR_RANGE'],
    ['idOf: a number', (t) => t.idOf(5 as never), 'ERR_ARG'],
  ];
  for (const [name, call, want] of cases) it(name, () => expect(code(() => call(tok()))).toBe(want));

  it('encodeAsync rejects rather than throws', async () => {
    expect(await rejection(() => tok().encodeAsync('x' as never))).toBe('ERR_ARG');
    expect(await rejection(() => tok().encodeAsync(['the'], { maxLength: -3 }))).toBe('ERR_RANGE');
    expect(await rejection(() => WordPieceTokenizer.load(join(dir, 'no-vocab.txt')))).toBe('ERR_IO');
  });
});

describe('files of every kind: garbage is ERR_FORMAT', () => {
  const garbage: Array<[string, Uint8Array]> = [
    ['empty', new Uint8Array(0)],
    ['one byte', Uint8Array.of(7)],
    ['text', new TextEncoder().encode('hello, not an index')],
    ['zeros', new Uint8Array(4096)],
    ['0xff', new Uint8Array(4096).fill(255)],
  ];
  for (const [name, bytes] of garbage) {
    it(name, () => {
      expect(code(() => DenseIndex.fromBuffer(bytes))).toBe('ERR_FORMAT');
      expect(code(() => SparseIndex.fromBuffer(bytes))).toBe('ERR_FORMAT');
      expect(code(() => Bm25Index.fromBuffer(bytes))).toBe('ERR_FORMAT');
      expect(code(() => readSafetensors(bytes))).toBe('ERR_FORMAT');
    });
  }
  it('a fromBuffer argument that is not bytes is ERR_ARG', () => {
    expect(code(() => DenseIndex.fromBuffer('abc' as never))).toBe('ERR_ARG');
    expect(code(() => SparseIndex.fromBuffer(null as never))).toBe('ERR_ARG');
    expect(code(() => Bm25Index.fromBuffer(5 as never))).toBe('ERR_ARG');
    expect(code(() => readSafetensors({} as never))).toBe('ERR_ARG');
  });
  it('a dataset directory that is not one is ERR_IO, a corrupt one ERR_FORMAT', () => {
    expect(code(() => loadBeir(join(dir, 'no-data')))).toBe('ERR_IO');
    const bad = join(dir, 'bad-data');
    mkdirSync(bad, { recursive: true });
    writeFileSync(join(bad, 'corpus.jsonl'), '{"_id": "1", "text": "a"}\n{not json\n');
    writeFileSync(join(bad, 'queries.jsonl'), '');
    expect(code(() => loadBeir(bad))).toBe('ERR_FORMAT');
  });
});

describe('DenseIndex.create options', () => {
  const cases: Array<[string, unknown, string]> = [
    ['no options', undefined, 'ERR_ARG'],
    ['dim 0', { dim: 0 }, 'ERR_RANGE'],
    ['dim -4', { dim: -4 }, 'ERR_RANGE'],
    ['dim 1.5', { dim: 1.5 }, 'ERR_RANGE'],
    ['dim NaN', { dim: Number.NaN }, 'ERR_ARG'],
    ['dim "8"', { dim: '8' }, 'ERR_ARG'],
    ['dim 2^17', { dim: 2 ** 17 }, 'ERR_RANGE'],
    ['factory 5', { dim: 4, factory: 5 }, 'ERR_ARG'],
    ['factory ""', { dim: 4, factory: '' }, 'ERR_ARG'],
    ['mips "cosine"', { dim: 4, mips: 'cosine' }, 'ERR_ARG'],
    ['phi -1', { dim: 4, mips: 'l2', phi: -1 }, 'ERR_RANGE'],
    ['phi on inner product', { dim: 4, phi: 2 }, 'ERR_ARG'],
    ['efSearch on Flat', { dim: 4, efSearch: 8 }, 'ERR_ARG'],
    ['efSearch -1', { dim: 4, factory: 'HNSW8', efSearch: -1 }, 'ERR_RANGE'],
    ['efSearch 2^30', { dim: 4, factory: 'HNSW8', efSearch: 2 ** 30 }, 'ERR_RANGE'],
    ['nprobe on HNSW', { dim: 4, factory: 'HNSW8', nprobe: 2 }, 'ERR_ARG'],
    ['nprobe 1.5', { dim: 4, factory: 'IVF4,Flat', nprobe: 1.5 }, 'ERR_RANGE'],
  ];
  for (const [name, options, want] of cases) it(name, () => expect(code(() => DenseIndex.create(options as never))).toBe(want));
});
