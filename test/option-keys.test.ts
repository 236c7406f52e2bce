// A misspelt option is ERR_ARG, never ignored: `{ efsearch: 64 }` must not quietly search with the default, and
// `{ checkfinite: true }` must not skip the check it asked for. Every function or method that takes an options
// object is called once with a valid call plus one unknown key (a user's-eye audit found 20 that ignored it). Left out:
// MufRetriever's search, searchAll, calibrate and train, which need trained experts to reach (they check the same way).
import { describe, expect, it } from 'vitest';

import { Bm25Index, DenseIndex, QuorumError, Retriever, SparseIndex, Tensor, WordPieceTokenizer, fuse, hybridFuse, gatherScores, gatherScoresSync, score, scoreSync, scoreTopK, scoreTopKSync } from '../lib/index.js';
import { CameModel, CameRetriever, TokenIndex, cameConfig, encodeCame, fitCameLinear, fitLexicalBias, initCame, trainCame, fitLinearFusion } from '../lib/entries/methods/came.js';
import { GloveAverageEncoder, encodeTable, gloveForVocab, indexTable, loadGloveVectors, retrieverConfig } from '../lib/entries/models.js';
import { IndexRefresh, RomModel, RomNetwork, bestSpans, readerRows, trainRom, retrievalWeight, romConfig } from '../lib/entries/methods/rom.js';
import { MlpEnsemble, MufRetriever } from '../lib/entries/methods/muf.js';
import { ColbertEncoder, ColbertIndex } from '../lib/entries/methods/colbert.js';
import { TermIdf, addBm25Negatives, mineHardNegatives, prepareTraining, fitPoolingToCorpus, homogeneousBatches, ictExamples, initFromGlove, phraseIctExamples, trainRetriever } from '../lib/entries/train.js';
import { buildMultiDomain } from '../lib/entries/data.js';
import { calibrateTemperature, ensembleMI, ensembleMISync, infoNce, infoNceSync, maxSim, maxSimBackward, maxSimSync, regularizer, regularizerSync, spladePool, spladePoolSync, toSparse, toSparseSync } from '../lib/entries/kernels.js';
import { englishAnalyzer, extendVocabulary, normalizeBert } from '../lib/entries/text.js';
import { evaluate, randomizationTest } from '../lib/entries/eval.js';
import { optimizeFusion, searchAlpha, trainFusion } from '../lib/entries/fusion.js';
import { ictTrainingExamples } from '../bench/lib/ict.js';
import { TokenTable } from '../lib/models/token-table.js';

const bogus = { bogus: 1 } as never;
const with_ = <T extends object>(o: T) => ({ ...o, bogus: 1 }) as T;
const q2 = () => Tensor.from([1, 0, 0, 1], [2, 2]);
const c3 = () => Tensor.from([1, 0, 0, 1, 1, 1], [3, 2]);
const docs = () => ({ tokens: Tensor.from([1, 0, 0, 1, 1, 1], [3, 2]), lengths: Int32Array.of(1, 2) });
const tiny = () => WordPieceTokenizer.load();
const letters = new WordPieceTokenizer(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'a', 'b']);
const small = () => Retriever.create({ preset: 'siamese', encoder: { vocabSize: 10, layers: 0, hiddenSize: 8, embeddingSize: 8 } });
const came = () => CameRetriever.create({ tokenizer: letters, model: { encoder: { hiddenSize: 8, embeddingSize: 8, heads: 2, ffnSize: 8 }, localDim: 4 } });
const colbert = () => ColbertIndex.build({ vectors: Float32Array.of(1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0), lengths: Int32Array.of(1, 1), dim: 8 });
const rom = () => RomModel.create({ tokenizer: letters, network: { encoder: { hiddenSize: 8, embeddingSize: 8, heads: 2, ffnSize: 8, layers: 1 } } });

/** The QuorumError a call throws, rejects with, or (a generator) throws on its first step. */
async function errorOf(call: () => unknown): Promise<unknown> {
  try {
    const r = call();
    if (r instanceof Promise) await r;
    else if (r && typeof (r as Generator).next === 'function') (r as Generator).next();
  } catch (e) {
    return e;
  }
  return undefined;
}

