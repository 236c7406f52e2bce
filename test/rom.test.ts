// ROM (native/torch/rom_model.h, lib/methods/rom) on a tiny synthetic corpus: the network's structure and typed
// errors, each loss against a plain reference computed from the model's own outputs, training that learns, trainRom's
// phases, schedules and refreshes, RomModel's answers and its directory, and the CLI.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { readSafetensors } from '../lib/io/safetensors.js';
import { RomModel } from '../lib/methods/rom/model.js';
import { squadEvaluate } from '../lib/methods/rom/squad.js';
import { trainRom } from '../lib/methods/rom/train.js';
import { packageRoot } from '../lib/native.js';
import type { TrainingExample } from '../lib/train/examples.js';

import { RomNetwork, type ReaderBatchArg } from '../lib/methods/rom/network.js';
import { passagePieces, readerRows, type PassagePieces } from '../lib/methods/rom/reader-inputs.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { Retriever } from '../lib/models/retriever.js';
import { referenceEncode, type ReferenceTrace } from './reference/bert.js';
import { asyncCode, code } from './basics.js';
import { adamGradient, expectGradientsMatch, randomize } from './gradcheck.js';

const N = 24;
const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
const WORDS = ['what', 'is', 'the', 'and', 'of', 'answer'];
const VOCAB = [...SPECIALS, ...WORDS, ...['k', 'w', 'a'].flatMap((p) => Array.from({ length: N }, (_, i) => `${p}${i}`))];
const tok = new WordPieceTokenizer(VOCAB);
// Passage i: its key k_i, filler words, and its answer a_i right after "answer"; question i names k_i.
const passage = (i: number) => `the k${i} w${(i + 3) % N} is w${(i + 5) % N} and the answer is a${i} of w${(i + 7) % N}`;
const question = (i: number) => `what is k${i}`;
const small = { encoder: { vocabSize: VOCAB.length, hiddenSize: 16, embeddingSize: 16, heads: 4, ffnSize: 32, maxPositions: 48, layers: 1, dropout: 0 } };

function contrastive(questions: number[], passages: number[], positives: number[]) {
  return {
    queries: tok.encode(questions.map(question), { maxLength: 16 }),
    passages: tok.encode(passages.map(passage), { maxLength: 32 }),
    positives: Int32Array.from(positives),
  };
}

/** Questions qs, each with P passages (its own first, then the next ones), the answer a_q in its own passage. */
function readerBatch(qs: number[], P: number): ReaderBatchArg & { offset: Int32Array } {
  const questions = qs.map((q) => tok.ids(question(q)));
  const rowsQ: number[] = [];
  const pieces: PassagePieces[] = [];
  for (let i = 0; i < qs.length; i++)
    for (let j = 0; j < P; j++) {
      rowsQ.push(i);
      pieces.push(passagePieces(tok, passage((qs[i]! + j) % N)));
    }
  const r = readerRows(tok, questions, rowsQ, pieces, { maxLength: 40 });
  const at = (i: number) => r.offset[i * P]! + Array.from(pieces[i * P]!.ids).indexOf(tok.idOf(`a${qs[i]}`));
  return {
    inputs: r.inputs,
    passages: P,
    positive: new Int32Array(qs.length),
    start: Int32Array.from(qs.map((_, i) => at(i))),
    end: Int32Array.from(qs.map((_, i) => at(i))),
    normalize: false,
    offset: r.offset,
  };
}

const logSoftmax = (xs: number[]) => {
  const m = Math.max(...xs);
  const z = Math.log(xs.reduce((a, x) => a + Math.exp(x - m), 0)) + m;
  return xs.map((x) => x - z);
};

