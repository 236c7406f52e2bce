// CameServer (lib/methods/came/serve.ts): a saved CAME directory and index searched without libtorch (the experts'
// graphs in ONNX Runtime, the saved indexes, searchCame) give CameRetriever.search's hits, joint and independent
// models, every fusion; a process that serves this way maps no libtorch.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { CAME_FUSIONS } from '../lib/methods/came/fusion.js';
import { CameRetriever } from '../lib/methods/came/retriever.js';
import { CameServer } from '../lib/methods/came/serve.js';
import { Retriever } from '../lib/models/retriever.js';
import { packageRoot } from '../lib/native.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { asyncCode } from './basics.js';
import { runModuleScript } from './helpers.js';

const N = 40;
const VOCAB = ['[PAD]', '[unused0]', '[unused1]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'what', 'is', 'the', 'and', 'of', ...['k', 't', 'w', 'q'].flatMap((p) => Array.from({ length: N }, (_, i) => `${p}${i}`))];
const tokenizer = new WordPieceTokenizer(VOCAB);
const corpus = Array.from({ length: N }, (_, i) => ({ id: `p${i}`, title: `t${i}`, text: `the k${i} is w${i} and w${(i + 1) % N}` }));
const questions = Array.from({ length: 6 }, (_, i) => `what is k${i * 5} q${i} w${i * 3}`);
const small = { encoder: { hiddenSize: 16, embeddingSize: 16, heads: 4, ffnSize: 32, maxPositions: 32, layers: 1 }, expertLayers: 1, localDim: 8 };

const root = mkdtempSync(join(tmpdir(), 'quorum-came-serve-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('CameServer', () => {
  it.each([false, true])('gives CameRetriever.search\'s hits for every fusion (independent models: %s)', async (independent) => {
    Retriever.seed(11);
    const came = CameRetriever.create({ tokenizer, independent, model: small, text: { maxQueryLength: 16, maxPassageLength: 24 } });
    await came.index(corpus, { passageTerms: 20, queryTerms: 8 });
    came.linear = { weights: [0.5, 1.5, 1], bias: 0.1 };
    const dir = join(root, independent ? 'independent' : 'joint');
    came.save(dir);
    await came.saveIndex(join(dir, 'index'), corpus.map((p) => p.id));
    const served = await CameServer.load(dir);
    try {
      expect(served.experts).toEqual(came.experts);
      expect(served.ids).toEqual(corpus.map((p) => p.id));
      for (const fusion of CAME_FUSIONS) {
        const a = await came.search(questions, { k: 10, fusion });
        const b = await served.search(questions, { k: 10, fusion });
        a.fused.forEach((hits, q) => {
          expect(b.fused[q]!.map((h) => h.id), `${fusion} ${questions[q]}`).toEqual(hits.map((h) => h.id));
          b.fused[q]!.forEach((h, j) => expect(h.score).toBeCloseTo(hits[j]!.score, 4));
        });
      }
      // global: 'int8': the global expert over int8 codes keeps (nearly) its f32 lists
      const q8 = await CameServer.load(dir, { global: 'int8' });
      try {
        const a = await served.search(questions, { k: 10, experts: ['global'] });
        const b = await q8.search(questions, { k: 10, experts: ['global'] });
        a.fused.forEach((hits, q) => expect(b.fused[q]!.filter((h) => hits.some((x) => x.id === h.id)).length).toBeGreaterThanOrEqual(8));
      } finally {
        await q8.dispose();
      }
      expect(await asyncCode(CameServer.load(dir, { global: 'binary' as never }))).toBe('ERR_ARG');
      const one = await served.search(questions.slice(0, 2), { k: 5, experts: ['local'] });
      expect(one.fused.map((r) => r.length)).toEqual([5, 5]);
      expect(await asyncCode(served.search(questions, { fusion: 'best' as never }))).toBe('ERR_ARG');
      expect(await asyncCode(served.search(questions, { bogus: 1 } as never))).toBe('ERR_ARG');
    } finally {
      came.dispose();
      await served.dispose();
    }
  }, 120_000);

  it('typed errors for a missing directory or index; a serving process maps no libtorch', async () => {
    expect(await asyncCode(CameServer.load(join(root, 'nowhere')))).toBe('ERR_IO');
    expect(await asyncCode(CameServer.load(join(root, 'joint'), { index: join(root, 'nowhere') }))).toBe('ERR_IO');
    expect(await asyncCode(CameServer.load(join(root, 'joint'), { index: 3 as never }))).toBe('ERR_ARG');
    const script = `
      import { readFileSync } from 'node:fs';
      import { CameServer } from ${JSON.stringify(join(packageRoot, 'lib', 'methods', 'came', 'serve.ts'))};
      const came = await CameServer.load(${JSON.stringify(join(root, 'joint'))});
      const r = await came.search(['what is k3'], { k: 5 });
      const maps = readFileSync('/proc/self/maps', 'utf8');
      console.log(JSON.stringify({ hits: r.fused[0].length, torch: /libtorch|libc10/.test(maps) }));
    `;
    expect(runModuleScript(script)).toEqual({ hits: 5, torch: false });
  }, 120_000);
});
