// Condorcet fusion: documents ordered by pairwise majority votes of the lists (a missing document ranks below every
// listed one), scored by their place in that order; weighted votes in w_condorcet
// (docs/methods/fusion.md#rank-based-methods).
import { type FusionId } from '../normalize.js';
import { type FusionMethodDef, type FusionQuery, weightsFor } from '../method.js';

const MISSING = 1_000_000;

function condorcet<Id extends FusionId>(q: FusionQuery<Id>, w: readonly number[]): Map<Id, number> {
  const at = (i: number, d: Id) => q.pos[i]!.get(d) ?? MISSING;
  // Non-transitive with cycles: V8's stable TimSort from the id-sorted union (ranx: Python's TimSort from a set's
  // order), so the result is implementation-defined there, as in ranx.
  const order = [...q.union].sort((x, y) => {
    let votes = 0;
    for (let i = 0; i < q.lists.length; i++) {
      const a = at(i, x);
      const b = at(i, y);
      if (a < b) votes += w[i] as number;
      else if (a > b) votes -= w[i] as number;
    }
    return votes > 0 ? -1 : votes < 0 ? 1 : 0;
  });
  const out = new Map<Id, number>();
  order.forEach((d, i) => out.set(d, q.union.length - i));
  return out;
}

/** Condorcet fusion. */
export const condorcetFuse: FusionMethodDef = {
  name: 'condorcet',
  norm: 'min-max',
  missing: 'exclude',
  scores: (q) =>
    condorcet(
      q,
      q.lists.map(() => 1),
    ),
};

/** Weighted Condorcet fusion: each run's vote counts its weight. */
export const w_condorcet: FusionMethodDef = {
  name: 'w_condorcet',
  norm: 'min-max',
  missing: 'exclude',
  weighted: true,
  scores: (q) => condorcet(q, weightsFor(q, 'w_condorcet')),
};
