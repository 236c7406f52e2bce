import { afterAll, describe, expect, it } from 'vitest';

import { Tensor, capabilities, gatherScores, gatherScoresSync, score, scoreSync, scoreTopK, scoreTopKSync, setIsa, setThreads, type Isa } from '../lib/index.js';
import { scoreMatrixRef, topKRef } from './reference/dense.js';
import { absDot, decoded, floatDtypes, randomF32, randomShapes } from './helpers.js';

const caps = capabilities();
const isas = caps.availableIsas as Isa[];
afterAll(() => setIsa(caps.isa as Isa));

// f32 accumulation over D terms: error well below 1e-5 of sum |q_d c_d| for the sizes used here.
const REL = 1e-5;

const shapes: Array<[B: number, N: number, D: number, k: number]> = [
  [1, 1, 1, 1],
  [1, 50, 7, 5],
  [3, 5, 17, 10], // N < k: padded
  [5, 103, 33, 7],
  [4, 64, 16, 64], // k = N
  [9, 257, 100, 13],
  [2, 1000, 769, 20],
  [17, 300, 64, 1],
  [6, 40, 31, 40],
  [13, 150, 600, 8], // several query tiles and dimension blocks, ragged last block
  [5, 64, 513, 64],
  // From 32 queries on (64 for bf16 / f16), scoreTopK runs as a GEMM: ragged tiles of rows and queries,
  // several depth blocks, several query chunks, N < k.
  [40, 100, 50, 3],
  [64, 300, 37, 10],
  [70, 20, 300, 25],
  [96, 520, 257, 7],
  [300, 260, 65, 5],
  // Five more drawn at random (seeded), for the combinations the table did not think of.
  ...(randomShapes(2026, 5, [[1, 80], [1, 400], [1, 300], [1, 50]]) as Array<[number, number, number, number]>),
];

