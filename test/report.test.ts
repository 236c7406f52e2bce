// The HTML report: its data schema, the page it writes, and the page in a real browser (headless Chromium, when
// installed: CI installs the Debian package; elsewhere that test is skipped and says why).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { CalibrationRecorder, type ReportData, readReportData, recallCutoffs, timeEach } from '../lib/report/data.js';
import { reportHtml, writeReport } from '../lib/report/html.js';

const dir = mkdtempSync(join(tmpdir(), 'quorum-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const data: ReportData = {
  dataset: 'fixture',
  split: 'test',
  queries: 4,
  metrics: { bm25: { 'mrr@10': 0.5, 'recall@20': 0.75 }, muf: { 'mrr@10': 0.625, 'recall@20': 1 } },
  byTask: { bm25: { a: { 'mrr@10': 0.5, 'recall@20': 1 }, b: { 'mrr@10': 0.5, 'recall@20': 0.5 } }, muf: { a: { 'mrr@10': 0.75, 'recall@20': 1 }, b: { 'mrr@10': 0.5, 'recall@20': 1 } } },
  recall: { bm25: { '1': 0.25, '10': 0.5, '20': 0.75 }, muf: { '1': 0.5, '10': 0.75, '20': 1 } },
  latency: { bm25: [0.2, 0.3, 0.25, 1.5], muf: [2, 2.5, 3, 9] },
  calibration: [
    { name: 'a', confidence: [0.9, 0.8, 0.2, 0.1], hit: [1, 1, 0, 0] },
    { name: 'b', confidence: [0.6, 0.5, 0.4, 0.7], hit: [1, 0, 0, 1] },
  ],
};

function chromium(): string | undefined {
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    const r = spawnSync('which', [name]);
    if (r.status === 0) return r.stdout.toString().trim();
  }
  return undefined;
}
const browser = chromium();

describe('HTML report', () => {
  it("records each expert's confidence and whether its own top-1 is relevant, batch after batch", () => {
    const qrels = new Map([['q1', new Map([['d1', 1], ['d2', 0]])], ['q2', new Map([['d3', 2]])], ['q3', new Map([['d1', 1]])]]);
    const cal = new CalibrationRecorder(['x', 'y']);
    // Batch 1: q1, q2. x's top-1: d1 (relevant), d9 (unjudged); y's: d2 (grade 0), d3 (relevant).
    cal.add(['q1', 'q2'], {
      confidence: [[0.9, 0.2], [0.4, 0.7]],
      experts: [[[{ id: 'd1', score: 3 }, { id: 'd2', score: 1 }], [{ id: 'd9', score: 1 }]], [[{ id: 'd2', score: 2 }], [{ id: 'd3', score: 5 }]]],
    }, qrels);
    // Batch 2: q3; y returned nothing (a miss).
    cal.add(['q3'], { confidence: [[0.6, 0.1]], experts: [[[{ id: 'd1', score: 1 }]], [[]]] }, qrels);
    expect(cal.series()).toEqual([
      { name: 'x', confidence: [0.9, 0.4, 0.6], hit: [1, 0, 1] },
      { name: 'y', confidence: [0.2, 0.7, 0.1], hit: [0, 1, 0] },
    ]);
  });

  it('holds the table, one chart per measurement present and the inlined Vega builds, nothing fetched', () => {
    const html = reportHtml(data);
    expect(html).toContain('<body data-charts="5" data-rendered="0">');
    for (const id of ['metrics', 'recall', 'reliability', 'confidence', 'latency']) expect(html).toContain(`id="chart-${id}"`);
    // The metrics table marks the best value of each column; the latency table has p50 / p99 (nearest rank).
    expect(html).toMatch(/<th>muf<\/th><td class="best">0\.625<\/td><td class="best">1\.000<\/td>/);
    expect(html).toMatch(/<th>muf<\/th><td>4<\/td><td>2\.50<\/td><td>9\.00<\/td><td>9\.00<\/td>/);
    // ECE of expert a: bins 0.9, 0.8 (hits) and 0.2, 0.1 (misses): |1-0.9|+|1-0.8|+|0-0.2|+|0-0.1| over 4 = 0.15.
    expect(html).toMatch(/<th>a<\/th><td>4<\/td><td>0\.500<\/td><td>0\.500<\/td><td>0\.150<\/td>/);
    expect(html.length).toBeGreaterThan(700_000);
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=/);
    // Without tasks, latency or calibration those charts are left out.
    const plain = reportHtml({ dataset: 'd', split: 's', queries: 1, metrics: { x: { 'mrr@10': 1 } } });
    expect(plain).toContain('data-charts="1"');
  });

  it('a title with markup is escaped, and bad results are ERR_FORMAT / ERR_IO naming the file', () => {
    expect(reportHtml(data, { title: '<b>x</b>' })).toContain('<title>&lt;b&gt;x&lt;/b&gt;</title>');
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ ...data, metrics: { bm25: { 'mrr@10': 'high' } } }));
    expect(() => readReportData(join(dir, 'bad.json'))).toThrow(expect.objectContaining({ code: 'ERR_FORMAT', message: expect.stringContaining('bad.json') }));
    writeFileSync(join(dir, 'broken.json'), '{"dataset": ');
    expect(() => readReportData(join(dir, 'broken.json'))).toThrow(expect.objectContaining({ code: 'ERR_FORMAT' }));
    expect(() => readReportData(join(dir, 'none'))).toThrow(expect.objectContaining({ code: 'ERR_IO', message: expect.stringContaining('quorum eval --out') }));
  });

  it('recall cut-offs and single-query timings', async () => {
    expect(recallCutoffs(100)).toEqual([1, 2, 3, 5, 10, 20, 30, 50, 100]);
    expect(recallCutoffs(20)).toEqual([1, 2, 3, 5, 10, 20]);
    expect(recallCutoffs(7)).toEqual([1, 2, 3, 5, 7]);
    const seen: number[] = [];
    const ms = await timeEach([1, 2, 3], 2, async (x) => seen.push(x));
    expect(seen).toEqual([1, 1, 2]); // one warm-up call, then each of the first two
    expect(ms).toHaveLength(2);
    expect(ms.every((t) => t >= 0)).toBe(true);
  });

  it.skipIf(!browser)(`renders every chart in headless Chromium${browser ? '' : ' (skipped: no chromium on PATH; apt-get install chromium)'}`, () => {
    const page = join(dir, 'report.html');
    writeReport(page, data);
    const args = ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--virtual-time-budget=15000'];
    const dom = execFileSync(browser!, [...args, '--dump-dom', `file://${page}`], { stdio: ['ignore', 'pipe', 'ignore'], timeout: 90_000 }).toString();
    expect(/<body[^>]*>/.exec(dom)?.[0]).toBe('<body data-charts="5" data-rendered="5">');
    // Vega drew SVG marks in each chart container.
    for (const id of ['metrics', 'recall', 'reliability', 'confidence', 'latency']) expect(dom).toMatch(new RegExp(`id="chart-${id}"[^]*?<svg[^>]*class="marks"`));
    const shot = join(dir, 'report.png');
    execFileSync(browser!, [...args, '--window-size=1100,1400', `--screenshot=${shot}`, `file://${page}`], { stdio: 'ignore', timeout: 90_000 });
    expect(existsSync(shot)).toBe(true);
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
    expect(statSync(shot).size).toBeGreaterThan(20_000);
  });
});
