// `quorum eval`: retrieval methods (and/or given run files) over any BEIR-layout dataset, scored with the
// metrics of docs/methods/evaluation.md; a table on screen, TREC run files and metrics.json on disk.
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';

import { Bm25Index } from '../bm25/bm25.js';
import { readBeir } from '../data/beir.js';
import { readRun, writeRun } from '../data/trec-files.js';
import { scoreTopK } from '../dense.js';
import { GloveAverageEncoder } from '../encoders/glove-average.js';
import { HashedTfidfEncoder } from '../encoders/hashed-tfidf.js';
import { QuorumError } from '../errors.js';
import { checkK } from '../search-request.js';
import { type Qrels, type Run, type ScoredDoc, evaluate, groupMeans, metricFn } from '../eval/ranking.js';
import { fuse } from '../fusion/fuse.js';
import { gridSearch } from '../grid-search.js';
import { WIDE_ALPHA_GRID, gainOverBaseline, hybridPrepare, type GainOverBaseline } from '../hybrid.js';
import type { Tensor } from '../tensor.js';
import { CAME_FUSIONS, fuseExperts, type Hit } from '../methods/came/fusion.js';
import { CameRetriever } from '../methods/came/retriever.js';
import { MufRetriever } from '../methods/muf/retriever.js';
import type { PassageText } from '../train/examples.js';
import { Retriever } from '../models/retriever.js';
import { modelDir, storeHybrid, taskIfKnown, type StoredHybrid } from '../models/model-dir.js';
import { BATCH, bm25Search } from './index-search.js';
import { inBatches } from '../progress.js';
import { precisionCoverage } from '../uncertainty.js';
import { CalibrationRecorder, type ReportData, recallCurve, recallCutoffs, timeEach } from '../report/data.js';
import { writeReport } from '../report/html.js';
import { table } from './table.js';
import { type OutputKind, jsonCardIn, replaceDirectorySync, writeFileAtomic } from '../data/files.js';

export const EVAL_METHODS = ['bm25', 'dense', 'hybrid', 'rrf', 'glove'] as const;

interface EvalCommandOptions {
  data: string;
  split: string;
  methods: string[];
  runs: string[];
  metrics: string[];
  k: number;
  dim: number;
  /** The hybrid's alpha; without it, alpha is tuned for MRR@10 on the dev split when there is one (else 1). */
  alpha?: number;
  /** Tune the hybrid's alpha per task as well (default true; only when queries carry two or more tasks). */
  alphaPerTask?: boolean;
  /**
   * The one-standard-error rule on the tuned alpha (default true): a task (or the whole dev split) whose dev gain
   * over BM25 is under one standard error gets BM25 alone.
   */
  hybridGuard?: boolean;
  /** A model directory (`quorum train`): the 'dense' method uses it instead of the hashed TF-IDF stand-in. */
  model?: string;
  out?: string;
  /** Also report each task's mean (queries carry a `task`, as in the multi-domain benchmark). */
  byTask?: boolean;
  /**
   * A MUF directory (`quorum muf train`): adds its runs 'muf', 'muf-mi' (weighted by MI, as published), 'muf-uniform',
   * 'muf-oracle' (the query's own task's
   * expert), 'expert:<name>' for each expert, and 'muf-hybrid' (MUF + BM25, alpha tuned on dev).
   */
  muf?: string;
  /**
   * A CAME directory (`quorum came train`): indexes the corpus with its experts and adds 'came' (Sum), 'came:<fusion>'
   * for NormSum, NormMax, SumRR, MaxRR (and Linear when fitted) and 'came-expert:<name>' for each expert alone.
   */
  came?: string;
  /** Also write the HTML report (charts of every measurement) to this file. */
  report?: string;
  /** Time this many single-query searches per method (the report's latency plots; 0: none). */
  latency?: number;
}

/** What the report needs beyond the runs: single-query latencies and DPR-MUF's per-expert calibration. */
interface Extras {
  latency: Record<string, number[]>;
  calibration?: NonNullable<ReportData['calibration']>;
  selective?: NonNullable<ReportData['selective']>;
}

