// `quorum report DIR --out report.html`: the HTML report of an evaluation's results directory (quorum eval --out).
import { readReportData } from '../report/data.js';
import { writeReport } from '../report/html.js';
import { checkCommandOutput } from './outputs.js';

export function reportCommand(dir: string, o: { out: string; title?: string }): void {
  checkCommandOutput(o.out, 'report');
  const data = readReportData(dir);
  writeReport(o.out, data, o.title ? { title: o.title } : {});
  console.log(`wrote ${o.out} (${Object.keys(data.metrics).length} methods, ${data.queries} queries)`);
}
