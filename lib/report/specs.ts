// The report's charts as Vega-Lite specs (rendered by Vega: headless to SVG in charts.ts, in the browser in html.ts).
import type { TopLevelSpec } from 'vega-lite';

import { QuorumError } from '../errors.js';
import { calibrationBins } from '../uncertainty.js';
import { mustBeArray, mustBeObject } from '../validate.js';
import type { ReportData } from './data.js';

/** One series of a calibration chart: per question, a confidence in [0, 1] and whether the outcome was a hit. */
export interface CalibrationSeries {
  name: string;
  confidence: ArrayLike<number>;
  hit: ArrayLike<number | boolean>;
}

/**
 * Mean confidence, accuracy and count per non-empty bin, with {@link ece}'s binning (DPR-MUF's 10 bins; a value on
 * an edge goes to the lower bin); confidences outside [0, 1] are clamped into the end bins first.
 */
export function reliabilityBins(
  confidence: ArrayLike<number>,
  hit: ArrayLike<number | boolean>,
  bins = 10,
): Array<{ bin: number; confidence: number; accuracy: number; count: number }> {
  if (confidence.length !== hit.length) throw new QuorumError('ERR_SHAPE', `${confidence.length} confidences for ${hit.length} outcomes`);
  if (!Number.isInteger(bins) || bins < 1) throw new QuorumError('ERR_RANGE', `bins must be a positive integer, got ${bins}`);
  const clamped = Array.from(confidence, (c) => Math.min(1, Math.max(0, c)));
  const { count, sumConf, sumHit } = calibrationBins(clamped, hit, bins);
  const out: Array<{ bin: number; confidence: number; accuracy: number; count: number }> = [];
  for (let b = 0; b < bins; b++) {
    const n = count[b] as number;
    if (n > 0) out.push({ bin: (b + 0.5) / bins, confidence: (sumConf[b] as number) / n, accuracy: (sumHit[b] as number) / n, count: n });
  }
  return out;
}

/** A reliability diagram: per series, accuracy against mean confidence of each non-empty bin, with the diagonal. */
/**
 * DPR-MUF's precision-coverage curve: answering only the questions whose highest expert confidence reaches a
 * threshold, the share answered against the share of those whose fused top-1 is right.
 */
export function selectiveSpec(s: {
  measure: string;
  points: ReadonlyArray<{ threshold: number; coverage: number; precision: number }>;
}): TopLevelSpec {
  mustBeObject(s, 'selective answering');
  mustBeArray(s.points, 'points');
  return {
    title: `Abstention by the highest expert ${s.measure}`,
    width: 360,
    height: 300,
    data: { values: s.points.map((p) => ({ ...p })) },
    mark: { type: 'line', point: false, tooltip: true },
    encoding: {
      x: { field: 'coverage', type: 'quantitative', title: 'coverage (share answered)', scale: { domain: [0, 1] } },
      y: { field: 'precision', type: 'quantitative', title: 'precision@1 of the answered', scale: { domain: [0, 1] } },
    },
  };
}

export function reliabilitySpec(series: readonly CalibrationSeries[], title = 'Reliability (10 bins)'): TopLevelSpec {
  mustBeArray(series, 'series');
  const values = series.flatMap((s) => reliabilityBins(s.confidence, s.hit).map((b) => ({ ...b, expert: s.name })));
  const diagonal = [
    { x: 0, y: 0 },
    { x: 1, y: 1 },
  ];
  return {
    title,
    width: 360,
    height: 300,
    layer: [
      {
        data: { values: diagonal },
        mark: { type: 'line', color: '#999', strokeDash: [4, 4] },
        encoding: { x: { field: 'x', type: 'quantitative' }, y: { field: 'y', type: 'quantitative' } },
      },
      {
        data: { values },
        mark: { type: 'line' },
        encoding: {
          x: { field: 'confidence', type: 'quantitative', title: 'mean confidence', scale: { domain: [0, 1] } },
          y: { field: 'accuracy', type: 'quantitative', title: 'accuracy (hit)', scale: { domain: [0, 1] } },
          color: { field: 'expert', type: 'nominal' },
        },
      },
      {
        // One point per bin, its area by the bin's question count.
        data: { values },
        mark: { type: 'point', filled: true, tooltip: true },
        encoding: {
          x: { field: 'confidence', type: 'quantitative' },
          y: { field: 'accuracy', type: 'quantitative' },
          color: { field: 'expert', type: 'nominal' },
          size: { field: 'count', type: 'quantitative', title: 'questions', scale: { range: [20, 300] } },
        },
      },
    ],
  } as TopLevelSpec;
}