/** The precisions at which `quorum eval --muf` prints how many questions MUF can answer (abstaining on the rest). */
const SELECTIVE_PRECISIONS = [0.5, 0.6, 0.7, 0.8, 0.9];

type Texts = Array<{ id: string; text: string; task?: string }>;

/** Dense retrieval with a trained model (questions with their task's marker) or the hashed TF-IDF stand-in. */
class DenseMethod {
  private passages?: Tensor<'f32'>;
  private tfidf?: HashedTfidfEncoder;

  constructor(
    private readonly corpus: Array<{ id: string; title: string; text: string }>,
    private readonly dim: number,
    private readonly model?: Retriever,
  ) {}

  async run(queries: Texts, k: number, label = 'dense '): Promise<Run> {
    if (!this.passages) {
      if (this.model) this.passages = await this.model.encodePassages(this.corpus);
      else {
        const texts = this.corpus.map((p) => (p.title ? `${p.title}. ${p.text}` : p.text));
        this.tfidf = HashedTfidfEncoder.fit(texts, { dim: this.dim });
        this.passages = this.tfidf.encode(texts);
      }
    }
    const run = new Map<string, ScoredDoc[]>();
    const byTask = new Map<string | undefined, Texts>();
    for (const q of queries) byTask.set(q.task, [...(byTask.get(q.task) ?? []), q]);
    for (const [task, group] of byTask)
      await inBatches(label, group.length, BATCH, async (start, end) => {
        const batch = group.slice(start, end);
        const texts = batch.map((x) => x.text);
        const q = this.model
          ? await this.model.encodeQueries(texts, { task: taskIfKnown(this.model.config.tasks, task) })
          : this.tfidf!.encode(texts);
        const top = await scoreTopK(q, this.passages!, k);
        batch.forEach((x, j) =>
          run.set(
            x.id,
            top.hits(j).map((h) => ({ id: this.corpus[h.id]?.id ?? '', score: h.score })),
          ),
        );
        q.dispose();
      });
    return run;
  }

  dispose(): void {
    this.passages?.dispose();
  }
}

/** The training-free GloVe average (IDF-weighted, centred on the corpus): the baseline a trained model must beat. */
async function gloveRun(corpus: Array<{ id: string; text: string }>, queries: Texts, k: number): Promise<Run> {
  const encoder = await GloveAverageEncoder.load({ fitOn: corpus.map((p) => p.text) });
  const passages = encoder.encode(corpus.map((p) => p.text));
  const run = new Map<string, ScoredDoc[]>();
  try {
    await inBatches('glove ', queries.length, BATCH, async (start, end) => {
      const batch = queries.slice(start, end);
      const q = encoder.encode(batch.map((x) => x.text));
      const top = await scoreTopK(q, passages, k);
      batch.forEach((x, j) =>
        run.set(
          x.id,
          top.hits(j).map((h) => ({ id: corpus[h.id]?.id ?? '', score: h.score })),
        ),
      );
      q.dispose();
    });
  } finally {
    passages.dispose();
  }
  return run;
}

/**
 * The hybrid's alpha: for all queries, and for each task that has dev questions; Infinity where the one-SE rule gave
 * BM25 alone (a task without dev questions that falls back to an Infinity all-task alpha gets BM25 alone too).
 */
interface HybridAlpha {
  all: number;
  byTask: Map<string, number>;
  /** Dev questions it was tuned on (absent when given or stored). */
  questions?: number;
}

/** A card's stored hybrid as alphas (null, BM25 alone, as Infinity). */
function fromStored(h: StoredHybrid): HybridAlpha {
  const a = (x: number | null) => (x === null ? Infinity : x);
  return { all: a(h.alpha), byTask: new Map(Object.entries(h.byTask ?? {}).map(([t, x]) => [t, a(x)])) };
}

/** The entries of `run` whose query is in `qids`. */
function pick<V>(run: ReadonlyMap<string, V>, qids: ReadonlySet<string>): Map<string, V> {
  return new Map([...run].filter(([q]) => qids.has(q)));
}

