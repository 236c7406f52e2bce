import { afterAll, describe, expect, it } from 'vitest';

import { QuorumError, Tensor, capabilities, setIsa, setThreads, type Isa } from '../lib/index.js';
import { maxSim, maxSimBackwardSync, maxSimSync } from '../lib/entries/kernels.js';
import { maxSimRef } from './reference/maxsim.js';
import { decoded, floatDtypes, randomF32, randomShapes, rng } from './helpers.js';

const caps = capabilities();
const isas = caps.availableIsas as Isa[];
afterAll(() => setIsa(caps.isa as Isa));

function randomLengths(N: number, maxLd: number, seed: number): Int32Array {
  const r = rng(seed);
  return Int32Array.from({ length: N }, () => Math.floor(((r() + 1) / 2) * (maxLd + 1)));
}

function starts(lengths: Int32Array): Int32Array {
  const s = new Int32Array(lengths.length);
  for (let i = 1; i < lengths.length; i++) s[i] = (s[i - 1] as number) + (lengths[i - 1] as number);
  return s;
}

const sum = (a: Int32Array) => a.reduce((x, y) => x + y, 0);

// [nq, Lq, dim, N, max Ld]
const shapes: Array<[number, number, number, number, number]> = [
  [1, 1, 1, 1, 1],
  [1, 32, 128, 20, 40],
  [3, 5, 17, 7, 9],
  [2, 33, 31, 13, 50], // Lq not a multiple of the vector width, ragged tiles
  [1, 17, 64, 3, 200],
  [4, 48, 8, 30, 6],
  // Four more drawn at random (seeded).
  ...(randomShapes(2027, 4, [[1, 4], [1, 40], [1, 130], [1, 25], [1, 60]]) as Array<[number, number, number, number, number]>),
];

function expectClose(got: ArrayLike<number>, want: ArrayLike<number>, tol: number) {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as number;
    const g = got[i] as number;
    if (!Number.isFinite(w)) expect(g).toBe(w);
    else expect(Math.abs(g - w)).toBeLessThanOrEqual(tol * (1 + Math.abs(w)));
  }
}

