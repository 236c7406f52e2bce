// CombMED: the median score (docs/methods/fusion.md#score-based-methods).
import { scoreBased, type FusionMethodDef } from '../method.js';

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/** CombMED: the median score. */
export const med: FusionMethodDef = {
  name: 'med',
  norm: 'min-max',
  missing: 'exclude',
  scores: (q) => scoreBased(q, (v) => median(v)),
};
