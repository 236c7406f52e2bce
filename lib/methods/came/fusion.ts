// CAME's inference fusion (docs/methods/fusion.md#came-fusion; the paper's Table 4) over the experts' top-K lists of
// corpus rows: a passage missing from an expert's list takes that expert's K-th score (sum, linear), min-max
// normalised lists (normsum, normmax; a missing passage adds nothing), reciprocal ranks (sumrr, maxrr). The six are
// fusion methods of lib/fusion's kind, run per question over numeric ids; the linear layer is fitted on dev.
import { QuorumError } from '../../errors.js';
import { fuseQuery } from '../../fusion/fuse.js';
import { type FusionMethodDef, rankSum, scoreBased, sumOf, weighted, weightsFor } from '../../fusion/method.js';
import { checkFusion } from '../../search-request.js';
import { checkOptions, mustBeArray, mustBeObject, optionKeys } from '../../validate.js';

/** One of {@link CAME_FUSIONS}. */
export type CameFusion = 'sum' | 'normsum' | 'normmax' | 'sumrr' | 'maxrr' | 'linear';
/** CAME's inference fusions of the experts' lists, by name (the paper's Table 4; `linear` is fitted on dev). */
export const CAME_FUSIONS: readonly CameFusion[] = ['sum', 'normsum', 'normmax', 'sumrr', 'maxrr', 'linear'];

/**
 * CAME's fusions as fusion methods (`fuse(runs, CAME_FUSION_METHODS.sum, { k: 100 })`): named 'came-<fusion>'.
 * Raw scores for sum, sumrr, maxrr and linear; min-max normalised lists for normsum and normmax.
 */
export const CAME_FUSION_METHODS: Readonly<Record<CameFusion, FusionMethodDef>> = {
  sum: { name: 'came-sum', norm: 'none', missing: 'kth', scores: (q) => scoreBased(q, (v) => sumOf(v)) },
  normsum: { name: 'came-normsum', norm: 'min-max', missing: 'exclude', scores: (q) => scoreBased(q, (v) => sumOf(v)) },
  normmax: { name: 'came-normmax', norm: 'min-max', missing: '-inf', scores: (q) => scoreBased(q, (v) => Math.max(...v)) },
  sumrr: { name: 'came-sumrr', norm: 'none', missing: 'exclude', scores: (q) => rankSum(q, (_list, r) => 1 / (r + 1)) },
  maxrr: {
    name: 'came-maxrr',
    norm: 'none',
    missing: 'exclude',
    scores: (q) => new Map(q.union.map((d) => [d, Math.max(...q.pos.map((p) => (p.has(d) ? 1 / ((p.get(d) as number) + 1) : 0)))])),
  },
  linear: {
    name: 'came-linear',
    norm: 'none',
    missing: 'kth',
    weighted: true,
    scores: (q) => {
      const w = weightsFor(q, 'came-linear');
      return scoreBased(q, (v, _present, runs) => weighted(w, v, runs));
    },
  },
};

/** One result of an expert or of the fusion. */
export interface Hit {
  /** The passage's corpus row. */
  id: number;
  /** Its score, higher is better. */
  score: number;
}

/** The learned linear layer: one weight per expert list (in the order the lists are given) and a bias. */
export interface LinearFusion {
  /** One weight per expert list. */
  weights: number[];
  /** Added to every fused score (it does not change the order). */
  bias: number;
}

const fitKeys = optionKeys<{ iterations?: number; lr?: number }>()(['iterations', 'lr']);

/**
 * Fuses the experts' lists question by question: `lists[e][q]` is expert e's top-K for question q (best first, ids
 * are corpus rows). Returns each question's fused top `k`.
 *
 * @example
 * fuseExperts([lexical, local, global], 'sum', 100, 100);
 * fuseExperts(lists, 'linear', 10, 100, { weights: [0.2, 1.1, 0.7], bias: 0 });
 */
export function fuseExperts(
  lists: ReadonlyArray<ReadonlyArray<readonly Hit[]>>,
  method: CameFusion,
  k: number,
  K: number,
  linear?: LinearFusion,
): Hit[][] {
  if (!Array.isArray(lists) || lists.length === 0) throw new QuorumError('ERR_ARG', 'fusion needs at least one expert list');
  checkFusion(method, CAME_FUSIONS);
  if (method === 'linear' && (!linear || linear.weights.length !== lists.length))
    throw new QuorumError('ERR_ARG', `linear fusion needs ${lists.length} fitted weights (fitLinearFusion)`);
  const questions = lists[0]!.length;
  const options = { k: K, depth: k, ...(linear ? { weights: linear.weights } : {}) };
  const bias = method === 'linear' ? linear!.bias : 0;
  return Array.from({ length: questions }, (_, q) => {
    const perExpert = lists.map((l) => {
      const hits: readonly Hit[] = l[q] ?? [];
      return { ids: hits.map((h) => h.id), scores: hits.map((h) => h.score) };
    });
    return fuseQuery(perExpert, CAME_FUSION_METHODS[method], options, String(q)).map((d) => ({ id: d.id, score: d.score + bias }));
  });
}