describe.each(isas)('maxSim, %s variant', (isa) => {
  describe.each(floatDtypes)('documents %s', (dtype) => {
    it.each(shapes)('nq=%i Lq=%i dim=%i N=%i maxLd=%i matches the reference (packed and padded)', (nq, lq, dim, N, maxLd) => {
      setIsa(isa);
      const q = randomF32(nq * lq * dim, lq * 31 + dim);
      const lengths = randomLengths(N, maxLd, N + maxLd);
      lengths[0] = Math.max(1, lengths[0] as number);
      const rows = sum(lengths);
      const tokens = Tensor.from(randomF32(rows * dim, rows + dim), [rows, dim], dtype);
      const T = decoded(tokens);
      const ref = maxSimRef({ q, nq, lq, dim, tokens: T, start: starts(lengths), length: lengths });
      const got = maxSimSync({ data: q, shape: [nq, lq, dim] }, { tokens, lengths }, { argmax: true });
      expect(got.scores.shape).toEqual([nq, N]);
      expectClose(got.scores.data, ref.scores, 2e-5);
      // The arg-max token reaches the max (an exact tie may pick another token only within rounding).
      const am = got.argmax!.data;
      for (let b = 0; b < nq; b++)
        for (let n = 0; n < N; n++)
          for (let i = 0; i < lq; i++) {
            const idx = (b * N + n) * lq + i;
            if ((lengths[n] as number) === 0) {
              expect(am[idx]).toBe(-1);
              continue;
            }
            if (am[idx] === ref.argmax[idx]) continue;
            const dot = (t: number) => {
              let s = 0;
              for (let j = 0; j < dim; j++) s += (q[(b * lq + i) * dim + j] as number) * (T[((starts(lengths)[n] as number) + t) * dim + j] as number);
              return s;
            };
            expect(Math.abs(dot(am[idx] as number) - dot(ref.argmax[idx] as number))).toBeLessThan(1e-4);
          }
      // Padded [N, Ld, dim] gives the same scores.
      const Ld = Math.max(1, ...lengths);
      const padded = new Float32Array(N * Ld * dim);
      const st = starts(lengths);
      for (let n = 0; n < N; n++) for (let x = 0; x < (lengths[n] as number) * dim; x++) padded[n * Ld * dim + x] = T[(st[n] as number) * dim + x] as number;
      const pt = Tensor.from(padded, [N, Ld, dim], dtype);
      const gp = maxSimSync({ data: q, shape: [nq, lq, dim] }, { tokens: pt, lengths });
      expect(Array.from(gp.scores.data)).toEqual(Array.from(got.scores.data));
    });
  });

  it('honours query and token masks; empty documents score -Infinity, or 0 with clampZero', () => {
    setIsa(isa);
    const nq = 2, lq = 5, dim = 9, N = 4;
    const lengths = Int32Array.from([3, 0, 4, 2]);
    const rows = sum(lengths);
    const q = randomF32(nq * lq * dim, 5);
    const tok = randomF32(rows * dim, 6);
    const queryMask = Uint8Array.from([1, 0, 1, 1, 0, 1, 1, 1, 1, 0]);
    const tokenMask = Uint8Array.from([1, 0, 1, 0, 1, 1, 0, 0, 0]); // doc 3 fully masked
    for (const clampZero of [false, true]) {
      const ref = maxSimRef({ q, nq, lq, dim, tokens: tok, start: starts(lengths), length: lengths, queryMask, tokenMask, clampZero });
      const got = maxSimSync({ data: q, shape: [nq, lq, dim] }, { tokens: { data: tok, shape: [rows, dim] }, lengths, tokenMask }, { queryMask, clampZero, argmax: true });
      expectClose(got.scores.data, ref.scores, 2e-5);
      expect(Array.from(got.argmax!.data)).toEqual(Array.from(ref.argmax));
      expect(got.scores.data[1]).toBe(clampZero ? 0 : -Infinity);
      expect(got.scores.data[3]).toBe(clampZero ? 0 : -Infinity);
    }
  });

  it('clampZero differs from the default exactly when every token is dissimilar', () => {
    setIsa(isa);
    const q = Float32Array.from([1, 0, 0, 1]); // 2 query tokens
    const tokens = { data: Float32Array.from([-1, 0, -2, 0]), shape: [2, 2] as const };
    const plain = maxSimSync({ data: q, shape: [2, 2] }, { tokens, lengths: [2] });
    const clamped = maxSimSync({ data: q, shape: [2, 2] }, { tokens, lengths: [2] }, { clampZero: true });
    expect(plain.scores.data[0]).toBeCloseTo(-1 + 0, 6); // token 0 gives -1 and 0
    expect(clamped.scores.data[0]).toBe(0);
  });

  it('ties go to the lowest token index', () => {
    setIsa(isa);
    const dim = 20;
    const v = randomF32(dim, 9);
    const tok = new Float32Array(7 * dim);
    for (let t = 0; t < 7; t++) tok.set(t === 2 || t === 5 ? v : randomF32(dim, 100 + t).map((x) => x * 0.01), t * dim);
    const got = maxSimSync({ data: v, shape: [1, dim] }, { tokens: { data: tok, shape: [7, dim] }, lengths: [7] }, { argmax: true });
    expect(got.argmax!.data[0]).toBe(2);
  });
});

