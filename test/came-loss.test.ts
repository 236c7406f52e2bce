// CAME's losses (native/torch/came_loss.h): the competitive weights against a hand-computed case, the standardized
// and specialized losses against plain TypeScript, and their gradients against finite differences.
import { describe, expect, it } from 'vitest';

import { torchTestAddon } from './torch-hooks.js';
import { rng } from './basics.js';

/** Mean over questions of sum_e c[b, e] * NLL_e(b), in float64 (weights given). */
function lossRef(scores: Float32Array, E: number, B: number, P: number, pos: Int32Array, weights?: number[][]): number {
  let total = 0;
  for (let b = 0; b < B; b++)
    for (let e = 0; e < E; e++) {
      const row = Array.from(scores.subarray((e * B + b) * P, (e * B + b + 1) * P));
      const m = Math.max(...row);
      const lse = m + Math.log(row.reduce((a, v) => a + Math.exp(v - m), 0));
      total += (weights ? weights[b]![e]! : 1) * (lse - row[pos[b]!]!);
    }
  return total / B;
}

describe('CAME losses', () => {
  it('gives the competitive weights softmax_e((1 / rank_e) / tau) of a hand-computed case', () => {
    // 3 experts, 2 questions, 4 passages. Question 0's positive is passage 0, question 1's is passage 2.
    const scores = Float32Array.from([
      // expert 0: q0 ranks its positive 1st; q1 ranks it 3rd (two higher)
      5, 1, 2, 3, /* q1 */ 4, 5, 3, 1,
      // expert 1: q0 2nd; q1 1st
      3, 4, 0, 1, /* q1 */ 0, 1, 9, 2,
      // expert 2: q0 4th; q1 2nd (a tie with the positive counts in its favour)
      0, 1, 2, 3, /* q1 */ 7, 7, 7, 8,
    ]);
    const pos = Int32Array.of(0, 2);
    const tau = 0.5;
    const r = torchTestAddon().cameLoss(scores, 3, 2, 4, pos, tau, true);
    const softmax = (xs: number[]) => {
      const ex = xs.map((x) => Math.exp(x / tau));
      const s = ex.reduce((a, v) => a + v, 0);
      return ex.map((v) => v / s);
    };
    const expected = [softmax([1 / 1, 1 / 2, 1 / 4]), softmax([1 / 3, 1 / 1, 1 / 2])];
    for (let b = 0; b < 2; b++) for (let e = 0; e < 3; e++) expect(r.weights[b * 3 + e]).toBeCloseTo(expected[b]![e]!, 6);
    expect(r.loss).toBeCloseTo(lossRef(scores, 3, 2, 4, pos, expected), 5);
    // A larger tau flattens the competition toward 1/3 each.
    const flat = torchTestAddon().cameLoss(scores, 3, 2, 4, pos, 1e6, true);
    for (const w of flat.weights) expect(w).toBeCloseTo(1 / 3, 5);
  });

  it('sums the experts in the standardized stage, and both losses have the finite-difference gradient', () => {
    const addon = torchTestAddon();
    const [E, B, P] = [3, 4, 6];
    const r = rng(3);
    const scores = Float32Array.from({ length: E * B * P }, () => 3 * r());
    const pos = Int32Array.of(0, 3, 5, 2);
    const st = addon.cameLoss(scores, E, B, P, pos, 1, false);
    expect(st.loss).toBeCloseTo(lossRef(scores, E, B, P, pos), 5);
    for (const competitive of [false, true]) {
      const g = addon.cameLoss(scores, E, B, P, pos, 0.7, competitive).dScores;
      const eps = 1e-3;
      let checked = 0;
      for (let i = 0; i < scores.length; i++) {
        const plus = Float32Array.from(scores);
        const minus = Float32Array.from(scores);
        plus[i] = plus[i]! + eps;
        minus[i] = minus[i]! - eps;
        // The weights are piecewise constant in the scores (ranks): away from a rank change the difference is the
        // gradient with the weights held, which is what the stop-gradient gives.
        const a = addon.cameLoss(plus, E, B, P, pos, 0.7, competitive);
        const b = addon.cameLoss(minus, E, B, P, pos, 0.7, competitive);
        if (a.weights.some((w, j) => Math.abs(w - b.weights[j]!) > 1e-9)) continue;
        expect(Math.abs((a.loss - b.loss) / (2 * eps) - g[i]!), `d[${i}]`).toBeLessThan(1e-3);
        checked++;
      }
      expect(checked).toBeGreaterThan(scores.length * 0.9);
    }
  });

  it('gives typed errors for a bad tau or positive', () => {
    const addon = torchTestAddon();
    const s = new Float32Array(4);
    expect(() => addon.cameLoss(s, 1, 2, 2, Int32Array.of(0, 1), 0, true)).toThrow(expect.objectContaining({ code: 'ERR_RANGE' }));
    expect(() => addon.cameLoss(s, 1, 2, 2, Int32Array.of(0, 2), 1, true)).toThrow(expect.objectContaining({ code: 'ERR_RANGE' }));
  });
});
