// `quorum demo`: the multi-expert pipeline on the embedded benchmark (or any BEIR dataset whose queries carry a
// task): BM25, the shipped dense model, DPR-MUF over one expert per task (experts, heads and calibration trained here,
// on the train and dev splits), each expert alone, the hybrids with BM25; the table, per-query confidences and the
// HTML report; then the native kernels against plain JS.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Bm25Index } from '../bm25/bm25.js';
import { loadBeir } from '../data/beir.js';
import { readQrels } from '../data/trec-files.js';
import { HashedTfidfEncoder } from '../encoders/hashed-tfidf.js';
import { QuorumError } from '../errors.js';
import { type Qrels, type Run, type ScoredDoc, evaluate, groupMeans } from '../eval/ranking.js';
import { hybridFuse, searchAlpha } from '../hybrid.js';
import { buildMuf } from '../methods/muf/cli.js';
import type { MufRetriever } from '../methods/muf/retriever.js';
import { packageRoot } from '../native.js';
import { inBatches } from '../progress.js';
import { CalibrationRecorder, type ReportData, recallCurve, recallCutoffs, timeEach } from '../report/data.js';
import { writeReport } from '../report/html.js';
import { capabilities } from '../runtime.js';
import { scoreTopK } from '../dense.js';
import { Tensor } from '../tensor.js';
import { taskIfKnown } from '../models/model-dir.js';
import { Retriever } from '../models/retriever.js';
import { check } from '../validate.js';
import { kernelCheck, speedCheck } from './demo-kernels.js';
import { TRAIN_DEFAULTS, trainCommand } from './train.js';
import { table } from './table.js';

interface DemoOptions {
  /** A BEIR-layout dataset (default: the embedded benchmark). */
  data?: string;
  /** A model directory, 'default' (the shipped model, the default) or 'tfidf'. */
  model?: string;
  /** Hashed TF-IDF dimension. */
  dim?: number;
  /** The speed comparison on a random corpus (default true). */
  bench?: boolean;
  /** DPR-MUF (default true; needs a trained model and train / dev splits with tasks). */
  muf?: boolean;
  /**
   * DPR-MUF's experts: 'trained' (default), one 0-layer Siamese model per task trained here from GloVe on that task's
   * questions alone (3 epochs, seconds each); 'shared', the dense model as every task's expert with its task marker.
   */
  experts?: 'trained' | 'shared';
  /** Where to write the HTML report (default quorum-demo-report.html; false: none). */
  report?: string | false;
}

const DEPTH = 100;
const METRICS = ['mrr@10', 'recall@1', 'recall@20', 'recall@100'];
const ALPHAS = Array.from({ length: 51 }, (_, i) => i / 10);

type Dataset = ReturnType<typeof loadBeir>;
type Texts = Array<{ id: string; text: string; task?: string }>;

/** The dense encoder: the shipped trained model (or another model directory), or hashed TF-IDF without torch. */
async function denseEncoder(
  ds: Dataset,
  queries: Texts,
  o: DemoOptions,
): Promise<{ corpus: Tensor<'f32'>; queries: Tensor<'f32'>; name: string; model?: Retriever }> {
  if (o.model !== 'tfidf') {
    try {
      const model = await Retriever.load(o.model ?? 'default');
      const corpus = await model.encodePassages(ds.corpus);
      // Questions are encoded per task (each with its task's marker, if the model was trained with markers).
      const q = Tensor.zeros([queries.length, model.dim]);
      for (const task of new Set(queries.map((x) => x.task))) {
        const rows = queries.flatMap((x, i) => (x.task === task ? [i] : []));
        const emb = await model.encodeQueries(
          rows.map((i) => queries[i]!.text),
          { task: taskIfKnown(model.config.tasks, task) },
        );
        rows.forEach((r, j) => q.data.set(emb.data.subarray(j * model.dim, (j + 1) * model.dim), r * model.dim));
        emb.dispose();
      }
      return { corpus, queries: q, model, name: `trained ${model.config.preset} (${o.model ?? 'default'}, ${model.dim}-d)` };
    } catch (e) {
      // Without the torch module (or the model) the demo still runs, on the training-free encoder.
      if (!(e instanceof QuorumError) || e.code !== 'ERR_BACKEND_UNAVAILABLE' || o.model) throw e;
      console.log(`(the trained model needs quorum_torch: ${e.message}; using hashed TF-IDF, and no DPR-MUF)`);
    }
  }
  const dim = o.dim ?? 768;
  const texts = ds.corpus.map((p) => `${p.title}. ${p.text}`);
  const encoder = HashedTfidfEncoder.fit(texts, { dim });
  return { corpus: encoder.encode(texts), queries: encoder.encode(queries.map((q) => q.text)), name: `hashed TF-IDF (${dim}-d)` };
}

