// DPR-MUF's search stage in one native call (lib/methods/muf/stage.ts, native/kernels/muf_search.h) against the
// separate calls it replaces, which stay the references: scoreTopK for each expert's top-L, FamiliarityBank.probability
// for P(own task), mufConfidence for the heads' MI and for the fusion. Every scan of a call runs in one parallel region
// (score_topk_many), so these also check that several searches, some on the dot path and some as GEMMs, equal their
// one-at-a-time results.
import { afterAll, describe, expect, it } from 'vitest';

import { Tensor, capabilities, scoreTopK, setIsa, setThreads, type Isa } from '../lib/index.js';
import { FamiliarityBank, type FamiliarityCalibration } from '../lib/methods/muf/familiarity.js';
import { QuantizedTensor, quantizeSync } from '../lib/quantized.js';
import { mufConfidence } from '../lib/methods/muf/serve.js';
import { mufSearch, type MufStageExpert } from '../lib/methods/muf/stage.js';
import { defaultEncoderConfig, type EncoderConfig } from '../lib/models/config.js';
import { EmbeddingBagEncoder } from '../lib/models/embedding-bag.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { randomBagParameters } from './reference/embedding-bag.js';
import { asyncCode, randomF32 } from './helpers.js';
import type { QuorumError } from '../lib/errors.js';

const caps = capabilities();
afterAll(() => {
  setIsa(caps.isa as Isa);
  setThreads(caps.threads);
});

interface Spec {
  B: number;
  dim: number;
  N: number;
  L: number;
  k: number;
  /**
   * Expert 0's corpus in bf16 (GEMMs only from 64 questions: with B = 40 one call mixes both scan paths) or int8 (the
   * int8 GEMM from 32 questions, int8 x int8 below).
   */
  passages?: 'bf16' | 'int8';
  /** Familiarity banks in bf16 or int8. */
  bank?: 'bf16' | 'int8';
  rows?: Int32Array;
  /** Expert 1 twice as wide as the others (experts need not share a width). */
  mixedWidths?: boolean;
  /**
   * Threads of the stage's call (the references run on the default): at B = 64 over 3,000 rows each expert's scan is a
   * third of the call's work, so with 2 threads (or 1) it is one task with one list per question, with 4 threads blocks
   * with a list per worker (dense_search.cc, GemmScan).
   */
  threads?: number;
}

const calibration = (bias: number, weight: number, k: number): FamiliarityCalibration => ({ k, platt: { bias, weights: [weight] }, auroc: 0.9, ece: 0.01, own: 10, other: 10 });

/** Three experts over one corpus of N rows: random questions, passages, banks of different sizes, and heads. */
function build(s: Spec, seed: number) {
  return [0, 1, 2].map((x) => {
    const dim = s.mixedWidths && x === 1 ? 2 * s.dim : s.dim;
    const sd = seed + 100 * x;
    const passages = Tensor.from(randomF32(s.N * dim, sd + 1), [s.N, dim]);
    let bank = FamiliarityBank.fromVectors(randomF32((20 + 7 * x) * dim, sd + 2), randomF32((35 + 3 * x) * dim, sd + 3), dim);
    if (s.bank) {
      const f32 = bank;
      bank = f32.to(s.bank);
      f32.dispose();
    }
    const K = 3 + x;
    const weights = [Tensor.from(randomF32(K * 8 * dim, sd + 4).map((v) => v / Math.sqrt(dim)), [K, 8, dim]), Tensor.from(randomF32(K * 8, sd + 5), [K, 8]), Tensor.from(randomF32(K * dim * 8, sd + 6).map((v) => v / Math.sqrt(8)), [K, dim, 8]), Tensor.from(randomF32(K * dim, sd + 7), [K, dim])];
    return {
      queries: Tensor.from(randomF32(s.B * dim, sd + 8), [s.B, dim]),
      passages: x === 0 && s.passages ? (s.passages === 'bf16' ? passages.to('bf16') : quantizeSync(passages, 'int8')) : passages,
      bank,
      calibration: calibration(0.3 - x, 4 + 3 * x, [30, 5, 1][x]!),
      heads: { weights, members: K, temperature: 0.2 + 0.3 * x },
    };
  });
}

type Built = ReturnType<typeof build>;