/** Per-query MRR@10 of `run` over `qids`. */
function mrrPerQuery(run: Run, qrels: Qrels, qids: ReadonlySet<string>): Map<string, number> {
  const { perQuery } = evaluate(pick(run, qids), pick(qrels, qids), ['mrr@10']);
  return new Map([...perQuery].map(([q, m]) => [q, m['mrr@10'] ?? 0]));
}

/**
 * The wide grid's alpha with the best MRR@10 over `qids` (ties go to the smaller alpha: more weight on the dense
 * model): what evaluate(fuse(runs, 'hybrid', { alpha, normalization: true, depth: k }), qrels, ['mrr@10']) gives,
 * without fusing every query again for each of the grid's 107 alphas (that took 6 minutes on 2,102 dev questions).
 * Each query's union is prepared once (hybridPrepare) and its reciprocal rank for an alpha counts the documents
 * ranked above its best relevant one in evaluate's order (score descending, ties by id descending, as trec_eval).
 * Checked against {@link tuneByFusing} in test/eval-alpha.test.ts.
 */
export function tune(runs: Run[], qrels: Qrels, qids: ReadonlySet<string>, k: number): { alpha: number; value: number } {
  // A depth under 10 cuts the fused list before MRR@10 reads it.
  if (k < 10) return tuneByFusing(runs, qrels, qids, k);
  const queries = [...pick(qrels, qids)].map(([q, grades]) => {
    const p = hybridPrepare(runs[0]!.get(q) ?? [], runs[1]!.get(q) ?? [], true);
    const relevant = p.ids.flatMap((id, i) => ((grades.get(id) ?? 0) >= 1 ? [i] : []));
    return { ...p, relevant };
  });
  const mrr = (alpha: number) => {
    let total = 0;
    for (const q of queries) {
      if (q.relevant.length === 0) continue;
      const n = q.ids.length;
      const score = new Float64Array(n);
      for (let i = 0; i < n; i++) score[i] = alpha * q.sparse[i]! + q.dense[i]!;
      let best = Infinity;
      for (const r of q.relevant) {
        let above = 0;
        for (let j = 0; j < n && above < 10; j++) if (score[j]! > score[r]! || (score[j] === score[r] && q.ids[j]! > q.ids[r]!)) above++;
        best = Math.min(best, above + 1);
      }
      if (best <= 10) total += 1 / best;
    }
    return queries.length ? total / queries.length : 0;
  };
  const { best } = gridSearch(WIDE_ALPHA_GRID, mrr, { goal: 'max', ties: 'first' });
  return { alpha: best.point, value: best.value };
}

/** {@link tune} through fuse and evaluate: the definition the fast path reproduces. */
export function tuneByFusing(runs: Run[], qrels: Qrels, qids: ReadonlySet<string>, k: number): { alpha: number; value: number } {
  const subset = runs.map((run) => pick(run, qids));
  const judged = pick(qrels, qids);
  const mrr = (alpha: number) =>
    evaluate(fuse(subset, 'hybrid', { alpha, normalization: true, depth: k }), judged, ['mrr@10']).mean['mrr@10'] as number;
  const { best } = gridSearch(WIDE_ALPHA_GRID, mrr, { goal: 'max', ties: 'first' });
  return { alpha: best.point, value: best.value };
}

/**
 * The tuned alpha over `qids`, and the hybrid's gain over BM25 alone measured out of sample (two-fold cross-fitting:
 * the questions split by id parity, each half fused with the alpha tuned on the other half), so that no question
 * scores a weight it helped choose; with the one-SE rule's verdict on that gain.
 */
