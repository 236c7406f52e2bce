// CAME end to end (lib/methods/came, native/torch/came_model.h) on a tiny synthetic corpus: the model's structure and
// typed errors, one training step against its parts (standardized sum, competitive weights, kernels against
// libtorch's own ops), each expert's index against brute force, the fusions, training, save / load, and the CLI.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { rbo } from '../lib/eval/rbo.js';
import { readSafetensors } from '../lib/io/safetensors.js';
import { expertScores } from '../lib/methods/came/scores.js';
import { CAME_FUSIONS, fitLinearFusion, fuseExperts, type Hit } from '../lib/methods/came/fusion.js';
import type { CameEncoded, CameExpertName } from '../lib/methods/came/format.js';
import { CameModel, type CameStepStats } from '../lib/methods/came/model.js';
import { fitLexicalBias } from '../lib/methods/came/train.js';
import { updateCamePassages } from '../lib/methods/came/passages.js';
import { CameRetriever } from '../lib/methods/came/retriever.js';
import { trainCame } from '../lib/methods/came/train.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import type { TrainingExample } from '../lib/train/examples.js';
import { TokenTable } from '../lib/models/token-table.js';
import { Retriever, type TokenBatchArg } from '../lib/models/retriever.js';
import { asyncCode, code } from './basics.js';
import { adamGradient, expectGradientsMatch, randomize } from './gradcheck.js';
import { quorumCli as quorum } from './helpers.js';

