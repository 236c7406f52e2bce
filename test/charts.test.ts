// bench/lib/charts.ts: the reliability bins against a hand computation, and the SVGs Vega renders headless.
import { describe, expect, it } from 'vitest';

import { confidenceHistogramsSvg, reliabilityBins, reliabilityDiagramSvg } from '../bench/lib/charts.js';
import { code } from './basics.js';

describe('calibration charts', () => {
  it('bins confidences as DPR-MUF does (an edge value goes to the lower bin) with mean confidence and accuracy', () => {
    const bins = reliabilityBins([0, 0.1, 0.15, 0.95, 1, 1.2, -0.1], [1, 0, 1, 1, 0, 1, 0]);
    // 0, 0.1 and -0.1 (clamped to 0) fall in the first bin; 0.15 in the second; 0.95, 1 and 1.2 (clamped) in the last.
    expect(bins).toEqual([
      { bin: 0.05, confidence: (0 + 0.1 + 0) / 3, accuracy: 1 / 3, count: 3 },
      { bin: 0.15, confidence: 0.15, accuracy: 1, count: 1 },
      { bin: 0.95, confidence: (0.95 + 1 + 1) / 3, accuracy: 2 / 3, count: 3 },
    ]);
    expect(code(() => reliabilityBins([0.5], [1, 0]))).toBe('ERR_SHAPE');
    expect(code(() => reliabilityBins([0.5], [1], 0))).toBe('ERR_RANGE');
  });

  it('renders the reliability diagram and the histograms as standalone SVG naming every series', async () => {
    const series = [
      { name: 'covid', confidence: [0.9, 0.8, 0.2, 0.95], hit: [1, 1, 0, 1] },
      { name: 'selqa', confidence: [0.3, 0.6, 0.7], hit: [0, 1, 0] },
    ];
    for (const svg of [await reliabilityDiagramSvg(series), await confidenceHistogramsSvg(series)]) {
      expect(svg.startsWith('<svg')).toBe(true);
      expect(svg.trim().endsWith('</svg>')).toBe(true);
      expect(svg).toContain('covid');
      expect(svg).toContain('selqa');
    }
    await expect(reliabilityDiagramSvg(null as never)).rejects.toMatchObject({ code: 'ERR_ARG' });
  });
});
