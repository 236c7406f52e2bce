// Charts as standalone SVG, rendered headless by Vega (a Vega-Lite spec compiled and drawn without a browser): the
// reliability diagram and the confidence histograms of DPR-MUF's calibration.
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

import { QuorumError } from '../errors.js';
import { calibrationBins } from '../uncertainty.js';
import { mustBeArray, mustBeObject } from '../validate.js';

/** Renders a Vega-Lite spec to an SVG document string. */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  mustBeObject(spec, 'chart spec');
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

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
export function reliabilityBins(confidence: ArrayLike<number>, hit: ArrayLike<number | boolean>, bins = 10): Array<{ bin: number; confidence: number; accuracy: number; count: number }> {
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

/**
 * A reliability diagram: per series, accuracy against mean confidence of each non-empty bin (points sized by their
 * question count), with the diagonal of perfect calibration.
 *
 * @example
 * writeFileSync('reliability.svg', await reliabilityDiagramSvg([{ name: 'covid', confidence, hit }]));
 */
export async function reliabilityDiagramSvg(series: readonly CalibrationSeries[], options: { title?: string } = {}): Promise<string> {
  mustBeArray(series, 'series');
  const values = series.flatMap((s) => reliabilityBins(s.confidence, s.hit).map((b) => ({ ...b, expert: s.name })));
  const diagonal = [
    { x: 0, y: 0 },
    { x: 1, y: 1 },
  ];
  return renderSvg({
    title: options.title ?? 'Reliability (10 bins)',
    width: 360,
    height: 300,
    layer: [
      { data: { values: diagonal }, mark: { type: 'line', color: '#999', strokeDash: [4, 4] }, encoding: { x: { field: 'x', type: 'quantitative' }, y: { field: 'y', type: 'quantitative' } } },
      {
        data: { values },
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'confidence', type: 'quantitative', title: 'mean confidence', scale: { domain: [0, 1] } },
          y: { field: 'accuracy', type: 'quantitative', title: 'accuracy (hit)', scale: { domain: [0, 1] } },
          color: { field: 'expert', type: 'nominal' },
          size: { field: 'count', type: 'quantitative' },
        },
      },
    ],
  } as TopLevelSpec);
}

/** Confidence histograms, one row per series (10 bins over [0, 1]). */
export async function confidenceHistogramsSvg(series: readonly CalibrationSeries[], options: { title?: string } = {}): Promise<string> {
  mustBeArray(series, 'series');
  const values = series.flatMap((s) => Array.from(s.confidence, (c) => ({ expert: s.name, confidence: Math.min(1, Math.max(0, c)) })));
  return renderSvg({
    title: options.title ?? 'Confidence per expert',
    data: { values },
    mark: 'bar',
    width: 300,
    height: 70,
    encoding: {
      x: { field: 'confidence', type: 'quantitative', bin: { extent: [0, 1], step: 0.1 }, title: 'confidence' },
      y: { aggregate: 'count', type: 'quantitative', title: 'questions' },
      row: { field: 'expert', type: 'nominal' },
    },
  } as TopLevelSpec);
}