function dispose(xs: Built) {
  for (const x of xs) [x.queries, x.passages, ...x.heads.weights].forEach((t) => t.dispose());
  for (const x of xs) x.bank.dispose();
}

const specs: Spec[] = [
  { B: 1, dim: 16, N: 300, L: 100, k: 10 },
  { B: 1, dim: 33, N: 40, L: 40, k: 50, passages: 'bf16', bank: 'bf16' },
  { B: 2, dim: 33, N: 40, L: 40, k: 50, passages: 'int8', bank: 'int8' },
  { B: 5, dim: 8, N: 120, L: 7, k: 3 },
  { B: 40, dim: 20, N: 200, L: 30, k: 10, passages: 'bf16' },
  { B: 40, dim: 20, N: 200, L: 30, k: 10, passages: 'int8', bank: 'int8' },
  { B: 3, dim: 12, N: 500, L: 20, k: 10, rows: Int32Array.from({ length: 60 }, (_, i) => 3 + 8 * i) },
  { B: 2, dim: 12, N: 50, L: 1, k: 4, rows: Int32Array.of(49) },
  { B: 3, dim: 8, N: 90, L: 12, k: 6, mixedWidths: true },
  { B: 40, dim: 8, N: 90, L: 12, k: 6, mixedWidths: true, bank: 'bf16' },
  { B: 64, dim: 12, N: 3000, L: 40, k: 10, threads: 4 },
  { B: 64, dim: 12, N: 3000, L: 40, k: 10, threads: 2 },
  { B: 64, dim: 12, N: 3000, L: 40, k: 10, passages: 'int8', bank: 'int8', threads: 2 },
  { B: 64, dim: 12, N: 3000, L: 40, k: 10, mixedWidths: true, threads: 1 },
];

describe.each(caps.availableIsas as Isa[])('mufSearch, %s variant', (isa) => {
  it.each(specs.map((s, i) => [i, s] as const))('spec %i equals the separate calls in every mode', async (i, s) => {
    setIsa(isa);
    const xs = build(s, 1000 * (i + 1));
    const rows = s.rows ? Tensor.from(s.rows, [s.rows.length], 'i32') : undefined;
    const tieRank = Tensor.from(Int32Array.from({ length: s.N }, (_, r) => (r * 7919) % s.N), [s.N], 'i32');
    const owned: Tensor[] = [tieRank, ...(rows ? [rows] : [])];
    try {
      // The references: each expert's top-L, P(own task), and the heads' confidences on those lists.
      const lists: Array<{ ids: Tensor<'i32'>; scores: Tensor<'f32'> }> = [];
      for (const x of xs) {
        const top = await scoreTopK(x.queries, x.passages, s.L, rows ? { rows } : {});
        lists.push({ ids: Tensor.from(top.ids, [s.B, s.L]), scores: Tensor.from(top.scores, [s.B, s.L]) });
      }
      owned.push(...lists.flatMap((l) => [l.ids, l.scores]));
      const familiar = await Promise.all(xs.map((x) => x.bank.probability(x.queries.data as Float32Array, x.calibration)));
      // The fusion references read the candidates' lists and scores above; the heads read passage vectors, which for
      // int8 passages the stage scores with int8 member activations (gather_scores): no f32 reference, so that mode is
      // compared for the other specs only.
      const decoded = xs.map((x) => (x.passages instanceof QuantizedTensor ? x.passages.dequantize() : x.passages));
      owned.push(...decoded.filter((t, e) => t !== xs[e]!.passages));
      const parts = xs.map((x, e) => ({ queries: x.queries, passages: decoded[e]!, candidates: lists[e]!.ids, scores: lists[e]!.scores, weights: x.heads.weights, members: x.heads.members, temperature: x.heads.temperature }));
      const given = Tensor.from(Float32Array.from(familiar.flatMap((p) => Array.from(p))), [3, s.B]);
      owned.push(given);
      const modes = s.passages === 'int8' ? (['uniform', 'familiarity'] as const) : (['uniform', 'familiarity', 'heads'] as const);
      const fuse = { uniform: { k: s.k, tieRank, uniform: true }, familiarity: { k: s.k, tieRank, weights: given }, heads: { k: s.k, tieRank } };
      const refs: Partial<Record<(typeof modes)[number], Awaited<ReturnType<typeof mufConfidence>>>> = {};
      for (const mode of modes) refs[mode] = await mufConfidence(parts, { fuse: fuse[mode] });
      for (const r of Object.values(refs)) owned.push(r.mi, r.confidence, r.ids!, r.scores!);
      // Expert 1's questions as a plain Float32Array (an encoder's output), the others as tensors.
      const stageExperts: MufStageExpert[] = xs.map((x, e) => ({ queries: e === 1 ? Float32Array.from(x.queries.data as Float32Array) : x.queries, passages: x.passages, familiarity: x.bank.stagePart(x.calibration), heads: x.heads }));
      for (const mode of modes) {
        if (s.threads) setThreads(s.threads);
        const got = await mufSearch(stageExperts, { mode, topL: s.L, k: s.k, tieRank, ...(rows ? { rows } : {}) }).finally(() => setThreads(caps.threads));
        const ref = refs[mode]!;
        const what = `${isa} spec ${i} ${mode}`;
        expect(Array.from(got.confidence), what).toEqual(Array.from(ref.confidence.data));
        expect(Array.from(got.mi), what).toEqual(Array.from(ref.mi.data));
        expect(Array.from(got.ids), what).toEqual(Array.from(ref.ids!.data));
        expect(Array.from(got.scores), what).toEqual(Array.from(ref.scores!.data));
        expect(got.ms.scan).toBeGreaterThanOrEqual(0);
        if (rows) for (const id of got.ids) expect(id === -1 || s.rows!.includes(id)).toBe(true);
      }
      // The stage's familiarity really is P(own task): its confidences are the bank's probabilities.
      expect(familiar.some((p) => p.some((v) => v > 0.01 && v < 0.99))).toBe(true);
    } finally {
      owned.forEach((t) => t.dispose());
      dispose(xs);
    }
  });
});