/** Each list's scores for every candidate, missing ones filled with the list's K-th (last) score. */
function filledScores(lists: ReadonlyArray<readonly Hit[]>): { ids: number[]; scores: number[][] } {
  const ids = [...new Set(lists.flatMap((l) => l.map((h) => h.id)))];
  const scores = lists.map((l) => {
    const by = new Map(l.map((h) => [h.id, h.score]));
    const fill = l.length ? l[l.length - 1]!.score : 0;
    return ids.map((id) => by.get(id) ?? fill);
  });
  return { ids, scores };
}

/**
 * Fits the linear fusion layer on dev questions by a listwise objective: per question, the softmax over its
 * candidates (the union of the experts' lists, missing scores filled with the list's K-th) of w . s must put its mass
 * on the relevant ones (-log sum over relevant of softmax), by full-batch gradient descent on standardised scores,
 * mapped back to raw scores. Raw scores are on per-question scales (MaxSim grows with the question's length), which
 * is why a pointwise fit across questions fails here. The bias shifts every candidate alike, so a ranking loss gives
 * it no gradient: it stays 0 (kept in the layer for the w . s + b form).
 *
 * @param questions per dev question: its expert lists and its relevant passage ids
 * @example
 * const linear = fitLinearFusion(dev.map((q) => ({ lists: q.lists, relevant: new Set(q.gold) })));
 */
export function fitLinearFusion(
  questions: ReadonlyArray<{ lists: ReadonlyArray<readonly Hit[]>; relevant: ReadonlySet<number> }>,
  options: { iterations?: number; lr?: number } = {},
): LinearFusion {
  mustBeArray(questions, 'dev questions');
  checkOptions(options, fitKeys, 'fitLinearFusion options');
  if (!questions.length) throw new QuorumError('ERR_ARG', 'fitting the linear fusion needs dev questions');
  questions.forEach((q, i) => {
    mustBeObject(q, `questions[${i}]`);
    mustBeArray(q.lists, `questions[${i}].lists`);
    if (!(q.relevant instanceof Set)) throw new QuorumError('ERR_ARG', `questions[${i}].relevant must be a Set of passage ids`);
  });
  const E = questions[0]!.lists.length;
  const groups: Array<{ x: number[][]; rel: boolean[] }> = [];
  for (const q of questions) {
    if (q.lists.length !== E) throw new QuorumError('ERR_SHAPE', 'every question needs the same number of expert lists');
    const { ids, scores } = filledScores(q.lists);
    const rel = ids.map((id) => q.relevant.has(id));
    // A question whose candidates are all relevant or all not says nothing about the weights.
    if (rel.some(Boolean) && !rel.every(Boolean)) groups.push({ x: ids.map((_, i) => scores.map((s) => s[i]!)), rel });
  }
  if (!groups.length) throw new QuorumError('ERR_ARG', 'the dev lists need relevant and non-relevant candidates to fit a linear fusion');
  const all = groups.flatMap((g) => g.x);
  const mean = Array.from({ length: E }, (_, e) => all.reduce((a, x) => a + x[e]!, 0) / all.length);
  const sd = Array.from({ length: E }, (_, e) => Math.sqrt(all.reduce((a, x) => a + (x[e]! - mean[e]!) ** 2, 0) / all.length) || 1);
  for (const g of groups) g.x = g.x.map((x) => x.map((v, e) => (v - mean[e]!) / sd[e]!));
  const w = new Array<number>(E).fill(1 / E);
  const iterations = options.iterations ?? 300;
  const lr = options.lr ?? 0.5;
  for (let it = 0; it < iterations; it++) {
    const gw = new Array<number>(E).fill(0);
    for (const g of groups) {
      const z = g.x.map((x) => x.reduce((a, v, e) => a + w[e]! * v, 0));
      const m = Math.max(...z);
      const ez = z.map((v) => Math.exp(v - m));
      const total = ez.reduce((a, b) => a + b, 0);
      const relTotal = ez.reduce((a, v, i) => a + (g.rel[i] ? v : 0), 0);
      // d/dz_i of -log(sum_R e^z / sum e^z) = p_i - (i in R) e^z_i / sum_R e^z
      g.x.forEach((x, i) => {
        const d = ez[i]! / total - (g.rel[i] ? ez[i]! / relTotal : 0);
        x.forEach((v, e) => (gw[e] = gw[e]! + (d * v) / groups.length));
      });
    }
    for (let e = 0; e < E; e++) w[e] = w[e]! - lr * gw[e]!;
  }
  // Standardised back to raw: w_raw = w / sd; the shift by the means is the same for every candidate.
  return { weights: w.map((v, e) => v / sd[e]!), bias: 0 };
}
