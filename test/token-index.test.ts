// CAME's local-expert index (lib/methods/came/token-index.ts, native/kernels/centroid_index.h): the centroid stage
// against a plain reference (random shapes, empty passages, filters, every nprobe), kmeans on separated clusters,
// and the TokenIndex's exact path, passage updates and saved file against brute-force MaxSim.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { kmeans } from '../lib/dense-index.js';
import { maxSim } from '../lib/maxsim.js';
import { TokenIndex } from '../lib/methods/came/token-index.js';
import { writeSafetensors } from '../lib/io/safetensors.js';
import { awaitNative, callNative } from '../lib/errors.js';
import { coreAddon, type NativeTensorHandle } from '../lib/native.js';
import { Tensor } from '../lib/tensor.js';
import { asyncCode, code } from './basics.js';

const root = mkdtempSync(join(tmpdir(), 'quorum-token-index-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** n unit rows of dim, from a normal-ish draw. */
function unitRows(n: number, dim: number, r: () => number): Float32Array {
  const v = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = 0; j < dim; j++) s += (v[i * dim + j] = r() + r() + r() - 1.5) ** 2;
    for (let j = 0; j < dim; j++) v[i * dim + j]! /= Math.sqrt(s) || 1;
  }
  return v;
}

interface NativeCentroidIndex {
  candidates(q: NativeTensorHandle, nprobe: number, keep: number, allowed: NativeTensorHandle | null, async: boolean): Promise<{ rows: NativeTensorHandle; scores: NativeTensorHandle; count: number }>;
  dispose(): void;
}
const Native = (coreAddon() as unknown as { CentroidIndex: new (c: NativeTensorHandle, codes: NativeTensorHandle, lengths: NativeTensorHandle) => NativeCentroidIndex }).CentroidIndex;
const make = (c: Float32Array, dim: number, codes: Int32Array, lengths: Int32Array): NativeCentroidIndex => {
  const ix = callNative(() => new Native(Tensor.wrap(c, [c.length / dim, dim], 'f32').handle, Tensor.wrap(codes, [codes.length], 'i32').handle, Tensor.wrap(lengths, [lengths.length], 'i32').handle));
  // Through awaitNative, as the library calls it: rejections become QuorumErrors.
  return { candidates: async (...a) => awaitNative(callNative(() => ix.candidates(...a))), dispose: () => ix.dispose() };
};

/** The plain reference: C = Q centroidsᵀ, the candidates by nprobe lists, approx as a sum of maxima. */
function reference(c: Float32Array, dim: number, codes: Int32Array, lengths: Int32Array, q: Float32Array, nprobe: number, allowed?: Int32Array): Map<number, number> {
  const C = c.length / dim;
  const lq = q.length / dim;
  const S = Array.from({ length: lq }, (_, j) => Array.from({ length: C }, (_, k) => {
    let s = 0;
    for (let d = 0; d < dim; d++) s += q[j * dim + d]! * c[k * dim + d]!;
    return s;
  }));
  const starts = [0];
  for (const l of lengths) starts.push(starts.at(-1)! + l);
  const ok = (p: number) => !allowed || allowed.includes(p);
  const cand = new Set<number>();
  for (let p = 0; p < lengths.length; p++) {
    if (!lengths[p] || !ok(p)) continue;
    if (nprobe === 0 || nprobe >= C) cand.add(p);
    else {
      const mine = new Set(codes.subarray(starts[p]!, starts[p + 1]!));
      for (let j = 0; j < lq; j++) {
        const best = S[j]!.map((s, k) => ({ s, k })).sort((a, b) => b.s - a.s || a.k - b.k).slice(0, nprobe);
        if (best.some((b) => mine.has(b.k))) cand.add(p);
      }
    }
  }
  const out = new Map<number, number>();
  for (const p of cand) {
    let total = 0;
    for (let j = 0; j < lq; j++) {
      let m = -Infinity;
      for (let t = starts[p]!; t < starts[p + 1]!; t++) m = Math.max(m, S[j]![codes[t]!]!);
      total += m;
    }
    out.set(p, total);
  }
  return out;
}