describe('mufSearch, bad input', () => {
  it('gives typed errors before searching', async () => {
    const s: Spec = { B: 2, dim: 8, N: 30, L: 5, k: 3 };
    const xs = build(s, 77);
    const ex: MufStageExpert[] = xs.map((x) => ({ queries: x.queries, passages: x.passages, familiarity: x.bank.stagePart(x.calibration), heads: x.heads }));
    const opts = { mode: 'familiarity' as const, topL: 5, k: 3 };
    const t = (v: number[]) => Tensor.from(Int32Array.from(v), [v.length], 'i32');
    try {
      expect(await asyncCode(mufSearch(ex, { ...opts, rows: t([3, 1]) }))).toBe('ERR_ARG');
      expect(await asyncCode(mufSearch(ex, { ...opts, rows: t([1, 30]) }))).toBe('ERR_RANGE');
      expect(await asyncCode(mufSearch(ex, { ...opts, rows: t([]) }))).toBe('ERR_ARG');
      expect(await asyncCode(mufSearch(ex, { ...opts, rows: t([1, 2]) }))).toBe('ERR_RANGE'); // topL 5 > 2 rows
      expect(await asyncCode(mufSearch(ex, { ...opts, topL: 31 }))).toBe('ERR_RANGE');
      expect(await asyncCode(mufSearch(ex, { ...opts, topL: 0 }))).toBe('ERR_RANGE');
      expect(await asyncCode(mufSearch(ex, { ...opts, k: 0 }))).toBe('ERR_RANGE');
      expect(await asyncCode(mufSearch(ex, { ...opts, mode: 'bogus' as never }))).toBe('ERR_ARG');
      expect(await asyncCode(mufSearch([], opts))).toBe('ERR_ARG');
      expect(await asyncCode(mufSearch([{ queries: xs[0]!.queries, passages: xs[0]!.passages }], opts))).toBe('ERR_STATE');
      expect(await asyncCode(mufSearch([{ queries: xs[0]!.queries, passages: xs[0]!.passages }], { ...opts, mode: 'heads' }))).toBe('ERR_STATE');
      const short = Tensor.from(randomF32(20 * 8, 5), [20, 8]);
      const wide = Tensor.from(randomF32(2 * 9, 5), [2, 9]);
      const zero = Tensor.from(new Float32Array(0), [0, 8]);
      try {
        expect(await asyncCode(mufSearch([ex[0]!, { ...ex[1]!, passages: short }], opts))).toBe('ERR_SHAPE'); // corpora of different sizes
        expect(await asyncCode(mufSearch([{ ...ex[0]!, queries: wide }], opts))).toBe('ERR_SHAPE');
        expect(await asyncCode(mufSearch([{ ...ex[0]!, queries: zero }], opts))).toBe('ERR_SHAPE');
        expect(await asyncCode(mufSearch([{ ...ex[0]!, queries: new Float32Array(12) }], opts))).toBe('ERR_SHAPE'); // not whole rows of 8
        expect(await asyncCode(mufSearch([{ ...ex[0]!, queries: new Float32Array(0) }], opts))).toBe('ERR_SHAPE');
        expect(await asyncCode(mufSearch([ex[0]!, { ...ex[1]!, queries: new Float32Array(8 * 3) }], opts))).toBe('ERR_SHAPE'); // 3 rows, the others 2
        expect(await asyncCode(mufSearch([{ ...ex[0]!, familiarity: { ...ex[0]!.familiarity!, own: wide.handle } }], opts))).toBe('ERR_SHAPE');
        expect(await asyncCode(mufSearch([{ ...ex[0]!, familiarity: { ...ex[0]!.familiarity!, k: 0 } }], opts))).toBe('ERR_RANGE');
        expect(await asyncCode(mufSearch([{ ...ex[0]!, familiarity: { ...ex[0]!.familiarity!, bias: Number.NaN } }], opts))).toBe('ERR_ARG');
        expect(await asyncCode(mufSearch([{ ...ex[0]!, familiarity: { ...ex[0]!.familiarity!, weight: Number.POSITIVE_INFINITY } }], opts))).toMatch(/^ERR_(ARG|RANGE)$/);
        expect(await asyncCode(mufSearch([{ ...ex[0]!, heads: { ...ex[0]!.heads!, temperature: 0 } }], { ...opts, mode: 'heads' }))).toBe('ERR_RANGE');
      } finally {
        [short, wide, zero].forEach((x) => x.dispose());
      }
      // A bank held in bf16 cannot be saved (the file holds f32 tables).
      const half = xs[0]!.bank.to('bf16');
      expect(half.dtype).toBe('bf16');
      expect(() => half.save('/tmp/never.safetensors')).toThrow(expect.objectContaining({ code: 'ERR_UNSUPPORTED' }));
      half.dispose();
    } finally {
      dispose(xs);
    }
  });
});

