// The search-request contract (lib/search-request.ts): k and depths, fusion names, abstention thresholds and their
// rule, filter rows. Each rule against a plain reference on edge cases and random inputs; the surfaces that use it
// (MufServer, MufRetriever, CameRetriever / CameServer, RomModel / RomServer, the CLI, the example server) are
// tested in their own suites.
import { describe, expect, it } from 'vitest';

import { MAX_K, abstains, checkAbstain, checkFusion, checkK, filterRows } from '../lib/search-request.js';
import { code, errorMessage as message } from './basics.js';
import { seededRandom } from '../lib/random.js';


describe('search-request contract', () => {
  it('k: integers in [1, MAX_K] (the kernels bound, 2^20), else ERR_RANGE naming the value', () => {
    expect(MAX_K).toBe(2 ** 20);
    for (const k of [1, 2, 100, MAX_K]) expect(checkK(k)).toBe(k);
    for (const k of [0, -1, 1.5, MAX_K + 1, 2 ** 31 - 1, NaN, Infinity, -Infinity, '3', null, undefined, {}, 10n]) expect(code(() => checkK(k)), String(k)).toBe('ERR_RANGE');
    expect(message(() => checkK(0))).toBe('k must be an integer in [1, 1048576], got 0');
    expect(message(() => checkK('ten', '--k'))).toBe("--k must be an integer in [1, 1048576], got 'ten'");
    // A server's own smaller bound.
    expect(checkK(100, 'k', 100)).toBe(100);
    expect(message(() => checkK(101, 'k', 100))).toBe('k must be an integer in [1, 100], got 101');
  });

  it('fusion: one of the names a search offers, else ERR_ARG listing them', () => {
    const names = ['muf', 'muf-mi', 'uniform'] as const;
    for (const f of names) expect(checkFusion(f, names)).toBe(f);
    for (const f of ['oracle', 'MUF', '', 1, null, undefined, ['muf']]) expect(code(() => checkFusion(f, names)), String(f)).toBe('ERR_ARG');
    expect(message(() => checkFusion('x', names, '--fusion'))).toBe("--fusion must be one of muf, muf-mi, uniform, got 'x'");
  });

  it('abstain: a probability in [0, 1], else ERR_RANGE', () => {
    for (const a of [0, 0.5, 1, 1e-9]) expect(checkAbstain(a)).toBe(a);
    for (const a of [-0.01, 1.01, NaN, Infinity, '0.5', null, true]) expect(code(() => checkAbstain(a)), String(a)).toBe('ERR_RANGE');
    expect(message(() => checkAbstain(1.5))).toBe('abstain must be a number in [0, 1], got 1.5');
  });

  it("abstains: every expert's confidence below the threshold, as Math.max(...c) < t", () => {
    const reference = (c: number[], t: number) => Math.max(...c) < t;
    const u = seededRandom(5);
    for (let trial = 0; trial < 500; trial++) {
      const c = Array.from({ length: 1 + Math.floor(u() * 6) }, () => (u() < 0.05 ? NaN : Math.round(u() * 20) / 20));
      const t = Math.round(u() * 20) / 20;
      expect(abstains(c, t), `${c} < ${t}`).toBe(reference(c, t));
      expect(abstains(Float32Array.from(c), t)).toBe(reference(Array.from(Float32Array.from(c)), t));
    }
    expect(abstains([0.4, 0.49], 0.5)).toBe(true);
    expect(abstains([0.4, 0.5], 0.5)).toBe(false); // reaching the threshold is enough
    expect(abstains([NaN, 0.1], 0.5)).toBe(false); // as Math.max: NaN never abstains
    expect(abstains([0, 0], 0)).toBe(false);
    expect(code(() => abstains(undefined as never, 0.5))).toBe('ERR_ARG');
    expect(code(() => abstains([0.1], 2))).toBe('ERR_RANGE');
  });

  it('filter rows: corpus rows in any order, repeats ignored, returned ascending; ERR_RANGE / ERR_ARG otherwise', () => {
    const u = seededRandom(9);
    for (let trial = 0; trial < 300; trial++) {
      const n = 1 + Math.floor(u() * 50);
      const rows = Array.from({ length: Math.floor(u() * 40) }, () => Math.floor(u() * n));
      const expected = [...new Set(rows)].sort((a, b) => a - b);
      expect(Array.from(filterRows(rows, n))).toEqual(expected);
      expect(Array.from(filterRows(Int32Array.from(rows), n))).toEqual(expected);
      // compileFilter's ascending rows come back as they are.
      expect(Array.from(filterRows(Int32Array.from(expected), n))).toEqual(expected);
    }
    expect(filterRows([], 5)).toEqual(new Int32Array(0));
    for (const rows of [[5], [-1], [1.5], [NaN], ['1'], [null], [2 ** 31]]) expect(code(() => filterRows(rows, 5)), String(rows)).toBe('ERR_RANGE');
    for (const rows of ['0,1', 3, null, undefined, { 0: 1 }]) expect(code(() => filterRows(rows, 5)), String(rows)).toBe('ERR_ARG');
    expect(message(() => filterRows([0, 7], 5))).toBe('rows[1] = 7 is not a corpus row (0..4)');
  });
});
