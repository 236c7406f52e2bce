// Metadata filters inside the search (lib/filter.ts, scoreTopK's rows; docs/methods/kernels.md#filtered-search):
// compileFilter against a plain evaluator on random metadata and random nested filters, and the filtered top-k
// against brute force over the filtered corpus on every ISA, both scan paths (few queries: dot products; many:
// GEMM), f32 and bf16, k beyond the allowed rows; with typed errors for bad filters and bad rows.
import { afterAll, describe, expect, it } from 'vitest';

import { MetadataTable, QuorumError, Tensor, capabilities, compileFilter, scoreTopK, scoreTopKSync, setIsa, type Filter, type Isa, type PassageMetadata } from '../lib/index.js';
import { decoded, randomF32, rng } from './helpers.js';

const caps = capabilities();
afterAll(() => setIsa(caps.isa as Isa));

const LANGS = ['en', 'de', 'fr', 'ja'];
function records(n: number, seed: number): PassageMetadata[] {
  const r = rng(seed);
  const u = () => (r() + 1) / 2;
  return Array.from({ length: n }, (_, i) => {
    const rec: Record<string, string | number | Array<string | number>> = {};
    if (u() > 0.1) rec.lang = LANGS[Math.floor(u() * LANGS.length) % LANGS.length]!;
    if (u() > 0.2) rec.year = 1990 + Math.floor(u() * 35);
    if (u() > 0.5) rec.tag = Array.from({ length: 1 + Math.floor(u() * 3) }, () => `t${Math.floor(u() * 5)}`);
    if (i % 7 === 0) rec.code = i % 3 === 0 ? 7 : '7';  // a number and a string that must not equal each other
    return rec;
  });
}

/** Plain evaluation of one record. */
function matches(f: Filter, rec: PassageMetadata): boolean {
  if ('and' in f) return f.and.every((g) => matches(g, rec));
  if ('or' in f) return f.or.some((g) => matches(g, rec));
  if ('not' in f) return !matches(f.not, rec);
  const raw = rec[f.field];
  const values = raw === undefined || raw === null ? [] : Array.isArray(raw) ? raw : [raw];
  if ('eq' in f) return values.some((v) => v === f.eq);
  if ('in' in f) return values.some((v) => f.in.includes(v));
  const b = f.range;
  return values.some((v) => typeof v === 'number' && (b.gt === undefined || v > b.gt) && (b.gte === undefined || v >= b.gte) && (b.lt === undefined || v < b.lt) && (b.lte === undefined || v <= b.lte));
}

function randomFilter(r: () => number, depth: number): Filter {
  const u = () => (r() + 1) / 2;
  const pick = u();
  if (depth > 0 && pick < 0.3) { const parts = [randomFilter(r, depth - 1), randomFilter(r, depth - 1)]; return u() < 0.5 ? { and: parts } : { or: parts }; }
  if (depth > 0 && pick < 0.4) return { not: randomFilter(r, depth - 1) };
  const leaf = u();
  if (leaf < 0.3) return { field: 'lang', eq: LANGS[Math.floor(u() * 4) % 4]! };
  if (leaf < 0.45) return { field: 'tag', in: [`t${Math.floor(u() * 5)}`, `t${Math.floor(u() * 5)}`] };
  if (leaf < 0.55) return { field: 'code', eq: u() < 0.5 ? 7 : '7' };
  const lo = 1990 + Math.floor(u() * 35);
  const bounds = [{ gte: lo }, { gt: lo }, { lt: lo }, { lte: lo }, { gte: lo, lt: lo + 5 }, { gt: lo - 3, lte: lo + 3 }];
  return { field: 'year', range: bounds[Math.floor(u() * bounds.length) % bounds.length]! };
}

describe('compileFilter', () => {
  it('gives the rows a plain evaluation of every record keeps, for random nested filters', () => {
    const recs = records(500, 3);
    const table = MetadataTable.from(recs);
    expect(table.size).toBe(500);
    const r = rng(11);
    for (let i = 0; i < 300; i++) {
      const f = randomFilter(r, 3);
      const want = recs.flatMap((rec, row) => (matches(f, rec) ? [row] : []));
      expect(Array.from(compileFilter(f, table)), JSON.stringify(f)).toEqual(want);
    }
    // A field no row has: nothing matches; its negation, everything.
    expect(compileFilter({ field: 'nope', eq: 'x' }, table)).toHaveLength(0);
    expect(compileFilter({ not: { field: 'nope', eq: 'x' } }, table)).toHaveLength(500);
  });

  it('refuses malformed filters and metadata with ERR_ARG naming the part', () => {
    const table = MetadataTable.from(records(20, 1));
    const bad: unknown[] = [
      null, [], {}, { field: 'lang' }, { field: 'lang', eq: 'en', in: ['de'] }, { field: 'lang', eq: {} }, { field: 'year', eq: Number.NaN },
      { field: 'lang', in: 'en' }, { field: 'year', range: {} }, { field: 'year', range: { gte: '3' } }, { field: 'year', range: { gt: 1, gte: 2 } },
      { field: 'year', range: { around: 3 } }, { and: [] }, { or: 'x' }, { and: [{ field: 'lang', eq: 'en' }], or: [] }, { not: null }, { field: 3, eq: 'x' },
    ];
    for (const f of bad) {
      expect(() => compileFilter(f as Filter, table), JSON.stringify(f)).toThrow(QuorumError);
      try {
        compileFilter(f as Filter, table);
      } catch (e) {
        expect((e as QuorumError).code).toBe('ERR_ARG');
        expect((e as Error).message).toMatch(/^filter/);
      }
    }
    expect(() => compileFilter({ field: 'lang', eq: 'en' }, {} as MetadataTable)).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(() => MetadataTable.from([])).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(() => MetadataTable.from([{ lang: { x: 1 } as never }])).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
    expect(() => MetadataTable.from([null as never])).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
  });
});