describe('maxSim gradients', () => {
  it('match central finite differences of the reference', () => {
    const nq = 2, lq = 4, dim = 6, N = 3;
    const lengths = Int32Array.from([3, 5, 2]);
    const rows = sum(lengths);
    const q = Float64Array.from(randomF32(nq * lq * dim, 11));
    const tok = Float64Array.from(randomF32(rows * dim, 12));
    const grad = Float32Array.from([0.5, -1.25, 2, 1, 0.75, -0.5]);
    const objective = (qq: ArrayLike<number>, tt: ArrayLike<number>) => {
      const s = maxSimRef({ q: qq, nq, lq, dim, tokens: tt, start: starts(lengths), length: lengths }).scores;
      return s.reduce((acc, x, i) => acc + x * (grad[i] as number), 0);
    };
    const fwd = maxSimSync({ data: Float32Array.from(q), shape: [nq, lq, dim] }, { tokens: { data: Float32Array.from(tok), shape: [rows, dim] }, lengths }, { argmax: true });
    const g = maxSimBackwardSync(
      { data: Float32Array.from(q), shape: [nq, lq, dim] },
      { tokens: { data: Float32Array.from(tok), shape: [rows, dim] }, lengths },
      fwd.argmax!,
      grad,
    );
    expect(g.dQueries.shape).toEqual([nq, lq, dim]);
    expect(g.dDocuments.shape).toEqual([rows, dim]);
    const h = 1e-4;
    for (let i = 0; i < q.length; i++) {
      const a = Float64Array.from(q), b = Float64Array.from(q);
      a[i]! += h;
      b[i]! -= h;
      const fd = (objective(a, tok) - objective(b, tok)) / (2 * h);
      expect(Math.abs((g.dQueries.data[i] as number) - fd)).toBeLessThan(1e-4);
    }
    for (let i = 0; i < tok.length; i++) {
      const a = Float64Array.from(tok), b = Float64Array.from(tok);
      a[i]! += h;
      b[i]! -= h;
      const fd = (objective(q, a) - objective(q, b)) / (2 * h);
      expect(Math.abs((g.dDocuments.data[i] as number) - fd)).toBeLessThan(1e-4);
    }
  });
});

describe('maxSim gradients against the reference arg-max, random shapes', () => {
  // dQ[b, i] = sum_n grad[b, n] D[arg(b, n, i)], dD[arg(b, n, i)] += grad[b, n] Q[b, i], from the reference's arg-max.
  function referenceGradients(Q: Float32Array, D: Float64Array, arg: Int32Array, grad: Float32Array, nq: number, lq: number, dim: number, st: Int32Array) {
    const N = st.length;
    const dQ = new Float64Array(Q.length);
    const dD = new Float64Array(D.length);
    for (let b = 0; b < nq; b++)
      for (let n = 0; n < N; n++)
        for (let i = 0; i < lq; i++) {
          const t = arg[(b * N + n) * lq + i]!;
          if (t < 0) continue;
          const row = st[n]! + t;
          const g = grad[b * N + n]!;
          for (let j = 0; j < dim; j++) {
            dQ[(b * lq + i) * dim + j]! += g * D[row * dim + j]!;
            dD[row * dim + j]! += g * Q[(b * lq + i) * dim + j]!;
          }
        }
    return { dQ, dD };
  }

  for (const dtype of floatDtypes)
    for (const clampZero of [false, true])
      it(`documents ${dtype}${clampZero ? ', clampZero with a query mask and an empty document' : ''}`, () => {
        const r = rng(dtype.length * 7 + (clampZero ? 1 : 0));
        const draw = (lo: number, hi: number) => lo + Math.floor(((r() + 1) / 2) * (hi - lo + 1));
        for (let trial = 0; trial < 6; trial++) {
          const [nq, lq, dim, N] = [draw(1, 3), draw(1, 6), draw(2, 19), draw(2, 6)];
          const lengths = Int32Array.from({ length: N }, () => draw(1, 7));
          // -Infinity scores have no gradient to give: an empty document only with clampZero, where it scores 0.
          if (clampZero) lengths[draw(0, N - 1)] = 0;
          const rows = sum(lengths);
          const q = randomF32(nq * lq * dim, 300 + trial);
          const tokens = Tensor.from(randomF32(rows * dim, 400 + trial), [rows, dim], dtype);
          const queryMask = clampZero ? Uint8Array.from({ length: nq * lq }, (_, i) => (i % 3 === 1 ? 0 : 1)) : undefined;
          const D = decoded(tokens);
          const st = starts(lengths);
          const ref = maxSimRef({ q, nq, lq, dim, tokens: D, start: st, length: lengths, clampZero, ...(queryMask ? { queryMask } : {}) });
          const docs = { tokens, lengths };
          const fwd = maxSimSync({ data: q, shape: [nq, lq, dim] }, docs, { argmax: true, clampZero, ...(queryMask ? { queryMask } : {}) });
          expect(Array.from(fwd.argmax!.data)).toEqual(Array.from(ref.argmax));
          if (clampZero) expect(ref.argmax.some((a) => a === -1)).toBe(true);
          const grad = Float32Array.from({ length: nq * N }, () => r());
          const g = maxSimBackwardSync({ data: q, shape: [nq, lq, dim] }, docs, fwd.argmax!, grad, queryMask ? { queryMask } : {});
          const want = referenceGradients(q, D, ref.argmax, grad, nq, lq, dim, st);
          expectClose(g.dQueries.data, want.dQ, 1e-5);
          expectClose(g.dDocuments.data, want.dD, 1e-5);
          expect(g.dDocuments.shape).toEqual([rows, dim]);
        }
      });
});