describe.each(isas)('dense kernels, %s variant', (isa) => {
  describe.each(floatDtypes)('corpus %s', (dtype) => {
    it.each(shapes)('scoreTopK B=%i N=%i D=%i k=%i matches the reference', (B, N, D, k) => {
      setIsa(isa);
      const Q = randomF32(B * D, B * 1000 + D);
      const corpus = Tensor.from(randomF32(N * D, N * 7 + D), [N, D], dtype);
      const C = decoded(corpus);
      const exact = scoreMatrixRef(Q, C as unknown as Float32Array, B, N, D);
      const scale = absDot(Q, C, B, N, D);
      const ref = topKRef(exact, B, N, k);
      const got = scoreTopKSync({ data: Q, shape: [B, D] }, corpus, k);
      expect(got.rows).toBe(B);
      expect(got.k).toBe(k);
      for (let b = 0; b < B; b++) {
        for (let j = 0; j < k; j++) {
          const id = got.ids[b * k + j] as number;
          const s = got.scores[b * k + j] as number;
          if (j >= N) {
            expect(id).toBe(-1);
            expect(s).toBe(-Infinity);
            continue;
          }
          // The returned score is the row's dot product, and the j-th best exact score (ids may swap
          // only where exact scores tie within rounding).
          const tol = REL * (scale[b * N + id] as number) + 1e-30;
          expect(Math.abs(s - (exact[b * N + id] as number))).toBeLessThanOrEqual(tol);
          expect(Math.abs((exact[b * N + id] as number) - (ref.scores[b * k + j] as number))).toBeLessThanOrEqual(2 * REL * Math.max(scale[b * N + id] as number, 1e-30));
          if (j > 0) {
            const prev = got.scores[b * k + j - 1] as number;
            expect(prev > s || (prev === s && (got.ids[b * k + j - 1] as number) < id)).toBe(true);
          }
        }
        const ids = Array.from(got.ids.subarray(b * k, b * k + Math.min(k, N)));
        expect(new Set(ids).size).toBe(ids.length);
      }
      corpus.dispose();
    });

    it('score and gatherScores match the reference', () => {
      setIsa(isa);
      const [B, N, D] = [5, 77, 45];
      const Q = randomF32(B * D, 11);
      const corpus = Tensor.from(randomF32(N * D, 12), [N, D], dtype);
      const C = decoded(corpus);
      const exact = scoreMatrixRef(Q, C as unknown as Float32Array, B, N, D);
      const scale = absDot(Q, C, B, N, D);
      const S = scoreSync({ data: Q, shape: [B, D] }, corpus);
      expect(S.shape).toEqual([B, N]);
      for (let i = 0; i < B * N; i++) expect(Math.abs((S.data[i] as number) - (exact[i] as number))).toBeLessThanOrEqual(REL * (scale[i] as number));
      const m = 9;
      const ids32 = Int32Array.from({ length: B * m }, (_, i) => (i * 37 + 5) % N);
      const ids64 = BigInt64Array.from(ids32, (x) => BigInt(x));
      for (const ids of [ids32, ids64]) {
        const G = gatherScoresSync(Q, corpus, ids);
        expect(G.shape).toEqual([B, m]);
        for (let b = 0; b < B; b++)
          for (let j = 0; j < m; j++) {
            const n = ids32[b * m + j] as number;
            expect(Math.abs((G.data[b * m + j] as number) - (exact[b * N + n] as number))).toBeLessThanOrEqual(REL * (scale[b * N + n] as number));
          }
      }
      corpus.dispose();
    });
  });

  it.each([1, 64])('breaks ties by id ascending (B=%i)', (B) => {
    setIsa(isa);
    // Small integers: every dot product is exact, so equal rows tie exactly in every variant.
    const [N, D, k] = [50, 20, 20]; // 17 rows score 40, the rest 20: the cut falls inside the second tie group
    const C = new Float32Array(N * D);
    for (let n = 0; n < N; n++) for (let d = 0; d < D; d++) C[n * D + d] = n % 3 === 0 ? 2 : 1;
    const Q = new Float32Array(B * D).fill(1);
    const r = scoreTopKSync({ data: Q, shape: [B, D] }, { data: C, shape: [N, D] }, k);
    const expected = Array.from({ length: N }, (_, n) => n).filter((n) => n % 3 === 0).slice(0, k);
    const rest = Array.from({ length: N }, (_, n) => n).filter((n) => n % 3 !== 0);
    for (let b = 0; b < B; b++) {
      expect(Array.from(r.ids.subarray(b * k, (b + 1) * k))).toEqual([...expected, ...rest].slice(0, k));
      expect(r.scores[b * k]).toBe(40);
      expect(r.scores[b * k + k - 1]).toBe(20);
    }
  });
  it.each([1, 64])('keeps ties by id through many compactions of a long list (B=%i)', (B) => {
    setIsa(isa);
    // 3,000 rows in 7 exact score levels, in scrambled order, k = 100: each thread's buffer of 2k fills and is cut to
    // the best k many times, with the cut inside a tie group each time.
    const [N, D, k] = [3000, 8, 100];
    const level = (n: number) => (n * 37) % 7;
    const C = new Float32Array(N * D);
    for (let n = 0; n < N; n++) C.fill(level(n), n * D, (n + 1) * D);
    const Q = new Float32Array(B * D).fill(1);
    const r = scoreTopKSync({ data: Q, shape: [B, D] }, { data: C, shape: [N, D] }, k);
    const expected = Array.from({ length: N }, (_, n) => n).sort((a, b) => level(b) - level(a) || a - b).slice(0, k);
    for (let b = 0; b < B; b++) expect(Array.from(r.ids.subarray(b * k, (b + 1) * k))).toEqual(expected);
  });
  it.each([
    [1, 16],
    [4, 16],
    [64, 30],
    [1, 100],
    [64, 100],
    [40, 257],
  ])('keeps the exact top-k through the cuts of a long list of distinct and tied scores (B=%i, k=%i)', (B, k) => {
    setIsa(isa);
    // Each list's buffer is cut to its best k many times by select_smallest's quickselect (topk.h), and the lists are
    // merged by it. 6,000 rows whose scores are exact integers (two rows per level, in scrambled order), so a wrong
    // partition or threshold, a wrong key order for negative scores or a lost tie shows as a wrong id. Queries of both
    // signs; half of them score every row below zero.
    const [N, D] = [6000, 4];
    const level = (n: number) => ((n * 2654435761) % N) % 3000 - 1500;
    const C = new Float32Array(N * D);
    for (let n = 0; n < N; n++) C.set([level(n), 1, 0, 0], n * D);
    const Q = new Float32Array(B * D);
    const shift = (b: number) => (b % 4 < 2 ? b : b - 2000);
    for (let b = 0; b < B; b++) Q.set([b % 2 === 0 ? 1 : -1, shift(b), 0, 0], b * D);
    const r = scoreTopKSync({ data: Q, shape: [B, D] }, { data: C, shape: [N, D] }, k);
    for (let b = 0; b < B; b++) {
      const sign = b % 2 === 0 ? 1 : -1;
      const expected = Array.from({ length: N }, (_, n) => n).sort((x, y) => sign * (level(y) - level(x)) || x - y).slice(0, k);
      expect(Array.from(r.ids.subarray(b * k, (b + 1) * k))).toEqual(expected);
      expect(Array.from(r.scores.subarray(b * k, (b + 1) * k))).toEqual(expected.map((n) => sign * level(n) + shift(b)));
    }
  });
});