/** The top-k of the allowed rows by brute force: scores of the stored values, descending, ties to the lower row. */
function reference(q: Float32Array, C: Float64Array, B: number, D: number, rows: Int32Array, k: number) {
  return Array.from({ length: B }, (_, b) => {
    const hits = Array.from(rows, (row) => {
      let s = 0;
      for (let d = 0; d < D; d++) s += q[b * D + d]! * C[row * D + d]!;
      return { row, s };
    });
    hits.sort((x, y) => y.s - x.s || x.row - y.row);
    return hits.slice(0, k);
  });
}

describe.each(caps.availableIsas as Isa[])('scoreTopK with rows, %s variant', (isa) => {
  it.each([
    ['f32', 3],
    ['f32', 40],  // the GEMM path
    ['bf16', 5],
    ['bf16', 70],
  ] as const)('%s corpus, B = %i: the filtered top-k equals brute force over the allowed rows', async (dtype, B) => {
    setIsa(isa);
    const N = 700, D = 33;
    const corpus = Tensor.from(randomF32(N * D, 7), [N, D], dtype);
    const C = decoded(corpus);
    const q = randomF32(B * D, 8);
    const table = MetadataTable.from(records(N, 5));
    for (const [f, k] of [[{ field: 'lang', eq: 'ja' }, 10], [{ and: [{ field: 'year', range: { gte: 2010 } }, { field: 'lang', in: ['en', 'de'] }] }, 7], [{ field: 'code', eq: 7 }, 200]] as const) {
      const rows = compileFilter(f as Filter, table);
      expect(rows.length).toBeGreaterThan(0);
      const top = await scoreTopK(Tensor.from(q, [B, D]), corpus, k, { rows });
      const want = reference(q, C, B, D, rows, k);
      for (let b = 0; b < B; b++) {
        const got = top.hits(b);
        expect(got.length).toBe(Math.min(k, rows.length));
        got.forEach((h, j) => {
          expect(h.score).toBeCloseTo(want[b]![j]!.s, 3);
          // Ids agree wherever the reference's neighbours are not within rounding of each other.
          const w = want[b]!;
          if (Math.abs(w[j]!.s - (w[j + 1]?.s ?? -Infinity)) > 1e-3 && Math.abs(w[j]!.s - (w[j - 1]?.s ?? Infinity)) > 1e-3) expect(h.id).toBe(w[j]!.row);
        });
        // Every hit is an allowed row; past the allowed rows, padding.
        const allowed = new Set(rows);
        expect(got.every((h) => allowed.has(h.id))).toBe(true);
        for (let j = rows.length; j < k; j++) expect(top.ids[b * k + j]).toBe(-1);
      }
    }
  });
});

describe('scoreTopK rows, edge cases', () => {
  const corpus = Tensor.from(randomF32(50 * 4, 2), [50, 4]);
  const q = Tensor.from(randomF32(2 * 4, 3), [2, 4]);
  it('equals the unfiltered search with every row allowed; an empty list gives only padding', () => {
    const all = scoreTopKSync(q, corpus, 5);
    const every = scoreTopKSync(q, corpus, 5, { rows: Int32Array.from({ length: 50 }, (_, i) => i) });
    expect(Array.from(every.ids)).toEqual(Array.from(all.ids));
    expect(Array.from(every.scores)).toEqual(Array.from(all.scores));
    const none = scoreTopKSync(q, corpus, 3, { rows: new Int32Array(0) });
    expect(Array.from(none.ids)).toEqual([-1, -1, -1, -1, -1, -1]);
  });
  it.each([
    ['rows out of order', [3, 2], 'ERR_ARG'],
    ['a repeated row', [2, 2], 'ERR_ARG'],
    ['a row past the corpus', [1, 50], 'ERR_RANGE'],
    ['a negative row', [-1], 'ERR_RANGE'],
    ['2-D rows', Tensor.from([0, 1], [1, 2], 'i32'), 'ERR_SHAPE'],
    ['float rows', Tensor.from([0, 1], [2]), 'ERR_DTYPE'],
  ] as const)('refuses %s', async (_name, rows, code) => {
    expect(() => scoreTopKSync(q, corpus, 3, { rows: rows as never })).toThrow(expect.objectContaining({ code }));
    await expect(scoreTopK(q, corpus, 3, { rows: rows as never })).rejects.toMatchObject({ code });
  });
});