describe('ROM model', () => {
  it('names its parameters, starts each head at the identity, and rejects bad configurations', () => {
    Retriever.seed(1);
    const m = RomNetwork.create(small);
    const names = m.parameters().map((p) => p.name);
    expect(names).toContain('encoder.embeddings.word_embeddings.weight');
    expect(names).toContain('encoder.encoder.layer.0.attention.self.query.weight');
    for (const h of ['retrieval', 'ict', 'phrase_ict']) expect(names).toContain(`${h}.weight`);
    expect(m.parameters().find((p) => p.name === 'reader.span.weight')!.shape).toEqual([2, 16]);
    expect(m.dim).toBe(16);
    // Identity heads: the three heads give the same vectors at step 0.
    const b = tok.encode([question(1), passage(2)], { maxLength: 32 });
    const r = m.encodeSync(b, 'query', 'retrieval');
    expect(Array.from(m.encodeSync(b, 'query', 'ict'))).toEqual(Array.from(r));
    expect(Array.from(m.encodeSync(b, 'passage', 'phrase_ict'))).toEqual(Array.from(m.encodeSync(b, 'passage', 'retrieval')));
    expect(Math.hypot(...r.subarray(0, 16))).toBeCloseTo(1, 5);
    const narrow = RomNetwork.create({ ...small, headDim: 8 });
    expect(narrow.dim).toBe(8);
    expect(narrow.encodeSync(b, 'passage').length).toBe(16);
    expect(code(() => m.encodeSync(b, 'passage', 'reader' as 'ict'))).toBe('ERR_ARG');
    expect(code(() => RomNetwork.create({ encoder: { ...small.encoder, tokenWeights: true } }))).toBe('ERR_ARG');
    expect(code(() => RomNetwork.create({ encoder: { ...small.encoder, projectionDim: 8 } }))).toBe('ERR_ARG');
    expect(code(() => RomNetwork.create({ encoder: { ...small.encoder, layers: 0, pooling: 'cls' } }))).toBe('ERR_ARG');
    expect(code(() => RomNetwork.create({ ...small, headDim: -1 }))).toBe('ERR_RANGE');
  });

  it('the contrastive loss through a head equals the NLL of the encoded vectors, and its chance level is log(passages)', async () => {
    Retriever.seed(2);
    const m = RomNetwork.create(small);
    const b = contrastive([3, 4], [3, 4, 9, 10], [0, 1]);
    for (const head of ['retrieval', 'ict'] as const) {
      const q = m.encodeSync(b.queries, 'query', head);
      const p = m.encodeSync(b.passages, 'passage', head);
      const d = m.dim;
      let want = 0;
      for (let i = 0; i < 2; i++) {
        const s = Array.from({ length: 4 }, (_, j) => q.subarray(i * d, (i + 1) * d).reduce((a, x, k) => a + x * p[j * d + k]!, 0) / 0.05);
        want -= logSoftmax(s)[b.positives[i]!]!;
      }
      const st = await m.accumulate({ ...b, temperature: 0.05 }, head);
      expect(st.loss).toBeCloseTo(want / 2, 4);
      expect(st.chance).toBeCloseTo(Math.log(4), 10);
      expect(st.questions).toBe(2);
    }
    // An ignored pair leaves the softmax: question 0 then reads 3 passages.
    const st = await m.accumulate({ ...b, ignore: Int32Array.of(0, 2) }, 'retrieval');
    expect(st.chance).toBeCloseTo((Math.log(3) + Math.log(4)) / 2, 10);
  });

  it('the reader masks everything outside the passage, and its loss is selection + start + end on the positive row', async () => {
    Retriever.seed(3);
    const m = RomNetwork.create(small);
    const P = 3;
    const b = readerBatch([0, 5], P);
    const out = m.readSync(b.inputs);
    const T = b.inputs.seqLen;
    for (let r = 0; r < b.inputs.rows; r++)
      for (let t = 0; t < T; t++) {
        const inside = b.inputs.typeIds[r * T + t] === 1 && t < b.inputs.lengths[r]! - 1;
        expect(Number.isFinite(out.start[r * T + t]!)).toBe(inside);
        expect(Number.isFinite(out.end[r * T + t]!)).toBe(inside);
      }
    let want = 0;
    let chance = 0;
    for (let q = 0; q < 2; q++) {
      const row = q * P + b.positive[q]!;
      const finite = (xs: Float32Array) => Array.from(xs.subarray(row * T, (row + 1) * T)).map((x, t) => [x, t] as const).filter(([x]) => Number.isFinite(x));
      const pick = (xs: Float32Array, at: number) => {
        const f = finite(xs);
        return logSoftmax(f.map(([x]) => x))[f.findIndex(([, t]) => t === at)]!;
      };
      want -= logSoftmax(Array.from(out.relevance.subarray(q * P, (q + 1) * P)))[b.positive[q]!]!;
      want -= pick(out.start, b.start[q]!) + pick(out.end, b.end[q]!);
      chance += Math.log(P) + 2 * Math.log(finite(out.start).length);
    }
    const st = await m.accumulateReader(b);
    expect(st.loss).toBeCloseTo(want / 2, 4);
    expect(st.chance).toBeCloseTo(chance / 2, 8);
    expect(st.questions).toBe(2);
  });

  it("the reader's span and relevance logits, and every head's vectors, equal the reference encoder's (random weights)", () => {
    Retriever.seed(6);
    const m = RomNetwork.create({ encoder: { ...small.encoder, layers: 2 }, headDim: 8 });
    randomize(m, 23);
    const params = new Map(m.parameters().filter((x) => x.name.startsWith('encoder.')).map((x) => [x.name.slice('encoder.'.length), m.getParameter(x.name)]));
    const get = (name: string) => m.getParameter(name);
    const H = small.encoder.hiddenSize;
    const dot = (w: Float32Array, row: number, x: Float64Array) => x.reduce((a, v, i) => a + v * w[row * H + i]!, 0);
    // Reader rows: question and passage, with type 2 on passage words that occur in the question.
    const b = { inputs: readerRows(tok, [2, 9].map((q) => tok.ids(question(q))), [0, 1], [2, 9].map((q) => passagePieces(tok, passage(q))), { maxLength: 40, markMatches: true }).inputs };
    const out = m.readSync(b.inputs);
    const trace: ReferenceTrace = { calls: [], tokenStates: [] };
    referenceEncode(m.config.encoder, params, { ...b.inputs, batch: b.inputs.rows, side: 'passage' }, trace);
    const span = get('reader.span.weight');
    const spanBias = get('reader.span.bias');
    const T = b.inputs.seqLen;
    for (let r = 0; r < b.inputs.rows; r++) {
      const states = trace.tokenStates[r]!;
      const n = b.inputs.lengths[r]!;
      expect(out.relevance[r]!).toBeCloseTo(dot(get('reader.relevance.weight'), 0, states[0]!) + get('reader.relevance.bias')[0]!, 4);
      for (let t = 0; t < T; t++) {
        // Answers lie on the passage's tokens (type >= 1), never its closing [SEP] or padding.
        const allowed = t < n - 1 && b.inputs.typeIds[r * T + t]! >= 1;
        if (!allowed) {
          expect(out.start[r * T + t]).toBe(-Infinity);
          expect(out.end[r * T + t]).toBe(-Infinity);
          continue;
        }
        expect(out.start[r * T + t]!).toBeCloseTo(dot(span, 0, states[t]!) + spanBias[0]!, 4);
        expect(out.end[r * T + t]!).toBeCloseTo(dot(span, 1, states[t]!) + spanBias[1]!, 4);
      }
    }
    expect(Array.from(b.inputs.typeIds).some((x) => x === 2)).toBe(true);
    // A head: W x + c on the pooled (mean) state, then unit length; 8 wide here.
    const c = contrastive([1, 2], [3], [0]);
    const pooled = referenceEncode({ ...m.config.encoder, normalize: false }, params, { ...c.queries, batch: c.queries.rows, side: 'query' });
    for (const head of ['retrieval', 'ict', 'phrase_ict'] as const) {
      const got = m.encodeSync(c.queries, 'query', head);
      const W = get(`${head}.weight`);
      const bias = get(`${head}.bias`);
      for (let r = 0; r < 2; r++) {
        const y = Array.from({ length: 8 }, (_, o) => bias[o]! + Array.from({ length: H }, (_, i) => W[o * H + i]! * pooled[r * H + i]!).reduce((a, v) => a + v, 0));
        const norm = Math.hypot(...y);
        y.forEach((v, o) => expect(got[r * 8 + o]!).toBeCloseTo(v / norm, 4));
      }
    }
  });

  it('the heads, the encoder and the reader have the gradients of the scaled, normalized losses (central differences)', () => {
    for (const [name, headDim] of [['heads of the hidden width', 0], ['narrow heads', 8]] as const) {
      // A fresh, identical network for each gradient read (AdamW's first step) and one for the central differences.
      const make = () => {
        const m = RomNetwork.create({ encoder: { ...small.encoder, layers: 2 }, headDim });
        randomize(m, 21);
        return m;
      };
      const fd = make();
      const b = { ...contrastive([3, 4, 7], [3, 4, 7, 9, 10], [0, 1, 2]), temperature: 0.1, lossScale: 0.6 };
      for (const head of ['retrieval', 'phrase_ict'] as const) {
        // normalize divides the loss by its chance level, log(5) here: the gradient must carry 0.6 / log 5.
        const pass = (m: RomNetwork) => () => m.accumulateSync(b, head, { normalize: true }).loss;
        const reader = make();
        const grad = adamGradient(reader, pass(reader));
        const other = head === 'retrieval' ? 'phrase_ict' : 'retrieval';
        const { compared, nonzero } = expectGradientsMatch(fd, pass(fd), grad, { scale: 0.6 / Math.log(5), names: (n) => !n.startsWith('reader.') && !n.startsWith(other) && !n.startsWith('ict') });
        expect(compared, name).toBeGreaterThan(20);
        expect(nonzero, name).toBeGreaterThan(compared / 2);
        // The heads not in the loss get no gradient.
        expect(Math.max(...grad.get(`${other}.weight`)!.map(Math.abs)), name).toBe(0);
      }
      const rb = { ...readerBatch([0, 5], 3), normalize: true, lossScale: 0.5 };
      const read = (m: RomNetwork) => () => m.accumulateReaderSync(rb).loss;
      const chance = make().accumulateReaderSync(rb).chance;
      const fresh = make();
      const grad = adamGradient(fresh, read(fresh));
      const { compared, nonzero } = expectGradientsMatch(fd, read(fd), grad, { scale: 0.5 / chance, names: (n) => !/^(retrieval|ict|phrase_ict)\./.test(n) });
      expect(compared, name).toBeGreaterThan(20);
      expect(nonzero, name).toBeGreaterThan(compared / 2);
    }
  });

  it('rejects reader batches whose shape or span does not fit, without touching the model', async () => {
    Retriever.seed(4);
    const m = RomNetwork.create(small);
    const b = readerBatch([0, 1], 2);
    const before = m.getParameter('reader.span.weight');
    expect(code(() => m.accumulateReaderSync({ ...b, passages: 3 }))).toBe('ERR_SHAPE');
    expect(code(() => m.accumulateReaderSync({ ...b, positive: Int32Array.of(0, 2) }))).toBe('ERR_RANGE');
    expect(code(() => m.accumulateReaderSync({ ...b, start: Int32Array.of(0, b.start[1]!) }))).toBe('ERR_RANGE'); // [CLS]
    expect(code(() => m.accumulateReaderSync({ ...b, end: Int32Array.of(b.start[0]! - 1, b.end[1]!) }))).toBe('ERR_RANGE');
    expect(code(() => m.accumulateReaderSync({ ...b, start: Int32Array.of(b.start[0]!) }))).toBe('ERR_SHAPE');
    expect(code(() => m.accumulateReaderSync({ ...b, lossScale: -1 }))).toBe('ERR_RANGE');
    expect(await asyncCode(m.accumulateReader({ ...b, positive: new Float32Array(2) as unknown as Int32Array }))).toBe('ERR_DTYPE');
    expect(Array.from(m.getParameter('reader.span.weight'))).toEqual(Array.from(before));
  });

  it('learns: retrieval and reading on the tiny corpus beat their step-0 figures', async () => {
    Retriever.seed(5);
    const m = RomNetwork.create(small);
    const evalReader = () => {
      const b = readerBatch(Array.from({ length: N }, (_, i) => i), 2);
      const out = m.readSync(b.inputs);
      const T = b.inputs.seqLen;
      let hits = 0;
      for (let q = 0; q < N; q++) {
        const row = q * 2;
        const s = Array.from(out.start.subarray(row * T, (row + 1) * T));
        if (s.indexOf(Math.max(...s)) === b.start[q]) hits++;
      }
      return hits / N;
    };
    const evalRetrieval = () => {
      const q = m.encodeSync(tok.encode(Array.from({ length: N }, (_, i) => question(i)), { maxLength: 16 }), 'query');
      const p = m.encodeSync(tok.encode(Array.from({ length: N }, (_, i) => passage(i)), { maxLength: 32 }), 'passage');
      const d = m.dim;
      let hits = 0;
      for (let i = 0; i < N; i++) {
        const s = Array.from({ length: N }, (_, j) => q.subarray(i * d, (i + 1) * d).reduce((a, x, k) => a + x * p[j * d + k]!, 0));
        if (s.indexOf(Math.max(...s)) === i) hits++;
      }
      return hits / N;
    };
    const r0 = evalRetrieval();
    const s0 = evalReader();
    for (let step = 0; step < 60; step++) {
      const qs = Array.from({ length: 8 }, (_, i) => (step * 8 + i) % N);
      await m.accumulate({ ...contrastive(qs, qs, qs.map((_, i) => i)), temperature: 0.05, lossScale: 0.5 }, 'retrieval');
      await m.accumulateReader({ ...readerBatch(qs.slice(0, 4), 2), lossScale: 0.5, normalize: true });
      await m.step(3e-3, 2);
    }
    expect(evalRetrieval()).toBeGreaterThan(Math.max(r0, 0.5));
    expect(evalReader()).toBeGreaterThan(Math.max(s0, 0.5));
  });

  it('checkpoints round-trip', async () => {
    Retriever.seed(6);
    const m = RomNetwork.create(small);
    await m.accumulateReader(readerBatch([1, 2], 2));
    await m.step(1e-2, 0);
    const dir = (await import('node:fs')).mkdtempSync((await import('node:path')).join((await import('node:os')).tmpdir(), 'quorum-rom-'));
    const path = `${dir}/m.pt`;
    await m.save(path);
    Retriever.seed(7);
    const other = RomNetwork.create(small);
    await other.load(path);
    expect(Array.from(other.getParameter('reader.span.weight'))).toEqual(Array.from(m.getParameter('reader.span.weight')));
    expect(other.optimizerSteps).toBe(1);
    const wrong = RomNetwork.create({ ...small, headDim: 8 });
    expect(await asyncCode(wrong.load(path))).toBe('ERR_FORMAT');
    (await import('node:fs')).rmSync(dir, { recursive: true, force: true });
  });
});