export function tuneHybridAlpha(
  runs: Run[],
  qrels: Qrels,
  qids: ReadonlySet<string>,
  k: number,
): { alpha: number; value: number } & GainOverBaseline {
  const best = tune(runs, qrels, qids, k);
  const ids = [...qids].sort();
  const halves = [ids.filter((_, i) => i % 2 === 0), ids.filter((_, i) => i % 2 === 1)];
  const fused = new Map<string, number>();
  if (halves[1]!.length)
    for (const [mine, other] of [
      [halves[0]!, halves[1]!],
      [halves[1]!, halves[0]!],
    ]) {
      const own = new Set(mine);
      const alpha = tune(runs, qrels, new Set(other), k).alpha;
      const run = fuse(
        runs.map((r) => pick(r, own)),
        'hybrid',
        { alpha, normalization: true, depth: k },
      );
      for (const [q, v] of mrrPerQuery(run, qrels, own)) fused.set(q, v);
    }
  const bm25 = mrrPerQuery(runs[1]!, qrels, qids);
  return {
    ...best,
    ...gainOverBaseline(
      ids.map((q) => fused.get(q) ?? 0),
      ids.map((q) => bm25.get(q) ?? 0),
    ),
  };
}

/** The tuned alpha, or Infinity (BM25 alone) where the one-standard-error rule turns the dense side off. */
function guarded(t: { alpha: number } & GainOverBaseline, guard: boolean): number {
  return guard && !t.keep ? Infinity : t.alpha;
}

// "alpha 2.3 for covid (MRR@10 0.521 on its 138 dev queries; +0.012 ± 0.006 over BM25 alone out of sample)", or
// "BM25 alone for covid (alpha 50: ...; under one standard error)" when the rule turned the dense side off.
function describe(t: { alpha: number; value: number; gain: number; se: number }, alpha: number, n: number, task?: string): string {
  const on = task === undefined ? `on the ${n} dev queries` : `on its ${n} dev queries`;
  const gain = `${t.gain >= 0 ? '+' : ''}${t.gain.toFixed(3)} ± ${t.se.toFixed(3)} over BM25 alone out of sample`;
  const forTask = task === undefined ? '' : ` for ${task}`;
  return Number.isFinite(alpha)
    ? `alpha ${alpha}${forTask} (MRR@10 ${t.value.toFixed(3)} ${on}; ${gain})`
    : `BM25 alone${forTask} (alpha ${t.alpha}: MRR@10 ${t.value.toFixed(3)} ${on}; ${gain}, under one standard error)`;
}

/**
 * The hybrid's alpha: `--alpha` when given; else tuned for MRR@10 on the dev split, over all dev queries and, when
 * queries carry a `task` (the dense side already reads it: each task's marker), per task; a task with no dev
 * questions takes the all-task alpha. Without a dev split: 1. Each tuned alpha then goes through the one-SE rule
 * unless `hybridGuard` is false (Infinity: BM25 alone), on a gain measured out of sample (see tuneHybridAlpha).
 */
async function tuneAlpha(
  o: EvalCommandOptions,
  bm25Index: Bm25Index,
  denseDev: (queries: Texts) => Promise<Run>,
  label = 'hybrid',
  stored?: StoredHybrid,
): Promise<HybridAlpha> {
  if (o.alpha !== undefined) return { all: o.alpha, byTask: new Map() };
  if (o.split === 'dev' || !existsSync(join(o.data, 'qrels', 'dev.tsv'))) {
    if (stored) {
      console.log(
        `${label}: alpha ${stored.alpha ?? 'BM25 alone'} from the model's card (tuned on ${stored.tunedOn.data}'s ${stored.tunedOn.questions} dev questions; no dev split here)`,
      );
      return fromStored(stored);
    }
    console.log(`${label}: alpha 1 (no dev split to tune it on, none stored with the model; --alpha sets it)`);
    return { all: 1, byTask: new Map() };
  }
  const dev = await readBeir(o.data, 'dev');
  const devQueries = dev.queries.filter((q) => dev.qrels.has(q.id));
  const runs = [await denseDev(devQueries), await bm25Search(bm25Index, devQueries, o.k, 'bm25 (dev) ')];
  const guard = o.hybridGuard !== false;
  const allTuned = tuneHybridAlpha(runs, dev.qrels, new Set(devQueries.map((q) => q.id)), o.k);
  const all = guarded(allTuned, guard);
  console.log(`${label}: ${describe(allTuned, all, devQueries.length)}`);
  const byTask = new Map<string, number>();
  const questions = devQueries.length;
  if (o.alphaPerTask === false) return { all, byTask, questions };
  const tasks = [...new Set(devQueries.map((q) => q.task).filter((t): t is string => t !== undefined))].sort();
  if (tasks.length < 2) return { all, byTask, questions };
  for (const task of tasks) {
    const ids = new Set(devQueries.filter((q) => q.task === task).map((q) => q.id));
    const t = tuneHybridAlpha(runs, dev.qrels, ids, o.k);
    byTask.set(task, guarded(t, guard));
    console.log(`${label}: ${describe(t, byTask.get(task)!, ids.size, task)}`);
  }
  return { all, byTask, questions };
}

