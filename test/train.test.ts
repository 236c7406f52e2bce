import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { infoNceSync } from '../lib/losses.js';
import { torchAddon } from '../lib/native.js';
import { torchTestAddon } from './torch-hooks.js';
import { readSafetensors, writeSafetensors } from '../lib/io/safetensors.js';
import { referenceEncode, type ReferenceTrace } from './reference/bert.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import type { EncoderConfig } from '../lib/models/config.js';
import { encodeTable, indexTable } from '../lib/models/encode-corpus.js';
import type { TrainingExample } from '../lib/train/examples.js';
import { fitPoolingToCorpus, initFromBertCheckpoint, initFromGlove } from '../lib/train/init.js';
import { Retriever, type RetrieverOptions, type TokenBatchArg } from '../lib/models/retriever.js';
import { seededRandom } from '../lib/random.js';
import { homogeneousBatches, linearSchedule } from '../lib/train/schedule.js';
import { composeBatch, mineHardNegatives, trainRetriever } from '../lib/train/trainer.js';
import { TokenTable } from '../lib/models/token-table.js';
import { validationPool } from '../lib/train/validate.js';
import { packageRoot } from '../lib/native.js';
import { fixtureBatch, fixtureConfig } from './fixtures/checkpoint-v0/batch.js';
import { writeWeights } from '../lib/models/model-dir.js';
import { code, maxAbsDiff } from './basics.js';
import { adamGradient, expectGradientsMatch, randomize } from './gradcheck.js';

// A 40-word vocabulary: w0 .. w31 plus the specials.
const WORDS = Array.from({ length: 32 }, (_, i) => `w${i}`);
const VOCAB = ['[PAD]', '[unused0]', '[unused1]', '[unused2]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', ...WORDS];
const tok = new WordPieceTokenizer(VOCAB);
const tiny: Partial<EncoderConfig> = { vocabSize: VOCAB.length, hiddenSize: 16, heads: 2, ffnSize: 32, layers: 3, maxPositions: 32, dropout: 0 };

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'quorum-train-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));



/** One encoder's parameters without their "<encoder>." prefix, for the reference. */
function encoderParams(model: Retriever, encoder: string): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  for (const { name } of model.parameters()) if (name.startsWith(encoder + '.')) out.set(name.slice(encoder.length + 1), model.getParameter(name));
  return out;
}

const texts = ['w1 w2 w3 w4 w5 w6', 'w7', 'w8 w9 w10', 'w11 w12 w13 w14 w15 w16 w17 w18 w19'];

describe('encoder forward against the TypeScript reference', () => {
  const cases: Array<[string, RetrieverOptions]> = [
    ['plain BERT, factorized embeddings, output projection', { preset: 'siamese', encoder: { ...tiny, embeddingSize: 8, projectionDim: 6 } }],
    ['TASER Det-R, every 2nd block', { preset: 'taser', encoder: tiny, taser: { every: 2, experts: 2, routing: 'det' } }],
    ['TASER Det-R, 4 experts', { preset: 'taser', encoder: tiny, taser: { every: 1, experts: 4, routing: 'det' } }],
    ['TASER Seq-R, shared gate', { preset: 'taser', encoder: tiny, taser: { every: 2, experts: 3, routing: 'seq' } }],
    ['TASER Seq-R, per-layer gates', { preset: 'taser', encoder: tiny, taser: { every: 1, experts: 2, routing: 'seq', perLayerGate: true } }],
    ['TASER Tok-R', { preset: 'taser', encoder: tiny, taser: { every: 1, experts: 3, routing: 'tok' } }],
    ['mean pooling', { preset: 'siamese', encoder: { ...tiny, pooling: 'mean' } }],
    ['max pooling', { preset: 'siamese', encoder: { ...tiny, pooling: 'max' } }],
    ['TASER Det-R, mean pooling', { preset: 'taser', encoder: { ...tiny, pooling: 'mean' }, taser: { every: 2, experts: 2, routing: 'det' } }],
    ['TASER Tok-R, max pooling', { preset: 'taser', encoder: { ...tiny, pooling: 'max' }, taser: { every: 1, experts: 2, routing: 'tok' } }],
    ['TASER Seq-R, cls pooling, normalized', { preset: 'taser', encoder: { ...tiny, normalize: true }, taser: { every: 1, experts: 2, routing: 'seq' } }],
    ['0 layers, mean pooling (embeddings only)', { preset: 'siamese', encoder: { ...tiny, layers: 0, pooling: 'mean' } }],
    ['0 layers, max pooling, linear projection', { preset: 'bi-encoder', encoder: { ...tiny, layers: 0, pooling: 'max', projectionDim: 5 } }],
    ['0 layers, mean pooling, MLP head, normalized', { preset: 'siamese', encoder: { ...tiny, layers: 0, pooling: 'mean', embeddingSize: 8, projectionDim: 6, projectionHidden: 9, normalize: true } }],
    ['token-weighted mean pooling, centred', { preset: 'siamese', encoder: { ...tiny, pooling: 'mean', tokenWeights: true, center: true } }],
    ['0 layers, token-weighted mean, centred, projection, normalized', { preset: 'bi-encoder', encoder: { ...tiny, layers: 0, pooling: 'mean', tokenWeights: true, center: true, projectionDim: 5, normalize: true } }],
    ['1 layer, 3 heads of odd width, mean pooling', { preset: 'siamese', encoder: { ...tiny, layers: 1, hiddenSize: 15, heads: 3, embeddingSize: 15, pooling: 'mean' } }],
    // Windows of 4 split rows of 4 to 14 tokens: whole windows, a ragged last one, and windows of padding only.
    ['attention windows of 4 tokens, mean pooling', { preset: 'siamese', encoder: { ...tiny, pooling: 'mean', attentionWindow: 4 } }],
    ['attention windows of 3, TASER Tok-R, max pooling', { preset: 'taser', encoder: { ...tiny, pooling: 'max', attentionWindow: 3 }, taser: { every: 1, experts: 2, routing: 'tok' } }],
    ['attention windows of 5, TASER Seq-R (a router decision per window), cls pooling', { preset: 'taser', encoder: { ...tiny, attentionWindow: 5 }, taser: { every: 1, experts: 3, routing: 'seq' } }],
    ['attention windows longer than every row (the same as none)', { preset: 'siamese', encoder: { ...tiny, pooling: 'mean', attentionWindow: 32 } }],
  ];
  for (const [name, options] of cases) {
    it(name, async () => {
      const model = Retriever.create(options);
      randomize(model, 7);
      const names = model.encoderNames(); // a bi-encoder's question encoder comes first, its passage encoder last
      const batch = tok.encode(texts, { pairs: ['w20', 'w21 w22', '', 'w23'], maxLength: 14 });
      for (const side of ['query', 'passage'] as const) {
        const params = encoderParams(model, side === 'query' ? names[0]! : names[names.length - 1]!);
        const native = await model.encode(batch, side);
        const ref = referenceEncode(model.config.encoder, params, { ...batch, batch: batch.rows, side });
        expect(maxAbsDiff(native, ref)).toBeLessThan(2e-4);
        expect(maxAbsDiff(model.encodeSync(batch, side), native)).toBe(0);
      }
    });
  }

  for (const routing of ['seq', 'tok'] as const)
    it(`the training pass's router entropy (${routing === 'seq' ? 'Seq-R' : 'Tok-R'}) equals the reference's, averaged as documented`, () => {
      // One specialized block (layer 1 of 2): the states that reach its router do not depend on the Gumbel draw.
      const model = Retriever.create({ preset: 'taser', encoder: { ...tiny, layers: 2 }, taser: { routing, experts: 3, entropyWeight: 0.1 } });
      randomize(model, 9);
      const batch = batchOf(model, 6);
      const stats = model.accumulateSync(batch);
      const params = encoderParams(model, 'encoder');
      // Per side: the mean over the rows the router read (sequences, or real tokens) of sum_e p log p; then the two sides' mean.
      const side = (b: TokenBatchArg, which: 'query' | 'passage') => {
        const trace: ReferenceTrace = { calls: [], tokenStates: [] };
        referenceEncode(model.config.encoder, params, { ...b, batch: b.rows, side: which }, trace);
        const rows = trace.calls.flatMap((c) => c.probabilities);
        expect(new Set(trace.calls.map((c) => c.layer))).toEqual(new Set([1]));
        expect(rows.length).toBe(routing === 'seq' ? b.rows : b.lengths.reduce((a, x) => a + x, 0));
        return rows.reduce((a, pr) => a + pr.reduce((x, v) => x + v * Math.log(v), 0), 0) / rows.length;
      };
      const want = (side(batch.queries, 'query') + side(batch.passages, 'passage')) / 2;
      expect(want).toBeLessThan(-0.1); // three experts, far from a one-hot router: the check is not about zeros
      expect(stats.entropy).toBeCloseTo(want, 5);
    });

  for (const pooling of ['cls', 'mean', 'max'] as const)
    it(`ignores whatever sits in padded positions (${pooling} pooling)`, () => {
      const model = Retriever.create({ preset: 'siamese', encoder: { ...tiny, pooling } });
      randomize(model, 3);
      const a = tok.encode(['w1 w2', 'w3 w4 w5 w6 w7 w8']);
      const b = { ...a, ids: a.ids.slice() };
      for (let i = 4; i < b.seqLen; i++) b.ids[i] = 9 + i; // row 0's padding
      const va = model.encodeSync(a, 'query');
      expect(maxAbsDiff(va, model.encodeSync(b, 'query'))).toBe(0);
      // ... and the pooled row equals the row encoded alone, without padding.
      const alone = model.encodeSync(tok.encode(['w1 w2']), 'query');
      expect(maxAbsDiff(va.subarray(0, alone.length), alone)).toBeLessThan(1e-5);
    });

  it('rejects pooling and head options it cannot build', () => {
    const bad = (encoder: Partial<EncoderConfig>) => () => Retriever.create({ preset: 'siamese', encoder: { ...tiny, ...encoder } });
    expect(bad({ pooling: 'first' as never })).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(bad({ projectionHidden: 4 })).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(bad({ pooling: 'max', tokenWeights: true })).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(bad({ layers: -1 })).toThrow(expect.objectContaining({ code: 'ERR_RANGE' }));
    expect(bad({ attentionWindow: -2 })).toThrow(expect.objectContaining({ code: 'ERR_RANGE' }));
    // With no layer the [CLS] state is the same vector for every text.
    expect(bad({ layers: 0, pooling: 'cls' })).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
  });

  it('encodes a table in length-sorted batches into the right rows', async () => {
    const model = Retriever.create({ preset: 'siamese', encoder: tiny });
    const table = await TokenTable.build(tok, texts, { maxLength: 16 });
    const emb = await encodeTable(model, table, { side: 'passage', batchSize: 3 });
    const direct = model.encodeSync(tok.encode(texts, { maxLength: 16 }), 'passage');
    expect(maxAbsDiff(emb.data, direct)).toBeLessThan(1e-5);
    const some = await encodeTable(model, table, { side: 'passage', rows: [3, 0] });
    expect(maxAbsDiff(some.data.subarray(0, 16), direct.subarray(48, 64))).toBeLessThan(1e-5);
  });
});