// 0-layer encoders embed the questions inside the stage's call (MufServer's path): the same fused lists, scores and
// confidences as the stage given the vectors that encodeTexts makes, and typed errors for texts that do not fit.
describe('mufSearch, questions as texts', () => {
  const words = ['the', 'cat', 'sat', 'on', 'mat', 'dog', 'ran', 'far', 'away', 'quick', '##ly', 'fox'];
  const vocab = ['[PAD]', '[unused0]', '[unused1]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', ...words];
  const tok = new WordPieceTokenizer(vocab);
  const config = (dim: number): EncoderConfig => ({ ...defaultEncoderConfig, layers: 0, vocabSize: vocab.length, maxPositions: 12, typeVocabSize: 2, hiddenSize: 9, embeddingSize: 9, projectionDim: dim, tokenWeights: true, normalize: true });
  // 20 questions: the call embeds them 8 a task (native/napi/embedding_bag_bindings.cc, embed_all).
  const texts = ['The cat sat on the mat', 'quickly!', 'a fox', 'the dog ran far away', 'fox', 'mat cat', ...Array.from({ length: 14 }, (_, i) => `${words[i % 12]} ${words[(5 * i + 3) % 12]} the ${words[(7 * i + 1) % 12]}`.replace(' ##', ''))];
  const [N, D] = [60, 6];

  it.each(['uniform', 'familiarity'] as const)('%s: equals the stage given encodeTexts vectors', async (mode) => {
    const encoders = [0, 1].map((x) => new EmbeddingBagEncoder(config(D), randomBagParameters(config(D), 40 + x), 'enc'));
    const passages = [0, 1].map((x) => Tensor.from(randomF32(N * D, 50 + x), [N, D]));
    const banks = [0, 1].map((x) => FamiliarityBank.fromVectors(randomF32(25 * D, 60 + x), randomF32(30 * D, 70 + x), D));
    try {
      const part = (x: number) => ({ passages: passages[x]!, familiarity: banks[x]!.stagePart(calibration(0.1 * x, 3, 5)) });
      const opts = { mode, topL: 20, k: 10 };
      const options = [{ maxLength: 12 }, { maxLength: 12, marker: 1 }];
      const given = await mufSearch(await Promise.all([0, 1].map(async (x) => ({ ...part(x), queries: await encoders[x]!.encodeTexts(tok, texts, options[x]) }))), opts);
      const inCall = await mufSearch([0, 1].map((x) => ({ ...part(x), queries: encoders[x]!.textsToEmbed(tok, texts, options[x]) })), opts);
      expect(Array.from(inCall.ids)).toEqual(Array.from(given.ids));
      expect(Array.from(inCall.scores)).toEqual(Array.from(given.scores));
      expect(Array.from(inCall.confidence)).toEqual(Array.from(given.confidence));
      expect(inCall.ids.length).toBe(texts.length * 10);
      // Not a comparison of two empty results.
      expect(Array.from(given.ids).some((v) => v >= 0)).toBe(true);

      const ok = (x: number) => ({ ...part(x), queries: encoders[x]!.textsToEmbed(tok, texts) });
      const wide = new EmbeddingBagEncoder(config(D + 1), randomBagParameters(config(D + 1), 80), 'enc');
      expect(await asyncCode(mufSearch([ok(0), { ...part(1), queries: encoders[1]!.textsToEmbed(tok, texts.slice(1)) }], opts))).toBe('ERR_SHAPE'); // 5 questions, the other 6
      expect(await asyncCode(mufSearch([ok(0), { ...part(1), queries: wide.textsToEmbed(tok, texts) }], opts))).toBe('ERR_SHAPE'); // 7-d vectors, 6-d passages
      expect(await asyncCode(mufSearch([{ ...part(0), queries: { ...encoders[0]!.textsToEmbed(tok, texts), texts: [] } }], opts))).toBe('ERR_ARG');
      expect(await asyncCode(mufSearch([{ ...part(0), queries: { ...encoders[0]!.textsToEmbed(tok, texts), pairs: ['x'] } }], opts))).toBe('ERR_SHAPE');
      expect(await asyncCode(mufSearch([{ ...part(0), queries: { ...encoders[0]!.textsToEmbed(tok, texts), tokenizer: {} as never } }], opts))).toBe('ERR_ARG');
      const long = ['the dog ran far far away the dog ran far far away'];
      const past = (await mufSearch([{ ...part(0), queries: encoders[0]!.textsToEmbed(tok, long, { maxLength: 40 }) }], opts).catch((e: unknown) => e)) as QuorumError;
      expect(past.code).toBe('ERR_RANGE'); // past 12 positions: found by the embedding, in the call's task
      expect(past.message).toMatch(/^experts\[0\]: /);
      // Which row of which expert: the first failure in (expert, row) order, whichever task found it first.
      const at = (row: number) => texts.map((t, i) => (i === row ? long[0]! : t));
      const expertRow = async (rows: [number, number]) =>
        ((await mufSearch([0, 1].map((x) => ({ ...part(x), queries: encoders[x]!.textsToEmbed(tok, rows[x]! >= 0 ? at(rows[x]!) : texts, { maxLength: 40 }) })), opts).catch((e: unknown) => e)) as QuorumError).message;
      expect(await expertRow([-1, 13])).toMatch(/^experts\[1\]: row 13 has 14 tokens/);
      expect(await expertRow([10, 3])).toMatch(/^experts\[0\]: row 10 has/);
      expect(await expertRow([17, 17])).toMatch(/^experts\[0\]: row 17 has/);
      // embedTexts alone (one job, no label): the row counts from the first text too.
      const alone = (await encoders[1]!.encodeTexts(tok, at(13), { maxLength: 40 }).catch((e: unknown) => e)) as QuorumError;
      expect(alone.code).toBe('ERR_RANGE');
      expect(alone.message).toMatch(/^row 13 has 14 tokens/);
      expect(() => encoders[0]!.textsToEmbed(tok, texts, { pairs: ['x'] })).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
      wide.dispose();
    } finally {
      encoders.forEach((e) => e.dispose());
      passages.forEach((p) => p.dispose());
      banks.forEach((b) => b.dispose());
    }
  });
});