/**
 * Tunes the dense + BM25 hybrid's alpha for a model on `data`'s dev split (as `quorum eval` does: per task, the
 * one-standard-error rule) and stores it in the model's card, where servers and `quorum eval` on data without a dev
 * split read it. ERR_IO when `data` has no dev split. `quorum train` calls it after training; `quorum hybrid-alpha`
 * runs it on a model trained before.
 */
export async function tuneModelHybrid(o: { model: string; data: string; k?: number }): Promise<StoredHybrid> {
  if (!existsSync(join(o.data, 'qrels', 'dev.tsv')))
    throw new QuorumError('ERR_IO', `${o.data} has no qrels/dev.tsv to tune the hybrid on`);
  const dir = modelDir(o.model);
  const model = await Retriever.load(dir);
  const ds = await readBeir(o.data, 'dev');
  const corpus = ds.corpus.map((p) => ({ id: p.id, text: p.title ? `${p.title}. ${p.text}` : p.text }));
  const bm25Index = await Bm25Index.build(corpus, { k1: 0.9, b: 0.4 });
  const dense = new DenseMethod(ds.corpus, 0, model);
  try {
    const k = o.k ?? 100;
    const alpha = await tuneAlpha({ data: o.data, split: 'test', k } as EvalCommandOptions, bm25Index, (qs) =>
      dense.run(qs, k, 'dense (dev) '),
    );
    const stored = (a: number) => (Number.isFinite(a) ? a : null);
    const hybrid: StoredHybrid = {
      alpha: stored(alpha.all),
      ...(alpha.byTask.size ? { byTask: Object.fromEntries([...alpha.byTask].map(([t, a]) => [t, stored(a)])) } : {}),
      tunedOn: { data: o.data, questions: alpha.questions ?? 0 },
    };
    storeHybrid(dir, hybrid);
    return hybrid;
  } finally {
    dense.dispose();
    bm25Index.dispose();
    model.dispose();
  }
}

/** The hybrid run with each query's task's alpha. */
function hybridRun(dense: Run, bm25: Run, alpha: HybridAlpha, taskOf: ReadonlyMap<string, string | undefined>, k: number): Run {
  const groups = new Map<number, Set<string>>();
  for (const q of new Set([...dense.keys(), ...bm25.keys()])) {
    const task = taskOf.get(q);
    const a = (task !== undefined ? alpha.byTask.get(task) : undefined) ?? alpha.all;
    groups.set(a, (groups.get(a) ?? new Set()).add(q));
  }
  const out = new Map<string, ScoredDoc[]>();
  for (const [a, qids] of groups) {
    if (!Number.isFinite(a)) {
      for (const q of qids) out.set(q, [...(bm25.get(q) ?? [])]);
      continue;
    }
    for (const [q, list] of fuse([pick(dense, qids), pick(bm25, qids)], 'hybrid', { alpha: a, normalization: true, depth: k }))
      out.set(q, list);
  }
  return out;
}