const root = mkdtempSync(join(tmpdir(), 'quorum-rom-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const corpus = Array.from({ length: N }, (_, i) => ({ id: `p${i}`, title: `w${i}`, text: passage(i) }));
const examples = (from: number, to: number): TrainingExample[] =>
  Array.from({ length: to - from }, (_, j) => {
    const i = from + j;
    return { query: question(i), task: 'default', positives: [i], hardNegatives: [(i + 1) % N, (i + 2) % N, (i + 5) % N], answers: [`a${i}`] };
  });
const tiny = { encoder: small.encoder };

describe('trainRom and RomModel', () => {
  const train = examples(0, N);
  const dev = examples(0, 6);
  const options = { retrievalEpochs: 1, jointEpochs: 3, batchSize: 8, readerQuestions: 4, readerPassages: 3, readerDepth: 6, lr: 3e-3, validationPool: N, seed: 3 };

  it('runs the phases, refreshes the index on improvement, and answers better than at step 0', async () => {
    Retriever.seed(11);
    const rom = RomModel.create({ tokenizer: tok, network: tiny, text: { readerLength: 40, maxQueryLength: 8, maxPassageLength: 32, maxAnswerLength: 3 } });
    await rom.index(corpus);
    const golds = dev.map((e) => e.answers!);
    const before = squadEvaluate((await rom.answer(dev.map((e) => e.query), { k: 3 })).map((a) => a.answer), golds);
    const lines: string[] = [];
    const record = await trainRom(rom, { passages: corpus, train, dev }, { ...options, jointEpochs: 8, schedule: 'equal', log: (l) => lines.push(l) });
    expect(record.readerExamples).toBe(N);
    expect(record.epochs.map((e) => e.phase)).toEqual(['retrieval', ...new Array<string>(8).fill('joint')]);
    for (const e of record.epochs.filter((x) => x.phase === 'joint')) expect(e.lambdas).toEqual({ retrieval: 0.5, reader: 0.5 });
    // The index the joint phase starts from, then one refresh per strict improvement of the dev average rank.
    expect(record.refreshes[0]!.round).toBe(-1);
    const ranks = record.epochs.filter((e) => e.phase === 'joint').map((e) => e.averageRank!);
    let best = record.refreshes[0]!.averageRank;
    const want = ranks.map((r, i) => (r < best ? ((best = r), i) : -1)).filter((i) => i >= 0);
    expect(record.refreshes.slice(1).map((r) => r.round)).toEqual(want);
    expect(lines.some((l) => /index refreshed/.test(l))).toBe(true);
    expect(rom.indexed).toBe(false); // the encoder changed: the old index is dropped
    await expect(rom.answer(['x'])).rejects.toMatchObject({ code: 'ERR_STATE' });
    await rom.index(corpus);
    const after = squadEvaluate((await rom.answer(dev.map((e) => e.query), { k: 3 })).map((a) => a.answer), golds);
    expect(after.em).toBeGreaterThan(before.em);
    expect(after.em).toBeGreaterThan(0.3);
    const hits = await rom.search([question(2)], { k: 3 });
    expect(hits[0]!.length).toBe(3);
  });

  it('pipeline: retrieval first, then the reader alone over the kept retrieval checkpoint; saved and loaded with both', async () => {
    Retriever.seed(12);
    const rom = RomModel.create({ tokenizer: tok, network: tiny, text: { readerLength: 40, maxQueryLength: 8, maxPassageLength: 32, maxAnswerLength: 3 } });
    const record = await trainRom(rom, { passages: corpus, train, dev }, { ...options, jointEpochs: 2, schedule: 'pipeline', pretrain: { tasks: ['phrase_ict'], epochs: 1 } });
    expect(record.epochs.map((e) => e.phase)).toEqual(['pretrain', 'retrieval', 'joint', 'joint']);
    expect(record.epochs.map((e) => e.lambdas)).toEqual([{ phrase_ict: 1 }, { retrieval: 1 }, { retrieval: 1, reader: 0 }, { retrieval: 0, reader: 1 }]);
    expect(Object.keys(record.epochs[3]!.losses)).toEqual(['reader']);
    expect(rom.retrieval?.kind).toBe('rom');
    expect(rom.parameterCount).toBe(2 * rom.network.parameterCount);
    await rom.index(corpus);
    const a = await rom.answer(dev.map((e) => e.query), { k: 3 });
    const dir = join(root, 'pipeline');
    rom.save(dir);
    const back = await RomModel.load(dir);
    expect(back.retrieval?.kind).toBe('rom');
    expect((back.training as { epochs: unknown[] }).epochs).toHaveLength(4);
    await back.index(corpus);
    expect(await back.answer(dev.map((e) => e.query), { k: 3 })).toEqual(a);
    rom.saveIndex(join(dir, 'index'), corpus.map((p) => p.id));
    const again = await RomModel.load(dir);
    again.loadIndex(join(dir, 'index'), corpus);
    expect(await again.answer(dev.map((e) => e.query), { k: 3 })).toEqual(a);
    expect(code(() => again.loadIndex(join(dir, 'index'), corpus.slice(1)))).toBe('ERR_FORMAT');
    // Q8 storage (the encoder's embedding tables as int8 rows): loads, and answers from the same index.
    rom.save(join(root, 'pipeline-q8'), { dtype: 'Q8' });
    const tables = [...readSafetensors(readFileSync(join(root, 'pipeline-q8', 'network.safetensors')))].filter(([, t]) => t.dtype === 'I8').map(([n]) => n);
    expect(tables.length).toBeGreaterThan(0);
    expect(tables.every((n) => /\.embeddings\.[a-z_]+_embeddings\.weight$/.test(n))).toBe(true);
    const q8 = await RomModel.load(join(root, 'pipeline-q8'));
    await q8.index(corpus);
    expect(await q8.answer(dev.map((e) => e.query), { k: 3 })).toHaveLength(dev.length);
    // Reading one question per native call or several (padded together) picks the same answers.
    const qs = dev.map((e) => e.query);
    const hits = await again.search(qs, { k: 3 });
    const one = await again.read(qs, hits, undefined, { batchQuestions: 1 });
    const many = await again.read(qs, hits, undefined, { batchQuestions: 4 });
    expect(many.map((x) => [x.answer, x.passage])).toEqual(one.map((x) => [x.answer, x.passage]));
    many.forEach((x, i) => expect(x.spanScore).toBeCloseTo(one[i]!.spanScore, 4));
    expect(await asyncCode(again.read(qs, hits.slice(1)))).toBe('ERR_SHAPE');
    // rom.json against one schema: each damage is ERR_FORMAT naming its field (issue 48).
    const romCard = JSON.parse(readFileSync(join(dir, 'rom.json'), 'utf8')) as Record<string, Record<string, unknown>>;
    for (const [field, damage] of [
      ['text.readerLength', (c: typeof romCard) => (c.text!.readerLength = '192')],
      ['config.encoder.normalize', (c: typeof romCard) => ((c.config!.encoder as Record<string, unknown>).normalize = 'yes')],
      ['retrieval', (c: typeof romCard) => (c.retrieval = { kind: 'bm25' })],
      ['headDim', (c: typeof romCard) => (c.config!.headDim = -1)],
    ] as const) {
      const copy = JSON.parse(JSON.stringify(romCard)) as typeof romCard;
      damage(copy);
      writeFileSync(join(dir, 'rom.json'), JSON.stringify(copy));
      const e = await RomModel.load(dir).then(() => undefined, (x: unknown) => x as { code: string; message: string });
      expect(e?.code, field).toBe('ERR_FORMAT');
      expect(e?.message, field).toContain(field);
    }
    writeFileSync(join(dir, 'rom.json'), JSON.stringify({ format: 'quorum-rom', version: 2 }));
    expect(await asyncCode(RomModel.load(dir))).toBe('ERR_FORMAT');
    expect(await asyncCode(RomModel.load(join(root, 'nowhere')))).toBe('ERR_IO');
  });

  it('trains without a dev split: no average rank, so only the starting index and no checkpoint choice', async () => {
    Retriever.seed(13);
    const rom = RomModel.create({ tokenizer: tok, network: tiny, text: { readerLength: 40, maxQueryLength: 8, maxPassageLength: 32 } });
    const record = await trainRom(rom, { passages: corpus, train }, { ...options, jointEpochs: 1, schedule: 'random' });
    expect(record.epochs.every((e) => e.averageRank === undefined)).toBe(true);
    expect(record.refreshes.map((r) => r.round)).toEqual([-1]);
    expect(Object.keys(record.epochs[1]!.losses).sort()).toEqual(['reader', 'retrieval']);
  });

  it('reads the pieces of the corpus it was asked about: the indexed one, another one, a new index', async () => {
    const rom = RomModel.create({ tokenizer: tok, network: tiny });
    const other = corpus.slice().reverse();
    await rom.index(corpus);
    expect(rom.passagePieces(0).text).toBe(corpus[0]!.text);
    expect(rom.passagePieces(0, other).text).toBe(other[0]!.text);
    await rom.index(other);
    expect(rom.passagePieces(0).text).toBe(other[0]!.text);
  });

  it('rejects bad options with typed errors', async () => {
    const rom = RomModel.create({ tokenizer: tok, network: tiny });
    const d = { passages: corpus, train };
    expect(await asyncCode(trainRom(rom, d, { schedule: 'cosine' as 'equal' }))).toBe('ERR_ARG');
    expect(await asyncCode(trainRom(rom, d, { jointEpochs: -1 }))).toBe('ERR_RANGE');
    expect(await asyncCode(trainRom(rom, d, { pretrain: { tasks: ['mlm' as 'ict'], epochs: 1 } }))).toBe('ERR_ARG');
    expect(await asyncCode(trainRom(rom, { passages: corpus, train: [] }))).toBe('ERR_ARG');
    expect(code(() => RomModel.create({ tokenizer: {} as WordPieceTokenizer }))).toBe('ERR_ARG');
    expect(code(() => RomModel.create({ tokenizer: tok, text: { readerLength: 4 } }))).toBe('ERR_RANGE');
    await expect(rom.search(['x'])).rejects.toMatchObject({ code: 'ERR_STATE' });
  });
});

describe('quorum rom train | index, quorum ask', () => {
  it('trains on a tiny dataset with answers, indexes its corpus and answers a question', () => {
    const topics = ['paris france', 'berlin germany', 'madrid spain', 'rome italy', 'lisbon portugal', 'vienna austria', 'athens greece', 'dublin ireland', 'oslo norway', 'warsaw poland', 'prague czech', 'cairo egypt'];
    const data = join(root, 'tiny');
    mkdirSync(join(data, 'qrels'), { recursive: true });
    writeFileSync(join(data, 'corpus.jsonl'), topics.map((t, i) => JSON.stringify({ _id: `d${i}`, title: t.split(' ')[1], text: `the capital of ${t.split(' ')[1]} is the city of ${t.split(' ')[0]} by the river` })).join('\n') + '\n');
    writeFileSync(join(data, 'queries.jsonl'), topics.map((t, i) => JSON.stringify({ _id: `q${i}`, text: `what is the capital of ${t.split(' ')[1]}`, answers: [t.split(' ')[0]] })).join('\n') + '\n');
    const qrels = (ids: number[]) => 'query-id\tcorpus-id\tscore\n' + ids.map((i) => `q${i}\td${i}\t1`).join('\n') + '\n';
    writeFileSync(join(data, 'qrels', 'train.tsv'), qrels([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    writeFileSync(join(data, 'qrels', 'dev.tsv'), qrels([10, 11]));
    const model = join(root, 'cli-model');
    const run = (...args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', join(packageRoot, 'lib', 'cli', 'main.ts'), ...args], { cwd: packageRoot, encoding: 'utf8', timeout: 120_000 });
    const t = run('rom', 'train', '--data', data, '--out', model, '--no-glove', '--hidden', '16', '--layers', '1', '--retrieval-epochs', '1', '--joint-epochs', '1', '--batch', '4', '--reader-passages', '3', '--reader-length', '48', '--schedule', 'equal');
    expect(t.stderr).toBe('');
    expect(t.status).toBe(0);
    expect(t.stdout).toMatch(/joint epoch 1: retrieval loss .*reader loss/);
    expect(t.stdout).toMatch(/wrote .*cli-model .*index refreshes, 10 reader questions/);
    // As two data-parallel ranks (issue 47): rank 0 alone logs and writes.
    const two = run('rom', 'train', '--data', data, '--out', join(root, 'cli-nproc'), '--no-glove', '--hidden', '16', '--layers', '1', '--retrieval-epochs', '1', '--joint-epochs', '1', '--batch', '4', '--reader-passages', '3', '--reader-length', '48', '--schedule', 'equal', '--nproc', '2');
    expect(two.stderr).toBe('');
    expect(two.status).toBe(0);
    expect(two.stdout.match(/joint epoch 1: retrieval loss .*reader loss/g)).toHaveLength(1);
    expect(two.stdout).toMatch(/retrieval epoch 1: retrieval loss [\d.]+ \(chance [\d.]+, acc [\d.]+%\), dev average rank/);
    expect(existsSync(join(root, 'cli-nproc', 'rom.json'))).toBe(true);
    const i = run('rom', 'index', '--model', model, '--data', data);
    expect(i.status).toBe(0);
    expect(i.stdout).toMatch(/indexed 12 passages/);
    const a = run('ask', '--model', model, '--data', data, '--k', '3', 'what is the capital of norway');
    expect(a.stderr).toBe('');
    expect(a.status).toBe(0);
    expect(a.stdout).toMatch(/^what is the capital of norway\n {2}\S.*\n {2}from d\d+ /);
    const bad = run('rom', 'train', '--data', data, '--out', model, '--schedule', 'cosine', '--no-glove');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/^quorum: ERR_ARG: --schedule must be one of pipeline, equal, gradual, random, iterative/);
    const missing = run('ask', '--model', join(root, 'nothing'), '--data', data, 'q');
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/^quorum: ERR_IO: /);
  });
});