/** Confidence histograms, one row per series (10 bins over [0, 1]). */
export function confidenceSpec(series: readonly CalibrationSeries[], title = 'Confidence per expert'): TopLevelSpec {
  mustBeArray(series, 'series');
  const values = series.flatMap((s) => Array.from(s.confidence, (c) => ({ expert: s.name, confidence: Math.min(1, Math.max(0, c)) })));
  return {
    title,
    data: { values },
    mark: { type: 'bar', tooltip: true },
    width: 300,
    height: 70,
    encoding: {
      x: { field: 'confidence', type: 'quantitative', bin: { extent: [0, 1], step: 0.1 }, title: 'confidence' },
      y: { aggregate: 'count', type: 'quantitative', title: 'questions' },
      row: { field: 'expert', type: 'nominal' },
    },
  } as TopLevelSpec;
}

/** Each metric per method: bars per task (grouped by method) when the results have tasks, else one bar per method. */
export function metricBarsSpec(data: ReportData): TopLevelSpec {
  const byTask = data.byTask && Object.keys(data.byTask).length > 0;
  const values = byTask
    ? Object.entries(data.byTask!).flatMap(([method, tasks]) =>
        Object.entries(tasks).flatMap(([task, m]) => Object.entries(m).map(([metric, value]) => ({ method, task, metric, value }))),
      )
    : Object.entries(data.metrics).flatMap(([method, m]) =>
        Object.entries(m).map(([metric, value]) => ({ method, task: 'all', metric, value })),
      );
  return {
    title: byTask ? 'Each metric per task and method' : 'Each metric per method',
    data: { values },
    mark: { type: 'bar', tooltip: true },
    width: byTask ? 90 * new Set(values.map((v) => v.task)).size : 30 * Object.keys(data.metrics).length,
    height: 160,
    encoding: {
      x: { field: byTask ? 'task' : 'method', type: 'nominal', title: byTask ? 'task' : null, axis: { labelAngle: -30 } },
      ...(byTask ? { xOffset: { field: 'method', type: 'nominal' } } : {}),
      y: { field: 'value', type: 'quantitative', title: null, scale: { domain: [0, 1] } },
      color: { field: 'method', type: 'nominal' },
      row: { field: 'metric', type: 'nominal', title: null },
    },
  } as TopLevelSpec;
}

/** Recall@k against k (log scale), one line per method. */
export function recallSpec(recall: NonNullable<ReportData['recall']>): TopLevelSpec {
  const values = Object.entries(recall).flatMap(([method, curve]) =>
    Object.entries(curve).map(([k, value]) => ({ method, k: Number(k), recall: value })),
  );
  return {
    title: 'Recall@k',
    data: { values },
    mark: { type: 'line', point: true, tooltip: true },
    width: 420,
    height: 260,
    encoding: {
      x: { field: 'k', type: 'quantitative', scale: { type: 'log' }, title: 'k' },
      y: { field: 'recall', type: 'quantitative', scale: { domain: [0, 1] }, title: 'mean Recall@k' },
      color: { field: 'method', type: 'nominal' },
    },
  } as TopLevelSpec;
}

/** Single-query latency per method: a box plot (whiskers at the extremes) on a log axis. */
export function latencySpec(latency: NonNullable<ReportData['latency']>): TopLevelSpec {
  const values = Object.entries(latency).flatMap(([method, ms]) => ms.map((x) => ({ method, ms: Math.max(x, 1e-3) })));
  return {
    title: 'Single-query latency (ms)',
    data: { values },
    mark: { type: 'boxplot', extent: 'min-max' },
    width: 420,
    height: { step: 28 },
    encoding: {
      y: { field: 'method', type: 'nominal', title: null },
      x: { field: 'ms', type: 'quantitative', scale: { type: 'log' }, title: 'milliseconds' },
      color: { field: 'method', type: 'nominal', legend: null },
    },
  } as TopLevelSpec;
}
