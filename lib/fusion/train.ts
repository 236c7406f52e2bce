// Training the supervised fusion methods on qrels (docs/methods/fusion.md#supervised-methods) and searching fusion parameters on a dev split
// (ranx's grids, with the weight simplex compared with a tolerance instead of exact float equality).
import { QuorumError } from '../errors.js';
import { type Qrels, type Run, evaluate } from '../eval/ranking.js';
import { gridSearch } from '../grid-search.js';
import { HYBRID_ALPHA_GRID } from '../hybrid.js';
import { BAYESFUSE_CUTS, type FuseOptions, type FusionMethod, SEGFUSE_EDGES, type TrainedFusion, fuse, hitLists } from './fuse.js';
import { checkOptions, checkRun, mustBeArray, mustBeMap, mustBeObject, optionKeys } from '../validate.js';

const mean = (v: number[]) => (v.length ? v.reduce((a, b) => a + b, 0) / v.length : 0);

/** PosFuse's probabilities: hits at position r over the queries whose list is longer than r. */
function positionProbabilities(hits: number[][]): number[] {
  const depth = Math.max(0, ...hits.map((h) => h.length));
  return Array.from({ length: depth }, (_, r) => {
    const longer = hits.filter((h) => h.length > r);
    return longer.length ? longer.filter((h) => h[r] === 1).length / longer.length : 0;
  });
}

const trainFusionKeys = optionKeys<NonNullable<Parameters<typeof trainFusion>[3]>>()(['segments', 'relLevel']);

/**
 * Learns the per-run tables of a supervised method from training runs and qrels:
 * - bayesfuse: log-odds of relevance per cut-off segment [0, 5, 10, 15, 20, 30, 100, 200, 500, 1000), per position;
 * - mapfuse: each run's MAP;
 * - posfuse, slidefuse: the probability of relevance at each position;
 * - probfuse: the probability per segment (`segments` of them, each ceil(len / segments) long per query);
 * - segfuse: the probability per fixed segment [0, 5, 15, 35, ..., 5115).
 *
 * @example
 * const trained = trainFusion('posfuse', [bm25DevRun, denseDevRun], devQrels);
 * const fused = fuse([bm25TestRun, denseTestRun], 'posfuse', { trained });
 */
export function trainFusion(method: FusionMethod, runs: readonly Run[], qrels: Qrels, options: { segments?: number; relLevel?: number } = {}): TrainedFusion {
  mustBeArray(runs, 'runs');
  runs.forEach((r, i) => checkRun(r, `runs[${i}]`, false));
  mustBeMap(qrels, 'qrels');
  checkOptions(options, trainFusionKeys, 'trainFusion options');
  const hits = hitLists(runs, qrels, options.relLevel ?? 1);
  switch (method) {
    case 'bayesfuse':
      return {
        method,
        tables: hits.map((perQuery) => {
          const table: number[] = [];
          for (let s = 0; s + 1 < BAYESFUSE_CUTS.length; s++) {
            const a = BAYESFUSE_CUTS[s] as number;
            const b = BAYESFUSE_CUTS[s + 1] as number;
            let p = mean(perQuery.map((h) => h.slice(a, b).reduce((x, y) => x + y, 0) / (b - a)));
            if (p === 0) p = 0.001;
            const q = 1 - p === 0 ? 0.001 : 1 - p;
            for (let r = a; r < b; r++) table.push(Math.log(p / q));
          }
          return table;
        }),
      };
    case 'mapfuse':
      return {
        method,
        tables: runs.map(() => []),
        maps: runs.map((r) => evaluate(r, qrels, ['map'], { relLevel: options.relLevel }).mean.map as number),
      };
    case 'posfuse':
    case 'slidefuse':
      return { method, tables: hits.map(positionProbabilities) };
    case 'probfuse': {
      const n = options.segments;
      if (!n || !Number.isInteger(n) || n < 1) throw new QuorumError('ERR_ARG', "probfuse needs 'segments' (a positive integer)");
      return {
        method,
        tables: hits.map((perQuery) =>
          Array.from({ length: n }, (_, k) =>
            mean(
              perQuery.map((h) => {
                const size = Math.ceil(h.length / n);
                const seg = h.slice(k * size, (k + 1) * size);
                return size > 0 && seg.length ? seg.reduce((x, y) => x + y, 0) / size : 0; // empty segments add 0
              }),
            ),
          ),
        ),
      };
    }
    case 'segfuse':
      return {
        method,
        tables: hits.map((perQuery) =>
          SEGFUSE_EDGES.slice(0, -1).map((a, k) => {
            const b = SEGFUSE_EDGES[k + 1] as number;
            return mean(perQuery.map((h) => h.slice(a, b).reduce((x, y) => x + y, 0) / (b - a)));
          }),
        ),
      };
    default:
      throw new QuorumError('ERR_ARG', `${method} is not a supervised method (bayesfuse, mapfuse, posfuse, probfuse, segfuse, slidefuse)`);
  }
}