describe('the centroid stage (CentroidIndex)', () => {
  it('returns the best candidates by approximate MaxSim, as the plain reference, for random shapes', async () => {
    const r = rng(11);
    for (let trial = 0; trial < 40; trial++) {
      const dim = 1 + Math.floor(r() * 20);
      const C = 1 + Math.floor(r() * 12);
      const P = 1 + Math.floor(r() * 30);
      const lengths = Int32Array.from({ length: P }, () => Math.floor(r() * 6));  // some passages have no tokens
      const total = lengths.reduce((a, b) => a + b, 0);
      const codes = Int32Array.from({ length: total }, () => Math.floor(r() * C));
      const cent = unitRows(C, dim, r);
      const lq = 1 + Math.floor(r() * 9);
      const q = unitRows(lq, dim, r);
      const nprobe = [0, 1, 2, C, C + 3][trial % 5]!;
      const allowed = trial % 3 === 0 ? Int32Array.from({ length: P }, (_, i) => i).filter(() => r() < 0.5) : undefined;
      const keep = 1 + Math.floor(r() * P);
      const ix = make(cent, dim, codes, lengths);
      const got = await ix.candidates(Tensor.wrap(q, [lq, dim], 'f32').handle, nprobe, keep, allowed ? Tensor.wrap(allowed, [allowed.length], 'i32').handle : null, true);
      const rows = Tensor.fromHandle<'i32'>(got.rows).data.subarray(0, got.count);
      const scores = Tensor.fromHandle<'f32'>(got.scores).data.subarray(0, got.count);
      const want = reference(cent, dim, codes, lengths, q, nprobe, allowed);
      const sorted = [...want.values()].sort((a, b) => b - a);
      expect(got.count, `trial ${trial}`).toBe(Math.min(keep, want.size));
      rows.forEach((p, i) => {
        expect(want.has(p), `trial ${trial}: passage ${p} is a candidate`).toBe(true);
        expect(scores[i]).toBeCloseTo(want.get(p)!, 4);  // its own approximate score
        expect(scores[i]).toBeCloseTo(sorted[i]!, 4);  // and the i-th best
        if (i) expect(scores[i]! <= scores[i - 1]! || (scores[i] === scores[i - 1] && p > rows[i - 1]!)).toBe(true);
      });
      ix.dispose();
    }
  });

  it('refuses codes, lengths, question tokens and filters that break its contract, and use after dispose', async () => {
    const cent = unitRows(3, 4, rng(2));
    const q = Tensor.wrap(unitRows(2, 4, rng(3)), [2, 4], 'f32');
    expect(code(() => make(cent, 4, Int32Array.of(0, 3), Int32Array.of(2)))).toBe('ERR_RANGE');
    expect(code(() => make(cent, 4, Int32Array.of(0, -1), Int32Array.of(2)))).toBe('ERR_RANGE');
    expect(code(() => make(cent, 4, Int32Array.of(0, 1), Int32Array.of(1)))).toBe('ERR_SHAPE');
    expect(code(() => make(cent, 4, Int32Array.of(0, 1), Int32Array.of(3, -1)))).toBe('ERR_RANGE');
    expect(code(() => make(new Float32Array(0), 4, Int32Array.of(), Int32Array.of()))).toBe('ERR_SHAPE');
    const ix = make(cent, 4, Int32Array.of(0, 1, 2), Int32Array.of(1, 0, 2));
    expect(await asyncCode(ix.candidates(Tensor.wrap(new Float32Array(6), [2, 3], 'f32').handle, 0, 2, null, true))).toBe('ERR_SHAPE');
    expect(await asyncCode(ix.candidates(q.handle, 0, 2, Tensor.wrap(Int32Array.of(3), [1], 'i32').handle, true))).toBe('ERR_RANGE');
    expect(await asyncCode(ix.candidates(q.handle, -1, 2, null, true))).toBe('ERR_RANGE');
    expect(await asyncCode(ix.candidates(q.handle, 0, 0, null, true))).toBe('ERR_RANGE');
    const all = await ix.candidates(q.handle, 0, 5, null, true);
    expect(all.count).toBe(2);  // passage 1 has no tokens
    expect([...Tensor.fromHandle<'i32'>(all.rows).data.subarray(0, 2)].sort()).toEqual([0, 2]);
    ix.dispose();
    expect(await asyncCode(ix.candidates(q.handle, 0, 2, null, true))).toBe('ERR_DISPOSED');
  });
});

