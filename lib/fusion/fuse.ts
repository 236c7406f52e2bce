// One entry point for every fusion method of docs/methods/fusion.md: ranx's 25 (score-based, rank-based and the supervised
// ones), DPR-MUF's confidence-weighted dense fusion, CAME's inference variants and the DPR + BM25 hybrid.
// Every method works per query over the runs' candidate lists, with an explicit normalization and an explicit
// missing-score policy.
import { QuorumError } from '../errors.js';
import { type Run, type ScoredDoc } from '../eval/ranking.js';
import { hybridFuse } from '../hybrid.js';
import { checkRun, count, finite, parse, positiveInt, z } from '../validate.js';
import { type Normalization, type RankedList, bordaMissing, normalizeLists, sortList } from './normalize.js';

/** Every fusion method {@link fuse} runs: ranx's 25, DPR-MUF's, CAME's variants and the hybrid (see docs/methods/fusion.md). */
export type FusionMethod =
  // score-based (ranx Comb*)
  | 'sum'
  | 'max'
  | 'min'
  | 'med'
  | 'anz'
  | 'mnz'
  | 'gmnz'
  | 'wsum'
  | 'wmnz'
  | 'mixed'
  // rank-based
  | 'rrf'
  | 'isr'
  | 'log_isr'
  | 'logn_isr'
  | 'rbc'
  | 'bordafuse'
  | 'w_bordafuse'
  | 'condorcet'
  | 'w_condorcet'
  // supervised (trainFusion first)
  | 'bayesfuse'
  | 'mapfuse'
  | 'posfuse'
  | 'probfuse'
  | 'segfuse'
  | 'slidefuse'
  // DPR-MUF (§2.7)
  | 'muf'
  | 'muf-sparse'
  // CAME (§2.8)
  | 'came-sum'
  | 'came-normsum'
  | 'came-normmax'
  | 'came-sumrr'
  | 'came-maxrr'
  | 'came-linear'
  // DPR + BM25 (§2.9): runs = [dense, sparse]
  | 'hybrid';

/**
 * What a document missing from a list contributes to a score-based method: 0; the list's minimum (MUF,
 * pyserini); the list's K-th score (CAME; `k` option, or the list's last score when it is shorter); nothing
 * (`exclude`: the method combines only the lists that hold it); or -Infinity / +Infinity.
 */
export type MissingPolicy = 'zero' | 'min' | 'kth' | 'exclude' | '-inf' | '+inf';

/** Per-run tables learned from qrels by {@link trainFusion} for the supervised methods. */
export interface TrainedFusion {
  /** The method the tables were trained for. */
  method: FusionMethod;
  /** Per run: a value per position (bayesfuse log-odds, posfuse probabilities) or per segment (probfuse, segfuse). */
  tables: number[][];
  /** mapfuse: each run's training MAP. */
  maps?: number[];
}

/** Options of {@link fuse}: normalization, missing documents, weights and the per-method parameters. */
export interface FuseOptions {
  /** Normalization of each run's list before fusing (defaults: see {@link defaultNormalization}). */
  norm?: Normalization;
  /** Missing-document policy of the score-based methods (defaults: see {@link defaultMissing}). */
  missing?: MissingPolicy;
  /** The list depth K of the 'kth' policy. */
  k?: number;
  /** Keep the best `depth` documents per query (default: all). */
  depth?: number;
  /** One weight per run: wsum, wmnz, mixed, w_bordafuse, w_condorcet, came-linear. */
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
  /** Tables from {@link trainFusion} (supervised methods). */
  trained?: TrainedFusion;
  /** MUF: one confidence per run, for every query or per query id. Missing confidences count as 1. */
  confidence?: readonly number[] | ReadonlyMap<string, readonly number[]>;
  /** hybrid: see `hybridFuse` (alpha default 0.1). */
  alpha?: number;
  /** hybrid: centred min-max normalisation of both lists first (see `hybridFuse`). */
  normalization?: boolean;
  /** hybrid: alpha weighs the dense side instead of the sparse one (see `hybridFuse`). */
  weightOnDense?: boolean;
}

