// Training the supervised fusion methods on qrels (docs/methods/fusion.md#supervised-methods) and searching fusion
// parameters on a dev split
// (ranx's grids, with the weight simplex compared with a tolerance instead of exact float equality).
import { QuorumError } from '../errors.js';
import { type Qrels, type Run, evaluate } from '../eval/ranking.js';
import { gridSearch } from '../grid-search.js';
import { type FuseOptions, type FusionMethod, type FusionMethodDef, type TrainedFusion, fuse, fusionMethod, hitLists } from './fuse.js';
import { type TrainingHits } from './method.js';
import { checkOptions, checkRun, mustBeArray, mustBeMap, optionKeys } from '../validate.js';

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
export function trainFusion(
  method: FusionMethod | FusionMethodDef,
  runs: readonly Run[],
  qrels: Qrels,
  options: { segments?: number; relLevel?: number } = {},
): TrainedFusion {
  mustBeArray(runs, 'runs');
  runs.forEach((r, i) => checkRun(r, `runs[${i}]`, false));
  mustBeMap(qrels, 'qrels');
  checkOptions(options, trainFusionKeys, 'trainFusion options');
  const def = fusionMethod(method);
  if (!def.train)
    throw new QuorumError('ERR_ARG', `${def.name} is not a supervised method (bayesfuse, mapfuse, posfuse, probfuse, segfuse, slidefuse)`);
  return { method: def.name, ...def.train(trainingData(runs, qrels, options)) };
}

function trainingData(runs: readonly Run[], qrels: Qrels, options: { segments?: number; relLevel?: number }): TrainingHits {
  const relLevel = options.relLevel ?? 1;
  return {
    hits: hitLists(runs, qrels, relLevel),
    runs,
    qrels,
    relLevel,
    ...(options.segments !== undefined ? { segments: options.segments } : {}),
  };
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
  method: FusionMethod | FusionMethodDef,
  base: FuseOptions & { metric?: string; relLevel?: number } = {},
): FusionSearch {
  const { metric = 'ndcg', relLevel, ...fixed } = base;
  const def = fusionMethod(method);
  const score = (o: FuseOptions) =>
    evaluate(fuse(runs, def, o), qrels, [metric], { relLevel, tieOrder: 'as-given' }).mean[metric] as number;
  // ranx's grids: the weight simplex for a weighted method, the method's own grid (trained on the same split for a
  // supervised one), else the fixed options alone; a supervised method without a grid is trained once.
  let grid: FuseOptions[];
  if (def.weighted) grid = weightGrid(runs.length).map((weights) => ({ ...fixed, weights }));
  else if (def.grid) grid = def.grid(fixed, trainingData(runs, qrels, { relLevel }));
  else if (def.train) grid = [{ ...fixed, trained: trainFusion(def, runs, qrels, { relLevel }) }];
  else grid = [fixed];
  // ranx's optimize_fusion keeps the later of equal configurations.
  const { best, tried } = gridSearch(grid, score, { goal: 'max', ties: 'last' });
  return { options: best.point, value: best.value, tried: tried.map((t) => ({ options: t.point, value: t.value })) };
}