describe('kmeans', () => {
  it('finds separated clusters, unit centroids when spherical, the same for the same seed; typed errors', async () => {
    const r = rng(5);
    const dim = 8;
    const means = [0, 1, 2].map((c) => Float32Array.from({ length: dim }, (_, j) => (j === c ? 10 : 0)));
    const x = new Float32Array(300 * dim);
    for (let i = 0; i < 300; i++) for (let j = 0; j < dim; j++) x[i * dim + j] = means[i % 3]![j]! + (r() - 0.5) * 0.2;
    const c = await kmeans(Tensor.wrap(x, [300, dim], 'f32'), 3, { seed: 3 });
    expect(c.shape).toEqual([3, dim]);
    for (const m of means) {
      const near = Math.min(...[0, 1, 2].map((k) => Math.hypot(...Array.from(m, (v, j) => v - c.data[k * dim + j]!))));
      expect(near).toBeLessThan(0.1);
    }
    const s = await kmeans(Tensor.wrap(x, [300, dim], 'f32'), 3, { spherical: true, seed: 3 });
    for (let k = 0; k < 3; k++) expect(Math.hypot(...s.data.subarray(k * dim, (k + 1) * dim))).toBeCloseTo(1, 5);
    expect([...(await kmeans(Tensor.wrap(x, [300, dim], 'f32'), 3, { seed: 3 })).data]).toEqual([...c.data]);
    expect(await asyncCode(kmeans(Tensor.wrap(x, [300, dim], 'f32'), 301))).toBe('ERR_RANGE');
    expect(await asyncCode(kmeans(Tensor.wrap(x, [300, dim], 'f32'), 0))).toBe('ERR_RANGE');
    expect(await asyncCode(kmeans(Tensor.wrap(Float32Array.of(1, NaN), [1, 2], 'f32'), 1))).toBe('ERR_NONFINITE');
    expect(await asyncCode(kmeans(x as never, 3))).toBe('ERR_ARG');
    expect(await asyncCode(kmeans(Tensor.wrap(x, [300, dim], 'f32'), 3, { niter: 0 }))).toBe('ERR_RANGE');
  });
});