describe('dense kernels: variants, threads, async', () => {
  it('bf16 and f16 corpora stay within their stated tolerance of f32', () => {
    // bf16 keeps 8 significant bits (relative rounding <= 2^-9 per element), f16 11 bits (<= 2^-12).
    const [B, N, D] = [4, 500, 384];
    const Q = randomF32(B * D, 3);
    const Cf = randomF32(N * D, 4);
    const f32 = Tensor.from(Cf, [N, D]);
    const S32 = scoreSync(Q, f32).data;
    const scale = absDot(Q, Float64Array.from(Cf), B, N, D);
    for (const [dtype, bound] of [['bf16', 2 ** -8], ['f16', 2 ** -11]] as const) {
      const half = f32.to(dtype);
      const S = scoreSync(Q, half).data;
      let worst = 0;
      for (let i = 0; i < B * N; i++) worst = Math.max(worst, Math.abs((S[i] as number) - (S32[i] as number)) / (scale[i] as number));
      expect(worst).toBeLessThan(bound);
      expect(worst).toBeGreaterThan(0); // the check can fail: the formats really differ
      half.dispose();
    }
  });

  // From 32 questions (64 for a 2-byte corpus) a lone scan runs as GEMM blocks that the threads take as they come, each
  // keeping its own lists; B = 300 is two groups of queries, over a bf16 corpus and through a filter of allowed rows.
  it.each([
    [7, 'f32', false],
    [80, 'f32', false],
    [300, 'bf16', true],
  ] as const)('gives identical results with 1, 2 and 3 threads (B=%i, %s, filtered %s)', (B, dtype, filtered) => {
    const [N, D, k] = [20_000, 96, 25];
    const Q = randomF32(B * D, 21);
    const f32 = Tensor.from(randomF32(N * D, 22), [N, D]);
    const corpus = dtype === 'f32' ? f32 : f32.to(dtype);
    const options = filtered ? { rows: Int32Array.from({ length: 6000 }, (_, i) => 3 * i + (i % 3)) } : {};
    setThreads(1);
    const one = scoreTopKSync(Q, corpus, k, options);
    for (const threads of [2, 3]) {
      setThreads(threads);
      const many = scoreTopKSync(Q, corpus, k, options);
      expect(Array.from(many.ids)).toEqual(Array.from(one.ids));
      expect(Array.from(many.scores)).toEqual(Array.from(one.scores));
    }
    setThreads(caps.threads);
    if (filtered) for (const id of one.ids) expect(id % 3 === Math.floor(id / 3) % 3).toBe(true);
    expect(one.ids[0]).toBeGreaterThanOrEqual(0);
    corpus.dispose();
    if (corpus !== f32) f32.dispose();
  });

  // Many short parallel regions back to back: every task of every region must run exactly once while pool
  // threads poll between regions (a late thread once claimed the next region's first task and skipped it).
  it('runs every task of 400 back-to-back short kernel calls on 2 threads', () => {
    const [B, N, D, k] = [40, 300, 16, 3];
    const Q = randomF32(B * D, 41);
    const corpus = Tensor.from(randomF32(N * D, 42), [N, D]);
    setThreads(1);
    const want = Array.from(scoreSync(Q, corpus).data);
    const wantTop = Array.from(scoreTopKSync(Q, corpus, k).ids);
    setThreads(2);
    let bad = 0;
    for (let i = 0; i < 200; i++) {
      const got = scoreSync(Q, corpus).data;
      const top = scoreTopKSync(Q, corpus, k).ids;
      if (got.some((v, j) => v !== want[j]) || top.some((v, j) => v !== wantTop[j])) bad++;
    }
    setThreads(caps.threads);
    expect(bad).toBe(0);
    corpus.dispose();
  });

  it('async forms equal the sync forms', async () => {
    const [B, N, D, k] = [3, 5000, 50, 10];
    const Q = randomF32(B * D, 31);
    const corpus = Tensor.from(randomF32(N * D, 32), [N, D], 'bf16');
    const a = await scoreTopK(Q, corpus, k);
    const s = scoreTopKSync(Q, corpus, k);
    expect(Array.from(a.ids)).toEqual(Array.from(s.ids));
    expect(Array.from(a.scores)).toEqual(Array.from(s.scores));
    expect(Array.from((await score(Q, corpus)).data)).toEqual(Array.from(scoreSync(Q, corpus).data));
    const ids = Int32Array.from({ length: B * 4 }, (_, i) => i * 11);
    expect(Array.from((await gatherScores(Q, corpus, ids)).data)).toEqual(Array.from(gatherScoresSync(Q, corpus, ids).data));
    expect(a.hits(0).length).toBe(k);
    expect(a.hits(0)[0]).toEqual({ id: a.ids[0], score: a.scores[0] });
  });

  it('runs many async searches concurrently', async () => {
    const [N, D] = [3000, 32];
    const corpus = Tensor.from(randomF32(N * D, 41), [N, D]);
    const queries = Array.from({ length: 24 }, (_, i) => randomF32(D, 100 + i));
    const results = await Promise.all(queries.map((q) => scoreTopK(q, corpus, 5)));
    results.forEach((r, i) => expect(Array.from(r.ids)).toEqual(Array.from(scoreTopKSync(queries[i] as Float32Array, corpus, 5).ids)));
  });

  it('keeps the event loop free while an async search runs', async () => {
    const [N, D] = [200_000, 256];
    const corpus = Tensor.zeros([N, D]);
    corpus.data.fill(0.25);
    // Enough queries for one search of about 60 ms on this machine, whatever its speed.
    let B = 8;
    for (;;) {
      const t = performance.now();
      await scoreTopK(randomF32(B * D, 2), corpus, 10);
      const ms = performance.now() - t;
      if (ms > 5 || B >= 4096) {
        B = Math.min(4096, Math.ceil((B * 60) / Math.max(ms, 1)));
        break;
      }
      B *= 4;
    }
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const t0 = performance.now();
    await scoreTopK(randomF32(B * D, 1), corpus, 10);
    const elapsed = performance.now() - t0;
    clearInterval(timer);
    // A blocked loop would tick at most once; a free one ticks about once per millisecond.
    expect(elapsed, 'the search must last long enough for the check to mean something').toBeGreaterThan(20);
    expect(ticks).toBeGreaterThan(Math.min(10, elapsed / 10));
    corpus.dispose();
  });
});