/** DPR-MUF over the model, one expert per task that has training questions; undefined when that is not possible. */
async function demoMuf(dir: string, queries: Texts, o: DemoOptions): Promise<MufRetriever | undefined> {
  if (o.muf === false) return undefined;
  if (!existsSync(join(dir, 'qrels', 'train.tsv')) || !existsSync(join(dir, 'qrels', 'dev.tsv'))) {
    console.log('DPR-MUF: skipped (the dataset has no train and dev splits to train and calibrate the heads on)\n');
    return undefined;
  }
  // The tasks with training questions, from the train qrels and the queries already loaded.
  const trainIds = new Set((await readQrels(join(dir, 'qrels', 'train.tsv'))).keys());
  const tasks = [
    ...new Set(
      queries
        .filter((q) => trainIds.has(q.id))
        .map((q) => q.task)
        .filter((t): t is string => t !== undefined),
    ),
  ].sort();
  if (tasks.length < 2) {
    console.log(`DPR-MUF: skipped (${tasks.length} task with training questions; it fuses one expert per task)\n`);
    return undefined;
  }
  const t0 = performance.now();
  let experts: string[];
  let scratch: string | undefined;
  if (o.experts === 'trained') {
    // Experts that share nothing but GloVe: each sees only its own task's questions
    // (docs/methods/muf.md#does-the-confidence-know-the-domain).
    console.log(
      `DPR-MUF: one expert per task (${tasks.join(', ')}), each a 0-layer Siamese model trained here from GloVe on its task's questions alone, with an ensemble of 5 small heads; temperatures and familiarity calibrated on dev:`,
    );
    scratch = mkdtempSync(join(tmpdir(), 'quorum-demo-experts-'));
    experts = [];
    for (const task of tasks) {
      const out = join(scratch, task);
      await trainCommand({ ...DEMO_EXPERT, data: dir, tasks: [task], out, hybrid: false }, (line) => {
        if (line.startsWith('wrote ')) console.log(`  expert ${task}: ${line.slice(6).replace(out, 'trained')}`);
      });
      experts.push(`${out}:${task}`);
    }
  } else {
    const model = o.model ?? 'default';
    console.log(
      `DPR-MUF: the model as the expert of each task (${tasks.join(', ')}), each with an ensemble of 5 small heads trained on its task's questions, temperatures calibrated on dev:`,
    );
    experts = tasks.map((t) => `${model}:${t}`);
  }
  try {
    const muf = await buildMuf(
      {
        data: dir,
        experts,
        members: 5,
        hidden: 64,
        layers: 1,
        epochs: 10,
        batch: 128,
        lr: 1e-3,
        hardNegatives: 1,
        topL: DEPTH,
        hitTopK: 1,
        seed: 1,
      },
      (line) => {
        if (!/epoch \d+,/.test(line) || /epoch 10,/.test(line)) console.log(`  ${line}`);
      },
    );
    console.log(`  built in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    return muf;
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

/** The demo's per-task experts: `quorum train --preset siamese --layers 0 --epochs 3`, the rest at the command's defaults. */
const DEMO_EXPERT = { ...TRAIN_DEFAULTS, preset: 'siamese', layers: 0, epochs: 3 } as const;

const judgedIds = (qrels: Qrels, id: string) =>
  new Set([...(qrels.get(id) ?? new Map<string, number>())].filter(([, g]) => g > 0).map(([d]) => d));
const mrr10 = (ranked: readonly string[], rel: ReadonlySet<string>) => {
  const i = ranked.slice(0, 10).findIndex((d) => rel.has(d));
  return i < 0 ? 0 : 1 / (i + 1);
};

/** The hybrid of `a` (dense side) and BM25 with alpha tuned for MRR@10 on the `tune` queries. */
function tunedHybrid(a: Run, bm25: Run, tune: readonly string[], qrels: Qrels): { alpha: number; run: Run } {
  const dev = tune.map((q) => ({ dense: a.get(q) ?? [], sparse: bm25.get(q) ?? [], relevant: judgedIds(qrels, q) }));
  const { alpha } = searchAlpha(dev, { metric: mrr10, normalization: true, grid: ALPHAS });
  const run = new Map<string, ScoredDoc[]>();
  for (const q of new Set([...a.keys(), ...bm25.keys()]))
    run.set(q, hybridFuse(a.get(q) ?? [], bm25.get(q) ?? [], { alpha, normalization: true }).slice(0, DEPTH));
  return { alpha, run };
}

export async function demo(o: DemoOptions = {}): Promise<void> {
  const experts = o.experts ?? 'trained';
  check(experts === 'trained' || experts === 'shared', 'ERR_ARG', `experts must be 'trained' or 'shared', got '${String(experts)}'`);
  const caps = capabilities();
  console.log(`Quorum demo: kernels ${caps.isa} (available: ${caps.availableIsas.join(', ')}), ${caps.threads} threads\n`);
  const dir = o.data ?? join(packageRoot, 'data', 'multidomain-mini');
  const ds = loadBeir(dir);
  // The judged queries of the test split (the embedded benchmark also holds train and dev queries).
  const queries: Texts = ds.queries.filter((q) => ds.qrels.has(q.id));
  const tasks = [...new Set(queries.map((q) => q.task).filter(Boolean))];
  console.log(
    `dataset ${dir}: ${ds.corpus.length} passages, ${queries.length} test queries${tasks.length ? ` (tasks: ${tasks.join(', ')})` : ''}\n`,
  );
  const docIds = ds.corpus.map((p) => p.id);

  // The experts' and baselines' runs on the test queries.
  const t0 = performance.now();
  const enc = await denseEncoder(ds, queries, o);
  console.log(`dense: ${enc.name}, corpus and questions encoded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const runs = new Map<string, Run>();
  const dense = new Map<string, ScoredDoc[]>();
  await inBatches('dense ', queries.length, 256, async (start, end) => {
    const dim = enc.corpus.shape[1]!;
    const q = Tensor.from(enc.queries.data.subarray(start * dim, end * dim), [end - start, dim]);
    const top = await scoreTopK(q, enc.corpus, DEPTH);
    q.dispose();
    for (let b = start; b < end; b++)
      dense.set(
        queries[b]!.id,
        top.hits(b - start).map((h) => ({ id: docIds[h.id]!, score: h.score })),
      );
  });
  const bm25Index = await Bm25Index.build(
    ds.corpus.map((p) => ({ id: p.id, text: `${p.title}. ${p.text}` })),
    { k1: 0.9, b: 0.4 },
  );
  const bm25 = new Map<string, ScoredDoc[]>();
  await inBatches('bm25  ', queries.length, 256, async (start, end) => {
    const hits = await bm25Index.search(
      queries.slice(start, end).map((q) => q.text),
      DEPTH,
    );
    hits.forEach((h, j) => bm25.set(queries[start + j]!.id, h));
  });
  runs.set('BM25', bm25);
  runs.set('dense', dense);

  // Without quorum_torch (the dense side fell back to hashed TF-IDF) neither the experts nor their heads can train.
  const muf = enc.model ? await demoMuf(dir, ds.queries, { ...o, experts }) : undefined;
  const confidences = new Map<string, number[]>();
  const familiarity = new Map<string, number[]>();
  let calibration: ReturnType<CalibrationRecorder['series']> | undefined;
  if (muf) {
    const recorder = new CalibrationRecorder(muf.experts.map((e) => e.name));
    const fused = new Map<string, ScoredDoc[]>();
    const uniform = new Map<string, ScoredDoc[]>();
    const alone = muf.experts.map(() => new Map<string, ScoredDoc[]>());
    await inBatches('muf   ', queries.length, 256, async (start, end) => {
      const batch = queries.slice(start, end);
      const r = await muf.searchAll(
        batch.map((q) => q.text),
        DEPTH,
      );
      batch.forEach((q, b) => {
        fused.set(q.id, r.muf[b]!.hits);
        uniform.set(q.id, r.uniform[b]!.hits);
        r.experts.forEach((lists, x) => alone[x]!.set(q.id, lists[b]!));
        confidences.set(q.id, r.confidence[b]!);
        if (r.familiarity) familiarity.set(q.id, r.familiarity[b]!);
      });
      recorder.add(
        batch.map((q) => q.id),
        r,
        ds.qrels,
      );
    });
    calibration = recorder.series();
    runs.set('DPR-MUF', fused);
    runs.set('uniform fusion', uniform);
    muf.experts.forEach((e, x) => runs.set(`expert ${e.name} alone`, alone[x]!));
  }

  // Hybrids: alpha tuned on the even-numbered queries, every method scored on the odd-numbered ones (so that both
  // halves mix the tasks and no method is scored on what tuned it).
  const even = queries.filter((_, i) => i % 2 === 0).map((q) => q.id);
  const odd = new Set(queries.filter((_, i) => i % 2 === 1).map((q) => q.id));
  const hybrid = tunedHybrid(dense, bm25, even, ds.qrels);
  runs.set(`dense + BM25 (alpha ${hybrid.alpha})`, hybrid.run);
  if (muf) {
    const h = tunedHybrid(runs.get('DPR-MUF')!, bm25, even, ds.qrels);
    runs.set(`DPR-MUF + BM25 (alpha ${h.alpha})`, h.run);
  }
  const oddQrels = new Map([...ds.qrels].filter(([q]) => odd.has(q)));
  const taskOf = new Map(queries.map((q) => [q.id, q.task ?? '(none)']));
  const data: ReportData = {
    dataset: dir,
    split: `test, the ${odd.size} odd-numbered queries`,
    queries: odd.size,
    metrics: {},
    byTask: {},
    recall: {},
  };
  const rows: Array<Record<string, string | number>> = [];
  for (const [name, run] of runs) {
    const { mean, perQuery } = evaluate(run, oddQrels, METRICS);
    data.metrics[name] = mean;
    rows.push({ method: name, ...mean });
    data.recall![name] = recallCurve(run, oddQrels, recallCutoffs(DEPTH));
    data.byTask![name] = Object.fromEntries(Object.entries(groupMeans(perQuery, taskOf, METRICS)).map(([task, g]) => [task, g.mean]));
  }
  console.log(`\nretrieval on the ${odd.size} odd-numbered test queries (hybrid alphas tuned for MRR@10 on the ${even.length} even ones):`);
  table(rows);

  if (muf) {
    console.log(
      familiarity.size
        ? "\nDPR-MUF's per-query confidences, a question of each task: P(own task) from each expert's familiarity (the fusion's weights) and the paper's MI confidence:"
        : "\nDPR-MUF's per-query confidences (each expert's; the fusion weighs the experts' lists by them), a question of each task:",
    );
    const examples = [...new Set(taskOf.values())]
      .map((t) => queries.find((q) => q.task === t && odd.has(q.id)))
      .filter((q) => q !== undefined);
    table(
      examples.map((q) => ({
        question: q.text.length > 60 ? `${q.text.slice(0, 57)}...` : q.text,
        task: q.task ?? '',
        ...(familiarity.size ? Object.fromEntries(muf.experts.map((e, i) => [`P(own) ${e.name}`, familiarity.get(q.id)![i]!])) : {}),
        ...Object.fromEntries(muf.experts.map((e, i) => [`${familiarity.size ? 'MI' : 'conf'} ${e.name}`, confidences.get(q.id)![i]!])),
        'top-1 relevant': (ds.qrels.get(q.id)?.get(runs.get('DPR-MUF')!.get(q.id)?.[0]?.id ?? '') ?? 0) > 0 ? 'yes' : 'no',
      })),
    );
    if (calibration) data.calibration = calibration;
    console.log(
      experts === 'trained'
        ? "  (each expert's familiarity tells its task's questions from the other's, but on this data neither expert is better than the other on its own task's questions, so the fusion changes little however it weighs them: docs/methods/muf.md#does-the-confidence-know-the-domain)"
        : "  (the experts share the shipped encoder and differ by their heads and their questions' task marker, so their lists nearly coincide and the fusion changes little however it weighs them: docs/methods/muf.md#does-the-confidence-know-the-domain)",
    );
  }

  if (o.report !== false) {
    const sample = queries.filter((q) => odd.has(q.id));
    data.latency = {
      BM25: await timeEach(sample, 50, (q) => bm25Index.search([q.text], 10)),
      ...(enc.model
        ? {
            dense: await timeEach(sample, 50, async (q) => {
              const v = await enc.model!.encodeQueries([q.text], { task: taskIfKnown(enc.model!.config.tasks, q.task) });
              await scoreTopK(v, enc.corpus, 10);
              v.dispose();
            }),
          }
        : {}),
      ...(muf ? { 'DPR-MUF': await timeEach(sample, 50, (q) => muf.search([q.text], 10)) } : {}),
    };
    const path = o.report ?? 'quorum-demo-report.html';
    writeReport(path, data, { title: `Quorum demo: ${dir.endsWith('multidomain-mini') ? 'the embedded multi-domain benchmark' : dir}` });
    console.log(`\nwrote the HTML report ${path} (metric bars per task, Recall@k, ${muf ? "MUF's calibration, " : ''}latency)\n`);
  }
  muf?.dispose();

  await kernelCheck(
    enc.queries,
    enc.corpus,
    queries.map((q) => q.id),
    docIds,
    ds.qrels,
  );
  enc.corpus.dispose();
  enc.queries.dispose();
  if (o.bench !== false) speedCheck();
}