describe('contrastive loss', () => {
  it('agrees with the infoNce kernel (loss and both gradients)', () => {
    const r = seededRandom(3);
    const B = 5;
    const P = 10;
    const D = 8;
    const q = Float32Array.from({ length: B * D }, () => r() * 2 - 1);
    const p = Float32Array.from({ length: P * D }, () => r() * 2 - 1);
    const pos = Int32Array.from([0, 2, 4, 6, 8]);
    const torch = torchTestAddon().contrastiveLoss(q, p, B, P, D, pos, null);
    const kernel = infoNceSync({ data: q, shape: [B, D] }, { data: p, shape: [P, D] }, pos);
    expect(Math.abs(torch.loss - kernel.loss)).toBeLessThan(1e-5);
    expect(maxAbsDiff(torch.dQ, kernel.dQ!.data)).toBeLessThan(1e-6);
    expect(maxAbsDiff(torch.dP, kernel.dP!.data)).toBeLessThan(1e-6);
  });

  it('divides the scores by the temperature before the softmax (normalized embeddings, against the kernel)', () => {
    const model = Retriever.create({ preset: 'siamese', encoder: { ...tiny, pooling: 'mean', normalize: true } });
    randomize(model, 4);
    const q = tok.encode(['w1 w2', 'w3', 'w4 w5 w6']);
    const p = tok.encode(['w1 w9', 'w3 w8', 'w4', 'w10 w11 w12']);
    const positives = Int32Array.of(0, 1, 2);
    const Q = model.encodeSync(q, 'query');
    const P = model.encodeSync(p, 'passage');
    for (const temperature of [1, 0.05]) {
      const ref = infoNceSync({ data: Q, shape: [3, 16] }, { data: P, shape: [4, 16] }, positives, { temperature });
      const stats = model.accumulateSync({ queries: q, passages: p, positives, temperature });
      expect(stats.loss).toBeCloseTo(ref.loss, 4);
      model.stepSync(0, 0); // clears the gradients
    }
    expect(() => model.accumulateSync({ queries: q, passages: p, positives, temperature: 0 })).toThrow(expect.objectContaining({ code: 'ERR_RANGE' }));
  });

  it('leaves ignored pairs out of the softmax (checked by finite differences)', () => {
    const r = seededRandom(4);
    const [B, P, D] = [3, 6, 4];
    const q = Float32Array.from({ length: B * D }, () => r() * 2 - 1);
    const p = Float32Array.from({ length: P * D }, () => r() * 2 - 1);
    const pos = Int32Array.from([0, 2, 4]);
    const ignore = Int32Array.from([0, 2, 1, 5]);
    const loss = (qq: Float32Array) => {
      let total = 0;
      for (let i = 0; i < B; i++) {
        const s: number[] = [];
        for (let j = 0; j < P; j++) {
          if ((i === 0 && j === 2) || (i === 1 && j === 5)) continue;
          let d = 0;
          for (let k = 0; k < D; k++) d += (qq[i * D + k] as number) * (p[j * D + k] as number);
          s.push(j === pos[i] ? NaN : d);
        }
        let dp = 0;
        for (let k = 0; k < D; k++) dp += (qq[i * D + k] as number) * (p[(pos[i] as number) * D + k] as number);
        const all = s.map((x) => (Number.isNaN(x) ? dp : x));
        const m = Math.max(...all);
        total += m + Math.log(all.reduce((a, x) => a + Math.exp(x - m), 0)) - dp;
      }
      return total / B;
    };
    const t = torchTestAddon().contrastiveLoss(q, p, B, P, D, pos, ignore);
    expect(Math.abs(t.loss - loss(q))).toBeLessThan(1e-5);
    const h = 1e-3;
    for (let i = 0; i < q.length; i++) {
      const a = q.slice();
      const b = q.slice();
      a[i] = (a[i] as number) + h;
      b[i] = (b[i] as number) - h;
      expect(Math.abs((loss(a) - loss(b)) / (2 * h) - (t.dQ[i] as number))).toBeLessThan(1e-3);
    }
  });
});

/** A synthetic task: question "wi" has passage "wi w(i+16)"; every other passage is a negative. */
function synthetic(n = 12): { passages: { title: string; text: string }[]; train: TrainingExample[] } {
  const passages = Array.from({ length: n }, (_, i) => ({ title: `w${i}`, text: `w${i + 16}` }));
  const train = Array.from({ length: n }, (_, i) => ({ query: `w${i}`, task: 'a', positives: [i], hardNegatives: [(i + 1) % n] }));
  return { passages, train };
}

function batchOf(model: Retriever, n = 12): Parameters<Retriever['accumulateSync']>[0] {
  const { passages, train } = synthetic(n);
  const members = train.map((_, i) => i);
  const c = composeBatch(train, members, 1, () => 0);
  const passageBatch = tok.encode(c.passageRows.map((r) => passages[r]!.title), { pairs: c.passageRows.map((r) => passages[r]!.text) });
  void model;
  return { queries: tok.encode(train.map((e) => e.query)), passages: passageBatch, positives: c.positives, ignore: c.ignore };
}

describe('gradients of the training loss, by central differences (random widths, every pooling and head)', () => {
  const r = seededRandom(77);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const shape = (): Partial<EncoderConfig> => {
    const heads = pick([1, 2, 4]);
    return { ...tiny, hiddenSize: heads * pick([3, 4, 5]), heads, ffnSize: pick([8, 20]), layers: pick([1, 2]) };
  };
  const cases: Array<[string, RetrieverOptions, ((name: string) => boolean)?]> = [
    ['siamese, mean pooling', { preset: 'siamese', encoder: { ...shape(), pooling: 'mean' } }],
    ['siamese, max pooling, unnormalized', { preset: 'siamese', encoder: { ...shape(), pooling: 'max', normalize: false } }],
    ['siamese, cls pooling', { preset: 'siamese', encoder: { ...shape(), pooling: 'cls' } }],
    ['0 layers: token weights, centre, embedding projection', { preset: 'siamese', encoder: { ...shape(), layers: 0, embeddingSize: 6, tokenWeights: true, center: true } }],
    ['linear and MLP heads after pooling', { preset: 'siamese', encoder: { ...shape(), projectionDim: 6, projectionHidden: 10 } }],
    ['attention windows of 3 tokens', { preset: 'siamese', encoder: { ...shape(), attentionWindow: 3 } }],
    ['bi-encoder', { preset: 'bi-encoder', encoder: shape() }],
    ['TASER Det-R', { preset: 'taser', encoder: { ...shape(), layers: 2 }, taser: { routing: 'det' } }],
    // The router's own gradient is the straight-through estimate, not the derivative of the hard choice: every
    // other parameter is checked, with the same Gumbel noise in every pass.
    ['TASER Seq-R (all but the router)', { preset: 'taser', encoder: { ...shape(), layers: 2 }, taser: { routing: 'seq' } }, (n) => !n.includes('gate')],
  ];
  for (const [name, options, names] of cases) {
    it(name, () => {
      const model = Retriever.create(options);
      randomize(model, 11);
      const normalized = options.encoder?.normalize !== false;
      const batch = { ...batchOf(model, 6), temperature: normalized ? 0.1 : 1, lossScale: 0.7 };
      const pass = () => {
        Retriever.seed(5);
        return model.accumulateSync(batch).loss;
      };
      const grad = adamGradient(model, pass);
      // A step of 1e-2: the float32 losses' rounding over 2h (the check's noise) is larger with OpenBLAS's AVX-512
      // kernels than with its Haswell ones; at 5e-3 'cls pooling' missed by 0.3% on an AVX-512 machine (passing with
      // OPENBLAS_CORETYPE=Haswell), the truncation error at 1e-2 is far below the tolerance.
      const { compared, nonzero } = expectGradientsMatch(model, pass, grad, { names, scale: 0.7, h: 1e-2 });
      expect(compared).toBeGreaterThan(3 * 8);
      expect(nonzero).toBeGreaterThan(compared / 2);
    });
  }
});