const cases: Array<[string, () => unknown]> = [
  ['scoreTopK', () => scoreTopK(q2(), c3(), 1, bogus)],
  ['scoreTopKSync (a misspelt checkFinite)', () => scoreTopKSync(q2(), c3(), 1, { checkfinite: true } as never)],
  ['score', () => score(q2(), c3(), bogus)],
  ['scoreSync', () => scoreSync(q2(), c3(), bogus)],
  ['gatherScores', () => gatherScores(q2(), c3(), Int32Array.of(0, 1), bogus)],
  ['gatherScoresSync', () => gatherScoresSync(q2(), c3(), Int32Array.of(0, 1), bogus)],
  ['maxSim', () => maxSim(q2(), docs(), bogus)],
  ['maxSimSync: documents with a misspelt tokenMask', () => maxSimSync(q2(), with_(docs()))],
  ['maxSimBackward', () => maxSimBackward(q2(), docs(), Tensor.from(new Int32Array(4), [1, 2, 2]), new Float32Array(2), bogus)],
  ['spladePool', () => spladePool(Tensor.from([1, 2, 3, 4], [1, 2, 2]), bogus)],
  ['spladePoolSync', () => spladePoolSync(Tensor.from([1, 2, 3, 4], [1, 2, 2]), bogus)],
  ['regularizer', () => regularizer(c3(), 'flops', bogus)],
  ['regularizerSync', () => regularizerSync(c3(), 'l1', bogus)],
  ['toSparse', () => toSparse(c3(), bogus)],
  ['toSparseSync', () => toSparseSync(c3(), bogus)],
  ['infoNce', () => infoNce(q2(), q2(), Int32Array.of(0, 1), bogus)],
  ['infoNceSync', () => infoNceSync(q2(), q2(), Int32Array.of(0, 1), bogus)],
  ['ensembleMI', () => ensembleMI(Tensor.from([1, 2, 3, 4], [1, 2, 2]), bogus)],
  ['ensembleMISync', () => ensembleMISync(Tensor.from([1, 2, 3, 4], [1, 2, 2]), bogus)],
  ['calibrateTemperature', () => calibrateTemperature({ scores: Tensor.from([1, 2, 3, 4], [1, 2, 2]), hit: [1] }, bogus)],
  ['calibrateTemperature: the split', () => calibrateTemperature(with_({ scores: Tensor.from([1, 2, 3, 4], [1, 2, 2]), hit: [1] }))],
  ['DenseIndex.create (a misspelt efSearch)', () => DenseIndex.create({ dim: 2, factory: 'HNSW32', efsearch: 64 } as never)],
  ['DenseIndex.search', () => DenseIndex.create({ dim: 2 }).search(q2().data, 1, bogus)],
  ['DenseIndex.searchSync', () => DenseIndex.create({ dim: 2 }).searchSync(q2().data, 1, bogus)],
  ['DenseIndex.setSearchDefaults', () => DenseIndex.create({ dim: 2 }).setSearchDefaults(bogus)],
  ['SparseIndex.search', () => new SparseIndex().search([[{ index: 0, value: 1 }]], 1, bogus)],
  ['SparseIndex.searchSync', () => new SparseIndex().searchSync([[{ index: 0, value: 1 }]], 1, bogus)],
  ['Bm25Index.search', async () => (await Bm25Index.build([{ id: 'a', text: 'hello world' }])).search(['hello'], 1, bogus)],
  ['Bm25Index.searchSync', async () => (await Bm25Index.build([{ id: 'a', text: 'hello world' }])).searchSync(['hello'], 1, bogus)],
  ['Bm25Index.fromBuffer', async () => Bm25Index.fromBuffer((await Bm25Index.build([{ id: 'a', text: 'hello' }])).toBuffer(), bogus)],
  ['englishAnalyzer', () => englishAnalyzer(bogus)],
  ['evaluate', () => evaluate(new Map(), new Map(), ['mrr@10'], bogus)],
  ['randomizationTest', () => randomizationTest([1, 2], [2, 3], bogus)],
  ['trainFusion', () => trainFusion('posfuse', [new Map()], new Map(), bogus)],
  ['searchAlpha', () => searchAlpha([], bogus)],
  ['normalizeBert', () => normalizeBert('text', bogus)],
  ['extendVocabulary', () => extendVocabulary(['[PAD]'], ['text'], bogus)],
  ['WordPieceTokenizer', async () => new WordPieceTokenizer((await tiny()).vocabulary, bogus)],
  ['WordPieceTokenizer.load', () => WordPieceTokenizer.load(undefined, bogus)],
  ['WordPieceTokenizer.encode (a misspelt maxLength)', async () => (await tiny()).encode(['a'], { maxlength: 8 } as never)],
  ['WordPieceTokenizer.encodeAsync', async () => (await tiny()).encodeAsync(['a'], bogus)],
  ['TokenTable.build', async () => TokenTable.build(await tiny(), ['a'], bogus)],
  ['retrieverConfig', () => retrieverConfig(with_({ preset: 'siamese' as const }))],
  ['Retriever.create: a misspelt encoder field', () => Retriever.create({ preset: 'siamese', encoder: { hiddensize: 128 } as never })],
  ['Retriever.create: a misspelt TASER field', () => Retriever.create({ preset: 'taser', taser: { rounting: 'seq' } as never })],
  ['Retriever.encode', () => Retriever.create({ preset: 'siamese', encoder: { vocabSize: 10, layers: 0, hiddenSize: 8, embeddingSize: 8 } }).encode({ ids: Int32Array.of(2, 3), typeIds: new Int32Array(2), lengths: Int32Array.of(2), rows: 1, seqLen: 2 }, 'query', bogus)],
  ['encodeTable', async () => encodeTable(Retriever.create({ preset: 'siamese', encoder: { vocabSize: 10, layers: 0, hiddenSize: 8, embeddingSize: 8 } }), await TokenTable.build(await tiny(), ['a']), with_({ side: 'query' as const }))],
  ['indexTable', async () => indexTable(Retriever.create({ preset: 'siamese', encoder: { vocabSize: 10, layers: 0, hiddenSize: 8, embeddingSize: 8 } }), await TokenTable.build(await tiny(), ['a']), bogus)],
  ['initFromGlove', () => initFromGlove(Retriever.create({ preset: 'siamese', encoder: { vocabSize: 1, layers: 0, hiddenSize: 8, embeddingSize: 8 } }), ['[PAD]'], bogus)],
  ['fitPoolingToCorpus', async () => fitPoolingToCorpus(Retriever.create({ preset: 'siamese' }), await tiny(), [{ title: 't', text: 'x' }], bogus)],
  ['trainRetriever (a misspelt epochs)', async () => trainRetriever(Retriever.create({ preset: 'siamese' }), await tiny(), { passages: [], train: [] }, { epoch: 3 } as never)],
  ['addBm25Negatives', () => addBm25Negatives([], [], bogus)],
  ['homogeneousBatches', () => homogeneousBatches([4], 2, bogus)],
  ['loadGloveVectors', () => loadGloveVectors(bogus)],
  ['GloveAverageEncoder.fromVectors', () => GloveAverageEncoder.fromVectors({ words: new Map(), dim: 2, vectors: new Float32Array(0) }, bogus)],
  ['GloveAverageEncoder.load', () => GloveAverageEncoder.load(with_({ glove: { words: new Map(), dim: 2, vectors: new Float32Array(0) } }))],
  ['buildMultiDomain', () => buildMultiDomain('/nonexistent', bogus)],
  ['MlpEnsemble.create', () => MlpEnsemble.create(with_({ dim: 4 }))],
  ['MlpEnsemble.train', () => MlpEnsemble.create({ dim: 2, members: 2, hidden: 4 }).train({ questions: new Float32Array(4), passages: new Float32Array(4), positives: Int32Array.of(0, 1) }, bogus)],
  ['MufRetriever.build', () => MufRetriever.build([{ model: '/nonexistent' }], [{ id: 'a', title: '', text: 'x' }], bogus)],
  ['MufRetriever.build: an expert spec', () => MufRetriever.build([with_({ model: '/nonexistent' })], [{ id: 'a', title: '', text: 'x' }])],
  ['MufRetriever.load', () => MufRetriever.load('/nonexistent', bogus)],
  ['cameConfig', () => cameConfig(bogus)],
  ['CameModel.create: a misspelt encoder field', () => CameModel.create({ encoder: { layer: 2 } as never })],
  ['CameModel.setTraining', () => CameModel.create({ encoder: { vocabSize: 10, hiddenSize: 8, embeddingSize: 8, heads: 2, ffnSize: 8 } }).setTraining(bogus)],
  ['CameRetriever.create', async () => CameRetriever.create(with_({ tokenizer: await tiny() }))],
  ['CameRetriever.create: text', async () => CameRetriever.create({ tokenizer: await tiny(), text: bogus })],
  ['TokenIndex.build', () => TokenIndex.build({ vectors: new Float32Array(2), lengths: Int32Array.of(1), dim: 2 }, bogus)],
  ['ColbertIndex.build', () => ColbertIndex.build({ vectors: Float32Array.of(1, 0, 0, 0, 0, 0, 0, 0), lengths: Int32Array.of(1), dim: 8 }, bogus)],
  ['ColbertIndex.load', () => ColbertIndex.load('/nonexistent', bogus)],
  ['ColbertEncoder.load', () => ColbertEncoder.load('/nonexistent', bogus)],
  ['fitLinearFusion', () => fitLinearFusion([], bogus)],
  ['romConfig', () => romConfig(bogus)],
  ['RomNetwork.create: a misspelt encoder field', () => RomNetwork.create({ encoder: { hidenSize: 64 } as never })],
  ['RomModel.create', async () => RomModel.create(with_({ tokenizer: await tiny() }))],
  ['RomModel.create: text', async () => RomModel.create({ tokenizer: await tiny(), text: bogus })],
  ['retrievalWeight', () => retrievalWeight('equal', 0, 2, bogus)],
  ['ictExamples', () => ictExamples(['One. Two.'], bogus)],
  ['phraseIctExamples', () => phraseIctExamples(['one two'], TermIdf.fit(['one two']), bogus)],
  ['bestSpans', () => bestSpans([1], [1], bogus)],
  ['fuse', () => fuse([new Map()], 'rrf', bogus)],
  ['hybridFuse', () => hybridFuse([], [], bogus)],
  ['Bm25Index.build', () => Bm25Index.build([{ id: 'a', text: 'hello' }], bogus)],
  ['IndexRefresh', () => new IndexRefresh({ refresh: async () => 0, updateReader: async () => {} }, bogus)],
  ['optimizeFusion', () => optimizeFusion([new Map()], new Map(), 'rrf', bogus)],
  ['Retriever.saveModel', async () => small().saveModel('/nonexistent/never', with_({ tokenizer: await tiny() }))],
  ['Retriever.encodeQueries', () => small().encodeQueries(['a'], bogus)],
  ['Retriever.encodePassages', () => small().encodePassages([{ title: '', text: 'a' }], bogus)],
  ['mineHardNegatives', async () => mineHardNegatives(small(), await tiny(), [], [], bogus)],
  ['prepareTraining', () => prepareTraining('/nonexistent', with_({ glove: false, wordVocab: false }))],
  ['gloveForVocab', () => gloveForVocab([], { words: new Map(), dim: 2, vectors: new Float32Array(0) }, bogus)],
  ['ictTrainingExamples', () => ictTrainingExamples([], with_({ taskOf: () => undefined }))],
  ['CameRetriever.encode', async () => came().encode(await TokenTable.build(letters, ['a']), 'query', bogus)],
  ['CameRetriever.index', () => came().index([{ title: '', text: 'a' }], bogus)],
  ['CameRetriever.search', () => came().search(['a'], bogus)],
  ['CameRetriever.save', () => came().save('/nonexistent/never', bogus)],
  ['trainCame', () => trainCame(came(), { passages: [], train: [] }, bogus)],
  ['fitCameLinear', () => fitCameLinear(came(), [], bogus)],
  ['initCame', () => initCame(came(), [], bogus)],
  ['encodeCame', async () => encodeCame(came().models[0]!, await TokenTable.build(letters, ['a']), with_({ side: 'query' as const }))],
  ['fitLexicalBias', async () => fitLexicalBias(came().models[0]!, await TokenTable.build(letters, ['a']), bogus)],
  ['ColbertIndex.search', async () => (await colbert()).search({ vectors: Float32Array.of(1, 0, 0, 0, 0, 0, 0, 0), lengths: Int32Array.of(1), dim: 8 }, 1, bogus)],
  ['ColbertIndex.add', async () => (await colbert()).add({ vectors: Float32Array.of(1, 0, 0, 0, 0, 0, 0, 0), lengths: Int32Array.of(1), dim: 8 }, bogus)],
  ['TokenIndex.search', async () => (await TokenIndex.build({ vectors: new Float32Array(2), lengths: Int32Array.of(1), dim: 2 })).search({ vectors: new Float32Array(2), lengths: Int32Array.of(1), dim: 2 }, 1, bogus)],
  ['trainRom', () => trainRom(rom(), { passages: [], train: [] }, bogus)],
  ['trainRom: pretrain', () => trainRom(rom(), { passages: [], train: [] }, { pretrain: bogus })],
  ['RomModel.search', () => rom().search(['a'], bogus)],
  ['RomModel.read', () => rom().read(['a'], [[]], undefined, bogus)],
  ['RomModel.answer', () => rom().answer(['a'], bogus)],
  ['RomModel.save', () => rom().save('/nonexistent/never', bogus)],
  ['RomNetwork.accumulate', () => rom().network.accumulate({ queries: letters.encode(['a']), passages: letters.encode(['b']), positives: Int32Array.of(0) }, 'retrieval', bogus)],
  ['readerRows', () => readerRows(letters, [], [], [], bogus)],
];

