// RomServer (lib/methods/rom/serve.ts): a saved ROM directory and index searched and read without libtorch (the
// retrieval and reader graphs in ONNX Runtime, a separate bi-encoder through ServingEncoder, the core's scoreTopK,
// RomModel's reader rows and span search) give RomModel's hits and answers; a serving process maps no libtorch.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { RomModel } from '../lib/methods/rom/model.js';
import { RomNetwork } from '../lib/methods/rom/network.js';
import { RomServer } from '../lib/methods/rom/serve.js';
import { updateRomIndex } from '../lib/methods/rom/passages.js';
import { Retriever } from '../lib/models/retriever.js';
import { packageRoot } from '../lib/native.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { asyncCode } from './basics.js';
import { runModuleScript } from './helpers.js';

const N = 24;
const VOCAB = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'what', 'is', 'the', 'and', 'of', 'answer', ...['k', 'w', 'a'].flatMap((p) => Array.from({ length: N }, (_, i) => `${p}${i}`))];
const tok = new WordPieceTokenizer(VOCAB);
const passage = (i: number) => `the k${i} w${(i + 3) % N} is w${(i + 5) % N} and the answer is a${i} of w${(i + 7) % N}`;
const corpus = Array.from({ length: N }, (_, i) => ({ id: `p${i}`, title: `w${i}`, text: passage(i) }));
const questions = Array.from({ length: 5 }, (_, i) => `what is k${i * 4} w${i}`);
const encoder = { vocabSize: VOCAB.length, hiddenSize: 16, embeddingSize: 16, heads: 4, ffnSize: 32, maxPositions: 48, layers: 1, dropout: 0 };
const text = { readerLength: 40, maxQueryLength: 8, maxPassageLength: 32, maxAnswerLength: 3 };

