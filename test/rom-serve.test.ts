// RomServer (lib/methods/rom/serve.ts): a saved ROM directory and index searched and read without libtorch (the
// retrieval and reader graphs in ONNX Runtime, a separate bi-encoder through ServingEncoder, the core's scoreTopK,
// RomModel's reader rows and span search) give RomModel's hits and answers; a serving process maps no libtorch.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { RomModel } from '../lib/methods/rom/model.js';
import { RomNetwork } from '../lib/methods/rom/network.js';
import { RomServer } from '../lib/methods/rom/serve.js';
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