/** The MUF directory's runs on `queries`: its fusions, each expert alone, and MUF + BM25. */
async function mufRuns(
  o: EvalCommandOptions,
  bm25Index: Bm25Index,
  queries: Texts,
  bm25: Run,
  qrels: Qrels,
  extras: Extras,
): Promise<Map<string, Run>> {
  const muf = await MufRetriever.load(o.muf!);
  const calibration = new CalibrationRecorder(muf.experts.map((e) => e.name));
  try {
    console.log(
      `muf: ${o.muf} (experts ${muf.experts.map((e) => `${e.name} at temperature ${e.calibration?.temperature ?? '-'}`).join(', ')})`,
    );
    // `record`: the calibration is measured on the evaluated queries, not on the dev queries that tune the hybrid.
    const all = async (qs: Texts, label: string, record: boolean) => {
      const out = new Map<string, Map<string, ScoredDoc[]>>();
      const put = (name: string, id: string, hits: ScoredDoc[]) => {
        if (!out.has(name)) out.set(name, new Map());
        out.get(name)!.set(id, hits);
      };
      await inBatches(label, qs.length, BATCH, async (start, end) => {
        const batch = qs.slice(start, end);
        const r = await muf.searchAll(
          batch.map((q) => q.text),
          o.k,
          { tasks: batch.map((q) => q.task) },
        );
        batch.forEach((q, b) => {
          put('muf', q.id, r.muf[b]!.hits);
          put('muf-mi', q.id, r.mufMi[b]!.hits);
          put('muf-uniform', q.id, r.uniform[b]!.hits);
          if (record) {
            // Abstention: the highest expert confidence per question, and whether the fused top-1 is right.
            selective.confidence.push(Math.max(...r.muf[b]!.confidence));
            const top = r.muf[b]!.hits[0];
            selective.right.push(top !== undefined && (qrels.get(q.id)?.get(top.id) ?? 0) > 0);
          }
          put('muf-oracle', q.id, r.oracle![b]!.hits);
          muf.experts.forEach((e, i) => put(`expert:${e.name}`, q.id, r.experts[i]![b]!));
        });
        if (record)
          calibration.add(
            batch.map((q) => q.id),
            r,
            qrels,
          );
      });
      return out;
    };
    const selective = { confidence: [] as number[], right: [] as boolean[] };
    const runs: Map<string, Run> = await all(queries, 'muf   ', true);
    const curve = precisionCoverage(selective.confidence, selective.right);
    const what = muf.familiarityCalibrated ? 'P(own task)' : 'MI confidence';
    console.log(
      `muf abstention by the highest expert ${what}: coverage at precision@1 ${SELECTIVE_PRECISIONS.map((p) => `>= ${p}: ${(100 * curve.coverageAt(p)).toFixed(1)}%`).join(', ')} (all answered: ${(100 * curve.points.at(-1)!.precision).toFixed(1)}% right; the most confident half: ${(100 * curve.points.find((x) => x.coverage >= 0.5)!.precision).toFixed(1)}%)`,
    );
    extras.selective = { measure: what, points: curve.points };
    const alpha = await tuneAlpha(o, bm25Index, async (qs) => (await all(qs, 'muf (dev) ', false)).get('muf')!, 'muf-hybrid');
    runs.set('muf-hybrid', hybridRun(runs.get('muf')!, bm25, alpha, new Map(queries.map((q) => [q.id, q.task])), o.k));
    extras.calibration = calibration.series();
    if (o.latency) extras.latency.muf = await timeEach(queries, o.latency, (q) => muf.searchAll([q.text], o.k, { tasks: [q.task] }));
    return runs;
  } finally {
    muf.dispose();
  }
}

