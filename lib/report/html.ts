// The evaluation report: one self-contained HTML page (no network) with the metrics table and Vega-Lite charts,
// drawn in the browser by the inlined Vega and Vega-Lite builds.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import type { TopLevelSpec } from 'vega-lite';

import { QuorumError } from '../errors.js';
import { ece } from '../uncertainty.js';
import { type ReportData, reportDataSchema } from './data.js';
import { confidenceSpec, latencySpec, metricBarsSpec, recallSpec, reliabilitySpec, selectiveSpec } from './specs.js';
import { parse } from '../validate.js';
import { makeDirs, writeFileAtomic } from '../data/files.js';

const require = createRequire(import.meta.url);

/** A package's minified browser build (the packages export no subpaths, so it is found from the package root). */
function browserBuild(pkg: string, file: string): string {
  let dir = dirname(require.resolve(pkg));
  while (!existsSync(join(dir, 'build', file))) {
    const up = dirname(dir);
    if (up === dir) throw new QuorumError('ERR_BACKEND_UNAVAILABLE', `${pkg}'s browser build ${file} not found (npm install ${pkg})`);
    dir = up;
  }
  return readFileSync(join(dir, 'build', file), 'utf8');
}

const escapeHtml = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string);
// JSON inside <script>: nothing in it may close the element.
const scriptJson = (x: unknown) => JSON.stringify(x).replace(/</g, '\\u003c');

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

function metricsTable(data: ReportData): string {
  const metrics = [...new Set(Object.values(data.metrics).flatMap((m) => Object.keys(m)))];
  const best = Object.fromEntries(metrics.map((m) => [m, Math.max(...Object.values(data.metrics).map((r) => r[m] ?? -Infinity))]));
  const rows = Object.entries(data.metrics).map(
    ([method, m]) =>
      `<tr><th>${escapeHtml(method)}</th>${metrics.map((k) => `<td${m[k] === best[k] ? ' class="best"' : ''}>${m[k] === undefined ? '' : (m[k] as number).toFixed(3)}</td>`).join('')}</tr>`,
  );
  return `<table><thead><tr><th>method</th>${metrics.map((k) => `<th>${escapeHtml(k)}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function latencyTable(latency: NonNullable<ReportData['latency']>): string {
  const rows = Object.entries(latency).map(([method, ms]) => {
    const s = [...ms].sort((a, b) => a - b);
    return `<tr><th>${escapeHtml(method)}</th><td>${s.length}</td><td>${percentile(s, 50).toFixed(2)}</td><td>${percentile(s, 99).toFixed(2)}</td><td>${(s[s.length - 1] ?? Number.NaN).toFixed(2)}</td></tr>`;
  });
  return `<table><thead><tr><th>method</th><th>queries</th><th>p50 ms</th><th>p99 ms</th><th>max ms</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function calibrationTable(calibration: NonNullable<ReportData['calibration']>): string {
  const rows = calibration.map((s) => {
    const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / Math.max(xs.length, 1);
    return `<tr><th>${escapeHtml(s.name)}</th><td>${s.confidence.length}</td><td>${mean(s.confidence).toFixed(3)}</td><td>${mean(s.hit).toFixed(3)}</td><td>${ece(s.confidence, s.hit).toFixed(3)}</td></tr>`;
  });
  return `<table><thead><tr><th>expert</th><th>queries</th><th>mean confidence</th><th>top-1 accuracy</th><th>ECE (10 bins)</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/**
 * The report page for one evaluation's results: the metrics table; per-task metric bars per method; Recall@k
 * curves; DPR-MUF's reliability diagram and confidence histograms; single-query latency box plots (each section
 * when its data is present). Self-contained: Vega and Vega-Lite are inlined (about 0.8 MB).
 *
 * @example
 * writeFileSync('report.html', reportHtml(readReportData('results/')));
 */
export function reportHtml(data: ReportData, options: { title?: string } = {}): string {
  const checked = parse(reportDataSchema, data, 'report data');
  const charts: Array<{ id: string; heading: string; spec: TopLevelSpec; note?: string }> = [];
  charts.push({ id: 'metrics', heading: 'Metrics per method', spec: metricBarsSpec(checked) });
  if (checked.recall && Object.keys(checked.recall).length)
    charts.push({ id: 'recall', heading: 'Recall@k', spec: recallSpec(checked.recall) });
  if (checked.calibration?.length) {
    charts.push({
      id: 'reliability',
      heading: "DPR-MUF: the experts' calibration",
      spec: reliabilitySpec(checked.calibration, 'Reliability of each expert (hit: its own top-1 is relevant)'),
      note: calibrationTable(checked.calibration),
    });
    charts.push({ id: 'confidence', heading: 'DPR-MUF: confidence histograms', spec: confidenceSpec(checked.calibration) });
  }
  if (checked.selective?.points.length)
    charts.push({ id: 'selective', heading: 'DPR-MUF: abstention (precision against coverage)', spec: selectiveSpec(checked.selective) });
  if (checked.latency && Object.keys(checked.latency).length)
    charts.push({ id: 'latency', heading: 'Latency', spec: latencySpec(checked.latency), note: latencyTable(checked.latency) });

  const title = options.title ?? `Quorum evaluation: ${checked.dataset} (${checked.split})`;
  const sections = charts
    .map((c) => `<section><h2>${escapeHtml(c.heading)}</h2>${c.note ?? ''}<div class="chart" id="chart-${c.id}"></div></section>`)
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}th,td{padding:3px 10px;border-bottom:1px solid #ddd;text-align:right}
th:first-child{text-align:left}td.best{font-weight:bold}.meta{color:#666}
.chart{margin:8px 0}
</style></head>
<body data-charts="${charts.length}" data-rendered="0">
<h1>${escapeHtml(title)}</h1>
<p class="meta">${checked.queries} judged queries · ${Object.keys(checked.metrics).length} methods · generated ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC by quorum-retrieval</p>
<section><h2>Results</h2>${metricsTable(checked)}</section>
${sections}
<script>${browserBuild('vega', 'vega.min.js')}</script>
<script>${browserBuild('vega-lite', 'vega-lite.min.js')}</script>
<script type="application/json" id="specs">${scriptJson(Object.fromEntries(charts.map((c) => [c.id, c.spec])))}</script>
<script>
(async () => {
  const specs = JSON.parse(document.getElementById('specs').textContent);
  let rendered = 0;
  for (const [id, spec] of Object.entries(specs)) {
    const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'svg', container: '#chart-' + id, hover: true });
    await view.runAsync();
    document.body.dataset.rendered = String(++rendered);
  }
})().catch((e) => { document.body.dataset.error = String(e); console.error(e); });
</script>
</body></html>
`;
}

/** Writes {@link reportHtml} to `path` (its directory is created). */
export function writeReport(path: string, data: ReportData, options: { title?: string } = {}): void {
  const html = reportHtml(data, options);
  try {
    makeDirs(dirname(path));
    writeFileAtomic(path, Buffer.from(html));
  } catch (e) {
    throw new QuorumError('ERR_IO', `cannot write ${path}: ${(e as Error).message}`);
  }
}
