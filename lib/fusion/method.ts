// What a fusion method is (docs/methods/fusion.md): a name, its default normalization and missing-document policy,
// and the per-query scoring over the runs' lists; optionally its parameter grid (optimizeFusion), its training on
// qrels (the supervised methods) and options of its own (MUF's confidences). ranx's methods and the hybrid live in
// lib/fusion/methods/, one file each; MUF's and CAME's fusions live with their methods. Ids are strings or numbers:
// a method never converts them.
import { type z } from 'zod';

import { QuorumError } from '../errors.js';
import { type FusionId, type Normalization, type RankedList } from './normalize.js';

/**
 * What a document missing from a list contributes to a score-based method: 0; the list's minimum (MUF,
 * pyserini); the list's K-th score (CAME; `k` option, or the list's last score when it is shorter); nothing
 * (`exclude`: the method combines only the lists that hold it); or -Infinity / +Infinity.
 */
export type MissingPolicy = 'zero' | 'min' | 'kth' | 'exclude' | '-inf' | '+inf';

/** Per-run tables learned from qrels by `trainFusion` for the supervised methods. */
export interface TrainedFusion {
  /** The method the tables were trained for. */
  method: string;
  /** Per run: a value per position (bayesfuse log-odds, posfuse probabilities) or per segment (probfuse, segfuse). */
  tables: number[][];
  /** mapfuse: each run's MAP. */
  maps?: number[];
}

/** Options of `fuse` every method reads (a method's own options come on top: {@link FusionMethodDef.options}). */
export interface FuseOptions {
  /** Normalization of each run's list before fusing (default: the method's). */
  norm?: Normalization;
  /** Missing-document policy of the score-based methods (default: the method's). */
  missing?: MissingPolicy;
  /** The list depth K of the 'kth' policy. */
  k?: number;
  /** Keep the best `depth` documents per query (default: all). */
  depth?: number;
  /** One weight per run: wsum, wmnz, mixed, w_bordafuse, w_condorcet (and CAME's linear fusion). */
  weights?: readonly number[];
  /** rrf's k (default 60). */
  rrfK?: number;
  /** gmnz's exponent (required). */
  gamma?: number;
  /** rbc's persistence (required). */
  phi?: number;
  /** logn_isr's sigma (default 0.01). */
  sigma?: number;
  /** slidefuse's half window (required). */
  window?: number;
  /** probfuse's number of segments (required; the one it was trained with). */
  segments?: number;
  /** Tables from `trainFusion` (supervised methods). */
  trained?: TrainedFusion;
  /** hybrid: see `hybridFuse` (alpha default 0.1). */
  alpha?: number;
  /** hybrid: centred min-max normalisation of both lists first (see `hybridFuse`). */
  normalization?: boolean;
  /** hybrid: alpha weighs the dense side instead of the sparse one (see `hybridFuse`). */
  weightOnDense?: boolean;
}

/** One query's lists as a method sees them: sorted best first and normalized, with positions and their union. */
export interface FusionQuery<Id extends FusionId, O extends object = object> {
  /** The query's id (per-query options such as MUF's confidences are keyed by it). */
  readonly qid: string;
  /** One list per run, best first, normalized. */
  readonly lists: ReadonlyArray<RankedList<Id>>;
  /** Per list: document -> 0-based position. */
  readonly pos: ReadonlyArray<ReadonlyMap<Id, number>>;
  /** Every document of any list, ids ascending. */
  readonly union: readonly Id[];
  /** The call's options. */
  readonly options: FuseOptions & O;
  /** The missing-document policy in force (the call's, else the method's). */
  readonly missing: MissingPolicy;
}

/** What the supervised methods learn from: per run, per judged query, the 0/1 relevance of each position. */
export interface TrainingHits {
  /** `hits[run][query][position]`. */
  hits: number[][][];
  /** The runs themselves (mapfuse evaluates them). */
  runs: ReadonlyArray<ReadonlyMap<string, ReadonlyArray<{ id: string; score: number }>>>;
  /** The qrels. */
  qrels: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** The grade from which a document counts as relevant. */
  relLevel: number;
  /** probfuse's number of segments. */
  segments?: number;
}

/** A fusion method. */
export interface FusionMethodDef<O extends object = object> {
  /** Its name (ranx's where ranx has it). */
  readonly name: string;
  /** The normalization applied when the call names none. */
  readonly norm: Normalization;
  /** The missing-document policy applied when the call names none. */
  readonly missing: MissingPolicy;
  /** Takes one weight per run (optimizeFusion then searches the weight simplex). */
  readonly weighted?: boolean;
  /** Options of its own beyond {@link FuseOptions}, as zod schemas (checked with the others). */
  readonly options?: Readonly<Record<string, z.ZodTypeAny>>;
  /** optimizeFusion's grid of the method's parameters (ranx's), given the fixed options and the training data. */
  grid?(fixed: FuseOptions & O, data: TrainingHits): Array<FuseOptions & O>;
  /** Learns the method's tables from training runs (supervised methods). */
  train?(data: TrainingHits): Omit<TrainedFusion, 'method'>;
  /** The fused score of each document of one query. */
  scores<Id extends FusionId>(q: FusionQuery<Id, O>): Map<Id, number>;
}

