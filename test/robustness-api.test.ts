// Issue 21: bad input across the public TypeScript API gives a QuorumError with the expected code; a Promise form
// never throws synchronously (it rejects); nothing returns a wrong result silently.
import { describe, expect, it } from 'vitest';

import { Bm25Index, DenseIndex, QuorumError, SparseIndex, Retriever, Tensor, WordPieceTokenizer, gatherScores, score, scoreTopK, scoreTopKSync } from '../lib/index.js';
import { ece, ensembleMI, ensembleMISync, infoNce, infoNceSync, maxSim, maxSimBackward, regularizer, sparseDenseScores, sparseScores, spladePool, toSparse } from '../lib/entries/kernels.js';
import { fuse, type FuseOptions, type FusionMethod } from '../lib/fusion/fuse.js';
import { hybridFuse } from '../lib/hybrid.js';
import { CAME_FUSION_METHODS } from '../lib/methods/came/fusion.js';
import { mufFusion } from '../lib/methods/muf/fusion.js';
import type { FusionMethodDef } from '../lib/fusion/method.js';
import { code, rejection } from './helpers.js';

const q2 = () => Tensor.from([1, 0, 0, 1], [2, 2]);
const c3 = () => Tensor.from([1, 0, 0, 1, 1, 1], [3, 2]);
const sv = () => ({ offsets: BigInt64Array.of(0n, 1n), indices: Int32Array.of(0), values: Float32Array.of(1) }) as never;