/** The CAME directory's runs on `queries`: each fusion of its experts, and each expert alone. */
async function cameRuns(
  o: EvalCommandOptions,
  corpus: readonly PassageText[],
  ids: readonly string[],
  queries: Texts,
  extras: Extras,
): Promise<Map<string, Run>> {
  const came = await CameRetriever.load(o.came!);
  console.log(
    `came: ${o.came} (${came.experts.join(', ')}${came.independent ? ', independent' : ''}, ${came.parameterCount.toLocaleString()} parameters)`,
  );
  await came.index(corpus);
  const fusions = CAME_FUSIONS.filter((f) => f !== 'linear' || came.linear);
  const runs = new Map<string, Map<string, ScoredDoc[]>>();
  const put = (name: string, id: string, hits: readonly Hit[]) => {
    if (!runs.has(name)) runs.set(name, new Map());
    runs.get(name)!.set(
      id,
      hits.map((h) => ({ id: ids[h.id]!, score: h.score })),
    );
  };
  await inBatches('came  ', queries.length, BATCH, async (start, end) => {
    const batch = queries.slice(start, end);
    const r = await came.search(
      batch.map((q) => q.text),
      { k: o.k, expertK: o.k },
    );
    const lists = came.experts.map((e) => r.experts[e]!);
    for (const f of fusions) {
      const fused = f === 'sum' ? r.fused : fuseExperts(lists, f, o.k, o.k, came.linear);
      batch.forEach((q, b) => put(f === 'sum' ? 'came' : `came:${f}`, q.id, fused[b]!));
    }
    for (const e of came.experts) batch.forEach((q, b) => put(`came-expert:${e}`, q.id, r.experts[e]![b]!));
  });
  if (o.latency) extras.latency.came = await timeEach(queries, o.latency, (q) => came.search([q.text], { k: o.k, expertK: o.k }));
  return runs;
}

/** An earlier `quorum eval --out` directory: its metrics.json says so (a new run replaces the runs and metrics together). */
const evalOutput: OutputKind = {
  card: 'metrics.json',
  owns: (dir) => {
    const card = jsonCardIn(dir, 'metrics.json');
    return typeof card?.dataset === 'string' && !!card.metrics && typeof card.metrics === 'object';
  },
};