describe('training steps', () => {
  for (const options of [
    { preset: 'bi-encoder', encoder: tiny },
    { preset: 'siamese', encoder: tiny },
    { preset: 'taser', encoder: tiny, taser: { routing: 'det' } },
    { preset: 'taser', encoder: tiny, taser: { routing: 'tok', entropyWeight: 0.01 } },
    { preset: 'siamese', encoder: { ...tiny, pooling: 'mean', attentionWindow: 3 } },
  ] as RetrieverOptions[]) {
    it(`${options.preset}${options.taser ? ' ' + options.taser.routing : ''}${options.encoder?.attentionWindow ? ` (windows of ${options.encoder.attentionWindow})` : ''} fits a small task`, async () => {
      Retriever.seed(1);
      const model = Retriever.create(options);
      // Unit-length outputs (the default) score in [-1, 1]: the softmax needs a temperature to get peaked.
      const batch = { ...batchOf(model), temperature: 0.05 };
      const first = model.accumulateSync(batch);
      model.stepSync(0, 0);
      let last = first;
      for (let s = 0; s < 300 && !(last.correct === 12 && last.loss < first.loss * 0.2); s++) {
        last = await model.accumulate(batch);
        await model.step(3e-3, 2);
      }
      expect(last.loss).toBeLessThan(first.loss * 0.2);
      expect(last.correct).toBe(12);
      expect(last.tokens).toBe(batch.queries.lengths.reduce((a, b) => a + b, 0) + batch.passages.lengths.reduce((a, b) => a + b, 0));
    });
  }

  it('gives the Seq-R router a gradient through the straight-through estimate (entropy weight 0)', () => {
    Retriever.seed(2);
    const model = Retriever.create({ preset: 'taser', encoder: tiny, taser: { routing: 'seq', experts: 2, entropyWeight: 0 } });
    const before = model.getParameter('encoder.encoder.gate.weight');
    const s = model.accumulateSync(batchOf(model));
    expect(s.entropy).toBeLessThanOrEqual(0);
    expect(s.entropy).toBeGreaterThanOrEqual(-Math.log(2) - 1e-6);
    model.stepSync(1e-3, 0);
    // AdamW moves a parameter only where its gradient is non-zero.
    expect(maxAbsDiff(before, model.getParameter('encoder.encoder.gate.weight'))).toBeGreaterThan(1e-4);
  });

  it('applies layer-wise learning-rate decay (first AdamW step moves each weight by ~lr x multiplier)', () => {
    const model = Retriever.create({ preset: 'siamese', encoder: { ...tiny, projectionDim: 4 } });
    randomize(model, 5);
    model.setOptimizer({ layerDecay: 0.5 });
    const names = ['embeddings.LayerNorm.bias', 'encoder.layer.0.attention.self.query.weight', 'encoder.layer.2.output.dense.weight', 'projection.weight'];
    const before = names.map((n) => model.getParameter('encoder.' + n));
    model.accumulateSync(batchOf(model));
    const lr = 1e-3;
    model.stepSync(lr, 0);
    // n = 3 layers: embeddings 0.5^5, layer l 0.5^(4 - l), projection 1.
    const expected = [0.5 ** 5, 0.5 ** 4, 0.5 ** 2, 1].map((m) => lr * m);
    names.forEach((n, i) => expect(maxAbsDiff(before[i]!, model.getParameter('encoder.' + n)) / expected[i]!).toBeCloseTo(1, 2));
  });

  it('leaves frozen parameters untouched and out of the clipped norm; an unknown pattern is refused', () => {
    const make = () => {
      const m = Retriever.create({ preset: 'siamese', encoder: tiny });
      randomize(m, 6);
      return m;
    };
    const frozen = make();
    const free = make();
    // With weight decay, which must not shrink a frozen weight either.
    frozen.setOptimizer({ frozen: ['word_embeddings', 'layer.1.'], weightDecay: 0.1 });
    const words = frozen.getParameter('encoder.embeddings.word_embeddings.weight');
    const layer1 = frozen.getParameter('encoder.encoder.layer.1.output.dense.weight');
    const layer0 = 'encoder.encoder.layer.0.output.dense.weight';
    const before0 = frozen.getParameter(layer0);
    // Frozen tensors do not move at any rate; the others do.
    frozen.accumulateSync(batchOf(frozen));
    const norm = frozen.stepSync(1e-2, 0);
    expect(maxAbsDiff(words, frozen.getParameter('encoder.embeddings.word_embeddings.weight'))).toBe(0);
    expect(maxAbsDiff(layer1, frozen.getParameter('encoder.encoder.layer.1.output.dense.weight'))).toBe(0);
    expect(maxAbsDiff(before0, frozen.getParameter(layer0))).toBeGreaterThan(1e-4);
    // The norm (what clipping sees) is the trained tensors' alone: below the same batch's norm over every tensor
    // of an identical, unfrozen model.
    free.accumulateSync(batchOf(free));
    const full = free.stepSync(0, 0);
    expect(norm).toBeGreaterThan(0);
    expect(norm).toBeLessThan(full);
    // A second step (AdamW moments of the trained tensors warm) still leaves the frozen ones alone.
    frozen.accumulateSync(batchOf(frozen));
    frozen.stepSync(1e-2, 1);
    expect(maxAbsDiff(words, frozen.getParameter('encoder.embeddings.word_embeddings.weight'))).toBe(0);
    // A typo names nothing: ERR_NOT_FOUND, and the earlier setting stays.
    expect(code(() => frozen.setOptimizer({ frozen: ['word_embedings'] }))).toBe('ERR_NOT_FOUND');
    expect(code(() => frozen.setOptimizer({ frozen: [''] }))).toBe('ERR_ARG');
    expect(code(() => frozen.setOptimizer({ frozen: 'word_embeddings' as unknown as string[] }))).toBe('ERR_ARG');
    frozen.accumulateSync(batchOf(frozen));
    frozen.stepSync(1e-2, 1);
    expect(maxAbsDiff(words, frozen.getParameter('encoder.embeddings.word_embeddings.weight'))).toBe(0);
    // A frozen gradient is dropped at each step, not kept for later: unfrozen, a step with no new batch finds no
    // gradient (norm 0) and moves nothing.
    frozen.accumulateSync(batchOf(frozen));
    frozen.stepSync(1e-2, 1);
    frozen.setOptimizer({});
    expect(frozen.stepSync(1e-2, 0)).toBe(0);
    expect(maxAbsDiff(words, frozen.getParameter('encoder.embeddings.word_embeddings.weight'))).toBe(0);
  });

  it('corrects a parameter\'s AdamW moments by its own update count: unfrozen after 20 steps, its first update is ~lr', async () => {
    const model = Retriever.create({ preset: 'siamese', encoder: tiny });
    randomize(model, 7);
    model.setOptimizer({ frozen: ['word_embeddings'] });
    for (let s = 0; s < 20; s++) {
      model.accumulateSync(batchOf(model));
      model.stepSync(1e-3, 0);
    }
    model.setOptimizer({});
    const name = 'encoder.embeddings.word_embeddings.weight';
    const before = model.getParameter(name);
    model.accumulateSync(batchOf(model));
    const lr = 1e-3;
    model.stepSync(lr, 0);
    // A first AdamW step moves each weight with a gradient by lr * g / |g|; corrected by the model's 21 steps instead,
    // the move would be about 0.5 lr (0.1 / (1 - 0.9^21) over sqrt(0.001 / (1 - 0.999^21))).
    expect(maxAbsDiff(before, model.getParameter(name)) / lr).toBeCloseTo(1, 2);
    // The counts travel with the checkpoint: a copy loaded from it takes the same next step.
    const dir = tempDir();
    await model.save(join(dir, 'c.pt'));
    const copy = Retriever.create({ preset: 'siamese', encoder: tiny });
    await copy.load(join(dir, 'c.pt'));
    for (const m of [model, copy]) {
      m.accumulateSync(batchOf(m));
      m.stepSync(lr, 0);
    }
    expect(maxAbsDiff(model.getParameter(name), copy.getParameter(name))).toBe(0);
  });

  it('updates only the task-specific query encoder of the batch\'s task, and the shared passage encoder', () => {
    const model = Retriever.create({ preset: 'bi-encoder', encoder: tiny, tasks: ['a', 'b'], perTaskQueryEncoders: true });
    expect(model.encoderNames()).toEqual(['query.a', 'query.b', 'passage']);
    const name = (e: string) => `${e}.encoder.layer.0.attention.self.query.weight`;
    const before = ['query.a', 'query.b', 'passage'].map((e) => model.getParameter(name(e)));
    model.accumulateSync({ ...batchOf(model), task: 1 });
    model.stepSync(1e-3, 1);
    const after = ['query.a', 'query.b', 'passage'].map((e) => model.getParameter(name(e)));
    expect(maxAbsDiff(before[0]!, after[0]!)).toBe(0);
    expect(maxAbsDiff(before[1]!, after[1]!)).toBeGreaterThan(0);
    expect(maxAbsDiff(before[2]!, after[2]!)).toBeGreaterThan(0);
    expect(code(() => model.accumulateSync({ ...batchOf(model), task: 2 }))).toBe('ERR_RANGE');
  });
});

