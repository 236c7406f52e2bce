// Charts as standalone SVG, rendered headless by Vega (a Vega-Lite spec compiled and drawn without a browser): the
// reliability diagram and the confidence histograms of DPR-MUF's calibration.
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

import { mustBeObject } from '../../lib/validate.js';
import { type CalibrationSeries, confidenceSpec, reliabilitySpec } from '../../lib/report/specs.js';

export { reliabilityBins, type CalibrationSeries } from '../../lib/report/specs.js';

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

/**
 * A reliability diagram: per series, accuracy against mean confidence of each non-empty bin (points sized by their
 * question count), with the diagonal of perfect calibration.
 *
 * @example
 * writeFileSync('reliability.svg', await reliabilityDiagramSvg([{ name: 'covid', confidence, hit }]));
 */
export async function reliabilityDiagramSvg(series: readonly CalibrationSeries[], options: { title?: string } = {}): Promise<string> {
  return renderSvg(reliabilitySpec(series, options.title));
}

/** Confidence histograms, one row per series (10 bins over [0, 1]). */
export async function confidenceHistogramsSvg(series: readonly CalibrationSeries[], options: { title?: string } = {}): Promise<string> {
  return renderSvg(confidenceSpec(series, options.title));
}