export async function evalCommand(o: EvalCommandOptions): Promise<void> {
  for (const m of o.metrics) metricFn(m); // ERR_ARG for an unknown metric, before any work
  for (const m of o.methods)
    if (!(EVAL_METHODS as readonly string[]).includes(m))
      throw new QuorumError('ERR_ARG', `unknown method '${m}': use ${EVAL_METHODS.join(', ')} (or --run FILE for a TREC run)`);
  checkK(o.k, '--k');
  if (o.methods.length === 0 && o.runs.length === 0 && !o.muf && !o.came)
    throw new QuorumError('ERR_ARG', 'nothing to evaluate: give --methods, --run, --muf and/or --came');

  const ds = await readBeir(o.data, o.split);
  const judged = new Set(ds.qrels.keys());
  const queries = ds.queries.filter((q) => judged.has(q.id));
  console.log(`dataset ${o.data} (${o.split}): ${ds.corpus.length} passages, ${queries.length} judged queries`);
  const corpus = ds.corpus.map((p) => ({ id: p.id, text: p.title ? `${p.title}. ${p.text}` : p.text }));

  const runs = new Map<string, Run>();
  const extras: Extras = { latency: {} };
  const want = new Set(o.methods);
  const needBm25 = want.has('bm25') || want.has('hybrid') || want.has('rrf');
  const needDense = want.has('dense') || want.has('hybrid') || want.has('rrf');
  const model = o.model && needDense ? await Retriever.load(o.model) : undefined;
  if (model) console.log(`dense: ${o.model} (${model.config.preset}, ${model.parameterCount.toLocaleString()} parameters, ${model.dim}-d)`);
  const bm25Index = needBm25 ? await Bm25Index.build(corpus, { k1: 0.9, b: 0.4 }) : undefined;
  const denseMethod = needDense ? new DenseMethod(ds.corpus, o.dim, model) : undefined;
  try {
    const bm25 = bm25Index ? await bm25Search(bm25Index, queries, o.k, 'bm25  ') : undefined;
    const dense = denseMethod ? await denseMethod.run(queries, o.k) : undefined;
    if (want.has('bm25') && bm25) runs.set('bm25', bm25);
    if (want.has('dense') && dense) runs.set('dense', dense);
    if (want.has('hybrid') && bm25 && dense) {
      const alpha = await tuneAlpha(o, bm25Index!, (qs) => denseMethod!.run(qs, o.k, 'dense (dev) '), 'hybrid', model?.loaded?.card.hybrid);
      runs.set('hybrid', hybridRun(dense, bm25, alpha, new Map(queries.map((q) => [q.id, q.task])), o.k));
    }
    if (want.has('rrf') && bm25 && dense) runs.set('rrf', fuse([bm25, dense], 'rrf', { depth: o.k }));
    if (want.has('glove')) runs.set('glove', await gloveRun(corpus, queries, o.k));
    if (o.muf) {
      const index = bm25Index ?? (await Bm25Index.build(corpus, { k1: 0.9, b: 0.4 }));
      for (const [name, run] of await mufRuns(
        o,
        index,
        queries,
        bm25 ?? (await bm25Search(index, queries, o.k, 'bm25  ')),
        ds.qrels,
        extras,
      ))
        runs.set(name, run);
    }
    if (o.came)
      for (const [name, run] of await cameRuns(
        o,
        ds.corpus,
        ds.corpus.map((p) => p.id),
        queries,
        extras,
      ))
        runs.set(name, run);
    if (o.latency) {
      if (want.has('bm25') && bm25Index) extras.latency.bm25 = await timeEach(queries, o.latency, (q) => bm25Index.search([q.text], o.k));
      if (want.has('dense') && denseMethod) extras.latency.dense = await timeEach(queries, o.latency, (q) => denseMethod.run([q], o.k, ''));
    }
  } finally {
    denseMethod?.dispose();
  }
  for (const file of o.runs) runs.set(basename(file).replace(/\.(trec|run|txt)$/, ''), await readRun(file));

  const results: Record<string, Record<string, number>> = {};
  const byTask: Record<string, Record<string, Record<string, number>>> = {};
  const rows: Array<Record<string, string | number>> = [];
  const taskRows: Array<Record<string, string | number>> = [];
  const taskOf = new Map(queries.map((q) => [q.id, q.task ?? '(none)']));
  for (const [name, run] of runs) {
    const { mean, perQuery } = evaluate(run, ds.qrels, o.metrics);
    results[name] = mean;
    rows.push({ run: name, ...mean });
    if (!o.byTask) continue;
    byTask[name] = {};
    for (const [task, g] of Object.entries(groupMeans(perQuery, taskOf, o.metrics))) {
      byTask[name][task] = g.mean;
      taskRows.push({ run: name, task, queries: String(g.queries), ...g.mean });
    }
  }
  console.log('');
  table(rows);
  if (o.byTask) {
    console.log('');
    table(taskRows);
  }
  const cutoffs = recallCutoffs(o.k);
  const data: ReportData = {
    dataset: o.data,
    split: o.split,
    queries: queries.length,
    metrics: results,
    ...(o.byTask ? { byTask } : {}),
    recall: Object.fromEntries([...runs].map(([name, run]) => [name, recallCurve(run, ds.qrels, cutoffs)])),
    ...(Object.keys(extras.latency).length ? { latency: extras.latency } : {}),
    ...(extras.calibration ? { calibration: extras.calibration } : {}),
    ...(extras.selective ? { selective: extras.selective } : {}),
  };
  if (o.report) {
    writeReport(o.report, data);
    console.log(`\nwrote the report ${o.report}`);
  }
  if (o.out) {
    // Runs this command made (not the --run files it read), with ':' out of file names.
    const made = [...runs.keys()].filter(
      (n) => o.methods.includes(n) || (o.muf && (n.startsWith('muf') || n.startsWith('expert:'))) || (o.came && n.startsWith('came')),
    );
    const file = (n: string) => `${n.replace(/:/g, '-')}.trec`;
    // The runs and their metrics go in together (a crash leaves the old output or the new one).
    replaceDirectorySync(
      o.out,
      (tmp) => {
        for (const name of made) writeRun(join(tmp, file(name)), runs.get(name)!, name);
        writeFileAtomic(join(tmp, 'metrics.json'), Buffer.from(JSON.stringify(data, null, 2) + '\n'));
      },
      { keepOthers: true, kind: evalOutput },
    );
    console.log(`\nwrote ${made.map(file).join(', ')}${made.length ? ' and ' : ''}metrics.json to ${o.out}`);
  }
}