describe('Promise forms reject (never throw synchronously) with the expected code', () => {
  // [name, call, code]
  const cases: Array<[string, () => unknown, string]> = [
    ['scoreTopK: queries undefined', () => scoreTopK(undefined as never, c3(), 1), 'ERR_ARG'],
    ['scoreTopK: corpus a string', () => scoreTopK(q2(), 'corpus' as never, 1), 'ERR_ARG'],
    ['scoreTopK: k 0', () => scoreTopK(q2(), c3(), 0), 'ERR_RANGE'],
    ['scoreTopK: k -1', () => scoreTopK(q2(), c3(), -1), 'ERR_RANGE'],
    ['scoreTopK: k NaN', () => scoreTopK(q2(), c3(), Number.NaN), 'ERR_RANGE'],
    ['scoreTopK: k 1.5', () => scoreTopK(q2(), c3(), 1.5), 'ERR_RANGE'],
    ['scoreTopK: dims differ', () => scoreTopK(Tensor.from([1, 2, 3], [1, 3]), c3(), 1), 'ERR_SHAPE'],
    ['scoreTopK: disposed queries', () => { const q = q2(); q.dispose(); return scoreTopK(q, c3(), 1); }, 'ERR_DISPOSED'],
    ['score: corpus null', () => score(q2(), null as never), 'ERR_ARG'],
    ['score: dims differ', () => score(Tensor.from([1, 2, 3], [1, 3]), c3()), 'ERR_SHAPE'],
    ['gatherScores: ids a string', () => gatherScores(q2(), c3(), 'x' as never), 'ERR_ARG'],
    ['infoNce: positives 1.5 (was truncated to 1)', () => infoNce(q2(), c3(), [0, 1.5]), 'ERR_RANGE'],
    ['infoNce: positives a string', () => infoNce(q2(), c3(), 'ab' as never), 'ERR_ARG'],
    ['infoNce: positive out of range', () => infoNce(q2(), c3(), [0, 7]), 'ERR_RANGE'],
    ['infoNce: queries a number', () => infoNce(3 as never, c3(), [0, 1]), 'ERR_ARG'],
    ['maxSim: docs undefined', () => maxSim(q2(), undefined as never), 'ERR_ARG'],
    ['ensembleMI: scores a string', () => ensembleMI('abc' as never), 'ERR_ARG'],
    ['ensembleMI: 1-d scores', () => ensembleMI(Tensor.from([1, 2], [2])), 'ERR_SHAPE'],
    ['spladePool: logits null', () => spladePool(null as never), 'ERR_ARG'],
    ['regularizer: unknown kind', () => regularizer(Tensor.from([1, 2], [1, 2]), 'l7' as never), 'ERR_ARG'],
    ['toSparse: weights {}', () => toSparse({} as never), 'ERR_ARG'],
    ['sparseScores: a undefined', () => sparseScores(undefined as never, sv()), 'ERR_ARG'],
    ['sparseDenseScores: dense a string', () => sparseDenseScores(sv(), 'x' as never), 'ERR_ARG'],
    ['DenseIndex.add: vectors a string', () => DenseIndex.create({ dim: 2 }).add('v' as never, [1n]), 'ERR_ARG'],
    ['DenseIndex.add: ids 2^64 + 5', () => DenseIndex.create({ dim: 2 }).add(new Float32Array(2), [2n ** 64n + 5n]), 'ERR_RANGE'],
    ['DenseIndex.add: ids a string', () => DenseIndex.create({ dim: 2 }).add(new Float32Array(2), 'ids' as never), 'ERR_ARG'],
    ['DenseIndex.search: rows of the wrong length', () => DenseIndex.create({ dim: 2 }).search([[1, 2, 3]], 1), 'ERR_SHAPE'],
    ['DenseIndex.search: k 0', () => DenseIndex.create({ dim: 2 }).search(new Float32Array(2), 0), 'ERR_RANGE'],
    ['DenseIndex.train: a Flat index', () => DenseIndex.create({ dim: 2 }).train(new Float32Array(2)), 'ERR_STATE'],
    ['DenseIndex.remove: ids 1.5', () => DenseIndex.create({ dim: 2 }).remove([1.5]), 'ERR_RANGE'],
    ['DenseIndex.reconstruct: unknown id', () => DenseIndex.create({ dim: 2 }).reconstruct([3n]), 'ERR_NOT_FOUND'],
    ['DenseIndex.save: empty path', () => DenseIndex.create({ dim: 2 }).save(''), 'ERR_ARG'],
    ['DenseIndex.save: a directory that does not exist', () => DenseIndex.create({ dim: 2 }).save('/nonexistent/dir/x.qdx'), 'ERR_IO'],
    ['DenseIndex.load: a missing file', () => DenseIndex.load('/nonexistent/x.qdx'), 'ERR_IO'],
    ['SparseIndex.add: docs a number', () => new SparseIndex().add([1n], 5 as never), 'ERR_ARG'],
    ['SparseIndex.add: term 2^32 + 3', () => new SparseIndex().add([1n], [[{ index: 2 ** 32 + 3, value: 1 }]]), 'ERR_RANGE'],
    ['SparseIndex.add: id -1', () => new SparseIndex().add([-1n], [[{ index: 1, value: 1 }]]), 'ERR_RANGE'],
    ['SparseIndex.search: k 0', () => new SparseIndex().search([[{ index: 1, value: 1 }]], 0), 'ERR_RANGE'],
    ['SparseIndex.search: queries null', () => new SparseIndex().search(null as never, 3), 'ERR_ARG'],
    ['SparseIndex.load: a missing file', () => SparseIndex.load('/nonexistent/x.qsx'), 'ERR_IO'],
    ['Bm25Index.build: k1 Infinity', () => Bm25Index.build([{ id: 'a', text: 'x' }], { k1: Number.POSITIVE_INFINITY }), 'ERR_RANGE'],
    ['Bm25Index.build: k1 "0.9"', () => Bm25Index.build([{ id: 'a', text: 'x' }], { k1: '0.9' as never }), 'ERR_ARG'],
    ['Bm25Index.build: b 1.5', () => Bm25Index.build([{ id: 'a', text: 'x' }], { b: 1.5 }), 'ERR_RANGE'],
    ['Bm25Index.build: null text', () => Bm25Index.build([{ id: 'a', text: null as never }]), 'ERR_ARG'],
    ['Bm25Index.build: numeric id', () => Bm25Index.build([{ id: 7 as never, text: 'x' }]), 'ERR_ARG'],
    ['Bm25Index.build: docs not an array', () => Bm25Index.build('docs' as never), 'ERR_ARG'],
    ['Bm25Index.build: unknown option', () => Bm25Index.build([{ id: 'a', text: 'x' }], { k: 1 } as never), 'ERR_ARG'],
  ];
  for (const [name, make, want] of cases) {
    it(name, async () => {
      expect(await rejection(make)).toBe(want);
    });
  }

  it('Bm25Index.search: a null query rejects', async () => {
    const bm25 = await Bm25Index.build([{ id: 'a', text: 'hello world' }]);
    expect(await rejection(() => bm25.search([null as never], 3))).toBe('ERR_ARG');
    expect(code(() => bm25.searchSync(['x', 3 as never], 3))).toBe('ERR_ARG');
    expect(await rejection(() => bm25.search('hello' as never, 3))).toBe('ERR_ARG');
  });
});