const NORMALIZATIONS = ['none', 'min-max', 'min-max-inverted', 'max', 'sum', 'zmuv', 'rank', 'borda'] as const;
const MISSING = ['zero', 'min', 'kth', 'exclude', '-inf', '+inf'] as const;
const nonNegative = finite.nonnegative();

const fuseOptionsSchema = z
  .object({
    norm: z.enum(NORMALIZATIONS).optional(),
    missing: z.enum(MISSING).optional(),
    k: positiveInt.optional(),
    depth: positiveInt.optional(),
    weights: z.array(finite).optional(),
    rrfK: nonNegative.optional(),
    gamma: finite.optional(),
    // rbc's persistence: (1 - phi) phi^r must stay a decreasing positive weight
    phi: finite.gt(0).lt(1).optional(),
    sigma: finite.positive().optional(),
    window: count.optional(),
    segments: positiveInt.optional(),
    trained: z.object({ method: z.string(), tables: z.array(z.array(z.number())), maps: z.array(z.number()).optional() }).optional(),
    confidence: z.union([z.array(nonNegative), z.map(z.string(), z.array(nonNegative))]).optional(),
    alpha: finite.optional(),
    normalization: z.boolean().optional(),
    weightOnDense: z.boolean().optional(),
  })
  .strict();

/**
 * ranx normalizes with min-max unless told otherwise; MUF, CAME's raw and rank variants and the hybrid use raw scores.
 *
 * @example
 * defaultNormalization('sum');   // 'min-max'
 */
export function defaultNormalization(method: FusionMethod): Normalization {
  return ['muf', 'muf-sparse', 'came-sum', 'came-sumrr', 'came-maxrr', 'came-linear', 'hybrid'].includes(method) ? 'none' : 'min-max';
}

/**
 * ranx's fills (0 for sum and wsum, ignored for max and min, excluded for the count-based ones); MUF: the list minimum; CAME: the K-th score.
 *
 * @example
 * defaultMissing('sum');   // 'zero'
 */
export function defaultMissing(method: FusionMethod): MissingPolicy {
  switch (method) {
    case 'sum':
    case 'wsum':
      return 'zero';
    case 'max':
    case 'came-normmax':
      return '-inf';
    case 'min':
      return '+inf';
    case 'muf':
      return 'min';
    case 'came-sum':
    case 'came-linear':
      return 'kth';
    default:
      return 'exclude';
  }
}

const need = (v: number | undefined, name: string, method: string): number => {
  if (v === undefined || !Number.isFinite(v)) throw new QuorumError('ERR_ARG', `${method} needs a finite '${name}'`);
  return v;
};

function weightsFor(options: FuseOptions, n: number, method: string): readonly number[] {
  const w = options.weights;
  if (!w) throw new QuorumError('ERR_ARG', `${method} needs 'weights' (one per run)`);
  if (w.length !== n) throw new QuorumError('ERR_SHAPE', `${method}: ${w.length} weights for ${n} runs`);
  return w;
}

