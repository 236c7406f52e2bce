// The registry of fuse's named methods: ranx's 25 and the hybrid, one file each. MUF's and CAME's fusions are
// FusionMethodDef objects of their methods (lib/methods/muf/fusion.ts, lib/methods/came/fusion.ts), passed to fuse
// as they are.
import { type FusionMethodDef } from '../method.js';
import { anz } from './anz.js';
import { bayesfuse } from './bayesfuse.js';
import { bordafuse, w_bordafuse } from './borda.js';
import { condorcetFuse, w_condorcet } from './condorcet.js';
import { gmnz } from './gmnz.js';
import { hybrid } from './hybrid.js';
import { isr, log_isr, logn_isr } from './isr.js';
import { mapfuse } from './mapfuse.js';
import { max } from './max.js';
import { med } from './med.js';
import { min } from './min.js';
import { mixed } from './mixed.js';
import { mnz } from './mnz.js';
import { posfuse } from './posfuse.js';
import { probfuse } from './probfuse.js';
import { rbc } from './rbc.js';
import { rrf } from './rrf.js';
import { segfuse } from './segfuse.js';
import { slidefuse } from './slidefuse.js';
import { sum } from './sum.js';
import { wmnz } from './wmnz.js';
import { wsum } from './wsum.js';

/** Every method `fuse` knows by name. */
export const FUSION_METHODS = {
  // score-based (ranx's Comb*)
  sum,
  max,
  min,
  med,
  anz,
  mnz,
  gmnz,
  wsum,
  wmnz,
  mixed,
  // rank-based
  rrf,
  isr,
  log_isr,
  logn_isr,
  rbc,
  bordafuse,
  w_bordafuse,
  condorcet: condorcetFuse,
  w_condorcet,
  // supervised (trainFusion first)
  bayesfuse,
  mapfuse,
  posfuse,
  probfuse,
  segfuse,
  slidefuse,
  // dense + BM25: runs = [dense, sparse]
  hybrid,
} as const satisfies Record<string, FusionMethodDef>;

/** A method `fuse` knows by name: ranx's 25 and the hybrid. */
export type FusionMethod = keyof typeof FUSION_METHODS;