const root = mkdtempSync(join(tmpdir(), 'quorum-rom-serve-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('RomServer', () => {
  it.each(['joint', 'rom', 'retriever'] as const)('gives RomModel\'s hits and answers (retrieval side: %s)', async (side) => {
    Retriever.seed(21);
    const rom = RomModel.create({ tokenizer: tok, network: { encoder }, text });
    if (side === 'rom') rom.retrieval = { kind: 'rom', network: RomNetwork.fromConfig(rom.network.config) };
    if (side === 'retriever') rom.retrieval = { kind: 'retriever', model: Retriever.create({ preset: 'siamese', encoder: { ...encoder, layers: 1 } }) };
    await rom.index(corpus);
    const dir = join(root, side);
    rom.save(dir);
    rom.saveIndex(join(dir, 'index'), corpus.map((p) => p.id));
    const served = await RomServer.load(dir, { passages: corpus });
    try {
      const a = await rom.search(questions, { k: 5 });
      const b = await served.search(questions, { k: 5 });
      a.forEach((hits, q) => {
        expect(b[q]!.map((h) => h.id), questions[q]).toEqual(hits.map((h) => h.id));
        b[q]!.forEach((h, j) => expect(h.score).toBeCloseTo(hits[j]!.score, 4));
      });
      const x = await rom.answer(questions, { k: 3 });
      const y = await served.answer(questions, { k: 3 });
      expect(y.map((r) => [r.answer, r.passage])).toEqual(x.map((r) => [r.answer, r.passage]));
      y.forEach((r, i) => expect(r.spanScore).toBeCloseTo(x[i]!.spanScore, 3));
      expect(await served.search([], { k: 3 })).toEqual([]);
      expect(await asyncCode(served.search(questions, { k: 0 }))).toBe('ERR_RANGE');
      expect(await asyncCode(served.search(questions, { bogus: 1 } as never))).toBe('ERR_ARG');
    } finally {
      rom.dispose();
      await served.dispose();
    }
    // After dispose every call is ERR_DISPOSED (search said ERR_STATE: the index had gone with the network).
    expect(await asyncCode(rom.search(questions, { k: 5 }))).toBe('ERR_DISPOSED');
    expect(await asyncCode(rom.answer(questions, { k: 3 }))).toBe('ERR_DISPOSED');
  }, 120_000);

  it.each(['joint', 'retriever'] as const)('an index changes without retraining: kept rows as they were, new rows as RomModel.index encodes them (retrieval side: %s)', async (side) => {
    const dir = join(root, `${side}-update`);
    cpSync(join(root, side), dir, { recursive: true });
    const removed = ['p0', 'p5'];
    const added = [
      { id: 'p5', title: 'w5', text: 'the k5 w9 is a brand new answer a5' },
      { id: 'n1', title: 'w1', text: passage(1).replace('answer', 'new answer') },
    ];
    expect(await asyncCode(updateRomIndex(dir, { passages: corpus, add: [{ id: 'p3', title: '', text: 'x' }] }))).toBe('ERR_ARG');
    expect(await asyncCode(updateRomIndex(dir, { passages: corpus }))).toBe('ERR_ARG');
    expect(await asyncCode(updateRomIndex(dir, { passages: corpus, remove: corpus.map((p) => p.id) }))).toBe('ERR_ARG');
    expect(await asyncCode(updateRomIndex(dir, { passages: corpus.slice(1), remove: ['p1'] }))).toBe('ERR_FORMAT');
    const corpus2 = await updateRomIndex(dir, { passages: corpus, add: added, remove: [...removed, 'nope'] });
    expect(corpus2.map((p) => p.id)).toEqual([...corpus.filter((p) => !removed.includes(p.id)).map((p) => p.id), 'p5', 'n1']);
    // The same index as RomModel builds over the new corpus (the libtorch reference): same hits, same scores.
    const rom = await RomModel.load(dir);
    const served = await RomServer.load(dir, { passages: corpus2 });
    try {
      await rom.index(corpus2);
      const a = await rom.search(questions, { k: 6 });
      const b = await served.search(questions, { k: 6 });
      a.forEach((hits, q) => {
        expect(b[q]!.map((h) => h.id)).toEqual(hits.map((h) => h.id));
        b[q]!.forEach((h, j) => expect(h.score).toBeCloseTo(hits[j]!.score, 4));
      });
      // Removed passages never come back; the old corpus no longer matches the index.
      for (const hits of await served.search([...questions, 'what is k0 w0'], { k: corpus2.length })) expect(hits.map((h) => corpus2[h.id]!.id)).not.toContain('p0');
      expect(await asyncCode(RomServer.load(dir, { passages: corpus }))).toBe('ERR_FORMAT');
    } finally {
      rom.dispose();
      await served.dispose();
    }
  }, 120_000);

  it('typed errors for a missing directory, an index of another corpus; a serving process maps no libtorch', async () => {
    expect(await asyncCode(RomServer.load(join(root, 'nowhere'), { passages: corpus }))).toBe('ERR_IO');
    expect(await asyncCode(RomServer.load(join(root, 'joint'), { passages: corpus.slice(1) }))).toBe('ERR_FORMAT');
    expect(await asyncCode(RomServer.load(join(root, 'joint'), {} as never))).toBe('ERR_ARG');
    const script = `
      import { readFileSync } from 'node:fs';
      import { RomServer } from ${JSON.stringify(join(packageRoot, 'lib', 'methods', 'rom', 'serve.ts'))};
      const corpus = ${JSON.stringify(corpus)};
      const rom = await RomServer.load(${JSON.stringify(join(root, 'joint'))}, { passages: corpus });
      const [a] = await rom.answer(['what is k3'], { k: 3 });
      const maps = readFileSync('/proc/self/maps', 'utf8');
      console.log(JSON.stringify({ read: a.passage >= 0, torch: /libtorch|libc10/.test(maps) }));
    `;
    expect(runModuleScript(script)).toEqual({ read: true, torch: false });
  }, 120_000);
});