describe('checkpoints', () => {
  it('loads a checkpoint written before per-parameter AdamW counts and goes on as that version would', async () => {
    // start.pt and after3.pt were written by commit 66be7ec (test/fixtures/checkpoint-v0/make.ts): 3 steps on one
    // batch, AdamW corrected by the model's step count. Every parameter had a gradient at every step, so each count
    // is that step count: today's code, run from start.pt, must reach after3.pt and then take the same 4th step as
    // a model resumed from after3.pt (the fallback counts = the saved step count).
    const dir = join(packageRoot, 'test', 'fixtures', 'checkpoint-v0');
    const resumed = Retriever.create(fixtureConfig);
    await resumed.load(join(dir, 'after3.pt'));
    expect(resumed.optimizerSteps).toBe(3);
    const fresh = Retriever.create(fixtureConfig);
    await fresh.load(join(dir, 'start.pt'));
    for (let s = 0; s < 3; s++) {
      fresh.accumulateSync(fixtureBatch());
      fresh.stepSync(1e-2, 1);
    }
    const names = fresh.parameters().map((p) => p.name);
    for (const n of names) expect(maxAbsDiff(fresh.getParameter(n), resumed.getParameter(n)), n).toBeLessThan(1e-6);
    for (const m of [fresh, resumed]) {
      m.accumulateSync(fixtureBatch());
      m.stepSync(1e-2, 1);
    }
    for (const n of names) expect(maxAbsDiff(fresh.getParameter(n), resumed.getParameter(n)), n).toBeLessThan(1e-6);
  });

  it('round-trips parameters and optimizer state; a bad file changes nothing', async () => {
    const dir = tempDir();
    const model = Retriever.create({ preset: 'taser', encoder: tiny });
    model.accumulateSync(batchOf(model));
    model.stepSync(1e-3, 1);
    await model.save(join(dir, 'a.pt'));
    const copy = Retriever.create({ preset: 'taser', encoder: tiny });
    await copy.load(join(dir, 'a.pt'));
    expect(copy.optimizerSteps).toBe(1);
    for (const { name } of model.parameters()) expect(maxAbsDiff(model.getParameter(name), copy.getParameter(name))).toBe(0);
    // The same next step from both (AdamW moments restored).
    for (const m of [model, copy]) {
      m.accumulateSync(batchOf(m));
      m.stepSync(1e-3, 1);
    }
    const w = 'encoder.encoder.layer.1.experts.1.output.dense.weight';
    expect(maxAbsDiff(model.getParameter(w), copy.getParameter(w))).toBeLessThan(1e-6);

    writeFileSync(join(dir, 'bad.pt'), 'not a checkpoint');
    const snapshot = copy.getParameter(w);
    await expect(copy.load(join(dir, 'bad.pt'))).rejects.toMatchObject({ code: 'ERR_FORMAT' });
    const other = Retriever.create({ preset: 'siamese', encoder: tiny });
    await other.save(join(dir, 'other.pt'));
    await expect(copy.load(join(dir, 'other.pt'))).rejects.toMatchObject({ code: 'ERR_FORMAT' });
    expect(maxAbsDiff(snapshot, copy.getParameter(w))).toBe(0);
  });
});

describe('model directory', () => {
  it('round-trips configuration, vocabulary and weights (f32 exact, bf16 to 8 bits); encodes as trained', async () => {
    const dir = tempDir();
    Retriever.seed(2);
    const model = Retriever.create({ preset: 'taser', encoder: { ...tiny, tokenWeights: true, center: true }, tasks: ['a', 'b'] });
    randomize(model, 6);
    const card = model.saveModel(dir, { tokenizer: tok, maxQueryLength: 8, maxPassageLength: 12, training: { note: 'test' } });
    expect(card.text).toEqual({ maxQueryLength: 8, maxPassageLength: 12, taskMarkers: true });
    const back = await Retriever.load(dir);
    expect(back.config).toEqual(model.config);
    expect(back.loaded!.card.training).toEqual({ note: 'test' });
    expect(back.loaded!.tokenizer.vocabulary).toEqual(tok.vocabulary);
    for (const { name } of model.parameters()) expect(maxAbsDiff(back.getParameter(name), model.getParameter(name)), name).toBe(0);
    // encodeQueries adds task b's marker and cuts at maxQueryLength, as the trainer's question tables do.
    const q = await back.encodeQueries(['w1 w2 w3 w4 w5 w6 w7 w8 w9'], { task: 'b' });
    const direct = model.encodeSync(tok.encode(['w1 w2 w3 w4 w5 w6 w7 w8 w9'], { maxLength: 8, marker: tok.markerId(2) }), 'query', { task: 1 });
    expect(maxAbsDiff(q.data, direct)).toBeLessThan(1e-6);
    const p = await back.encodePassages([{ title: 'w1', text: 'w2 w3' }]);
    expect(maxAbsDiff(p.data, model.encodeSync(tok.encode(['w1'], { pairs: ['w2 w3'], maxLength: 12 }), 'passage'))).toBeLessThan(1e-6);

    const half = tempDir();
    model.saveModel(half, { tokenizer: tok, dtype: 'BF16' });
    const h = await Retriever.load(half);
    for (const { name } of model.parameters()) {
      const a = model.getParameter(name);
      const b = h.getParameter(name);
      a.forEach((v, i) => expect(Math.abs(b[i]! - v)).toBeLessThanOrEqual(Math.abs(v) * 2 ** -8));
    }
    await expect(Retriever.create({ preset: 'siamese', encoder: tiny }).encodeQueries(['w1'])).rejects.toMatchObject({ code: 'ERR_STATE' });
  });

  it('stores Q8: embedding tables as int8 rows with a scale each (within half a step), the rest as bf16; corrupt Q8 is ERR_FORMAT', async () => {
    const dir = tempDir();
    Retriever.seed(3);
    const model = Retriever.create({ preset: 'siamese', encoder: { ...tiny, tokenWeights: true, center: true } });
    randomize(model, 7);
    model.saveModel(dir, { tokenizer: tok, dtype: 'Q8' });
    expect((await Retriever.load(dir)).loaded!.card.weights.dtype).toBe('Q8');
    const stored = readSafetensors(readFileSync(join(dir, 'weights.safetensors')));
    const back = await Retriever.load(dir);
    const tables = model.parameters().filter(({ name }) => /\.embeddings\.[a-z_]+_embeddings\.weight$/.test(name)).map(({ name }) => name);
    expect(tables.sort()).toEqual(['encoder.embeddings.position_embeddings.weight', 'encoder.embeddings.token_type_embeddings.weight', 'encoder.embeddings.word_embeddings.weight']);
    for (const { name, shape } of model.parameters()) {
      const a = model.getParameter(name);
      const b = back.getParameter(name);
      if (tables.includes(name)) {
        expect(stored.get(name)!.dtype, name).toBe('I8');
        const cols = shape[1]!;
        for (let r = 0; r < shape[0]!; r++) {
          const row = a.subarray(r * cols, (r + 1) * cols);
          const step = Math.max(...Array.from(row, Math.abs)) / 127;
          row.forEach((v, c) => expect(Math.abs(b[r * cols + c]! - v)).toBeLessThanOrEqual(step / 2 + Math.abs(v) * 1e-6));
        }
      } else {
        expect(stored.get(name)!.dtype, name).toBe('BF16');
        a.forEach((v, i) => expect(Math.abs(b[i]! - v)).toBeLessThanOrEqual(Math.abs(v) * 2 ** -8));
      }
    }
    // A scale missing, of the wrong length, negative or NaN, a code of -128, an int8 vector, or a stray extra tensor.
    const name = 'encoder.embeddings.word_embeddings.weight';
    expect(stored.has(name)).toBe(true);
    const rewrite = async (edit: (t: Map<string, { shape: number[]; data: Float32Array; dtype: 'F32' | 'BF16' | 'I8' }>) => void) => {
      const t = new Map([...stored].map(([k, v]) => [k, { shape: v.shape, data: v.data.slice(), dtype: v.dtype as 'F32' | 'BF16' | 'I8' }]));
      edit(t);
      writeFileSync(join(dir, 'weights.safetensors'), writeSafetensors(t));
      await expect(Retriever.load(dir)).rejects.toMatchObject({ code: 'ERR_FORMAT' });
    };
    await rewrite((t) => t.delete(`${name}#scale`));
    await rewrite((t) => t.set(`${name}#scale`, { shape: [2], data: Float32Array.of(1, 1), dtype: 'F32' }));
    await rewrite((t) => t.get(`${name}#scale`)!.data.fill(-1));
    await rewrite((t) => t.set('extra#scale', { shape: [1], data: Float32Array.of(1), dtype: 'F32' }));
    await rewrite((t) => t.get(`${name}#scale`)!.data.fill(NaN));
    await rewrite((t) => (t.get(name)!.data[0] = -128));
    const vector = 'encoder.embeddings.token_weights.weight';
    await rewrite((t) => {
      t.set(vector, { ...t.get(vector)!, data: new Float32Array(t.get(vector)!.data.length), dtype: 'I8' });
      t.set(`${vector}#scale`, { shape: [t.get(vector)!.shape[0]!], data: new Float32Array(t.get(vector)!.shape[0]!).fill(1), dtype: 'F32' });
    });
    // Saving refuses a weight int8 cannot hold (a diverged run's NaN; setParameter refuses one, so a stand-in
    // table holds it), naming the parameter.
    const diverged = { parameters: () => [{ name, shape: [2, 2] }], getParameter: () => Float32Array.of(1, 2, NaN, 4) };
    expect(() => writeWeights(diverged as never, join(tempDir(), 'w.safetensors'), 'Q8', 'test')).toThrow(expect.objectContaining({ code: 'ERR_ARG', message: expect.stringContaining(`${name}: row 1`) }));
    expect(() => Retriever.create({ preset: 'siamese', encoder: tiny }).saveModel(tempDir(), { tokenizer: tok, dtype: 'Q4' as never })).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
  });

  it('ERR_IO for a missing directory, ERR_FORMAT for another version, a bad config, truncated or mismatched weights', async () => {
    const dir = tempDir();
    const model = Retriever.create({ preset: 'siamese', encoder: tiny });
    model.saveModel(dir, { tokenizer: tok });
    const card = readFileSync(join(dir, 'model.json'), 'utf8');
    const weights = readFileSync(join(dir, 'weights.safetensors'));
    await expect(Retriever.load(join(dir, 'none'))).rejects.toMatchObject({ code: 'ERR_IO' });
    const variant = async (file: string, bytes: string | Uint8Array, code: string) => {
      writeFileSync(join(dir, file), bytes);
      await expect(Retriever.load(dir), file).rejects.toMatchObject({ code });
      writeFileSync(join(dir, 'model.json'), card);
      writeFileSync(join(dir, 'weights.safetensors'), weights);
    };
    await variant('model.json', card.replace('"version": 1', '"version": 7'), 'ERR_FORMAT');
    await variant('model.json', card.replace('"format": "quorum-retriever"', '"format": "other"'), 'ERR_FORMAT');
    await variant('model.json', '{ not json', 'ERR_FORMAT');
    await variant('model.json', card.replace('"hiddenSize": 16', '"hiddenSize": 15'), 'ERR_FORMAT');
    await variant('weights.safetensors', weights.subarray(0, weights.length - 64), 'ERR_FORMAT');
    await variant('weights.safetensors', writeSafetensors({ x: { shape: [1], data: Float32Array.of(1) } }), 'ERR_FORMAT');
    await expect(Retriever.load(dir)).resolves.toBeInstanceOf(Retriever);
  });

  it("keeps the tokenizer's normalization (tokenizer.json); a directory without one reads as BERT alone; a bad one is ERR_FORMAT", async () => {
    const dir = tempDir();
    const model = Retriever.create({ preset: 'siamese', encoder: tiny });
    model.saveModel(dir, { tokenizer: new WordPieceTokenizer(tok.vocabulary, { nfkc: true }) });
    const back = await Retriever.load(dir);
    expect(back.loaded!.tokenizer.nfkc).toBe(true);
    // Full-width "ｗ１" folds to "w1": the loaded model encodes it as the model does w1.
    const direct = model.encodeSync(tok.encode(['w1 w2'], { maxLength: 32 }), 'query');
    expect(maxAbsDiff((await back.encodeQueries(['ｗ１ ｗ２'])).data, direct)).toBeLessThan(1e-6);
    // Written before tokenizer.json existed: BERT's normalization, and the full-width words are [UNK].
    rmSync(join(dir, 'tokenizer.json'));
    const old = await Retriever.load(dir);
    expect(old.loaded!.tokenizer.nfkc).toBe(false);
    expect(maxAbsDiff((await old.encodeQueries(['ｗ１ ｗ２'])).data, direct)).toBeGreaterThan(1e-3);
    for (const bad of ['{ "nfkc": "yes" }', '[true]', 'null', '{ not json'])  {
      writeFileSync(join(dir, 'tokenizer.json'), bad);
      await expect(Retriever.load(dir), bad).rejects.toMatchObject({ code: 'ERR_FORMAT' });
    }
    writeFileSync(join(dir, 'tokenizer.json'), '{ "nfkc": false }');
    expect((await Retriever.load(dir)).loaded!.tokenizer.nfkc).toBe(false);
  });
});