/**
 * Every weight vector on the simplex with step `step` (compared with a tolerance, unlike ranx's exact float sum).
 *
 * @example
 * weightGrid(2, 0.5);   // [[0, 1], [0.5, 0.5], [1, 0]]
 */
export function weightGrid(runs: number, step = 0.1): number[][] {
  const units = Math.round(1 / step);
  const out: number[][] = [];
  const rec = (prefix: number[], left: number) => {
    if (prefix.length === runs - 1) {
      out.push([...prefix, left].map((u) => u / units));
      return;
    }
    for (let u = 0; u <= left; u++) rec([...prefix, u], left - u);
  };
  if (runs >= 1) rec([], units);
  return out;
}

const range = (from: number, to: number, step: number) => {
  const n = Math.round((to - from) / step);
  return Array.from({ length: n + 1 }, (_, i) => Math.round((from + i * step) * 1e9) / 1e9);
};

/** What {@link optimizeFusion} returns. */
export interface FusionSearch {
  /** The options to pass to `fuse` (trained tables included). */
  options: FuseOptions;
  /** The metric's mean over the dev queries with those options. */
  value: number;
  /** Every configuration tried with its value, in grid order. */
  tried: Array<{ options: FuseOptions; value: number }>;
}

/**
 * Searches a method's parameters on a dev split, maximising `metric` (default 'ndcg', the whole depth, as ranx's
 * optimize_fusion). Grids (ranx's): weights on the 0.1 simplex; rrfK 10..100 step 10; phi, gamma, sigma
 * 0.01..1.00; slidefuse window 1..100; probfuse segments 1..100; hybrid alpha 0..2 step 0.1. Ties go to the later
 * configuration, as in ranx. Supervised methods are trained on the same split.
 *
 * @example
 * const best = optimizeFusion([bm25Dev, denseDev], devQrels, 'wsum', { norm: 'min-max' });
 * fuse([bm25Test, denseTest], 'wsum', best.options);
 */
export function optimizeFusion(
  runs: readonly Run[],
  qrels: Qrels,
  method: FusionMethod,
  base: FuseOptions & { metric?: string; relLevel?: number } = {},
): FusionSearch {
  const { metric = 'ndcg', relLevel, ...fixed } = base;
  const score = (o: FuseOptions) => evaluate(fuse(runs, method, o), qrels, [metric], { relLevel, tieOrder: 'as-given' }).mean[metric] as number;
  let grid: FuseOptions[];
  switch (method) {
    case 'wsum':
    case 'wmnz':
    case 'mixed':
    case 'w_bordafuse':
    case 'w_condorcet':
    case 'came-linear':
      grid = weightGrid(runs.length).map((weights) => ({ ...fixed, weights }));
      break;
    case 'rrf':
      grid = range(10, 100, 10).map((rrfK) => ({ ...fixed, rrfK }));
      break;
    case 'rbc':
      grid = range(0.01, 1, 0.01).map((phi) => ({ ...fixed, phi }));
      break;
    case 'gmnz':
      grid = range(0.01, 1, 0.01).map((gamma) => ({ ...fixed, gamma }));
      break;
    case 'logn_isr':
      grid = range(0.01, 1, 0.01).map((sigma) => ({ ...fixed, sigma }));
      break;
    case 'hybrid':
      grid = HYBRID_ALPHA_GRID.map((alpha) => ({ ...fixed, alpha }));
      break;
    case 'slidefuse': {
      const trained = trainFusion('slidefuse', runs, qrels, { relLevel });
      grid = range(1, 100, 1).map((window) => ({ ...fixed, window, trained }));
      break;
    }
    case 'probfuse':
      grid = range(1, 100, 1).map((segments) => ({ ...fixed, segments, trained: trainFusion('probfuse', runs, qrels, { segments, relLevel }) }));
      break;
    case 'bayesfuse':
    case 'mapfuse':
    case 'posfuse':
    case 'segfuse':
      grid = [{ ...fixed, trained: trainFusion(method, runs, qrels, { relLevel }) }];
      break;
    default:
      grid = [fixed];
  }
  // ranx's optimize_fusion keeps the later of equal configurations.
  const { best, tried } = gridSearch(grid, score, { goal: 'max', ties: 'last' });
  return { options: best.point, value: best.value, tried: tried.map((t) => ({ options: t.point, value: t.value })) };
}