/** The value of a required numeric option (ERR_ARG when absent or not finite). */
export function need(v: number | undefined, name: string, method: string): number {
  if (v === undefined || !Number.isFinite(v)) throw new QuorumError('ERR_ARG', `${method} needs a finite '${name}'`);
  return v;
}

/** The call's weights, one per run (ERR_ARG when absent, ERR_SHAPE when the count differs). */
export function weightsFor(q: FusionQuery<FusionId>, method: string): readonly number[] {
  const w = q.options.weights;
  if (!w) throw new QuorumError('ERR_ARG', `${method} needs 'weights' (one per run)`);
  if (w.length !== q.lists.length) throw new QuorumError('ERR_SHAPE', `${method}: ${w.length} weights for ${q.lists.length} runs`);
  return w;
}

/** What a list contributes for a document it lacks, by the policy (undefined: nothing). */
function fillValue(l: RankedList<FusionId>, policy: MissingPolicy, k: number | undefined): number | undefined {
  switch (policy) {
    case 'zero':
      return 0;
    case 'min':
      return l.scores.length ? Math.min(...l.scores) : undefined;
    case 'kth': {
      if (!l.scores.length) return undefined;
      const at = k === undefined ? l.scores.length - 1 : Math.min(k, l.scores.length) - 1;
      return l.scores[at];
    }
    case 'exclude':
      return undefined;
    case '-inf':
      return -Infinity;
    case '+inf':
      return Infinity;
  }
  throw new QuorumError('ERR_ARG', `unknown missing policy '${String(policy)}': use zero, min, kth, exclude, -inf or +inf`);
}

/**
 * A score-based method: per document, `combine` of the values of the lists that hold it and the fills of those
 * that do not (by the policy in force), with how many lists hold it and which list each value came from.
 */
export function scoreBased<Id extends FusionId>(
  q: FusionQuery<Id>,
  combine: (values: number[], present: number, runs: number[]) => number,
): Map<Id, number> {
  const fills = q.lists.map((l) => fillValue(l, q.missing, q.options.k));
  const out = new Map<Id, number>();
  for (const d of q.union) {
    const vals: number[] = [];
    const runs: number[] = [];
    let present = 0;
    q.lists.forEach((l, i) => {
      const p = q.pos[i]!.get(d);
      if (p !== undefined) {
        vals.push(l.scores[p] as number);
        runs.push(i);
        present++;
      } else if (fills[i] !== undefined) {
        vals.push(fills[i] as number);
        runs.push(i);
      }
    });
    out.set(d, combine(vals, present, runs));
  }
  return out;
}

/** A rank-based method: per document, the sum over lists of `contrib(list, position)` (`missing(list)` where absent). */
export function rankSum<Id extends FusionId>(
  q: FusionQuery<Id>,
  contrib: (list: number, position: number) => number,
  missing: (list: number) => number = () => 0,
): Map<Id, number> {
  const out = new Map<Id, number>();
  for (const d of q.union) {
    let s = 0;
    for (let i = 0; i < q.lists.length; i++) {
      const r = q.pos[i]!.get(d);
      s += r === undefined ? missing(i) : contrib(i, r);
    }
    out.set(d, s);
  }
  return out;
}

/** How many lists hold `d`. */
export function listCount<Id extends FusionId>(q: FusionQuery<Id>, d: Id): number {
  return q.pos.filter((p) => p.has(d)).length;
}

/** The sum of an array. */
export const sumOf = (v: readonly number[]): number => v.reduce((a, b) => a + b, 0);

/** The weighted sum of the values by their runs' weights. */
export const weighted = (w: readonly number[], values: readonly number[], runs: readonly number[]): number =>
  values.reduce((a, x, j) => a + (w[runs[j] as number] as number) * x, 0);

/** A supervised method's tables (ERR_ARG when absent or trained for another method, ERR_SHAPE for another run count). */
export function trainedFor(q: FusionQuery<FusionId>, method: string, perRun = true): TrainedFusion {
  const t = q.options.trained;
  if (!t || t.method !== method) throw new QuorumError('ERR_ARG', `${method} needs 'trained' from trainFusion('${method}', ...)`);
  if (perRun && t.tables.length !== q.lists.length)
    throw new QuorumError('ERR_SHAPE', `${method} was trained on ${t.tables.length} runs, fusing ${q.lists.length}`);
  return t;
}

/** The mean of an array (0 when empty). */
export const mean = (v: readonly number[]): number => (v.length ? v.reduce((a, b) => a + b, 0) / v.length : 0);

/** PosFuse's probabilities: hits at position r over the queries whose list is longer than r. */
export function positionProbabilities(hits: number[][]): number[] {
  const depth = Math.max(0, ...hits.map((h) => h.length));
  return Array.from({ length: depth }, (_, r) => {
    const longer = hits.filter((h) => h.length > r);
    return longer.length ? longer.filter((h) => h[r] === 1).length / longer.length : 0;
  });
}

/** ranx's parameter range from..to by step, rounded to 1e-9. */
export function range(from: number, to: number, step: number): number[] {
  const n = Math.round((to - from) / step);
  return Array.from({ length: n + 1 }, (_, i) => Math.round((from + i * step) * 1e9) / 1e9);
}