describe('maxSim over selected documents', () => {
  it.each(isas)('%s: select scores the named documents in place, as the full call gathered (packed and padded, repeats)', (isa) => {
    setIsa(isa);
    for (const [nq, lq, dim, N, maxLd] of shapes) {
      const q = { data: randomF32(nq * lq * dim, lq + 5 * dim), shape: [nq, lq, dim] };
      const lengths = randomLengths(N, maxLd, 3 * N + maxLd);
      const rows = sum(lengths);
      const tokens = Tensor.from(randomF32(rows * dim, rows + 2 * dim), [rows, dim]);
      const r = rng(N + lq);
      const select = Int32Array.from({ length: 1 + 2 * N }, () => Math.floor(((r() + 1) / 2) * N) % N);
      const full = maxSimSync(q, { tokens, lengths }, { argmax: true });
      const got = maxSimSync(q, { tokens, lengths, select }, { argmax: true });
      const M = select.length;
      expect(got.scores.shape).toEqual([nq, M]);
      expect(got.argmax!.shape).toEqual([nq, M, lq]);
      for (let b = 0; b < nq; b++)
        for (let m = 0; m < M; m++) {
          const n = select[m] as number;
          expect(got.scores.data[b * M + m]).toBe(full.scores.data[b * N + n]);
          for (let i = 0; i < lq; i++) expect(got.argmax!.data[(b * M + m) * lq + i]).toBe(full.argmax!.data[(b * N + n) * lq + i]);
        }
      // Padded documents select the same way.
      const Ld = Math.max(1, ...lengths);
      const padded = new Float32Array(N * Ld * dim);
      const st = starts(lengths);
      for (let n = 0; n < N; n++) padded.set(tokens.data.subarray((st[n] as number) * dim, ((st[n] as number) + (lengths[n] as number)) * dim), n * Ld * dim);
      const gp = maxSimSync(q, { tokens: { data: padded, shape: [N, Ld, dim] }, lengths, select });
      expect(Array.from(gp.scores.data)).toEqual(Array.from(got.scores.data));
    }
  });

  it('the Promise form equals the Sync form; an empty selection scores nothing', async () => {
    const q = { data: randomF32(2 * 3 * 8, 11), shape: [2, 3, 8] };
    const docs = { tokens: { data: randomF32(10 * 8, 12), shape: [10, 8] }, lengths: [4, 0, 6] };
    const a = await maxSim(q, { ...docs, select: [2, 0, 2] });
    expect(Array.from(a.scores.data)).toEqual(Array.from(maxSimSync(q, { ...docs, select: [2, 0, 2] }).scores.data));
    expect(maxSimSync(q, { ...docs, select: [] }).scores.shape).toEqual([2, 0]);
    expect(maxSimSync(q, { ...docs, select: [1] }).scores.data[0]).toBe(-Infinity);
  });

  const docs = { tokens: { data: randomF32(10 * 8, 2), shape: [10, 8] as const }, lengths: [4, 6] };
  const q = { data: randomF32(8, 1), shape: [1, 8] as const };
  it.each([
    ['an id past the documents', [0, 2], 'ERR_RANGE'],
    ['a negative id', [-1], 'ERR_RANGE'],
    ['a 2-D selection', Tensor.from([0, 1], [1, 2], 'i32'), 'ERR_SHAPE'],
    ['fractional ids', [0.5], 'ERR_RANGE'],
  ] as const)('rejects %s', (_name, select, code) => {
    expect(() => maxSimSync(q, { ...docs, select: select as never })).toThrow(expect.objectContaining({ code }));
  });
});