function fillValue(l: RankedList, policy: MissingPolicy, k: number | undefined): number | undefined {
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

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

// One query's lists -> fused scores.
function fuseQuery(qid: string, lists: RankedList[], method: FusionMethod, o: FuseOptions): Map<string, number> {
  const n = lists.length;
  const pos = lists.map((l) => new Map(l.ids.map((id, i) => [id, i])));
  const union = [...new Set(lists.flatMap((l) => l.ids))].sort();
  const out = new Map<string, number>();

  // Score-based methods: values of the lists holding d, with fills per the policy.
  const scoreBased = (combine: (vals: number[], present: number, weightsOf: number[]) => number, policy: MissingPolicy) => {
    const fills = lists.map((l) => fillValue(l, policy, o.k));
    for (const d of union) {
      const vals: number[] = [];
      const ws: number[] = [];
      let present = 0;
      lists.forEach((l, i) => {
        const p = pos[i]!.get(d);
        if (p !== undefined) {
          vals.push(l.scores[p] as number);
          ws.push(i);
          present++;
        } else if (fills[i] !== undefined) {
          vals.push(fills[i] as number);
          ws.push(i);
        }
      });
      out.set(d, combine(vals, present, ws));
    }
  };
  // Rank-based methods: the sum over lists of a per-position contribution (0 when missing unless `missing`).
  const rankSum = (contrib: (i: number, r: number) => number, missing: (i: number) => number = () => 0) => {
    for (const d of union) {
      let s = 0;
      for (let i = 0; i < n; i++) {
        const r = pos[i]!.get(d);
        s += r === undefined ? missing(i) : contrib(i, r);
      }
      out.set(d, s);
    }
  };
  const count = (d: string) => pos.filter((p) => p.has(d)).length;
  const policy = o.missing ?? defaultMissing(method);
  const sum = (v: number[]) => v.reduce((a, b) => a + b, 0);

  switch (method) {
    case 'sum':
    case 'came-sum':
    case 'came-normsum':
      scoreBased((v) => sum(v), policy);
      break;
    case 'max':
    case 'came-normmax':
      scoreBased((v) => Math.max(...v), policy);
      break;
    case 'min':
      scoreBased((v) => Math.min(...v), policy);
      break;
    case 'med':
      scoreBased((v) => median(v), policy);
      break;
    case 'anz':
      scoreBased((v) => sum(v) / v.length, policy);
      break;
    case 'mnz':
      scoreBased((v, c) => sum(v) * c, policy);
      break;
    case 'gmnz': {
      const g = need(o.gamma, 'gamma', method);
      scoreBased((v, c) => sum(v) * c ** g, policy);
      break;
    }
    case 'wsum':
    case 'came-linear': {
      const w = weightsFor(o, n, method);
      scoreBased((v, _c, idx) => v.reduce((a, x, j) => a + (w[idx[j] as number] as number) * x, 0), policy);
      break;
    }
    case 'wmnz': {
      const w = weightsFor(o, n, method);
      scoreBased((v, _c, idx) => sum(v) * idx.reduce((a, i) => a + (w[i] as number), 0), policy);
      break;
    }
    case 'mixed': {
      const w = weightsFor(o, n, method);
      scoreBased((v, c, idx) => v.reduce((a, x, j) => a + (w[idx[j] as number] as number) * x, 0) * Math.sqrt(c), policy);
      break;
    }
    case 'rrf': {
      const k = o.rrfK ?? 60;
      rankSum((_i, r) => 1 / (k + r + 1));
      break;
    }
    case 'came-sumrr':
      rankSum((_i, r) => 1 / (r + 1));
      break;
    case 'came-maxrr':
      for (const d of union) out.set(d, Math.max(...pos.map((p) => (p.has(d) ? 1 / ((p.get(d) as number) + 1) : 0))));
      break;
    case 'isr':
    case 'log_isr':
    case 'logn_isr': {
      const sigma = o.sigma ?? 0.01;
      rankSum((_i, r) => 1 / (r + 1) ** 2);
      for (const d of union) {
        const c = count(d);
        const factor = method === 'isr' ? c : method === 'log_isr' ? Math.log(c) : Math.log(c + sigma);
        out.set(d, (out.get(d) as number) * factor);
      }
      break;
    }
    case 'rbc': {
      const phi = need(o.phi, 'phi', method);
      rankSum((_i, r) => (1 - phi) * phi ** r);
      break;
    }
    case 'bordafuse':
    case 'w_bordafuse': {
      const w = method === 'w_bordafuse' ? weightsFor(o, n, method) : lists.map(() => 1);
      const c = union.length;
      rankSum(
        (i, r) => (w[i] as number) * (c - r),
        (i) => ((w[i] as number) * (c - (lists[i] as RankedList).ids.length + 1)) / 2,
      );
      break;
    }
    case 'condorcet':
    case 'w_condorcet': {
      const w = method === 'w_condorcet' ? weightsFor(o, n, method) : lists.map(() => 1);
      const MISSING = 1_000_000;
      const at = (i: number, d: string) => pos[i]!.get(d) ?? MISSING;
      // Non-transitive with cycles: V8's stable TimSort from the id-sorted union (ranx: Python's TimSort from a
      // set's order), so the result is implementation-defined there, as in ranx.
      const order = [...union].sort((x, y) => {
        let votes = 0;
        for (let i = 0; i < n; i++) {
          const a = at(i, x);
          const b = at(i, y);
          if (a < b) votes += w[i] as number;
          else if (a > b) votes -= w[i] as number;
        }
        return votes > 0 ? -1 : votes < 0 ? 1 : 0;
      });
      order.forEach((d, i) => out.set(d, union.length - i));
      break;
    }
    case 'bayesfuse':
    case 'posfuse':
    case 'mapfuse':
    case 'probfuse':
    case 'segfuse':
    case 'slidefuse':
      supervised(method, lists, pos, union, o, out);
      break;
    case 'muf': {
      const conf = confidenceFor(qid, n, o);
      const total = sum(conf);
      const w = conf.map((c) => (total > 0 ? c / total : 1 / n));
      scoreBased((v, _c, idx) => v.reduce((a, x, j) => a + (w[idx[j] as number] as number) * x, 0), policy);
      break;
    }
    case 'muf-sparse': {
      const conf = confidenceFor(qid, n, o);
      const best = conf.indexOf(Math.max(...conf));
      const l = lists[best] as RankedList;
      l.ids.forEach((d, i) => out.set(d, l.scores[i] as number));
      break;
    }
    case 'hybrid': {
      if (n !== 2) throw new QuorumError('ERR_ARG', `hybrid fuses exactly 2 runs (dense, sparse), got ${n}`);
      const asHits = (l: RankedList) => l.ids.map((id, i) => ({ id, score: l.scores[i] as number }));
      const fused = hybridFuse(asHits(lists[0] as RankedList), asHits(lists[1] as RankedList), {
        alpha: o.alpha,
        normalization: o.normalization,
        weightOnDense: o.weightOnDense,
      });
      for (const h of fused) out.set(h.id, h.score);
      break;
    }
    default:
      throw new QuorumError('ERR_ARG', `unknown fusion method '${String(method)}'`);
  }
  return out;
}

function confidenceFor(qid: string, n: number, o: FuseOptions): number[] {
  // MUF without its confidences would silently weigh every expert 1: that is 'sum', not MUF.
  if (o.confidence === undefined) throw new QuorumError('ERR_ARG', "muf needs 'confidence' (one per run, or a Map of them per query)");
  const c = o.confidence instanceof Map ? o.confidence.get(qid) : (o.confidence as readonly number[]);
  if (c === undefined) throw new QuorumError('ERR_ARG', `muf: no confidences for query ${qid}`);
  if (c.length !== n) throw new QuorumError('ERR_SHAPE', `muf: ${c.length} confidences for ${n} runs (query ${qid})`);
  return [...c];
}

// Segment edges of SegFuse (docs/methods/fusion.md#supervised-methods).
export const SEGFUSE_EDGES = [0, 5, 15, 35, 75, 155, 315, 635, 1275, 2555, 5115];
// BayesFuse's cut-offs.
export const BAYESFUSE_CUTS = [0, 5, 10, 15, 20, 30, 100, 200, 500, 1000];
const BAYES_MISSING = Math.log(0.001 / 0.999);

function supervised(
  method: FusionMethod,
  lists: RankedList[],
  pos: Array<Map<string, number>>,
  union: string[],
  o: FuseOptions,
  out: Map<string, number>,
): void {
  const t = o.trained;
  if (!t || t.method !== method) throw new QuorumError('ERR_ARG', `${method} needs 'trained' from trainFusion('${method}', ...)`);
  if (t.tables.length !== lists.length && method !== 'mapfuse')
    throw new QuorumError('ERR_SHAPE', `${method} was trained on ${t.tables.length} runs, fusing ${lists.length}`);
  const contrib = (i: number, r: number): number => {
    const table = t.tables[i] as number[];
    const l = lists[i] as RankedList;
    switch (method) {
      case 'bayesfuse':
        return r < table.length ? (table[r] as number) : BAYES_MISSING;
      case 'posfuse':
        return r < table.length ? (table[r] as number) : 0;
      case 'mapfuse':
        return ((t.maps?.[i] ?? 0) as number) / (r + 1);
      case 'probfuse': {
        const size = Math.ceil(l.ids.length / table.length);
        const seg = Math.floor(r / size);
        return seg < table.length ? (table[seg] as number) / (seg + 1) : 0;
      }
      case 'segfuse': {
        const seg = SEGFUSE_EDGES.findIndex((e, j) => j + 1 < SEGFUSE_EDGES.length && r >= e && r < (SEGFUSE_EDGES[j + 1] as number));
        return seg < 0 ? 0 : (table[seg] as number) * ((l.scores[r] as number) + 1);
      }
      case 'slidefuse': {
        const w = need(o.window, 'window', method);
        const a = Math.max(r - w, 0);
        const b = Math.min(r + w, l.ids.length - 1);
        // The mean over the window's positions that the table covers (ranx divides by the full window even where
        // its table is shorter).
        const vals = table.slice(a, b + 1);
        return vals.length ? vals.reduce((x, y) => x + y, 0) / vals.length : 0;
      }
      default:
        return 0;
    }
  };
  for (const d of union) {
    let s = 0;
    for (let i = 0; i < lists.length; i++) {
      const r = pos[i]!.get(d);
      if (r !== undefined) s += contrib(i, r);
      else if (method === 'bayesfuse') s += BAYES_MISSING;
    }
    out.set(d, s);
  }
}

/** The runs' lists for one query, sorted and normalized. */
function listsFor(runs: readonly Run[], qid: string, norm: Normalization): RankedList[] {
  const lists = runs.map((r) => {
    const docs = r.get(qid) ?? [];
    return sortList(
      docs.map((d) => d.id),
      docs.map((d) => d.score),
    );
  });
  const normalized = normalizeLists(lists, norm);
  if (norm !== 'borda') return normalized;
  // ranx's borda normalization puts every candidate of the union into every run: missing ones at
  // 0.5 - (n - 1) / (2 |C|), after the ranked ones.
  const union = [...new Set(lists.flatMap((l) => l.ids))].sort();
  return normalized.map((l) => {
    const have = new Set(l.ids);
    const extra = union.filter((d) => !have.has(d));
    const fill = bordaMissing(l.ids.length, union.length);
    return { ids: [...l.ids, ...extra], scores: [...l.scores, ...extra.map(() => fill)] };
  });
}

/**
 * Fuses runs per query. The result holds every query of any run, each list sorted by fused score descending,
 * ties by id ascending (pyserini's merge order), cut at `depth`.
 *
 * @example
 * fuse([bm25Run, denseRun], 'rrf');                                  // RRF, k = 60
 * fuse([bm25Run, denseRun], 'wsum', { norm: 'zmuv', weights: [0.3, 0.7] });
 * fuse(expertRuns, 'muf', { confidence: perQueryConfidence });        // DPR-MUF's dense fusion
 * fuse(expertRuns, 'came-sum', { k: 100 });                          // missing -> each expert's 100th score
 */
export function fuse(runs: readonly Run[], method: FusionMethod, options: FuseOptions = {}): Map<string, ScoredDoc[]> {
  if (!Array.isArray(runs) || runs.length === 0) throw new QuorumError('ERR_ARG', 'fuse needs an array of at least one run');
  if (typeof method !== 'string') throw new QuorumError('ERR_ARG', 'fuse needs a method name');
  parse(fuseOptionsSchema, options, 'fuse options');
  runs.forEach((r, i) => checkRun(r, `runs[${i}]`));
  const norm = options.norm ?? defaultNormalization(method);
  const queries = [...new Set(runs.flatMap((r) => [...r.keys()]))];
  const fused = new Map<string, ScoredDoc[]>();
  for (const qid of queries) {
    const lists = listsFor(runs, qid, norm);
    const scores = fuseQuery(qid, lists, method, options);
    const list = [...scores].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    fused.set(qid, options.depth === undefined ? list : list.slice(0, options.depth));
  }
  return fused;
}

/** Per query: the 0/1 relevance of each position of each run's sorted list (queries of the qrels). */
export function hitLists(runs: readonly Run[], qrels: ReadonlyMap<string, ReadonlyMap<string, number>>, relLevel = 1): number[][][] {
  return runs.map((r) =>
    [...qrels].map(([qid, rel]) => {
      const docs = r.get(qid) ?? [];
      const l = sortList(
        docs.map((d) => d.id),
        docs.map((d) => d.score),
      );
      return l.ids.map((id) => ((rel.get(id) ?? 0) >= relLevel ? 1 : 0));
    }),
  );
}