describe('Sync forms: the same inputs give the same codes', () => {
  const cases: Array<[string, () => unknown, string]> = [
    ['scoreTopKSync: k 1.5', () => scoreTopKSync(q2(), c3(), 1.5), 'ERR_RANGE'],
    ['scoreTopKSync: queries a string', () => scoreTopKSync('q' as never, c3(), 1), 'ERR_ARG'],
    ['infoNceSync: positives 1.5', () => infoNceSync(q2(), c3(), [0, 1.5]), 'ERR_RANGE'],
    ['infoNceSync: positives [NaN]', () => infoNceSync(q2(), c3(), [0, Number.NaN]), 'ERR_RANGE'],
    ['ensembleMISync: undefined', () => ensembleMISync(undefined as never), 'ERR_ARG'],
  ];
  for (const [name, fn, want] of cases) it(name, () => expect(code(fn)).toBe(want));
});

describe('Tensor.from checks its values instead of converting them silently', () => {
  const cases: Array<[string, () => unknown, string]> = [
    ["a string ('abcd' gave four NaNs)", () => Tensor.from('abcd' as never, [4]), 'ERR_ARG'],
    ['null', () => Tensor.from(null as never, [1]), 'ERR_ARG'],
    ['a number', () => Tensor.from(5 as never, [1]), 'ERR_ARG'],
    ['strings in an array', () => Tensor.from(['1', '2'] as never, [2]), 'ERR_ARG'],
    ['i32 from 1.7 (was 1)', () => Tensor.from([1.7], [1], 'i32'), 'ERR_RANGE'],
    ['i32 from 2^31 (wrapped)', () => Tensor.from([2 ** 31], [1], 'i32'), 'ERR_RANGE'],
    ['i32 from NaN (was 0)', () => Tensor.from([Number.NaN], [1], 'i32'), 'ERR_RANGE'],
    ['u8 from 256 (was 0)', () => Tensor.from([256], [1], 'u8'), 'ERR_RANGE'],
    ['u8 from -1 (was 255)', () => Tensor.from([-1], [1], 'u8'), 'ERR_RANGE'],
    ['i64 from 2^64 + 5 (was 5)', () => Tensor.from([2n ** 64n + 5n], [1], 'i64'), 'ERR_RANGE'],
    ['i64 from 1.5', () => Tensor.from([1.5], [1], 'i64'), 'ERR_RANGE'],
    ['i64 from a string', () => Tensor.from(['1'] as never, [1], 'i64'), 'ERR_ARG'],
    ['i32 from a Float64Array holding 0.5', () => Tensor.from(Float64Array.of(0.5), [1], 'i32'), 'ERR_RANGE'],
    ['an unknown dtype', () => Tensor.from([1], [1], 'f64' as never), 'ERR_DTYPE'],
    ['a shape that does not match', () => Tensor.from([1, 2, 3], [2]), 'ERR_SHAPE'],
    ['a negative shape', () => Tensor.from([1], [-1]), 'ERR_SHAPE'],
  ];
  for (const [name, fn, want] of cases) it(name, () => expect(code(fn)).toBe(want));

  it('still takes what it should, exactly', () => {
    expect(Array.from(Tensor.from([1, -2, 2 ** 31 - 1], [3], 'i32').data)).toEqual([1, -2, 2 ** 31 - 1]);
    expect(Array.from(Tensor.from([1, 2n ** 63n - 1n] as never, [2], 'i64').data)).toEqual([1n, 2n ** 63n - 1n]);
    expect(Array.from(Tensor.from([0, 255], [2], 'u8').data)).toEqual([0, 255]);
    expect(Array.from(Tensor.from(Float64Array.of(0.5, Number.NaN), [2]).data)).toEqual([0.5, Number.NaN]);
  });
});