describe('maxSim API', () => {
  const q = { data: randomF32(3 * 8, 1), shape: [3, 8] as const };
  const tokens = { data: randomF32(10 * 8, 2), shape: [10, 8] as const };

  it('async equals sync', async () => {
    const a = await maxSim(q, { tokens, lengths: [4, 6] }, { argmax: true });
    const s = maxSimSync(q, { tokens, lengths: [4, 6] }, { argmax: true });
    expect(Array.from(a.scores.data)).toEqual(Array.from(s.scores.data));
    expect(Array.from(a.argmax!.data)).toEqual(Array.from(s.argmax!.data));
  });

  const bad: Array<[string, () => unknown, string]> = [
    ['lengths that do not sum to the rows', () => maxSimSync(q, { tokens, lengths: [4, 5] }), 'ERR_SHAPE'],
    ['a negative length', () => maxSimSync(q, { tokens, lengths: [12, -2] }), 'ERR_RANGE'],
    ['a dimension mismatch', () => maxSimSync({ data: randomF32(6, 1), shape: [1, 6] }, { tokens, lengths: [10] }), 'ERR_SHAPE'],
    ['integer documents', () => maxSimSync(q, { tokens: { data: new Int32Array(80), shape: [10, 8] }, lengths: [10] }), 'ERR_DTYPE'],
    ['a padded length above Ld', () => maxSimSync(q, { tokens: { data: randomF32(80, 3), shape: [2, 5, 8] }, lengths: [5, 6] }), 'ERR_RANGE'],
    ['a query mask of the wrong size', () => maxSimSync(q, { tokens, lengths: [10] }, { queryMask: [1, 1] }), 'ERR_SHAPE'],
    ['a token mask of the wrong size', () => maxSimSync(q, { tokens, lengths: [10], tokenMask: [1] }), 'ERR_SHAPE'],
    ['1-D queries', () => maxSimSync({ data: randomF32(8, 1), shape: [8] }, { tokens, lengths: [10] }), 'ERR_SHAPE'],
    [
      'an argmax outside its document',
      () => maxSimBackwardSync(q, { tokens, lengths: [10] }, Tensor.from([0, 10, 0], [1, 1, 3], 'i32'), Float32Array.from([1])),
      'ERR_RANGE',
    ],
    ['an argmax of the wrong shape', () => maxSimBackwardSync(q, { tokens, lengths: [10] }, Tensor.from([0, 1], [1, 1, 2], 'i32'), Float32Array.from([1])), 'ERR_SHAPE'],
  ];
  it.each(bad)('rejects %s', (_name, fn, code) => {
    expect(fn).toThrow(QuorumError);
    try {
      fn();
    } catch (e) {
      expect((e as QuorumError).code).toBe(code);
    }
  });

  it('setThreads while async calls run is safe and changes no result', async () => {
    const docs = { tokens: { data: randomF32(400 * 8, 7), shape: [400, 8] as const }, lengths: new Int32Array(100).fill(4) };
    const want = Array.from(maxSimSync(q, docs).scores.data);
    const before = capabilities().threads;
    try {
      for (let i = 0; i < 20; i++) {
        const p = maxSim(q, docs);
        setThreads(i % 2 ? 1 : 3);
        expect(Array.from((await p).scores.data)).toEqual(want);
      }
    } finally {
      setThreads(before);
    }
  });

  it('rejects a disposed tensor, and async errors keep their code', async () => {
    const t = Tensor.from(tokens.data, [10, 8]);
    t.dispose();
    expect(() => maxSimSync(q, { tokens: t, lengths: [10] })).toThrow(expect.objectContaining({ code: 'ERR_DISPOSED' }));
    await expect(maxSim(q, { tokens, lengths: [3, 3] })).rejects.toMatchObject({ code: 'ERR_SHAPE' });
  });
});
