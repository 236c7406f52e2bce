// N worker processes serving one 1 GB corpus (issue 46's goal: 4 workers use at most 1.3x the memory of one, and a
// worker loads the corpus in at most 100 ms). Each worker opens the corpus, times that, runs exact searches over all
// of it (scoreTopK, B = 16, k = 10; every page touched), and reports its memory from /proc: RSS counts every resident
// page it maps, shared or not; PSS charges a page shared by n processes 1/n to each, so the workers' PSS adds up to
// the memory they use together. Three ways to open it, each with 1 and with 4 workers: Tensor.map (the file mapped,
// pages shared through the page cache), DenseIndex.map (the same vectors saved as a Flat DenseIndex, its file mapped)
// and a read (readFileSync into a Tensor of its own).
//   node --import tsx bench/mapped-workers.ts [--rows 349525] [--dim 768] [--workers 4]
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { DenseIndex, Tensor, scoreTopK } from '../lib/index.js';
import { capabilities, setThreads } from '../lib/runtime.js';
import { arg, normalDraws, writeResults } from './harness.js';

interface Report {
  loadMs: number;
  searchMs: number;
  rssMb: number;
  pssMb: number;
}

const kb = (text: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);

if (process.argv[2] === '--worker') {
  // A worker: open, search, report, then hold everything until the parent has every report.
  const [, , , path, how, indexPath] = process.argv;
  setThreads(1);
  const t0 = performance.now();
  let search: (q: Tensor<'f32'>) => Promise<unknown>;
  let dim: number;
  if (how === 'index') {
    const index = await DenseIndex.map(indexPath!);
    dim = index.dim;
    search = (q) => index.search(q, 10);
  } else {
    const corpus = how === 'map' ? await Tensor.map(path!) : await (async () => {
      const bytes = readFileSync(path!);
      const rows = Number(bytes.readBigUInt64LE(16));
      const dim = Number(bytes.readBigUInt64LE(24));
      return Tensor.from(new Float32Array(bytes.buffer.slice(bytes.byteOffset + 4096, bytes.byteOffset + bytes.length)), [rows, dim]);
    })();
    dim = corpus.shape[1]!;
    search = (q) => scoreTopK(q, corpus as Tensor<'f32'>, 10);
  }
  const loadMs = performance.now() - t0;
  const draw = normalDraws(process.pid);
  const q = Tensor.from(Float32Array.from({ length: 16 * dim }, draw), [16, dim]);
  const t1 = performance.now();
  for (let i = 0; i < 3; i++) await search(q);
  const searchMs = (performance.now() - t1) / 3;
  const status = readFileSync('/proc/self/status', 'utf8');
  const rollup = readFileSync('/proc/self/smaps_rollup', 'utf8');
  process.send!({ loadMs, searchMs, rssMb: kb(status, 'VmRSS') / 1024, pssMb: kb(rollup, 'Pss') / 1024 } satisfies Report);
  process.on('message', () => process.exit(0));
} else {
  const rows = Number(arg('rows', '349525'));
  const dim = Number(arg('dim', '768'));
  const workers = Number(arg('workers', '4'));
  const caps = capabilities();
  const dir = mkdtempSync(join(tmpdir(), 'quorum-mapped-'));
  const path = join(dir, 'corpus.qtns');
  const indexPath = join(dir, 'corpus.qdx');
  const gb = (rows * dim * 4) / 2 ** 30;
  console.log(`isa ${caps.isa}; corpus ${rows} x ${dim} f32 (${gb.toFixed(2)} GiB); ${workers} workers, one search thread each`);
  {
    const draw = normalDraws(1);
    const data = new Float32Array(rows * dim);
    for (let i = 0; i < data.length; i++) data[i] = draw();
    const t = Tensor.wrap(data, [rows, dim]);
    await t.save(path);
    const index = DenseIndex.create({ dim });
    await index.add(t as Tensor<'f32'>, BigInt64Array.from({ length: rows }, (_, i) => BigInt(i)));
    await index.save(indexPath);
    index.dispose();
  }
  const run = async (how: 'map' | 'index' | 'read', n: number): Promise<Report[]> => {
    const children = Array.from({ length: n }, () => fork(new URL(import.meta.url).pathname, ['--worker', path, how, indexPath], { execArgv: ['--import', 'tsx'] }));
    const reports = await Promise.all(children.map((c) => new Promise<Report>((resolve, reject) => {
      c.once('message', (m) => resolve(m as Report));
      c.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
    })));
    for (const c of children) c.send('done');
    await Promise.all(children.map((c) => new Promise((r) => c.once('exit', r))));
    return reports;
  };
  const table: Array<Record<string, string | number>> = [];
  const json: Array<Record<string, unknown>> = [];
  let oneRss = 0;
  for (const how of ['map', 'index', 'read'] as const) {
    for (const n of [1, workers]) {
      const r = await run(how, n);
      const sum = (f: keyof Report) => r.reduce((a, x) => a + x[f], 0);
      if (how === 'map' && n === 1) oneRss = r[0]!.rssMb;
      table.push({
        open: how === 'map' ? 'Tensor.map' : how === 'index' ? 'DenseIndex.map' : 'readFileSync',
        workers: n,
        'load ms (max)': Math.max(...r.map((x) => x.loadMs)).toFixed(1),
        'search ms (mean)': (sum('searchMs') / n).toFixed(0),
        'RSS MB (sum)': sum('rssMb').toFixed(0),
        'PSS MB (sum)': sum('pssMb').toFixed(0),
        'PSS sum / one worker\'s RSS': (sum('pssMb') / oneRss).toFixed(2),
      });
      json.push({ how, workers: n, reports: r });
    }
  }
  rmSync(dir, { recursive: true, force: true });
  console.table(table);
  writeResults('mapped-workers', { isa: caps.isa, rows, dim, workers, runs: json });
}