describe('fusion rejects what it used to fuse silently', () => {
  // Scores are unknown here: the cases below pass ill-typed runs on purpose; the valid ones are cast back.
  const run = (docs: Array<[string, unknown]>) => new Map([['q1', docs.map(([id, score]) => ({ id, score: score as number }))]]);
  const good = run([['a', 2], ['b', 1]]);
  const other = run([['b', 3], ['c', 1]]);
  const cases: Array<[string, readonly unknown[], FusionMethod | FusionMethodDef<object>, FuseOptions | unknown, string]> = [
    ['a NaN score', [run([['a', Number.NaN]]), other], 'sum', {}, 'ERR_RANGE'],
    ['a string score (concatenated before)', [run([['a', '2']]), other], 'sum', {}, 'ERR_ARG'],
    ['an infinite score', [run([['a', Number.POSITIVE_INFINITY]]), other], 'max', {}, 'ERR_RANGE'],
    ['a numeric doc id', [run([[3 as never, 1]]), other], 'sum', {}, 'ERR_ARG'],
    ['a run that is not a Map', [{ q1: [] }, other], 'sum', {}, 'ERR_ARG'],
    ['a list that is not an array', [new Map([['q1', 'x']]), other], 'sum', {}, 'ERR_ARG'],
    ['no runs', [], 'sum', {}, 'ERR_ARG'],
    ['NaN weights', [good, other], 'wsum', { weights: [Number.NaN, 1] }, 'ERR_RANGE'],
    ['string weights', [good, other], 'wsum', { weights: ['1', 1] }, 'ERR_ARG'],
    ['weights of the wrong count', [good, other], 'wsum', { weights: [1] }, 'ERR_SHAPE'],
    ['negative rrfK', [good, other], 'rrf', { rrfK: -60 }, 'ERR_RANGE'],
    ['NaN rrfK', [good, other], 'rrf', { rrfK: Number.NaN }, 'ERR_RANGE'],
    ['phi 1.5', [good, other], 'rbc', { phi: 1.5 }, 'ERR_RANGE'],
    ['phi 0', [good, other], 'rbc', { phi: 0 }, 'ERR_RANGE'],
    ['phi missing', [good, other], 'rbc', {}, 'ERR_ARG'],
    ['k -1', [good, other], CAME_FUSION_METHODS.sum, { k: -1 }, 'ERR_RANGE'],
    ['depth 0', [good, other], 'sum', { depth: 0 }, 'ERR_RANGE'],
    ['depth 2.5', [good, other], 'sum', { depth: 2.5 }, 'ERR_RANGE'],
    ['MUF without confidences (all 1 before)', [good, other], mufFusion, {}, 'ERR_ARG'],
    ['MUF with a NaN confidence', [good, other], mufFusion, { confidence: [1, Number.NaN] }, 'ERR_RANGE'],
    ['MUF with a negative confidence', [good, other], mufFusion, { confidence: [1, -1] }, 'ERR_RANGE'],
    ['MUF with one confidence for two runs', [good, other], mufFusion, { confidence: [1] }, 'ERR_SHAPE'],
    ['MUF with no confidences for the query', [good, other], mufFusion, { confidence: new Map([['q9', [1, 1]]]) }, 'ERR_ARG'],
    ['an unknown normalization', [good, other], 'sum', { norm: 'l2' }, 'ERR_ARG'],
    ['an unknown missing policy', [good, other], 'sum', { missing: 'none' }, 'ERR_ARG'],
    ['an unknown option (a typo)', [good, other], 'rrf', { rrf_k: 10 }, 'ERR_ARG'],
    ['an unknown method', [good, other], 'combsum' as FusionMethod, {}, 'ERR_ARG'],
    ['hybrid alpha NaN', [good, other], 'hybrid', { alpha: Number.NaN }, 'ERR_RANGE'],
    ['options not an object', [good, other], 'sum', 'fast', 'ERR_ARG'],
  ];
  for (const [name, runs, method, options, want] of cases) {
    it(name, () => expect(code(() => fuse(runs as never, method, options as FuseOptions))).toBe(want));
  }

  it('fuses valid runs as before', () => {
    expect(fuse([good, other], 'sum', { norm: 'none' }).get('q1')).toEqual([
      { id: 'b', score: 4 },
      { id: 'a', score: 2 },
      { id: 'c', score: 1 },
    ]);
    expect(fuse([good, other], mufFusion, { confidence: [2, 1] }).get('q1')?.[0]?.id).toBe('a');
  });
});