describe('initialization', () => {
  it('maps GloVe vectors onto the vocabulary of every encoder', async () => {
    const model = Retriever.create({ preset: 'bi-encoder', encoder: { ...tiny, embeddingSize: 3 } });
    const glove = { words: new Map([['w1', 0], ['w2', 1]]), dim: 3, vectors: Float32Array.from([1, 2, 3, 4, 5, 6]) };
    const { covered, uncovered } = await initFromGlove(model, VOCAB, { glove });
    expect(covered).toBe(2);
    // Every token but [PAD] and the two covered words got a random vector.
    expect(uncovered).toEqual(VOCAB.map((_, i) => i).filter((i) => i > 0 && VOCAB[i] !== 'w1' && VOCAB[i] !== 'w2'));
    for (const e of ['query', 'passage']) {
      const t = model.getParameter(`${e}.embeddings.word_embeddings.weight`);
      const row = VOCAB.indexOf('w2');
      expect(Array.from(t.subarray(row * 3, row * 3 + 3))).toEqual([4, 5, 6]);
    }
    await expect(initFromGlove(model, VOCAB, { glove: { ...glove, dim: 4, vectors: new Float32Array(8) } })).rejects.toMatchObject({ code: 'ERR_SHAPE' });
  });

  it('starts position and segment embeddings at zero (a bag of GloVe words) and, when asked, every block as the identity', async () => {
    const glove = { words: new Map([['w1', 0]]), dim: 16, vectors: Float32Array.from({ length: 16 }, (_, i) => i / 16) };
    const names = ['position_embeddings', 'token_type_embeddings'];
    const model = Retriever.create({ preset: 'bi-encoder', encoder: tiny });
    const start = model.getParameter('passage.embeddings.position_embeddings.weight');
    expect(start.some((v) => v !== 0)).toBe(true);
    await initFromGlove(model, VOCAB, { glove, zeroPositions: false });
    expect(model.getParameter('passage.embeddings.position_embeddings.weight')).toEqual(start);
    await initFromGlove(model, VOCAB, { glove });
    for (const e of ['query', 'passage'])
      for (const n of names) expect(model.getParameter(`${e}.embeddings.${n}.weight`).every((v) => v === 0)).toBe(true);
    // With identityBlocks every Transformer block starts as the identity: a 3-layer TASER encodes as 0 layers do.
    const options = (layers: number): RetrieverOptions => ({ preset: 'taser', encoder: { ...tiny, layers, pooling: 'mean' }, taser: { every: 1, experts: 2, routing: 'tok' } });
    const deep = Retriever.create(options(3));
    const flat = Retriever.create({ preset: 'siamese', encoder: { ...tiny, layers: 0, pooling: 'mean' } });
    await initFromGlove(deep, VOCAB, { glove, seed: 4, identityBlocks: true });
    await initFromGlove(flat, VOCAB, { glove, seed: 4 });
    const batch = tok.encode(texts);
    expect(maxAbsDiff(deep.encodeSync(batch, 'passage'), flat.encodeSync(batch, 'passage'))).toBeLessThan(1e-5);
    const random = Retriever.create(options(3));
    await initFromGlove(random, VOCAB, { glove, seed: 4 });
    expect(maxAbsDiff(random.encodeSync(batch, 'passage'), flat.encodeSync(batch, 'passage'))).toBeGreaterThan(1e-3);
    // With them at zero, a 0-layer mean-pooled encoder gives a word the same vector wherever it stands.
    const bag = Retriever.create({ preset: 'siamese', encoder: { ...tiny, layers: 0, pooling: 'mean' } });
    await initFromGlove(bag, VOCAB, { glove });
    const [a, b] = [bag.encodeSync(tok.encode(['w1 w2 w3']), 'query'), bag.encodeSync(tok.encode(['w3 w1 w2']), 'query')];
    expect(maxAbsDiff(a, b)).toBeLessThan(1e-6);
  });

  it('starts a square linear head as the identity, so the model encodes as it does without one', async () => {
    const glove = { words: new Map([['w1', 0], ['w2', 1]]), dim: 16, vectors: Float32Array.from({ length: 32 }, (_, i) => Math.sin(i)) };
    const flat = { ...tiny, layers: 0, pooling: 'mean' as const, normalize: true };
    const bare = Retriever.create({ preset: 'siamese', encoder: flat });
    const headed = Retriever.create({ preset: 'siamese', encoder: { ...flat, projectionDim: 16 } });
    await initFromGlove(bare, VOCAB, { glove, seed: 3 });
    await initFromGlove(headed, VOCAB, { glove, seed: 3 });
    const w = headed.getParameter('encoder.projection.weight');
    w.forEach((v, i) => expect(v).toBe(i % 17 === 0 ? 1 : 0));
    expect(headed.getParameter('encoder.projection.bias').every((v) => v === 0)).toBe(true);
    const batch = tok.encode(['w1 w2 w3', 'w2']);
    expect(maxAbsDiff(headed.encodeSync(batch, 'passage'), bare.encodeSync(batch, 'passage'))).toBeLessThan(1e-6);
    // identityHead: false, a head of another width, or an MLP head keep their random start.
    const kept = Retriever.create({ preset: 'siamese', encoder: { ...flat, projectionDim: 16 } });
    const before = kept.getParameter('encoder.projection.weight');
    await initFromGlove(kept, VOCAB, { glove, identityHead: false });
    expect(kept.getParameter('encoder.projection.weight')).toEqual(before);
    for (const head of [{ projectionDim: 8 }, { projectionDim: 16, projectionHidden: 16 }]) {
      const m = Retriever.create({ preset: 'siamese', encoder: { ...flat, ...head } });
      const b = m.getParameter('encoder.projection.weight');
      await initFromGlove(m, VOCAB, { glove });
      expect(m.getParameter('encoder.projection.weight')).toEqual(b);
    }
  });

  it('fits token weights to ln IDF and the centre to the mean pooled passage state, per encoder', async () => {
    const passages = [{ title: '', text: 'w1 w2' }, { title: '', text: 'w1 w3' }, { title: '', text: 'w1 w2 w4' }];
    const model = Retriever.create({ preset: 'bi-encoder', encoder: { ...tiny, tokenWeights: true, center: true } });
    randomize(model, 8);
    expect(await fitPoolingToCorpus(model, tok, passages, { maxPassageLength: 16 })).toEqual({ tokenWeights: true, center: true });
    const id = (w: string) => tok.vocabulary.indexOf(w);
    for (const e of ['query', 'passage']) {
      const u = model.getParameter(`${e}.embeddings.token_weights.weight`);
      // df: w1 3, w2 2, w4 1, w9 0 (counted as 1) over N = 3.
      for (const [w, df] of [['w1', 3], ['w2', 2], ['w4', 1], ['w9', 1]] as const) expect(u[id(w)]).toBeCloseTo(Math.log(Math.log(1 + 3 / df)), 5);
      // The centre is the mean of the corpus's unit-length pooled states, so the centred ones average to zero.
      const table = await TokenTable.passages(tok, passages, 16);
      const states = model.encodeSync(table.batch([0, 1, 2]), e === 'query' ? 'query' : 'passage', { pooledState: true });
      const unit = [0, 1, 2].map((r) => {
        const row = states.subarray(16 * r, 16 * r + 16);
        return Array.from(row, (v) => v / Math.hypot(...row));
      });
      const center = model.getParameter(`${e}.pooler.center`);
      for (let i = 0; i < 16; i++) expect((unit[0]![i]! + unit[1]![i]! + unit[2]![i]!) / 3).toBeCloseTo(center[i]!, 5);
    }
    expect(model.encodeSync(tok.encode(['w1']), 'query', { pooledState: true })).toHaveLength(16);
    await expect(fitPoolingToCorpus(model, tok, [])).rejects.toMatchObject({ code: 'ERR_ARG' });
  });

  it('foldTokenScale gives back what the embedding LayerNorm takes: the pooled state is the IDF-weighted mean of mean-removed vectors', async () => {
    const passages = [{ title: '', text: 'w1 w2' }, { title: '', text: 'w1 w3' }, { title: '', text: 'w1 w2 w4' }];
    const model = Retriever.create({ preset: 'siamese', encoder: { ...tiny, layers: 0, tokenWeights: true, center: true } });
    randomize(model, 12);
    const H = 16;
    const zeros = (name: string, n: number) => model.setParameter(`encoder.embeddings.${name}`, new Float32Array(n));
    zeros('position_embeddings.weight', 32 * H);
    zeros('token_type_embeddings.weight', 2 * H);
    zeros('LayerNorm.bias', H);
    model.setParameter('encoder.embeddings.LayerNorm.weight', new Float32Array(H).fill(1));
    await fitPoolingToCorpus(model, tok, passages, { maxPassageLength: 16, foldTokenScale: true });
    const E = model.getParameter('encoder.embeddings.word_embeddings.weight');
    const u = model.getParameter('encoder.embeddings.token_weights.weight');
    const id = (w: string) => tok.vocabulary.indexOf(w);
    // Reference: sum over the words of idf * (e - mean(e)); [CLS] and [SEP] stay muted (weight 4.5e-5), left out.
    const expected = new Float64Array(H);
    for (const [w, df] of [['w1', 3], ['w2', 2], ['w4', 1]] as const) {
      const e = E.subarray(id(w) * H, (id(w) + 1) * H);
      const mean = e.reduce((a, x) => a + x, 0) / H;
      const sigma = Math.sqrt(e.reduce((a, x) => a + (x - mean) ** 2, 0) / H);
      expect(u[id(w)]).toBeCloseTo(Math.log(Math.log(1 + 3 / df)) + Math.log(sigma), 5);
      e.forEach((x, i) => (expected[i] = (expected[i] as number) + Math.log(1 + 3 / df) * (x - mean)));
    }
    expect(u[id('[CLS]')]).toBe(-10);
    const state = model.encodeSync(tok.encode(['w1 w2 w4']), 'query', { pooledState: true });
    const unit = (v: ArrayLike<number>) => Array.from(v, (x) => x / Math.hypot(...Array.from(v)));
    const [a, b] = [unit(state), unit(expected)];
    for (let i = 0; i < H; i++) expect(a[i]!).toBeCloseTo(b[i]!, 3);
    // Without the option the weights are ln IDF alone. With a projected embedding (embeddingSize != hiddenSize) the
    // LayerNorm acts after the projection, and without token weights there is nothing to fold into: ERR_ARG, and
    // the weights stay as they were.
    await fitPoolingToCorpus(model, tok, passages, { maxPassageLength: 16 });
    expect(model.getParameter('encoder.embeddings.token_weights.weight')[id('w2')]).toBeCloseTo(Math.log(Math.log(1 + 3 / 2)), 5);
    const projected = Retriever.create({ preset: 'siamese', encoder: { ...tiny, layers: 0, embeddingSize: 8, tokenWeights: true, center: true } });
    randomize(projected, 13);
    const before = projected.getParameter('encoder.embeddings.token_weights.weight');
    await expect(fitPoolingToCorpus(projected, tok, passages, { maxPassageLength: 16, foldTokenScale: true })).rejects.toMatchObject({ code: 'ERR_ARG' });
    expect(projected.getParameter('encoder.embeddings.token_weights.weight')).toEqual(before);
    const unweighted = Retriever.create({ preset: 'siamese', encoder: { ...tiny, layers: 0, center: true } });
    await expect(fitPoolingToCorpus(unweighted, tok, passages, { foldTokenScale: true })).rejects.toMatchObject({ code: 'ERR_ARG' });
  });

  it('starts content-free tokens and the muted ids near weight 0, so a marker or a "?" does not shift every question', async () => {
    const vocab = [...VOCAB, '?', '##-', '.'];
    const t = new WordPieceTokenizer(vocab);
    const passages = [{ title: '', text: 'w1 w2 .' }, { title: '', text: 'w1 w3' }];
    const model = Retriever.create({ preset: 'siamese', encoder: { ...tiny, vocabSize: vocab.length, layers: 0, tokenWeights: true, center: true } });
    randomize(model, 9);
    const id = (w: string) => vocab.indexOf(w);
    await fitPoolingToCorpus(model, t, passages, { maxPassageLength: 16, mute: [id('w5')] });
    const u = model.getParameter('encoder.embeddings.token_weights.weight');
    for (const w of ['[CLS]', '[SEP]', '[unused1]', '[MASK]', '?', '##-', '.', 'w5']) expect(u[id(w)], w).toBe(-10);
    // Unmuted: ln IDF, a token in no passage counted as df 1.
    expect(u[id('w1')]).toBeCloseTo(Math.log(Math.log(1 + 2 / 2)), 5);
    expect(u[id('w9')]).toBeCloseTo(Math.log(Math.log(1 + 2 / 1)), 5);
    // A muted marker changes a question's vector by less than 1e-3 (its weight is 4.5e-5 of 1); positions are
    // zeroed so that the marker's shift of the words' positions does not count.
    model.setParameter('encoder.embeddings.position_embeddings.weight', new Float32Array(32 * 16));
    const plain = model.encodeSync(t.encode(['w1 w2']), 'query');
    const marked = model.encodeSync(t.encode(['w1 w2'], { marker: t.markerId(1) }), 'query');
    for (let i = 0; i < plain.length; i++) expect(Math.abs(plain[i]! - marked[i]!)).toBeLessThan(1e-3);
    await expect(fitPoolingToCorpus(model, t, passages, { mute: [vocab.length] })).rejects.toMatchObject({ code: 'ERR_RANGE' });
  });

  it('starts continuation pieces near weight 0 unless mutePieces is false; a word-initial piece keeps its IDF', async () => {
    const vocab = [...VOCAB, 'co', '##vid', '##s'];
    const t = new WordPieceTokenizer(vocab);
    // "covid" is read as "co ##vid": the pieces' GloVe vectors are those of "co" and "vid".
    expect(t.tokenize('covid w1')).toEqual(['co', '##vid', 'w1']);
    const passages = [{ title: '', text: 'covid w1' }, { title: '', text: 'w1 w2' }];
    const model = Retriever.create({ preset: 'siamese', encoder: { ...tiny, vocabSize: vocab.length, layers: 0, tokenWeights: true, center: true } });
    randomize(model, 10);
    const id = (w: string) => vocab.indexOf(w);
    const weights = async (mutePieces?: boolean) => {
      await fitPoolingToCorpus(model, t, passages, { maxPassageLength: 16, ...(mutePieces === undefined ? {} : { mutePieces }) });
      return model.getParameter('encoder.embeddings.token_weights.weight');
    };
    const muted = await weights();
    expect(muted[id('##vid')]).toBe(-10);
    expect(muted[id('##s')]).toBe(-10);
    expect(muted[id('co')]).toBeCloseTo(Math.log(Math.log(1 + 2 / 1)), 5);
    const kept = await weights(false);
    expect(kept[id('##vid')]).toBeCloseTo(Math.log(Math.log(1 + 2 / 1)), 5);
    expect(kept[id('co')]).toBeCloseTo(Math.log(Math.log(1 + 2 / 1)), 5);
  });

  it('loads a Hugging Face BERT checkpoint, experts as copies of the FFN, and then matches the reference', async () => {
    const dir = tempDir();
    const source = Retriever.create({ preset: 'siamese', encoder: tiny });
    randomize(source, 11);
    const tensors: Record<string, { shape: number[]; data: Float32Array }> = {};
    for (const { name, shape } of source.parameters()) tensors['bert.' + name.slice('encoder.'.length)] = { shape, data: source.getParameter(name) };
    tensors['bert.pooler.dense.weight'] = { shape: [16, 16], data: new Float32Array(256) };
    writeFileSync(join(dir, 'model.safetensors'), writeSafetensors(tensors));

    const model = Retriever.create({ preset: 'taser', encoder: tiny, taser: { routing: 'det' } });
    const { missing, unused } = await initFromBertCheckpoint(model, join(dir, 'model.safetensors'));
    expect(missing).toEqual([]);
    expect(unused).toEqual(['bert.pooler.dense.weight']);
    const ffn = source.getParameter('encoder.encoder.layer.1.intermediate.dense.weight');
    for (const e of [0, 1]) expect(maxAbsDiff(model.getParameter(`encoder.encoder.layer.1.experts.${e}.intermediate.dense.weight`), ffn)).toBe(0);
    // With identical experts, TASER encodes exactly as the plain BERT it came from.
    const batch = tok.encode(texts);
    expect(maxAbsDiff(model.encodeSync(batch, 'passage'), source.encodeSync(batch, 'passage'))).toBeLessThan(1e-5);
    // An integer buffer the mapping does not use loads; an integer (quantized) weight does not.
    tensors['bert.embeddings.position_ids'] = { shape: [1, 4], data: Float32Array.of(0, 1, 2, 3), dtype: 'I8' } as never;
    writeFileSync(join(dir, 'model.safetensors'), writeSafetensors(tensors));
    await expect(initFromBertCheckpoint(model, join(dir, 'model.safetensors'))).resolves.toMatchObject({ missing: [] });
    const wName = 'bert.embeddings.word_embeddings.weight';
    tensors[wName] = { shape: tensors[wName]!.shape, data: tensors[wName]!.data.map((v) => Math.max(-127, Math.min(127, Math.round(v * 100)))), dtype: 'I8' } as never;
    writeFileSync(join(dir, 'model.safetensors'), writeSafetensors(tensors));
    await expect(initFromBertCheckpoint(model, join(dir, 'model.safetensors'))).rejects.toMatchObject({ code: 'ERR_FORMAT', message: expect.stringContaining(wName) });
  });
});

