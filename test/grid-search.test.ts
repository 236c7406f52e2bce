// The one grid search (lib/grid-search.ts) behind the hybrid's alpha, the fusion parameters and the temperature.
import { describe, expect, it } from 'vitest';

import { bestPoint, gridSearch } from '../lib/grid-search.js';
import { HYBRID_ALPHA_GRID, WIDE_ALPHA_GRID } from '../lib/hybrid.js';
import { mufTemperatureGrid, widenedTemperatureGrid } from '../lib/uncertainty.js';
import { code } from './helpers.js';

describe('grid search', () => {
  const tried = [1, 3, 3, 0, 0].map((value, i) => ({ point: `p${i}`, value }));

  it('keeps the best by the goal, the first or the last of equal values as asked', () => {
    expect(bestPoint(tried, { goal: 'max', ties: 'first' }).point).toBe('p1');
    expect(bestPoint(tried, { goal: 'max', ties: 'last' }).point).toBe('p2');
    expect(bestPoint(tried, { goal: 'min', ties: 'first' }).point).toBe('p3');
    expect(bestPoint(tried, { goal: 'min', ties: 'last' }).point).toBe('p4');
  });

  it('never picks a NaN over a number, and refuses an empty grid', () => {
    const withNaN = [{ point: 'a', value: 0.2 }, { point: 'b', value: Number.NaN }, { point: 'c', value: 0.1 }];
    expect(bestPoint(withNaN, { goal: 'max', ties: 'last' }).point).toBe('a');
    expect(bestPoint(withNaN, { goal: 'min', ties: 'first' }).point).toBe('c');
    expect(code(() => bestPoint([], { goal: 'max', ties: 'first' }))).toBe('ERR_ARG');
    expect(code(() => gridSearch([], () => 0, { goal: 'max', ties: 'first' }))).toBe('ERR_ARG');
  });

  it('scores every point in grid order', () => {
    const seen: number[] = [];
    const r = gridSearch([0.5, 2, 1], (x) => (seen.push(x), -((x - 1) ** 2)), { goal: 'max', ties: 'first' });
    expect(seen).toEqual([0.5, 2, 1]);
    expect(r.best).toEqual({ point: 1, value: -0 });
    expect(r.tried.map((t) => t.point)).toEqual([0.5, 2, 1]);
  });

  it('has its grids in one place: ranx alpha, the wide alpha, DPR-MUF temperatures and their widening', () => {
    expect(HYBRID_ALPHA_GRID).toHaveLength(21);
    expect(HYBRID_ALPHA_GRID[3]).toBe(0.3);
    expect(WIDE_ALPHA_GRID.slice(0, 21)).toEqual(HYBRID_ALPHA_GRID);
    expect(WIDE_ALPHA_GRID.at(-1)).toBe(100);
    expect(widenedTemperatureGrid).toContain(1e-3);
    expect(widenedTemperatureGrid.slice(6, 16)).toEqual(mufTemperatureGrid.map((t) => Math.round(t * 1000) / 1000));
  });
});