describe('hybridFuse', () => {
  const d = [{ id: 'a', score: 1 }];
  const s = [{ id: 'b', score: 2 }];
  const cases: Array<[string, () => unknown, string]> = [
    ['a string score', () => hybridFuse([{ id: 'a', score: '1' as never }], s), 'ERR_ARG'],
    ['a NaN score', () => hybridFuse(d, [{ id: 'b', score: Number.NaN }]), 'ERR_RANGE'],
    ['alpha NaN', () => hybridFuse(d, s, { alpha: Number.NaN }), 'ERR_RANGE'],
    ['alpha a string', () => hybridFuse(d, s, { alpha: '1' as never }), 'ERR_ARG'],
    ['k -1', () => hybridFuse(d, s, { k: -1 }), 'ERR_RANGE'],
    ['k 1.5', () => hybridFuse(d, s, { k: 1.5 }), 'ERR_RANGE'],
    ['lists that are not arrays', () => hybridFuse('a' as never, s), 'ERR_ARG'],
    ['a hit without an id', () => hybridFuse([{ score: 1 } as never], s), 'ERR_ARG'],
  ];
  for (const [name, fn, want] of cases) it(name, () => expect(code(fn)).toBe(want));
  it('still fuses', () => {
    // a: 1 + 1 * 0 = 1; b: 0.5 + 1 * 2 = 2.5
    const dense = [{ id: 'a', score: 1 }, { id: 'b', score: 0.5 }];
    const sparse = [{ id: 'b', score: 2 }, { id: 'a', score: 0 }];
    expect(hybridFuse(dense, sparse, { alpha: 1 })).toEqual([{ id: 'b', score: 2.5 }, { id: 'a', score: 1 }]);
  });
});

describe('ece counts only what it can bin', () => {
  const cases: Array<[string, () => unknown, string]> = [
    ['a NaN confidence (was counted in n)', () => ece([0.5, Number.NaN], [1, 0]), 'ERR_RANGE'],
    ['an infinite confidence', () => ece([Number.POSITIVE_INFINITY], [1]), 'ERR_RANGE'],
    ['a string confidence', () => ece(['0.5'] as never, [1]), 'ERR_ARG'],
    ['lengths that differ', () => ece([0.5], [1, 0]), 'ERR_SHAPE'],
    ['0 bins', () => ece([0.5], [1], 0), 'ERR_RANGE'],
  ];
  for (const [name, fn, want] of cases) it(name, () => expect(code(fn)).toBe(want));
  it('is exact on a hand case', () => expect(ece([0.9, 0.9, 0.2, 0.2], [1, 0, 0, 0])).toBeCloseTo(0.5 * 0.4 + 0.5 * 0.2, 12));
});

describe('typed errors where a plain TypeError escaped (a user-side audit, 27 Nov)', () => {
  it('maxSimBackward is a Promise form: bad arguments reject, they do not throw', async () => {
    expect(await rejection(() => maxSimBackward(undefined as never, undefined as never, undefined as never, undefined as never))).toBe('ERR_ARG');
    expect(await rejection(() => maxSimBackward(q2(), null as never, Tensor.from(new Int32Array(2), [1, 1, 2]), new Float32Array(1)))).toBe('ERR_ARG');
  });

  it('encodeQueries / encodePassages check their texts; a passage without a title reads as an empty title', async () => {
    const model = await Retriever.load('default');
    expect(await rejection(() => model.encodeQueries(null as never))).toBe('ERR_ARG');
    expect(await rejection(() => model.encodeQueries([null] as never))).toBe('ERR_ARG');
    expect(await rejection(() => model.encodePassages(null as never))).toBe('ERR_ARG');
    expect(await rejection(() => model.encodePassages({} as never))).toBe('ERR_ARG');
    expect(await rejection(() => model.encodePassages([null] as never))).toBe('ERR_ARG');
    expect(await rejection(() => model.encodePassages([{ title: 3, text: 'x' }] as never))).toBe('ERR_ARG');
    const untitled = await model.encodePassages([{ text: 'influenza vaccines' } as never]);
    const titled = await model.encodePassages([{ title: '', text: 'influenza vaccines' }]);
    expect(Array.from(untitled.data)).toEqual(Array.from(titled.data));
  });

  it('DenseIndex rows and search defaults, and WordPieceTokenizer.decode', async () => {
    const index = DenseIndex.create({ dim: 2 });
    expect(code(() => index.setSearchDefaults(null as never))).toBe('ERR_ARG');
    expect(code(() => index.addSync([null] as never, [1]))).toBe('ERR_ARG');
    expect(await rejection(() => index.add([[1, 2], null] as never, [1, 2]))).toBe('ERR_ARG');
    expect(code(() => index.searchSync([null] as never, 1))).toBe('ERR_ARG');
    expect(index.size).toBe(0);
    const tok = await WordPieceTokenizer.load();
    expect(code(() => tok.decode(null as never))).toBe('ERR_ARG');
    expect(tok.decode(tok.encode(['hello world']).ids)).toBe('hello world');
  });
});