describe('training loop', () => {
  const data = () => {
    const { passages, train } = synthetic(16);
    const dev = train.slice(0, 8).map((e) => ({ ...e }));
    return { passages, train, dev };
  };
  const options = { epochs: 4, batchSize: 8, lr: 3e-3, warmupSteps: 2, validationPool: 16, maxPassageLength: 16, maxQueryLength: 8 };

  // MRR of each question against every passage, from the model as it is (the step-0 reference).
  const mrrNow = (model: Retriever, d: ReturnType<typeof data>) => {
    const dim = model.dim;
    const P = model.encodeSync(tok.encode(d.passages.map((p) => p.text), { pairs: d.passages.map((p) => p.title) }), 'passage');
    const Q = model.encodeSync(tok.encode(d.dev.map((e) => e.query)), 'query');
    let rr = 0;
    d.dev.forEach((e, i) => {
      const s = (j: number) => { let v = 0; for (let k = 0; k < dim; k++) v += Q[i * dim + k]! * P[j * dim + k]!; return v; };
      const gold = s(e.positives[0]!);
      // Ties count against the gold passage, so a collapsed model (every score equal) scores 1 / passages.
      rr += 1 / (1 + d.passages.filter((_, j) => j !== e.positives[0] && s(j) >= gold).length);
    });
    return rr / d.dev.length;
  };

  const fits: Array<[Partial<EncoderConfig>, number]> = [
    [{ ...tiny, pooling: 'mean', normalize: true }, 3e-3],
    [{ ...tiny, pooling: 'cls' }, 3e-3],
    // Embeddings alone move slowly at 3e-3 (AdamW steps of about lr per weight): the 0-layer models get 3e-2.
    [{ ...tiny, layers: 0, pooling: 'mean' }, 3e-2],
  ];
  for (const [encoder, lr] of fits)
    it(`raises MRR above its step-0 value (${encoder.layers} layers, ${encoder.pooling} pooling), calling onEpoch after each epoch`, async () => {
      Retriever.seed(9);
      const model = Retriever.create({ preset: 'siamese', encoder });
      const d = data();
      const before = mrrNow(model, d);
      const seen: number[] = [];
      await trainRetriever(model, tok, d, { ...options, lr, epochs: 6, temperature: encoder.normalize ? 0.1 : 1, onEpoch: (e) => void seen.push(e.epoch) });
      expect(seen).toEqual([0, 1, 2, 3, 4, 5]);
      expect(mrrNow(model, d)).toBeGreaterThan(before + 0.2);
    });

  it('learns, validates, keeps the best checkpoint and resumes to the same weights', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    Retriever.seed(5);
    const a = Retriever.create({ preset: 'siamese', encoder: tiny });
    const r = await trainRetriever(a, tok, data(), { ...options, checkpointDir: dir, log: (l) => lines.push(l) });
    expect(r.epochs).toHaveLength(4);
    expect(lines).toHaveLength(4);
    expect(r.epochs[3]!.loss).toBeLessThan(r.epochs[0]!.loss);
    expect(r.epochs[3]!.validation!.mrr).toBeGreaterThan(r.epochs[0]!.validation!.mrr);
    expect(r.best!.value).toBe(Math.min(...r.epochs.map((e) => -e.validation!.mrr)));
    expect(r.tokensPerSecond).toBeGreaterThan(0);

    // Two epochs, then resume for the other two: identical weights (dropout 0, seeded batches, AdamW state saved).
    const dir2 = tempDir();
    Retriever.seed(5);
    const b = Retriever.create({ preset: 'siamese', encoder: tiny });
    await trainRetriever(b, tok, data(), { ...options, checkpointDir: dir2, timeBudgetSeconds: 0 });
    const one = await trainRetriever(b, tok, data(), { ...options, checkpointDir: dir2, timeBudgetSeconds: 0, resume: true });
    expect(one.epochs).toHaveLength(2);
    const resumed = Retriever.create({ preset: 'siamese', encoder: tiny });
    const r2 = await trainRetriever(resumed, tok, data(), { ...options, checkpointDir: dir2, resume: true });
    expect(r2.epochs).toHaveLength(4);
    const w = 'encoder.encoder.layer.2.output.dense.weight';
    expect(maxAbsDiff(resumed.getParameter(w), a.getParameter(w))).toBeLessThan(1e-5);
  });

  it('groupBatches puts a group\'s questions in the same batches; a group that is not a string is ERR_ARG', async () => {
    // Two groups of 8 interleaved: long questions (6 words) and short ones (1 word), one passage each of one word.
    const passages = Array.from({ length: 16 }, (_, i) => ({ title: '', text: `w${i + 8}` }));
    const train: TrainingExample[] = passages.map((_, i) => ({
      query: i % 2 ? `w${i + 8}` : `w1 w2 w3 w4 w5 w${i + 8}`,
      task: 't',
      positives: [i],
      hardNegatives: [],
      group: i % 2 ? 'short' : 'long',
    }));
    const tokens = async (groupBatches: boolean) => {
      Retriever.seed(4);
      const model = Retriever.create({ preset: 'siamese', encoder: { ...tiny, layers: 0, pooling: 'mean' } });
      const seen: number[] = [];
      await trainRetriever(model, tok, { passages, train }, { ...options, maxQueryLength: 16, epochs: 1, batchSize: 8, groupBatches, onBatch: (b) => void seen.push(b.tokens) });
      return seen;
    };
    // Grouped, one batch holds every long question and the other every short one: 8 x 5 tokens apart. A batch
    // mixing k long questions with 8 - k short ones would be 5 x |2k - 8| apart from the other.
    const grouped = await tokens(true);
    expect(grouped).toHaveLength(2);
    expect(Math.abs(grouped[0]! - grouped[1]!)).toBe(40);
    // Without it this seed's batches mix the groups (so the check above can fail).
    const mixed = await tokens(false);
    expect(mixed).toHaveLength(2);
    expect(Math.abs(mixed[0]! - mixed[1]!)).toBeLessThan(40);
    const bad = train.map((e, i) => (i === 3 ? { ...e, group: 7 as never } : e));
    await expect(trainRetriever(Retriever.create({ preset: 'siamese', encoder: tiny }), tok, { passages, train: bad }, { ...options, groupBatches: true })).rejects.toMatchObject({ code: 'ERR_ARG', message: expect.stringContaining('example 3') });
  });

  it('mines hard negatives with the model\'s own index, never gold', async () => {
    Retriever.seed(6);
    const model = Retriever.create({ preset: 'siamese', encoder: tiny });
    const { passages, train } = data();
    const mined = await mineHardNegatives(model, tok, passages, train, { k: 5 });
    mined.forEach((e, i) => {
      expect(e.hardNegatives).toHaveLength(5);
      expect(e.hardNegatives).not.toContain(train[i]!.positives[0]);
    });
    const { index } = await indexTable(model, await TokenTable.passages(tok, passages, 256));
    expect(index.size).toBe(16);
  });

  it('rejects tasks the model does not have', async () => {
    const model = Retriever.create({ preset: 'bi-encoder', encoder: tiny, tasks: ['a'] });
    const { passages, train } = data();
    await expect(trainRetriever(model, tok, { passages, train: train.map((e) => ({ ...e, task: 'zz' })) })).rejects.toMatchObject({ code: 'ERR_ARG' });
  });

  it('rejects a validation pool that is not a positive integer (a NaN pool would hold only gold passages)', async () => {
    const model = Retriever.create({ preset: 'siamese', encoder: tiny });
    const { passages, train } = data();
    for (const validationPool of [NaN, 0, -3, 2.5])
      await expect(trainRetriever(model, tok, { passages, train, dev: train }, { validationPool })).rejects.toMatchObject({ code: 'ERR_RANGE', message: expect.stringContaining('validationPool') });
    expect(code(() => validationPool(train, passages.length, NaN))).toBe('ERR_RANGE');
    expect(validationPool(train, passages.length, 1e9).sort((x, y) => x - y)).toEqual(passages.map((_, i) => i));
  });
});

