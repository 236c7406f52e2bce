// What an evaluation hands to the HTML report: the metrics.json that `quorum eval --out DIR` writes, checked by
// one schema when it is read back, and the measurements that only the report uses (Recall@k curves, single-query
// latencies, per-expert calibration).
import { join } from 'node:path';

import { z } from 'zod';

import { readTextFile } from '../data/files.js';
import { QuorumError } from '../errors.js';
import { type Qrels, type Run, type ScoredDoc, evaluate } from '../eval/ranking.js';
import { parse } from '../validate.js';

const metricTable = z.record(z.string(), z.number().finite());

/** The results of one evaluation (metrics.json). */
export const reportDataSchema = z.object({
  dataset: z.string(),
  split: z.string(),
  queries: z.number().int().nonnegative(),
  /** method -> metric -> mean */
  metrics: z.record(z.string(), metricTable),
  /** method -> task -> metric -> mean */
  byTask: z.record(z.string(), z.record(z.string(), metricTable)).optional(),
  /** method -> k -> mean Recall@k */
  recall: z.record(z.string(), metricTable).optional(),
  /** method -> milliseconds of each single-query search */
  latency: z.record(z.string(), z.array(z.number().finite().nonnegative())).optional(),
  /** per expert: each query's confidence and whether the expert's own top-1 is relevant (DPR-MUF) */
  calibration: z
    .array(z.object({ name: z.string(), confidence: z.array(z.number().min(0).max(1)), hit: z.array(z.number().min(0).max(1)) }))
    .optional(),
  /** DPR-MUF's abstention: per threshold of the highest expert confidence, the share answered and the share right */
  selective: z
    .object({
      measure: z.string(),
      points: z.array(
        z.object({ threshold: z.number().finite(), coverage: z.number().min(0).max(1), precision: z.number().min(0).max(1) }),
      ),
    })
    .optional(),
});
export type ReportData = z.infer<typeof reportDataSchema>;

/** Reads and checks `dir/metrics.json` (or a metrics.json path). */
export function readReportData(path: string): ReportData {
  const file = path.endsWith('.json') ? path : join(path, 'metrics.json');
  let text: string;
  try {
    text = readTextFile(file);
  } catch (e) {
    throw new QuorumError('ERR_IO', `${(e as Error).message} (write it with quorum eval --out DIR)`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new QuorumError('ERR_FORMAT', `${file}: not JSON (${(e as Error).message})`);
  }
  try {
    return parse(reportDataSchema, value, file);
  } catch (e) {
    throw new QuorumError('ERR_FORMAT', (e as Error).message);
  }
}

/** The cut-offs of the Recall@k curves: 1, 2, 3, 5, 10, 20, 30, 50, 100, 200, ... up to `k`. */
export function recallCutoffs(k: number): number[] {
  const out: number[] = [];
  for (let scale = 1; scale <= k; scale *= 10) for (const m of [1, 2, 3, 5]) if (m * scale <= k) out.push(m * scale);
  if (out[out.length - 1] !== k) out.push(k);
  return out;
}

/** Mean Recall@k of a run at each of `cutoffs`. */
export function recallCurve(run: Run, qrels: Qrels, cutoffs: readonly number[]): Record<string, number> {
  const { mean } = evaluate(
    run,
    qrels,
    cutoffs.map((k) => `recall@${k}`),
  );
  return Object.fromEntries(cutoffs.map((k) => [String(k), mean[`recall@${k}`] as number]));
}

/**
 * Milliseconds of `search` on each of the first `n` items, one at a time (after one untimed warm-up call): the
 * latency a server answering single queries sees.
 */
export async function timeEach<T>(items: readonly T[], n: number, search: (item: T) => Promise<unknown>): Promise<number[]> {
  const sample = items.slice(0, Math.max(0, n));
  if (sample.length === 0) return [];
  await search(sample[0] as T);
  const out: number[] = [];
  for (const item of sample) {
    const t0 = performance.now();
    await search(item);
    out.push(performance.now() - t0);
  }
  return out;
}

/**
 * DPR-MUF's calibration record as the report draws it: per expert, each query's confidence and whether the expert's
 * own top-1 passage is relevant. Feed it every `MufRetriever.searchAll` batch.
 *
 * @example
 * const cal = new CalibrationRecorder(muf.experts.map((e) => e.name));
 * cal.add(batch.map((q) => q.id), await muf.searchAll(batch.map((q) => q.text), 10), qrels);
 * data.calibration = cal.series();
 */
export class CalibrationRecorder {
  private readonly confidence: number[][];
  private readonly hit: number[][];

  constructor(private readonly names: readonly string[]) {
    this.confidence = names.map(() => []);
    this.hit = names.map(() => []);
  }

  /** One batch: `result.confidence[b][i]` and `result.experts[i][b]` of query `queryIds[b]`. */
  add(
    queryIds: readonly string[],
    result: { confidence: readonly (readonly number[])[]; experts: readonly (readonly (readonly ScoredDoc[])[])[] },
    qrels: Qrels,
  ): void {
    queryIds.forEach((qid, b) => {
      this.names.forEach((_, i) => {
        const top = result.experts[i]?.[b]?.[0];
        this.confidence[i]!.push(result.confidence[b]![i]!);
        this.hit[i]!.push(top && (qrels.get(qid)?.get(top.id) ?? 0) > 0 ? 1 : 0);
      });
    });
  }

  /** The record so far, in the report's shape. */
  series(): NonNullable<ReportData['calibration']> {
    return this.names.map((name, i) => ({ name, confidence: this.confidence[i]!, hit: this.hit[i]! }));
  }
}
