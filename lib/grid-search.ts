// The one grid search behind every parameter chosen on a dev split: the hybrid's alpha (lib/hybrid.ts, and per task
// in `quorum eval`), the fusion methods' parameters (lib/fusion/train.ts) and the ensemble's temperature by ECE
// (lib/uncertainty.ts, DPR-MUF's calibration). A search scores each grid point and keeps the best; which of equal
// values wins is part of each caller's contract (ranx keeps the later one, the others the first), so it is stated
// at the call.
import { QuorumError } from './errors.js';

/** One grid point with its value on the dev split. */
export interface GridPoint<P> {
  /** The parameter value (or set of values) tried. */
  point: P;
  /** The metric there. */
  value: number;
}

/** What is best: the highest value ('max') or the lowest ('min'); and which of equal values wins. */
interface GridGoal {
  /** 'max' for a metric, 'min' for an error such as ECE. */
  goal: 'max' | 'min';
  /** 'first': the earliest of equal values in grid order; 'last': the latest. */
  ties: 'first' | 'last';
}

/** The best of points already scored, by `goal` (ERR_ARG when there are none). */
export function bestPoint<P>(tried: ReadonlyArray<GridPoint<P>>, goal: GridGoal): GridPoint<P> {
  if (tried.length === 0) throw new QuorumError('ERR_ARG', 'the grid is empty');
  const sign = goal.goal === 'max' ? 1 : -1;
  let best = tried[0]!;
  for (const t of tried) {
    const d = sign * (t.value - best.value);
    if (d > 0 || (d === 0 && goal.ties === 'last')) best = t;
  }
  return best;
}

/** Scores every point of `grid` in order and returns the best with every point tried. */
export function gridSearch<P>(
  grid: readonly P[],
  score: (point: P) => number,
  goal: GridGoal,
): { best: GridPoint<P>; tried: Array<GridPoint<P>> } {
  const tried = grid.map((point) => ({ point, value: score(point) }));
  return { best: bestPoint(tried, goal), tried };
}