describe('an unknown option key is ERR_ARG, in the sync and the Promise forms', () => {
  it.each(cases)('%s', async (_name, call) => {
    const e = await errorOf(call);
    expect(e).toBeInstanceOf(QuorumError);
    expect((e as QuorumError).code).toBe('ERR_ARG');
    // checkOptions' words, or zod's for the functions whose options go through a strict schema.
    expect((e as QuorumError).message).toMatch(/(unknown option|Unrecognized key\(s\) in object:) '(bogus|checkfinite|efsearch|maxlength|hiddensize|rounting|epoch|layer|hidenSize)'/);
  });

  it('names the keys it knows', async () => {
    const e = (await errorOf(() => DenseIndex.create({ dim: 2, efsearch: 64 } as never))) as QuorumError;
    expect(e.message).toBe("DenseIndex.create options: unknown option 'efsearch' (known: dim, factory, mips, phi, efConstruction, efSearch, nprobe, quantization)");
  });

  it('still takes every documented key, and undefined for an optional one', async () => {
    expect(scoreTopKSync(q2(), c3(), 1, { checkFinite: true }).rows).toBe(2);
    expect(DenseIndex.create({ dim: 2, factory: 'HNSW32', efSearch: 64, efConstruction: 40, mips: 'inner-product' }).info.efSearch).toBe(64);
    expect((await tiny()).encode(['a b'], { maxLength: 8, padToMax: true, marker: undefined }).seqLen).toBe(8);
    expect(retrieverConfig({ preset: 'taser', encoder: { hiddenSize: 64, layers: 2 }, taser: { routing: 'seq', perLayerGate: true } }).encoder.taser?.routing).toBe('seq');
  });
});