const N = 48;
const SPECIALS = ['[PAD]', '[unused0]', '[unused1]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
const WORDS = ['what', 'is', 'the', 'and', 'of'];
const VOCAB = [...SPECIALS, ...WORDS, ...['k', 't', 'w', 'q'].flatMap((p) => Array.from({ length: N }, (_, i) => `${p}${i}`))];
const tokenizer = new WordPieceTokenizer(VOCAB);
// Passage i holds its key word k_i; question i names k_i (the local and lexical experts can match it) and q_i.
const corpus = Array.from({ length: N }, (_, i) => ({ id: `p${i}`, title: `t${i}`, text: `the k${i} is w${i} and w${(i + 1) % N}` }));
const question = (i: number) => `what is k${i} q${i}`;
const examples = (lo: number, hi: number): TrainingExample[] =>
  Array.from({ length: hi - lo }, (_, j) => ({ query: question(lo + j), task: 'default', positives: [lo + j], hardNegatives: [(lo + j + 1) % N, (lo + j + 7) % N, (lo + j + 13) % N] }));
const small = { encoder: { hiddenSize: 16, embeddingSize: 16, heads: 4, ffnSize: 32, maxPositions: 32, layers: 1 }, expertLayers: 1, localDim: 8 };

const root = mkdtempSync(join(tmpdir(), 'quorum-came-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function batchOf(questions: number[], passages: number[], positives: number[]) {
  const q = tokenizer.encode(questions.map(question), { maxLength: 16 });
  const p = tokenizer.encode(passages.map((i) => corpus[i]!.title), { pairs: passages.map((i) => corpus[i]!.text), maxLength: 24 });
  return { queries: q, passages: p, positives: Int32Array.from(positives) };
}

/** Each expert's scores of question 0 against every passage, from dense encodings: SPLADE dot, MaxSim, global dot. */
function referenceScores(q: CameEncoded, d: CameEncoded, qb: TokenBatchArg, db: TokenBatchArg): Record<'lexical' | 'local' | 'global', number[]> {
  const dot = (x: Float32Array, i: number, y: Float32Array, j: number, n: number) => {
    let s = 0;
    for (let k = 0; k < n; k++) s += x[i * n + k]! * y[j * n + k]!;
    return s;
  };
  const L = small.localDim;
  const G = q.global!.length / qb.rows;
  const rows = Array.from({ length: db.rows }, (_, j) => j);
  const maxSimOf = (j: number) => {
    let total = 0;
    for (let t = 0; t < qb.lengths[0]!; t++) {
      let best = -Infinity;
      for (let u = 0; u < db.lengths[j]!; u++) best = Math.max(best, dot(q.local!, t, d.local!, j * db.seqLen + u, L));
      total += best;
    }
    return total;
  };
  return {
    lexical: rows.map((j) => dot(q.lexical!, 0, d.lexical!, j, VOCAB.length)),
    local: rows.map(maxSimOf),
    global: rows.map((j) => dot(q.global!, 0, d.global!, j, G)),
  };
}

describe('CAME model', () => {
  it('names its parameters by part, holds only the experts asked for, and rejects bad configurations', () => {
    Retriever.seed(1);
    const m = CameModel.create({ ...small, encoder: { ...small.encoder, vocabSize: VOCAB.length } });
    const names = m.parameters().map((p) => p.name);
    expect(names).toContain('bottom.embeddings.word_embeddings.weight');
    expect(names).toContain('bottom.encoder.layer.0.attention.self.query.weight');
    for (const e of ['lexical', 'local', 'global']) expect(names).toContain(`${e}.encoder.layer.0.output.dense.weight`);
    expect(names).toContain('lexical.head.decoder.bias');
    expect(m.parameters().find((p) => p.name === 'local.head.weight')!.shape).toEqual([8, 16]);
    // The lexical decoder is tied to the embeddings: no decoder weight of its own.
    expect(names.filter((n) => n.startsWith('lexical.head.decoder'))).toEqual(['lexical.head.decoder.bias']);
    const one = CameModel.create({ ...small, encoder: { ...small.encoder, vocabSize: VOCAB.length }, experts: ['local'] });
    expect(one.experts).toEqual(['local']);
    expect(one.parameters().some((p) => p.name.startsWith('lexical.') || p.name.startsWith('global.'))).toBe(false);
    expect(code(() => one.encodeSync(batchOf([0], [0], [0]).queries, 'query', ['global']))).toBe('ERR_ARG');
    expect(code(() => CameModel.create({ ...small, encoder: { ...small.encoder, vocabSize: VOCAB.length }, experts: [] }))).toBe('ERR_ARG');
    expect(code(() => CameModel.create({ ...small, encoder: { ...small.encoder, vocabSize: VOCAB.length }, experts: ['sparse' as 'local'] }))).toBe('ERR_ARG');
    expect(code(() => CameModel.create({ ...small, encoder: { ...small.encoder, vocabSize: VOCAB.length, taser: { every: 1, experts: 2, routing: 'det' } } }))).toBe('ERR_ARG');
    expect(code(() => CameModel.create({ ...small, encoder: { ...small.encoder, vocabSize: VOCAB.length, tokenWeights: true } }))).toBe('ERR_ARG');
    expect(code(() => m.setTraining({ tau: 0 }))).toBe('ERR_RANGE');
    expect(code(() => m.setTraining({ temperatures: { lexical: -1 } as never }))).toBe('ERR_RANGE');
    expect(m.training.temperatures).toEqual({ lexical: 1, local: 1, global: 0.05 });
  });

  it('encodes unit token vectors (zero past each length), non-negative SPLADE weights and unit global vectors', () => {
    Retriever.seed(2);
    const m = CameModel.create({ ...small, encoder: { ...small.encoder, vocabSize: VOCAB.length } });
    const b = batchOf([0, 1, 2], [0, 1, 2], [0, 1, 2]).passages;
    const e = m.encodeSync(b, 'passage');
    const L = 8;
    for (let r = 0; r < b.rows; r++)
      for (let t = 0; t < b.seqLen; t++) {
        const v = e.local!.subarray((r * b.seqLen + t) * L, (r * b.seqLen + t + 1) * L);
        const norm = Math.hypot(...v);
        if (t < b.lengths[r]!) expect(norm).toBeCloseTo(1, 5);
        else expect(norm).toBe(0);
      }
    expect(e.lexical!.length).toBe(3 * VOCAB.length);
    expect(e.lexical!.every((x) => x >= 0)).toBe(true);
    for (let r = 0; r < 3; r++) expect(Math.hypot(...e.global!.subarray(r * 16, (r + 1) * 16))).toBeCloseTo(1, 5);
  });

  it('fitLexicalBias starts the median passage with about the asked number of terms', async () => {
    Retriever.seed(7);
    const m = CameModel.create({ ...small, encoder: { ...small.encoder, vocabSize: VOCAB.length } });
    const table = await TokenTable.passages(tokenizer, corpus, 24);
    const before = m.encodeSync(table.batch([0]), 'passage', ['lexical']).lexical!.filter((x) => x > 0).length;
    const bias = await fitLexicalBias(m, table, { terms: 20 });
    expect(bias).toBeLessThan(0);
    expect(m.getParameter('lexical.head.decoder.bias').every((b) => b === Math.fround(bias))).toBe(true);
    const counts = Array.from({ length: N }, (_, i) => m.encodeSync(table.batch([i]), 'passage', ['lexical']).lexical!.filter((x) => x > 0).length).sort((a, b) => a - b);
    expect(counts[N >> 1]!).toBeGreaterThanOrEqual(17);
    expect(counts[N >> 1]!).toBeLessThanOrEqual(20);
    expect(before).toBeGreaterThan(40);
    const global = CameModel.create({ ...small, encoder: { ...small.encoder, vocabSize: VOCAB.length }, experts: ['global'] });
    expect(await asyncCode(fitLexicalBias(global, table))).toBe('ERR_ARG');
  });

  it('a training step: the standardized loss is the sum of the experts\' losses, the competitive one their weighted sum', async () => {
    Retriever.seed(3);
    const m = CameModel.create({ ...small, encoder: { ...small.encoder, vocabSize: VOCAB.length, dropout: 0 } });
    // One question, so the batch mean is that question's loss.
    const b = batchOf([5], [5, 6, 7, 8], [0]);
    const st = await m.accumulate(b);
    const parts = Object.values(st.experts);
    expect(parts).toHaveLength(3);
    expect(st.loss).toBeCloseTo(parts.reduce((a, x) => a + x.loss, 0), 4);
    for (const x of parts) expect(x.weight).toBe(1);
    m.setTraining({ competitive: true, tau: 0.5 });
    const sp = await m.accumulate(b);
    const w = Object.values(sp.experts).map((x) => x.weight);
    expect(w.reduce((a, x) => a + x, 0)).toBeCloseTo(1, 5);
    expect(sp.loss).toBeCloseTo(Object.values(sp.experts).reduce((a, x) => a + x.weight * x.loss, 0), 4);
    // The weights follow softmax((1 / rank) / tau) over each expert's rank of the positive among the 4 passages,
    // the ranks worked out here from the model's own encodings (dropout 0: the training pass encodes the same).
    const q = m.encodeSync(b.queries, 'query');
    const d = m.encodeSync(b.passages, 'passage');
    const scores = referenceScores(q, d, b.queries, b.passages);
    const ranks = (['lexical', 'local', 'global'] as const).map((e) => 1 + scores[e].filter((x) => x > scores[e][0]!).length);
    expect(new Set(ranks).size, 'the experts should disagree for the check to mean something').toBeGreaterThan(1);
    const z = ranks.map((r) => Math.exp(1 / r / 0.5));
    const sum = z.reduce((a, x) => a + x, 0);
    z.forEach((x, i) => expect(w[i]!).toBeCloseTo(x / sum, 5));
    // FLOPS: sum_v (mean over the batch of w_bv)^2 on each side, times its weight; at the first step the ramp is (1 / T)^2.
    const flops = (x: Float32Array, rows: number) => {
      let total = 0;
      for (let v = 0; v < VOCAB.length; v++) {
        let mean = 0;
        for (let r = 0; r < rows; r++) mean += x[r * VOCAB.length + v]! / rows;
        total += mean * mean;
      }
      return total;
    };
    const t = m.training;
    expect(sp.flops).toBeCloseTo(t.flopsQuery * flops(q.lexical!, 1) + t.flopsPassage * flops(d.lexical!, 4), 6);
    expect(sp.flops).toBeGreaterThan(0);
    expect(sp.flopsLambda).toBeCloseTo(t.flopsRamp > 0 ? (1 / t.flopsRamp) ** 2 : 1, 10);
  });

  for (const competitive of [false, true])
    it(`the gradient of the ${competitive ? 'competitive' : 'standardized'} loss with FLOPS and a loss scale, by central differences`, () => {
      const make = () => {
        Retriever.seed(5);
        const m = CameModel.create({ ...small, encoder: { ...small.encoder, vocabSize: VOCAB.length, dropout: 0 } });
        randomize(m, 31, 0.2);
        m.setTraining({ competitive, tau: 0.5, flopsQuery: 0.05, flopsPassage: 0.02, flopsRamp: 0 });
        return m;
      };
      const b = { ...batchOf([1, 2, 3], [1, 9, 2, 10, 3, 11], [0, 2, 4]), lossScale: 0.8 };
      // What the gradient is of: the (weighted) NLL plus the ramped FLOPS term, all times the loss scale.
      const total = (m: CameModel) => () => {
        const st = m.accumulateSync(b);
        return st.loss + st.flopsLambda * st.flops;
      };
      const fresh = make();
      const grad = adamGradient(fresh, total(fresh));
      const fd = make();
      // A small step: MaxSim's arg-max switches and the unit-length token vectors bend the loss within 5e-3.
      const { compared, nonzero } = expectGradientsMatch(fd, total(fd), grad, { scale: 0.8, h: 1e-3 });
      expect(compared).toBeGreaterThan(40);
      expect(nonzero).toBeGreaterThan(compared / 2);
    });

  it("Quorum's kernels and libtorch's own ops give the same loss and the same gradient", () => {
    const make = (referenceOps: boolean) => {
      Retriever.seed(4);
      return CameModel.create({ ...small, encoder: { ...small.encoder, vocabSize: VOCAB.length, dropout: 0 }, referenceOps });
    };
    const ours = make(false);
    const ref = make(true);
    const b = batchOf([1, 2, 3], [1, 9, 2, 10, 3, 11], [0, 2, 4]);
    let a: CameStepStats | undefined;
    let r: CameStepStats | undefined;
    // The gradients read off a first AdamW step (a sign-only comparison of the step itself would miss a scale).
    const gOurs = adamGradient(ours, () => void (a = ours.accumulateSync(b)));
    const gRef = adamGradient(ref, () => void (r = ref.accumulateSync(b)));
    expect(a!.loss).toBeCloseTo(r!.loss, 4);
    for (const e of ['lexical', 'local', 'global'] as const) expect(a!.experts[e]!.loss).toBeCloseTo(r!.experts[e]!.loss, 4);
    let largest = 0;
    for (const g of gRef.values()) for (const x of g) largest = Math.max(largest, Math.abs(x));
    expect(largest).toBeGreaterThan(1e-3);
    for (const [name, g] of gRef) {
      const x = gOurs.get(name)!;
      let worst = 0;
      for (let i = 0; i < g.length; i++) worst = Math.max(worst, Math.abs(x[i]! - g[i]!));
      expect(worst, name).toBeLessThan(1e-4 * largest + 1e-7);
    }
  });
});

describe('CAME retrieval', () => {
  let came: CameRetriever;
  const questions = Array.from({ length: 12 }, (_, i) => question(i * 4));

  it('each expert\'s index returns the brute-force top-k (local: exhaustive and wide candidates)', async () => {
    Retriever.seed(5);
    came = CameRetriever.create({ tokenizer, model: small, text: { maxQueryLength: 16, maxPassageLength: 24 } });
    await came.index(corpus, { passageTerms: 20, queryTerms: 8 });
    expect(came.indexed).toBe(N);
    const pt = await came.passageTable(corpus);
    const P = await came.encode(pt, 'passage', { maxTerms: 20 });
    const Q = await came.encode(await came.questionTable(questions), 'query', { maxTerms: 8 });
    const brute = await expertScores(Q, P, ['lexical', 'local', 'global']);
    const k = 10;
    for (const [name, options] of [
      ['lexical', {}],
      ['global', {}],
      ['local', { localCandidates: 'all' as const }],
      ['local', { localCandidates: 1000, localProbe: 0 }],
    ] as const) {
      const r = await came.search(questions, { k, expertK: k, ...options });
      questions.forEach((_, q) => {
        const row = brute[name]!.subarray(q * N, (q + 1) * N);
        const want = [...row].map((s, id) => ({ id, s })).sort((a, b) => b.s - a.s || a.id - b.id).slice(0, k);
        const got = r.experts[name]![q]!;
        // Scores agree to f32 summation order; ids agree wherever the brute-force scores are not tied.
        got.forEach((h, i) => expect(h.score, `${name} q${q} rank ${i}`).toBeCloseTo(want[i]!.s, 4));
        got.forEach((h, i) => {
          if (Math.abs(want[i]!.s - (want[i + 1]?.s ?? -Infinity)) > 1e-4 && Math.abs(want[i]!.s - (want[i - 1]?.s ?? Infinity)) > 1e-4) expect(h.id).toBe(want[i]!.id);
        });
      });
    }
    // The centroid stage with few passages re-scored (8) against brute force: recall of the top 10 (high on this
    // corpus of ~900 tokens).
    const approx = await came.search(questions, { k, expertK: k, localCandidates: 8 });
    const exact = await came.search(questions, { k, expertK: k, localCandidates: 'all' });
    let hit = 0;
    questions.forEach((_, q) => {
      const want = new Set(exact.experts.local![q]!.map((h) => h.id));
      hit += approx.experts.local![q]!.filter((h) => want.has(h.id)).length;
    });
    expect(hit / (questions.length * k)).toBeGreaterThan(0.5);
  });

  it('a filter (rows) keeps every expert and the fusion inside the allowed passages, exactly for lexical and global', async () => {
    const rows = Int32Array.from({ length: Math.floor(N / 3) }, (_, i) => 3 * i + 1);
    const allowed = new Set(rows);
    const pt = await came.passageTable(corpus);
    const P = await came.encode(pt, 'passage', { maxTerms: 20 });
    const Q = await came.encode(await came.questionTable(questions), 'query', { maxTerms: 8 });
    const brute = await expertScores(Q, P, ['lexical', 'local', 'global']);
    const k = 5;
    for (const localCandidates of [8, 'all'] as const) {
      const r = await came.search(questions, { k, expertK: k, localCandidates, rows: Array.from(rows).reverse() });
      questions.forEach((_, q) => {
        for (const name of ['lexical', 'local', 'global'] as const) expect(r.experts[name]![q]!.every((h) => allowed.has(h.id)), name).toBe(true);
        expect(r.fused[q]!.every((h) => allowed.has(h.id))).toBe(true);
        for (const name of ['lexical', 'global', ...(localCandidates === 'all' ? (['local'] as const) : [])] as const) {
          const row = brute[name]!.subarray(q * N, (q + 1) * N);
          const want = Array.from(rows, (id) => ({ id, s: row[id]! })).filter((x) => name !== 'lexical' || x.s > 0).sort((a, b) => b.s - a.s || a.id - b.id).slice(0, k);
          r.experts[name]![q]!.forEach((h, i) => expect(h.score, `${name} q${q} rank ${i}`).toBeCloseTo(want[i]!.s, 4));
        }
      });
    }
    // An empty filter allows nothing: every expert's list and the fusion are empty (not every passage).
    const none = await came.search(questions, { k, expertK: k, rows: [] });
    for (const name of ['lexical', 'local', 'global'] as const) expect(none.experts[name]!.flat(), name).toEqual([]);
    expect(none.fused.flat()).toEqual([]);
    expect(await asyncCode(came.search(questions, { rows: [N] }))).toBe('ERR_RANGE');
    expect(await asyncCode(came.search(questions, { rows: 'x' as never }))).toBe('ERR_ARG');
  });

  it('fuses by Sum with the K-th score filling, and by every other variant', async () => {
    const r = await came.search(questions, { k: 5, expertK: 10 });
    expect(r.fused).toHaveLength(questions.length);
    for (const hits of r.fused) expect(hits).toHaveLength(5);
    // Sum by hand for the first question.
    const lists = (['lexical', 'local', 'global'] as const).map((e) => r.experts[e]![0]!);
    const ids = [...new Set(lists.flatMap((l) => l.map((h) => h.id)))];
    const fused = ids.map((id) => ({ id, score: lists.reduce((a, l) => a + (l.find((h) => h.id === id)?.score ?? l[l.length - 1]!.score), 0) }));
    fused.sort((a, b) => b.score - a.score);
    r.fused[0]!.forEach((h, i) => expect(h.score).toBeCloseTo(fused[i]!.score, 4));
    expect(Object.keys(r.timings).sort()).toEqual(['encode', 'fuse', 'global', 'lexical', 'local']);
    for (const f of ['normsum', 'normmax', 'sumrr', 'maxrr'] as const) expect((await came.search(questions, { k: 5, fusion: f })).fused[0]).toHaveLength(5);
    expect(await asyncCode(came.search(questions, { fusion: 'linear' }))).toBe('ERR_STATE');
    expect(await asyncCode(came.search(questions, { fusion: 'best' as 'sum' }))).toBe('ERR_ARG');
    const only = await came.search(questions, { k: 5, experts: ['local', 'global'] });
    expect(Object.keys(only.experts).sort()).toEqual(['global', 'local']);

    // The native stage's fusion (kernels/came_search.h) against fuseExperts, the reference, over the lists the stage
    // returned: every method, experts in any order and any subset, a filter; the same ids and the same doubles.
    const all = ['lexical', 'local', 'global'] as const;
    came.linear = { weights: [0.3, 1.7, 2.5], bias: -0.5 };
    const rows = Int32Array.from({ length: N }, (_, i) => i).filter((i) => i % 4 !== 1);
    for (const fusion of CAME_FUSIONS)
      for (const experts of [[...all], ['global', 'lexical'], ['local']] as CameExpertName[][])
        for (const filter of [{}, { rows }]) {
          const got = await came.search(questions, { k: 7, expertK: 10, fusion, experts, ...filter });
          const linear = fusion === 'linear' ? { weights: experts.map((e) => came.linear!.weights[all.indexOf(e as never)]!), bias: came.linear.bias } : undefined;
          expect(got.fused, `${fusion} ${experts.join('+')}`).toEqual(fuseExperts(experts.map((e) => got.experts[e]!), fusion, 7, 10, linear));
        }
    came.linear = undefined;
  });

  it('saves and loads the retriever and its indexes; bad directories are typed errors', async () => {
    const dir = join(root, 'saved');
    came.linear = { weights: [0.1, 1, 0.5], bias: 0.25 };
    came.save(dir);
    await came.saveIndex(join(dir, 'index'), corpus.map((p) => p.id));
    const back = await CameRetriever.load(dir);
    expect(back.experts).toEqual(['lexical', 'local', 'global']);
    expect(back.linear).toEqual(came.linear);
    expect(await back.loadIndex(join(dir, 'index'))).toEqual(corpus.map((p) => p.id));
    const a = await came.search(questions, { k: 5, fusion: 'linear' });
    const b = await back.search(questions, { k: 5, fusion: 'linear' });
    expect(b.fused).toEqual(a.fused);
    // Linear fusion: w . s + b with the K-th score filling.
    const l = (['lexical', 'local', 'global'] as const).map((e) => a.experts[e]![0]!);
    const top = a.fused[0]![0]!;
    const s = l.reduce((acc, list, e) => acc + came.linear!.weights[e]! * (list.find((h) => h.id === top.id)?.score ?? list[list.length - 1]!.score), came.linear.bias);
    expect(top.score).toBeCloseTo(s, 4);

    // Q8: the shared bottom's embedding tables as int8 rows, everything else bf16; it loads and searches.
    const q8 = join(root, 'saved-q8');
    came.save(q8, { dtype: 'Q8' });
    const stored = readdirSync(q8).filter((f) => f.endsWith('.safetensors')).flatMap((f) => [...readSafetensors(readFileSync(join(q8, f)))]);
    const int8 = stored.filter(([, t]) => t.dtype === 'I8').map(([n]) => n).sort();
    expect(int8).toEqual(['bottom.embeddings.position_embeddings.weight', 'bottom.embeddings.token_type_embeddings.weight', 'bottom.embeddings.word_embeddings.weight']);
    const fromQ8 = await CameRetriever.load(q8);
    await fromQ8.index(corpus, { passageTerms: 20, queryTerms: 8 });
    const q = await fromQ8.search(questions, { k: 5, fusion: 'linear' });
    // Most top hits survive int8 rows of the tables.
    const same = q.fused.filter((list, i) => list[0]!.id === a.fused[i]![0]!.id).length;
    expect(same).toBeGreaterThanOrEqual(Math.ceil(questions.length * 0.6));

    expect(await asyncCode(CameRetriever.load(join(root, 'nowhere')))).toBe('ERR_IO');
    const card = JSON.parse(readFileSync(join(dir, 'came.json'), 'utf8'));
    writeFileSync(join(dir, 'came.json'), JSON.stringify({ ...card, version: 99 }));
    expect(await asyncCode(CameRetriever.load(dir))).toBe('ERR_FORMAT');
    // A string bias made strings of the fused scores; a wrong number of weights misread the experts (issue 48).
    for (const linear of [{ weights: [0.1, 1, 0.5], bias: '0.25' }, { weights: [0.1, 1], bias: 0.25 }, { weights: [0.1, 1, null], bias: 0 }]) {
      writeFileSync(join(dir, 'came.json'), JSON.stringify({ ...card, linear }));
      expect(await asyncCode(CameRetriever.load(dir)), JSON.stringify(linear)).toBe('ERR_FORMAT');
    }
    // Every other field against the card's schema too, ERR_FORMAT naming it.
    type Card = { models: Array<{ config: { experts: string[]; encoder: Record<string, unknown>; localDim: unknown } }>; text: Record<string, unknown>; [k: string]: unknown };
    for (const [field, damage] of [
      ['models.0.config.experts', (c: Card) => c.models[0]!.config.experts.push('local')],
      ['models.0.config.encoder.hiddensize', (c: Card) => (c.models[0]!.config.encoder.hiddensize = 16)],
      ['models.0.config.localDim', (c: Card) => (c.models[0]!.config.localDim = '8')],
      ['text.maxQueryLength', (c: Card) => (c.text.maxQueryLength = null)],
      ['independent', (c: Card) => (c.independent = 'no')],
    ] as const) {
      const copy = JSON.parse(JSON.stringify(card)) as Card;
      damage(copy);
      writeFileSync(join(dir, 'came.json'), JSON.stringify(copy));
      const e = await CameRetriever.load(dir).then(() => undefined, (x: unknown) => x as { code: string; message: string });
      expect(e?.code, field).toBe('ERR_FORMAT');
      expect(e?.message, field).toContain(field.split('.').slice(0, -1).join('.') || field);
    }
    writeFileSync(join(dir, 'came.json'), JSON.stringify(card));
    // The index's ids: one per indexed passage, none empty; CRLF line ends read as LF.
    const idsPath = join(dir, 'index', 'ids.txt');
    const idsText = readFileSync(idsPath, 'utf8');
    const ids = idsText.trim().split('\n');
    for (const bad of [ids.slice(1).join('\n') + '\n', [...ids, 'extra'].join('\n') + '\n', ['', ...ids.slice(1)].join('\n') + '\n']) {
      writeFileSync(idsPath, bad);
      expect(await asyncCode(back.loadIndex(join(dir, 'index')))).toBe('ERR_FORMAT');
    }
    writeFileSync(idsPath, ids.join('\r\n') + '\r\n');
    expect(await back.loadIndex(join(dir, 'index'))).toEqual(ids);
    writeFileSync(idsPath, idsText);
    const badIds = corpus.map((p) => p.id);
    badIds[3] = 'two\nlines';
    expect(await asyncCode(came.saveIndex(join(root, 'bad-index'), badIds))).toBe('ERR_ARG');
    const weights = readFileSync(join(dir, 'model-0.safetensors'));
    writeFileSync(join(dir, 'model-0.safetensors'), weights.subarray(0, weights.length - 100));
    expect(await asyncCode(CameRetriever.load(dir))).toBe('ERR_FORMAT');
    expect(await asyncCode(back.loadIndex(join(root, 'nowhere')))).toBe('ERR_IO');
  });
});

describe('CAME fusion and overlap', () => {
  const L = (...pairs: Array<[number, number]>): Hit[] => pairs.map(([id, score]) => ({ id, score }));
  const a = L([1, 9], [2, 5], [3, 1]);
  const b = L([2, 0.9], [4, 0.5], [1, 0.1]);

  it('computes each variant as defined (K-th filling, min-max, reciprocal ranks, linear)', () => {
    const one = (m: Parameters<typeof fuseExperts>[1], linear?: { weights: number[]; bias: number }) => fuseExperts([[a], [b]], m, 10, 3, linear)[0]!;
    const byId = (hits: Hit[]) => Object.fromEntries(hits.map((h) => [h.id, h.score]));
    // sum: 1 = 9 + 0.1, 2 = 5 + 0.9, 3 = 1 + 0.1 (b's K-th), 4 = 1 (a's K-th) + 0.5
    expect(byId(one('sum'))).toEqual({ 1: 9.1, 2: 5.9, 3: 1.1, 4: 1.5 });
    expect(one('sum').map((h) => h.id)).toEqual([1, 2, 4, 3]);
    // min-max: a -> 1: 1, 2: 0.5, 3: 0; b -> 2: 1, 4: 0.5, 1: 0
    const ns = byId(one('normsum'));
    expect(ns[1]).toBeCloseTo(1);
    expect(ns[2]).toBeCloseTo(1.5);
    expect(ns[3]).toBeCloseTo(0);
    expect(ns[4]).toBeCloseTo(0.5);
    expect(byId(one('normmax'))).toMatchObject({ 1: 1, 2: 1 });
    const rr = byId(one('sumrr'));
    expect(rr[1]).toBeCloseTo(1 + 1 / 3);
    expect(rr[2]).toBeCloseTo(1 / 2 + 1);
    expect(rr[4]).toBeCloseTo(1 / 2);
    expect(byId(one('maxrr'))[3]).toBeCloseTo(1 / 3);
    const lin = byId(one('linear', { weights: [2, -1], bias: 0.5 }));
    expect(lin[1]).toBeCloseTo(2 * 9 - 0.1 + 0.5);
    expect(lin[4]).toBeCloseTo(2 * 1 - 0.5 + 0.5);
    expect(code(() => fuseExperts([[a], [b]], 'linear', 10, 3))).toBe('ERR_ARG');
    expect(code(() => fuseExperts([], 'sum', 10, 3))).toBe('ERR_ARG');
  });

  it('fits a linear layer that weighs the informative expert', () => {
    // Expert 0's score marks the relevant passage, expert 1's is noise.
    const qs = Array.from({ length: 40 }, (_, q) => {
      const rel = q % 5;
      const lists = [0, 1].map((e) => Array.from({ length: 5 }, (_, i) => ({ id: i, score: e === 0 ? (i === rel ? 2 : 0) + 0.1 * i : Math.sin(q * 7 + i) })).sort((x, y) => y.score - x.score));
      return { lists, relevant: new Set([rel]) };
    });
    const fit = fitLinearFusion(qs);
    expect(fit.weights[0]!).toBeGreaterThan(0);
    expect(fit.weights[0]!).toBeGreaterThan(5 * Math.abs(fit.weights[1]!));
    expect(code(() => fitLinearFusion([]))).toBe('ERR_ARG');
  });

  it('rank-biased overlap: 1 for equal lists, 0 for disjoint ones, and the extrapolated formula by hand', () => {
    expect(rbo([1, 2, 3], [1, 2, 3])).toBeCloseTo(1, 12);
    expect(rbo([1, 2], [3, 4])).toBe(0);
    // A = [1, 2], B = [2, 1]: X_1 = 0, X_2 = 2 -> (2/2) p^2 + ((1-p)/p)(0 + (2/2) p^2)
    const p = 0.9;
    expect(rbo([1, 2], [2, 1], p)).toBeCloseTo(p ** 2 + ((1 - p) / p) * p ** 2, 12);
    expect(rbo([1, 2, 3, 4], [1, 5, 2, 6], p)).toBeGreaterThan(rbo([1, 2, 3, 4], [5, 1, 6, 2], p));
    expect(code(() => rbo([1], [1], 1))).toBe('ERR_RANGE');
  });
});

describe('CAME training', () => {
  it('trains the joint model (standardized, then competitive, then mined negatives) and the independent experts', async () => {
    for (const independent of [false, true]) {
      Retriever.seed(6);
      const came = CameRetriever.create({ tokenizer, independent, model: small, text: { maxQueryLength: 16, maxPassageLength: 24 } });
      const train = examples(0, 40);
      const dev = examples(0, 8); // questions it trains on: the test is that it fits them
      await came.index(corpus);
      const mrr = async () => {
        const r = await came.search(dev.map((e) => e.query), { k: 10 });
        return r.fused.reduce((a, hits, q) => {
          const at = hits.findIndex((h) => h.id === dev[q]!.positives[0]);
          return a + (at < 0 ? 0 : 1 / (at + 1));
        }, 0) / dev.length;
      };
      const before = await mrr();
      const lines: string[] = [];
      const rec = await trainCame(came, { passages: corpus, train, dev }, { epochs: 6, hardNegativeEpochs: 1, negatives: 3, batchSize: 8, lr: 5e-3, mineDepth: 5, log: (l) => lines.push(l), checkpointDir: join(root, `ckpt-${independent}`) });
      expect(rec.stages.map((s) => s.stage)).toEqual(independent ? ['bm25', 'bm25', 'bm25', 'hard-negatives', 'hard-negatives', 'hard-negatives'] : ['bm25', 'hard-negatives']);
      for (const s of rec.stages.filter((x) => x.stage === 'hard-negatives')) expect(['bm25', 'hard-negatives']).toContain(s.kept);
      const first = rec.stages[0]!;
      expect(first.epochs).toHaveLength(6);
      expect(first.epochs[5]!.loss).toBeLessThan(first.epochs[0]!.loss);
      if (!independent) {
        // 20% of 30 steps standardized (weights 1), the rest competitive (weights summing to 1).
        expect(lines.some((l) => /specialized stage from batch 6/.test(l))).toBe(true);
        const w = first.epochs[5]!.experts;
        expect(w.lexical!.weight + w.local!.weight + w.global!.weight).toBeCloseTo(1, 5);
        expect(first.epochs[0]!.experts.local!.weight).toBeGreaterThan(0.5);
      }
      // Training leaves no index behind (the mining one holds encodings from before its last stage).
      expect(came.indexed).toBe(0);
      expect(await asyncCode(came.search(['q'], { k: 1 }))).toBe('ERR_STATE');
      await came.index(corpus);
      expect(await mrr()).toBeGreaterThan(before);
      expect(came.training).toMatchObject({ independent, mode: 'competitive' });
    }
  });
});

describe('CAME passage updates', () => {
  it('updateCamePassages gives every expert the lists of a fresh index over the new corpus; typed errors leave it as it was', async () => {
    Retriever.seed(9);
    const came = CameRetriever.create({ tokenizer, model: small, text: { maxQueryLength: 16, maxPassageLength: 24 } });
    const dir = join(root, 'came-passages');
    came.save(dir);
    await came.index(corpus, { passageTerms: 20, queryTerms: 8 });
    await came.saveIndex(join(dir, 'index'), corpus.map((p) => p.id));
    // Remove three (one of them, p7, comes back with new text), add two new ones at the end.
    const added = [
      { id: 'p7', title: 't7', text: 'the k40 is w2' },
      { id: 'new1', title: 'n1', text: 'the k3 is w30 and w31' },
      { id: 'new2', text: 'w9 w10 k11' },
    ];
    const r = await updateCamePassages(dir, { remove: ['p0', 'p7', 'p20', 'gone'], add: added });
    expect(r).toEqual({ added: 3, removed: 3, passages: N });
    const next = [...corpus.filter((p) => !['p0', 'p7', 'p20'].includes(p.id)), ...added.map((p) => ({ title: '', ...p }))];
    const loaded = await CameRetriever.load(dir);
    expect(await loaded.loadIndex(join(dir, 'index'))).toEqual(next.map((p) => p.id));
    expect(readdirSync(dir).filter((f) => f.startsWith('index.'))).toEqual([]);  // no temporary directory left
    const fresh = await CameRetriever.load(dir);
    await fresh.index(next, { passageTerms: 20, queryTerms: 8 });
    const qs = Array.from({ length: 10 }, (_, i) => question(i * 5));
    const opts = { k: 10, expertK: 10, localCandidates: 'all' as const };
    const [a, b] = [await loaded.search(qs, opts), await fresh.search(qs, opts)];
    for (const e of ['lexical', 'local', 'global'] as const)
      qs.forEach((_, q) => {
        expect(a.experts[e]![q]!.map((h) => h.score), `${e} q${q}`).toEqual(b.experts[e]![q]!.map((h) => expect.closeTo(h.score, 4)));
        a.experts[e]![q]!.forEach((h, i) => {
          const w = b.experts[e]![q]!;
          if (Math.abs(w[i]!.score - (w[i + 1]?.score ?? -Infinity)) > 1e-4 && Math.abs(w[i]!.score - (w[i - 1]?.score ?? Infinity)) > 1e-4) expect(h.id, `${e} q${q} rank ${i}`).toBe(w[i]!.id);
        });
      });
    // Errors change nothing.
    const before = readFileSync(join(dir, 'index', 'ids.txt'), 'utf8');
    expect(await asyncCode(updateCamePassages(dir, {}))).toBe('ERR_ARG');
    expect(await asyncCode(updateCamePassages(dir, { add: [{ id: 'p1', text: 'x' }] }))).toBe('ERR_ARG');
    expect(await asyncCode(updateCamePassages(dir, { add: [{ id: 'a\nb', text: 'x' }] }))).toBe('ERR_ARG');
    expect(await asyncCode(updateCamePassages(dir, { remove: next.map((p) => p.id) }))).toBe('ERR_ARG');
    expect(await asyncCode(updateCamePassages(dir, { add: [], bogus: 1 } as never))).toBe('ERR_ARG');
    expect(await asyncCode(updateCamePassages(join(root, 'nowhere'), { remove: ['p1'] }))).toBe('ERR_IO');
    expect(readFileSync(join(dir, 'index', 'ids.txt'), 'utf8')).toBe(before);
    expect(await asyncCode(came.changeIndex(Int32Array.of(3, 2), []))).toBe('ERR_RANGE');
    expect(await asyncCode(came.changeIndex([1] as never, []))).toBe('ERR_ARG');
    for (const x of [came, loaded, fresh]) x.dispose();
  });
});

describe('quorum came', () => {
  it('came train, came index, came search and eval --came on a tiny dataset; typed one-line errors', () => {
    const data = join(root, 'beir');
    mkdirSync(join(data, 'qrels'), { recursive: true });
    writeFileSync(join(data, 'corpus.jsonl'), corpus.map((p) => JSON.stringify({ _id: p.id, title: p.title, text: p.text })).join('\n') + '\n');
    writeFileSync(join(data, 'queries.jsonl'), Array.from({ length: N }, (_, i) => JSON.stringify({ _id: `q${i}`, text: question(i) })).join('\n') + '\n');
    for (const [name, lo, hi] of [['train', 0, 32], ['dev', 32, 40], ['test', 40, 48]] as const)
      writeFileSync(join(data, 'qrels', `${name}.tsv`), 'query-id\tcorpus-id\tscore\n' + Array.from({ length: hi - lo }, (_, j) => `q${lo + j}\tp${lo + j}\t1`).join('\n') + '\n');
    const dir = join(root, 'came-cli');
    const t = quorum('came', 'train', '--data', data, '--out', dir, '--no-glove', '--hidden', '16', '--epochs', '1', '--hard-epochs', '1', '--negatives', '1', '--batch', '8', '--max-passage-length', '24', '--max-query-length', '16');
    expect(t.stderr).toBe('');
    expect(t.status).toBe(0);
    expect(t.stdout).toMatch(/linear fusion fitted on 8 dev questions/);
    const card = JSON.parse(readFileSync(join(dir, 'came.json'), 'utf8'));
    expect(card).toMatchObject({ format: 'quorum-came', version: 1, independent: false });
    expect(card.training.stages).toHaveLength(2);
    // The same as two data-parallel ranks (issue 47): both stages, rank 0 alone logs, fits and writes.
    const dist = join(root, 'came-nproc');
    const t2 = quorum('came', 'train', '--data', data, '--out', dist, '--no-glove', '--hidden', '16', '--epochs', '1', '--hard-epochs', '1', '--negatives', '1', '--batch', '8', '--max-passage-length', '24', '--max-query-length', '16', '--nproc', '2');
    expect(t2.stderr).toBe('');
    expect(t2.status).toBe(0);
    expect(t2.stdout.match(/linear fusion fitted on 8 dev questions/g)).toHaveLength(1);
    expect(JSON.parse(readFileSync(join(dist, 'came.json'), 'utf8')).training.stages).toHaveLength(2);
    const ix = quorum('came', 'index', '--came', dir, '--data', data);
    expect(ix.status).toBe(0);
    expect(ix.stdout).toMatch(/indexed 48 passages with lexical, local, global/);
    const s = quorum('came', 'search', '--came', dir, '--k', '3', question(41));
    expect(s.status).toBe(0);
    expect(s.stdout.trim().split('\n')).toHaveLength(4);
    const out = join(root, 'eval-came');
    const e = quorum('eval', '--data', data, '--came', dir, '--metrics', 'mrr@10', '--k', '10', '--out', out);
    expect(e.stderr).toBe('');
    expect(e.status).toBe(0);
    const metrics = JSON.parse(readFileSync(join(out, 'metrics.json'), 'utf8'));
    expect(Object.keys(metrics.metrics).sort()).toEqual([
      'came', 'came-expert:global', 'came-expert:lexical', 'came-expert:local', 'came:linear', 'came:maxrr', 'came:normmax', 'came:normsum', 'came:sumrr',
    ]);
    // came passages: remove two, add one (updating p5's text under its id), and the index serves the new corpus.
    const more = join(root, 'more.jsonl');
    writeFileSync(more, JSON.stringify({ _id: 'p5', title: 't5', text: question(41) }) + '\n');
    const up = quorum('came', 'passages', '--came', dir, '--add', more, '--remove', 'p1,p5,nope');
    expect(up.stderr).toBe('');
    expect(up.stdout).toMatch(/1 passages added, 2 removed; 47 passages/);
    expect(readFileSync(join(dir, 'index', 'ids.txt'), 'utf8').trim().split('\n').at(-1)).toBe('p5');
    const s2 = quorum('came', 'search', '--came', dir, '--k', '47', question(41));
    const found = s2.stdout.trim().split('\n').slice(1).map((l) => l.trim().split(/\s+/)[1]);
    expect(found).toHaveLength(47);
    expect(found).toContain('p5');
    expect(found).not.toContain('p1');
    for (const [args, message] of [
      [['came', 'passages', '--came', dir], /^quorum: ERR_ARG: nothing to change/],
      [['came', 'passages', '--came', dir, '--add', more], /^quorum: ERR_ARG: add\[0\]: passage id 'p5' is already in the corpus/],
      [['came', 'train', '--data', join(root, 'nowhere'), '--out', join(root, 'x')], /^quorum: ERR_IO/],
      [['came', 'train', '--data', data, '--out', join(root, 'x'), '--mode', 'rival'], /^quorum: ERR_ARG: --mode/],
      [['came', 'search', '--came', join(root, 'nowhere'), 'q'], /^quorum: ERR_IO/],
      [['came', 'search', '--came', dir, '--fusion', 'best', 'q'], /^quorum: ERR_ARG: --fusion/],
    ] as const) {
      const r = quorum(...args);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr.trim()).toMatch(message);
    }
    expect(quorum('came', 'train', '--help').stdout).toMatch(/--mode[\s\S]*--independent[\s\S]*--tau/);
  });
});