describe('TokenIndex', () => {
  const dim = 12;
  const r = rng(21);
  const lengths = Int32Array.from({ length: 90 }, () => 1 + Math.floor(r() * 8));
  const vectors = unitRows(lengths.reduce((a, b) => a + b, 0), dim, r);
  const questions = { vectors: unitRows(15, dim, r), lengths: Int32Array.of(3, 5, 7), dim };
  const part = (from: number, to: number) => {
    const start = lengths.subarray(0, from).reduce((a, b) => a + b, 0);
    const end = start + lengths.subarray(from, to).reduce((a, b) => a + b, 0);
    return { vectors: vectors.slice(start * dim, end * dim), lengths: lengths.slice(from, to), dim };
  };
  /** Brute-force MaxSim of each question over the passages `rows` (in that order), top k as { id: position }. */
  async function brute(rows: number[], k: number) {
    const docs = part(0, 90);
    const out = [];
    let at = 0;
    for (const n of questions.lengths) {
      const q = Tensor.wrap(questions.vectors.slice(at * dim, (at + n) * dim), [1, n, dim], 'f32');
      at += n;
      const s = (await maxSim(q, { tokens: Tensor.wrap(docs.vectors, [docs.vectors.length / dim, dim], 'f32'), lengths: docs.lengths, select: Int32Array.from(rows) })).scores.data;
      out.push([...s].map((score, id) => ({ id, score })).sort((a, b) => b.score - a.score || a.id - b.id).slice(0, k));
    }
    return out;
  }
  const expectHits = (got: { id: number; score: number }[][], want: { id: number; score: number }[][]) =>
    got.forEach((hits, q) => hits.forEach((h, i) => {
      expect(h.id).toBe(want[q]![i]!.id);
      expect(h.score).toBeCloseTo(want[q]![i]!.score, 4);
    }));

  it('searches exactly with every passage re-scored, or with every passage approximated and kept', async () => {
    const ix = await TokenIndex.build(part(0, 90), { centroids: 16 });
    const want = await brute(Array.from({ length: 90 }, (_, i) => i), 10);
    expectHits(await ix.search(questions, 10, { candidates: 'all' }), want);
    expectHits(await ix.search(questions, 10, { nprobe: 0, candidates: 90 }), want);
    // The default (4 of 16 centroids per question token, 256 re-scored) holds every passage of this small corpus.
    expectHits(await ix.search(questions, 10), want);
    // A filter: only its passages, exactly when they are no more than the candidates re-scored.
    const rows = Int32Array.from({ length: 30 }, (_, i) => 3 * i);
    const wantRows = await brute([...rows], 5);
    const filtered = await ix.search(questions, 5, { rows, candidates: 30 });
    filtered.forEach((hits, q) => hits.forEach((h, i) => expect(h.id).toBe(rows[wantRows[q]![i]!.id])));
    const few = await ix.search(questions, 5, { rows, candidates: 8 });
    expect(few.flat().every((h) => h.id % 3 === 0)).toBe(true);
    expect(await asyncCode(ix.search(questions, 0))).toBe('ERR_RANGE');
    expect(await asyncCode(ix.search(questions, 5, { nprobe: -1 }))).toBe('ERR_RANGE');
    expect(await asyncCode(ix.search(questions, 5, { candidates: 0 }))).toBe('ERR_RANGE');
    expect(await asyncCode(ix.search({ ...questions, dim: 3 }, 5))).toBe('ERR_SHAPE');
    // A question without tokens has an empty list; repeated or unordered filter rows are the same filter.
    const withEmpty = await ix.search({ ...questions, lengths: Int32Array.from([...questions.lengths, 0]) }, 10, { candidates: 'all' });
    expect(withEmpty.at(-1)).toEqual([]);
    expectHits(withEmpty.slice(0, -1), want);
    expect(await ix.search(questions, 5, { rows: Int32Array.from([...rows, ...rows].reverse()), candidates: 30 })).toEqual(filtered);
    expect(await ix.search(questions, 5, { rows: new Int32Array(0) })).toEqual(Array.from(questions.lengths, () => []));
    // The stage's native call checks what it is given: the index objects by class, the plan's fields.
    const stage = (plan: object) => callNative(() => (coreAddon() as unknown as { cameSearch(p: object, async: false): unknown }).cameSearch(plan, false));
    const plan = { batch: 1, passages: 90, k: 1, expertK: 1, fusion: 'sum' };
    expect(code(() => stage({ ...plan, experts: [{ kind: 'lexical', index: {} }] }))).toBe('ERR_ARG');
    const local = ix.stagePart(questions, 1, {});
    expect(code(() => stage({ ...plan, experts: [{ kind: 'local', index: 'tokens' in local ? local.tokens : null }] }))).toBe('ERR_ARG');
    expect(code(() => stage({ ...plan, experts: [{ kind: 'nearby' }] }))).toBe('ERR_ARG');
    expect(code(() => stage({ ...plan, fusion: 'best', experts: [] }))).toBe('ERR_ARG');
    expect(code(() => stage({ ...plan, k: 0, experts: [] }))).toBe('ERR_RANGE');
    expect(code(() => stage({ ...plan, experts: [] }))).toBe('ERR_ARG');
 expect(code(() => stage({ ...plan, batch: questions.lengths.length, experts: [local, local] }))).toBe('ERR_ARG');
    expect(code(() => stage({ ...plan, batch: questions.lengths.length, experts: [{ ...local, keep: 0 }], rows: Tensor.wrap(Int32Array.of(3, 2), [2], 'i32').handle }))).toBe('ERR_RANGE');
    ix.dispose();
    expect(await asyncCode(ix.search(questions, 5))).toBe('ERR_DISPOSED');
  });

  it('changes the corpus (kept rows renumbered, then added passages coded by the same centroids) as a fresh index searches', async () => {
    const ix = await TokenIndex.build(part(0, 60), { centroids: 16 });
    const grown = await ix.changed({ add: part(60, 90) });
    expect([ix.size, grown.size]).toEqual([60, 90]);
    expect((await ix.search(questions, 5, { candidates: 'all' })).flat().every((h) => h.id < 60)).toBe(true);  // unchanged
    const all = Array.from({ length: 90 }, (_, i) => i);
    expectHits(await grown.search(questions, 10, { candidates: 'all' }), await brute(all, 10));
    expectHits(await grown.search(questions, 10, { nprobe: 0, candidates: 90 }), await brute(all, 10));
    const kept = all.filter((i) => i % 4 !== 1);
    const shrunk = await grown.changed({ keep: Int32Array.from(kept) });
    expect(shrunk.size).toBe(kept.length);
    expectHits(await shrunk.search(questions, 10, { nprobe: 0, candidates: 90 }), await brute(kept, 10));
    // Both at once: keep some, add the rest back at the end.
    const both = await grown.changed({ keep: Int32Array.from({ length: 30 }, (_, i) => i + 30), add: part(0, 30) });
    expectHits(await both.search(questions, 10, { candidates: 'all' }), await brute([...all.slice(30, 60), ...all.slice(0, 30)], 10));
    expect(await asyncCode(grown.changed({ keep: Int32Array.of(2, 1) }))).toBe('ERR_RANGE');
    expect(await asyncCode(grown.changed({ keep: Int32Array.of(90) }))).toBe('ERR_RANGE');
    expect(await asyncCode(grown.changed({ keep: [1] as never }))).toBe('ERR_ARG');
    expect(await asyncCode(grown.changed({ keep: new Int32Array(0) }))).toBe('ERR_ARG');
    expect(await asyncCode(grown.changed({ add: { ...part(0, 2), dim: 5 } }))).toBe('ERR_SHAPE');
    expect(await asyncCode(grown.changed({ add: { vectors: new Float32Array(dim), lengths: Int32Array.of(2), dim } }))).toBe('ERR_SHAPE');
    for (const x of [ix, grown, shrunk, both]) x.dispose();
  });

  it('saves and loads (the same hits); an old or damaged file is ERR_FORMAT', async () => {
    const ix = await TokenIndex.build(part(0, 90));
    const dir = join(root, 'local');
    await ix.save(dir);
    const back = await TokenIndex.load(dir);
    expect(back.size).toBe(90);
    expect(await back.search(questions, 10)).toEqual(await ix.search(questions, 10));
    const old = join(root, 'old');
    const p = part(0, 2);
    const write = (d: string, extra: Record<string, { shape: number[]; data: Float32Array }>) => {
      rmSync(d, { recursive: true, force: true });
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, 'tokens.safetensors'), writeSafetensors(new Map(Object.entries({ vectors: { shape: [p.vectors.length / dim, dim], data: p.vectors }, lengths: { shape: [2], data: Float32Array.from(p.lengths) }, ...extra }))));
    };
    write(old, {});
    expect(await asyncCode(TokenIndex.load(old))).toBe('ERR_FORMAT');
    const n = p.vectors.length / dim;
    write(old, { centroids: { shape: [2, dim], data: unitRows(2, dim, r) }, codes: { shape: [n], data: new Float32Array(n).fill(2) } });
    expect(await asyncCode(TokenIndex.load(old))).toBe('ERR_FORMAT');
    write(old, { centroids: { shape: [2, dim], data: unitRows(2, dim, r) }, codes: { shape: [n - 1], data: new Float32Array(n - 1) } });
    expect(await asyncCode(TokenIndex.load(old))).toBe('ERR_FORMAT');
    expect(await asyncCode(TokenIndex.load(join(root, 'none')))).toBe('ERR_IO');
    expect(await asyncCode(TokenIndex.build({ vectors: new Float32Array(0), lengths: Int32Array.of(0), dim }))).toBe('ERR_ARG');
    ix.dispose();
    back.dispose();
  });
});
