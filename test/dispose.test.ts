// Every object that holds native memory can free it on demand (a server cannot wait for GC): dispose() frees it, a
// later use is ERR_DISPOSED (a Promise form rejects), a second dispose does nothing, and a call already in flight
// finishes with its normal result.
import { describe, expect, it } from 'vitest';

import { Bm25Index, DenseIndex, Retriever, SparseIndex, WordPieceTokenizer } from '../lib/index.js';
import { CameModel, CameRetriever } from '../lib/entries/methods/came.js';
import { MlpEnsemble } from '../lib/entries/methods/muf.js';
import { RomModel, RomNetwork } from '../lib/entries/methods/rom.js';
import { code, rejection } from './helpers.js';

const letters = new WordPieceTokenizer(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'a', 'b', 'c']);
const batch = letters.encode(['a b', 'c']);
const vectors = (n: number, dim: number) => Float32Array.from({ length: n * dim }, (_, i) => Math.sin(i + 1));

describe('dispose', () => {
  it('DenseIndex: a search in flight completes; afterwards every use is ERR_DISPOSED', async () => {
    const index = DenseIndex.create({ dim: 8 });
    await index.add(vectors(5000, 8), Array.from({ length: 5000 }, (_, i) => i));
    const inFlight = index.search(vectors(64, 8), 3);
    index.dispose();
    expect(index.disposed).toBe(true);
    expect((await inFlight).rows).toBe(64);
    expect(await rejection(() => index.search(vectors(1, 8), 1))).toBe('ERR_DISPOSED');
    expect(code(() => index.searchSync(vectors(1, 8), 1))).toBe('ERR_DISPOSED');
    expect(code(() => index.info)).toBe('ERR_DISPOSED');
    expect(await rejection(() => index.add(vectors(1, 8), [9999]))).toBe('ERR_DISPOSED');
    expect(code(() => index.toBuffer())).toBe('ERR_DISPOSED');
    expect(() => index.dispose()).not.toThrow();
  });

  it('SparseIndex and Bm25Index', async () => {
    const sparse = new SparseIndex();
    await sparse.add([1n, 2n], [[{ index: 3, value: 1 }], [{ index: 3, value: 2 }]]);
    const inFlight = sparse.search([[{ index: 3, value: 1 }]], 2);
    sparse.dispose();
    expect((await inFlight).hits(0).map((h) => h.id)).toEqual([2n, 1n]);
    expect(sparse.disposed).toBe(true);
    expect(code(() => sparse.size)).toBe('ERR_DISPOSED');
    expect(await rejection(() => sparse.search([[{ index: 3, value: 1 }]], 1))).toBe('ERR_DISPOSED');
    expect(code(() => sparse.toBuffer())).toBe('ERR_DISPOSED');
    sparse.dispose();
    const bm25 = await Bm25Index.build([{ id: 'd1', text: 'influenza vaccine' }]);
    expect((await bm25.search(['vaccine'], 1))[0]![0]!.id).toBe('d1');
    bm25.dispose();
    expect(bm25.disposed).toBe(true);
    expect(await rejection(() => bm25.search(['vaccine'], 1))).toBe('ERR_DISPOSED');
  });

  it('Retriever: an encode in flight completes; afterwards ERR_DISPOSED', async () => {
    const model = Retriever.create({ preset: 'siamese', encoder: { vocabSize: 8, layers: 1, hiddenSize: 8, heads: 2, ffnSize: 8, embeddingSize: 8 } });
    const want = model.encodeSync(batch, 'query');
    const inFlight = model.encode(batch, 'query');
    model.dispose();
    expect(Array.from(await inFlight)).toEqual(Array.from(want));
    expect(model.disposed).toBe(true);
    expect(await rejection(() => model.encode(batch, 'query'))).toBe('ERR_DISPOSED');
    expect(code(() => model.getParameter('encoder.embeddings.word_embeddings.weight'))).toBe('ERR_DISPOSED');
    expect(code(() => model.parameterCount)).toBe('ERR_DISPOSED');
    expect(await rejection(() => model.accumulate({ queries: batch, passages: batch, positives: Int32Array.of(0, 1) }))).toBe('ERR_DISPOSED');
    model.dispose();
  });

  it('MlpEnsemble, CameModel and RomNetwork', () => {
    const heads = MlpEnsemble.create({ dim: 4, members: 2, hidden: 4 });
    const came = CameModel.create({ encoder: { vocabSize: 8, hiddenSize: 8, embeddingSize: 8, heads: 2, ffnSize: 8 }, localDim: 4 });
    const rom = RomNetwork.create({ encoder: { vocabSize: 8, hiddenSize: 8, embeddingSize: 8, heads: 2, ffnSize: 8, layers: 1 } });
    for (const m of [heads, came, rom]) {
      const name = m.parameters()[0]!.name;
      m.dispose();
      expect(m.disposed).toBe(true);
      expect(code(() => m.getParameter(name))).toBe('ERR_DISPOSED');
      m.dispose();
    }
    expect(code(() => came.encodeSync(batch, 'query'))).toBe('ERR_DISPOSED');
    expect(code(() => rom.encodeSync(batch, 'query'))).toBe('ERR_DISPOSED');
  });

  it('CameRetriever and RomModel free what they hold', async () => {
    const came = CameRetriever.create({ tokenizer: letters, model: { encoder: { hiddenSize: 8, embeddingSize: 8, heads: 2, ffnSize: 8 }, localDim: 4 } });
    await came.index([{ title: '', text: 'a b' }, { title: '', text: 'c' }]);
    expect((await came.search(['a'], { k: 1 })).fused[0]).toHaveLength(1);
    came.dispose();
    expect(came.models.every((m) => m.disposed)).toBe(true);
    expect(await rejection(() => came.search(['a'], { k: 1 }))).toBe('ERR_DISPOSED');
    const rom = RomModel.create({ tokenizer: letters, network: { encoder: { hiddenSize: 8, embeddingSize: 8, heads: 2, ffnSize: 8, layers: 1 } } });
    rom.dispose();
    expect(rom.network.disposed).toBe(true);
    expect(rom.indexed).toBe(false);
  });
});