describe('batches and schedules', () => {
  it('builds homogeneous batches with per-task sampling rates', () => {
    const b = homogeneousBatches([50, 10, 0], 8, { rates: [0.5, 2], seed: 1, epoch: 0 });
    const count = (t: number) => b.filter((x) => x.task === t).length;
    expect(count(0)).toBe(Math.floor(7 * 0.5));
    expect(count(1)).toBe(4); // ceil(10 / 8) * 2, cycling through the 10 examples
    for (const x of b) expect(x.examples.every((i) => i < (x.task === 0 ? 50 : 10))).toBe(true);
    expect(homogeneousBatches([50, 10], 8, { seed: 1, epoch: 1 })).not.toEqual(homogeneousBatches([50, 10], 8, { seed: 1, epoch: 0 }));
    expect(homogeneousBatches([50, 10], 8, { seed: 1, epoch: 1 })).toEqual(homogeneousBatches([50, 10], 8, { seed: 1, epoch: 1 }));
    // The exact draws for a seed (the order every seeded training run since issue 6 has used).
    expect(homogeneousBatches([5, 3], 2, { seed: 1, epoch: 0 })).toEqual([
      { task: 0, examples: [4, 2] },
      { task: 1, examples: [2] },
      { task: 0, examples: [1, 0] },
      { task: 0, examples: [3] },
      { task: 1, examples: [1, 0] },
    ]);
  });

  it('keeps the examples of one group in the same batches when groups are given', () => {
    // 5 groups of 8 examples, interleaved in the input; batches of 8: each batch must be one whole group.
    const keys = Array.from({ length: 40 }, (_, i) => `doc${i % 5}`);
    const b = homogeneousBatches([40, 6], 8, { seed: 3, epoch: 0, groups: [keys, undefined] });
    const grouped = b.filter((x) => x.task === 0);
    expect(grouped).toHaveLength(5);
    for (const x of grouped) expect(new Set(x.examples.map((i) => keys[i])).size).toBe(1);
    expect(grouped.flatMap((x) => x.examples).sort((p, q) => p - q)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    // Without groups the same batches mix documents.
    const plain = homogeneousBatches([40], 8, { seed: 3, epoch: 0 });
    expect(plain.some((x) => new Set(x.examples.map((i) => keys[i])).size > 1)).toBe(true);
    // The groups' order changes with the epoch; a key per example is required.
    expect(homogeneousBatches([40], 8, { seed: 3, epoch: 1, groups: [keys] })).not.toEqual(homogeneousBatches([40], 8, { seed: 3, epoch: 0, groups: [keys] }));
    expect(() => homogeneousBatches([40], 8, { groups: [keys.slice(1)] })).toThrow(expect.objectContaining({ code: 'ERR_SHAPE' }));
    expect(() => homogeneousBatches([1], 8, { groups: ['a' as never] })).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(() => homogeneousBatches([1], 8, { groups: [[7 as never]] })).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(() => homogeneousBatches([2], 8, { groups: [new Array<string>(2)] })).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
  });

  it('leaves passages that are gold for a question out of its negatives', () => {
    const ex: TrainingExample[] = [
      { query: 'a', task: 't', positives: [1, 2], hardNegatives: [5] },
      { query: 'b', task: 't', positives: [2], hardNegatives: [1] },
    ];
    const c = composeBatch(ex, [0, 1], 1, () => 0);
    expect(c.passageRows).toEqual([1, 5, 2, 1]);
    expect(Array.from(c.positives)).toEqual([0, 2]);
    // question 0: rows 2 (passage 2) and 3 (passage 1) are gold for it too.
    expect(Array.from(c.ignore)).toEqual([0, 2, 0, 3]);
  });

  it('warms up and decays linearly (DPR)', () => {
    const f = linearSchedule(10, 110);
    expect([f(0), f(5), f(10), f(60), f(110), f(200)]).toEqual([0, 0.5, 1, 0.5, 1e-7, 1e-7]);
  });
});

describe('bad input', () => {
  it('gives typed errors and never aborts', async () => {
    expect(code(() => Retriever.create({ preset: 'siamese', encoder: { ...tiny, heads: 3 } }))).toBe('ERR_ARG');
    expect(code(() => Retriever.create({ preset: 'siamese', encoder: tiny, taser: { routing: 'det' } }))).toBe('ERR_ARG');
    expect(code(() => Retriever.create({ preset: 'siamese', encoder: tiny, perTaskQueryEncoders: true, tasks: ['a'] }))).toBe('ERR_ARG');
    const model = Retriever.create({ preset: 'siamese', encoder: tiny });
    const good = tok.encode(['w1']);
    const bad: TokenBatchArg = { ...good, ids: good.ids.map((x, i) => (i === 1 ? 99 : x)) };
    expect(code(() => model.encodeSync(bad, 'query'))).toBe('ERR_RANGE');
    expect(code(() => model.encodeSync({ ...good, rows: 2 }, 'query'))).toBe('ERR_SHAPE');
    expect(code(() => model.encodeSync(good, 'side' as 'query'))).toBe('ERR_ARG');
    expect(code(() => model.encodeSync({ ...good, seqLen: 64, ids: new Int32Array(64), typeIds: new Int32Array(64) }, 'query'))).toBe('ERR_RANGE');
    await expect(model.encode(bad, 'query')).rejects.toMatchObject({ code: 'ERR_RANGE' });
    const batch = batchOf(model);
    expect(code(() => model.accumulateSync({ ...batch, positives: batch.positives.map(() => 99) }))).toBe('ERR_RANGE');
    expect(code(() => model.accumulateSync({ ...batch, ignore: Int32Array.from([0, 0]) }))).toBe('ERR_ARG');
    expect(code(() => model.setParameter('encoder.nope', new Float32Array(1)))).toBe('ERR_NOT_FOUND');
    expect(code(() => model.setParameter('encoder.projection.weight', new Float32Array(1)))).toBe('ERR_NOT_FOUND');
    expect(code(() => model.setParameter('encoder.embeddings.LayerNorm.bias', new Float32Array(3)))).toBe('ERR_SHAPE');
    expect(code(() => model.setParameter('encoder.embeddings.LayerNorm.bias', new Float32Array(16).fill(NaN)))).toBe('ERR_NONFINITE');
    expect(code(() => model.stepSync(-1, 0))).toBe('ERR_RANGE');
    await expect(model.save('/nonexistent-dir/x.pt')).rejects.toMatchObject({ code: 'ERR_IO' });
    // The model still works.
    expect(model.encodeSync(good, 'query')).toHaveLength(16);
  });
});
