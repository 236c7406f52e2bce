// Issue 48, item 7: every CLI command that reads a file, against damaged copies of it (empty, blank, header-only,
// truncated, a huge line, non-UTF-8, duplicate ids, missing fields; a model card with damaged fields), and every
// command that writes, against an output it cannot write. Each case runs the built CLI in its own process with a 60 s limit; a case passes when the process
// ends in time with exit 1 and one line `quorum: ERR_X: ...` on stderr (or, for input that is valid though odd, exit
// 0). Prints one line per failing case and a summary `N cases; N failed`.
//   node --import tsx test/sweep-cli.ts [--only substring]
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { packageRoot } from '../lib/native.js';

const cli = join(packageRoot, 'dist', 'lib', 'cli', 'main.js');
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1]! : '';
const root = mkdtempSync(join(tmpdir(), 'quorum-sweep-cli-'));

// A small valid dataset: 30 passages, 12 queries judged in test (and train / dev for the commands that train).
const N = 30;
const good = join(root, 'good');
mkdirSync(join(good, 'qrels'), { recursive: true });
const corpusLines = Array.from({ length: N }, (_, i) => JSON.stringify({ _id: `p${i}`, title: `title ${i}`, text: `passage ${i} about topic ${i % 5} and word${i}` }));
const queryLines = Array.from({ length: 12 }, (_, i) => JSON.stringify({ _id: `q${i}`, text: `what about topic ${i % 5} word${i}` }));
const qrelLines = ['query-id\tcorpus-id\tscore', ...Array.from({ length: 12 }, (_, i) => `q${i}\tp${i}\t1`)];
writeFileSync(join(good, 'corpus.jsonl'), corpusLines.join('\n') + '\n');
writeFileSync(join(good, 'queries.jsonl'), queryLines.join('\n') + '\n');
for (const split of ['train', 'dev', 'test']) writeFileSync(join(good, 'qrels', `${split}.tsv`), qrelLines.join('\n') + '\n');

/** Damaged versions of a file's text (name -> bytes), and whether the result may legitimately be a success. */
function damaged(lines: string[], header: boolean): Array<{ name: string; bytes: Buffer; valid?: boolean }> {
  const text = lines.join('\n') + '\n';
  const body = header ? lines.slice(1) : lines;
  return [
    { name: 'empty', bytes: Buffer.alloc(0) },
    { name: 'blank', bytes: Buffer.from('\n  \n\t\n') },
    ...(header ? [{ name: 'header-only', bytes: Buffer.from(lines[0] + '\n') }] : []),
    // Cut inside a line: two characters short of the end of the line that crosses the middle.
    { name: 'truncated', bytes: Buffer.from(text.slice(0, text.indexOf('\n', Math.floor(text.length / 2)) - 2)) },
    // Valid though odd: a 2 MB passage or query, a judgment of a passage id of 2 MB the corpus does not hold.
    { name: 'huge-line', bytes: Buffer.from(text + (header ? `q0\tp${'9'.repeat(2_000_000)}\t1\n` : JSON.stringify({ _id: 'huge', text: 'word '.repeat(400_000) }) + '\n')), valid: true },
    { name: 'non-utf8', bytes: Buffer.concat([Buffer.from(text), Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0x0a])]) },
    { name: 'duplicate-ids', bytes: Buffer.from(text + (header ? body[0] : lines[0]) + '\n'), valid: header },
    { name: 'missing-fields', bytes: Buffer.from(header ? `${lines[0]}\nq0\n` : lines[0]!.startsWith('{') ? text.replace(/"_id":"[pq]3",/, '') : text.replace(lines[3]!, lines[3]!.split(' ').slice(0, 3).join(' '))) },
  ];
}

interface Case {
  name: string;
  args: string[];
  valid?: boolean;
}
const cases: Case[] = [];
const variants: Array<{ file: string; lines: string[]; header: boolean }> = [
  { file: 'corpus.jsonl', lines: corpusLines, header: false },
  { file: 'queries.jsonl', lines: queryLines, header: false },
  { file: join('qrels', 'test.tsv'), lines: qrelLines, header: true },
];
const out = (name: string) => join(root, 'out', name.replace(/[^\w.-]+/g, '_'));
for (const v of variants)
  for (const d of damaged(v.lines, v.header)) {
    const dir = join(root, `${v.file.replace(/[\\/]/g, '_')}-${d.name}`);
    cpSync(good, dir, { recursive: true });
    writeFileSync(join(dir, v.file), d.bytes);
    const tag = `${v.file} ${d.name}`;
    const valid = d.valid === true;
    cases.push({ name: `eval bm25 / ${tag}`, args: ['eval', '--data', dir, '--methods', 'bm25', '--metrics', 'mrr@10', '--out', out(`eval-${tag}`)], valid });
    if (v.file === 'corpus.jsonl') {
      cases.push({ name: `index bm25 / ${tag}`, args: ['index', 'bm25', '--data', dir, '--out', out(`bm25-${tag}`)], valid });
      cases.push({ name: `encode / ${tag}`, args: ['encode', '--model', 'default', '--data', dir, '--out', out(`encode-${tag}`)], valid });
      cases.push({ name: `muf passages --add / ${tag}`, args: ['muf', 'passages', '--muf', join(root, 'nowhere'), '--add', join(dir, v.file)] });
    }
    if (v.file === 'queries.jsonl') {
      cases.push({ name: `search bm25 / ${tag}`, args: ['search', '--index', join(root, 'good.bm25'), '--queries', join(dir, v.file), '--out', out(`search-${tag}`)], valid });
    }
    if (v.file !== 'corpus.jsonl' || d.name !== 'huge-line')
      cases.push({ name: `eval glove / ${tag}`, args: ['eval', '--data', dir, '--methods', 'dense', '--metrics', 'mrr@10'], valid });
  }

// Run files for fuse and eval --run.
const run = Array.from({ length: 12 }, (_, q) => Array.from({ length: 5 }, (_, r) => `q${q} Q0 p${(q + r) % N} ${r + 1} ${10 - r} x`)).flat();
for (const d of damaged(run, false)) {
  const f = join(root, `run-${d.name}.trec`);
  writeFileSync(f, d.bytes);
  const valid = d.name !== 'huge-line' && d.valid === true;  // the huge line (a JSON passage) is no run line
  cases.push({ name: `fuse / run ${d.name}`, args: ['fuse', '--method', 'rrf', '--out', out(`fuse-${d.name}`), f, join(root, 'good.trec')], valid });
  cases.push({ name: `eval --run / run ${d.name}`, args: ['eval', '--data', good, '--run', f, '--metrics', 'mrr@10'], valid });
}
writeFileSync(join(root, 'good.trec'), run.join('\n') + '\n');

// metrics.json for report.
for (const [name, text] of [['empty', ''], ['truncated', '{"metrics": {"bm25": {"mrr@10": 0.'], ['wrong-type', '{"metrics": "x"}'], ['null', 'null'], ['infinite', '{"metrics": {"bm25": {"mrr@10": 1e999}}}']] as const) {
  const dir = join(root, `report-${name}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'metrics.json'), text);
  cases.push({ name: `report / metrics.json ${name}`, args: ['report', dir, '--out', out(`report-${name}.html`)] });
}

// Outputs that cannot be written: under a file, and under /proc.
writeFileSync(join(root, 'a-file'), 'x');
for (const [where, path] of [['under a file', join(root, 'a-file', 'x')], ['under /proc', '/proc/quorum-sweep/x']] as const) {
  cases.push({ name: `eval --out ${where}`, args: ['eval', '--data', good, '--methods', 'bm25', '--metrics', 'mrr@10', '--out', path] });
  cases.push({ name: `index bm25 --out ${where}`, args: ['index', 'bm25', '--data', good, '--out', path] });
  cases.push({ name: `encode --out ${where}`, args: ['encode', '--model', 'default', '--data', good, '--out', path] });
  cases.push({ name: `fuse --out ${where}`, args: ['fuse', '--method', 'rrf', '--out', path, join(root, 'good.trec'), join(root, 'good.trec')] });
  cases.push({ name: `search --out ${where}`, args: ['search', '--index', join(root, 'good.bm25'), '--data', good, '--out', path] });
  cases.push({ name: `train --out ${where}`, args: ['train', '--data', good, '--out', path, '--epochs', '1'] });
}

// A model directory's card through the CLI (every field of it is swept in-process by test/robustness-cli.test.ts,
// through the same reader): a few damaged fields must each end `encode` with one typed line.
const modelDir = join(packageRoot, 'data', 'models', 'default');
const card = JSON.parse(readFileSync(join(modelDir, 'model.json'), 'utf8')) as { config: { encoder: Record<string, unknown>; tasks: unknown }; weights: Record<string, unknown>; hybrid: Record<string, unknown> };
for (const [name, damage] of [
  ['normalize "yes"', (c: typeof card) => (c.config.encoder.normalize = 'yes')],
  ['tasks as a string', (c: typeof card) => (c.config.tasks = 'covid')],
  ['an unknown encoder key', (c: typeof card) => (c.config.encoder.hiddensize = 64)],
  ['weights.dtype missing', (c: typeof card) => delete c.weights.dtype],
  ['hybrid.alpha a string', (c: typeof card) => (c.hybrid.alpha = '3')],
] as const) {
  const copy = JSON.parse(JSON.stringify(card)) as typeof card;
  damage(copy);
  const dir = join(root, `model-${name.replace(/\W+/g, '-')}`);
  cpSync(modelDir, dir, { recursive: true });
  writeFileSync(join(dir, 'model.json'), JSON.stringify(copy));
  cases.push({ name: `encode --model / model.json ${name}`, args: ['encode', '--model', dir, '--data', good, '--out', out(`model-${name}`)] });
}

function runCase(c: Case): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...c.args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.stdout.resume();
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      const lines = stderr.trim().split('\n').filter((l) => l.trim() !== '');
      if (signal) return resolve(`killed by ${signal} (hang or crash)`);
      if (status === 0) return resolve(c.valid ? undefined : 'exit 0 on damaged input');
      if (status !== 1) return resolve(`exit ${status}: ${lines.slice(0, 2).join(' | ')}`);
      if (lines.length !== 1 || !/^quorum: ERR_[A-Z_]+: /.test(lines[0]!)) return resolve(`not one typed line: ${lines.slice(0, 3).join(' | ').slice(0, 300)}`);
      resolve(undefined);
    });
  });
}

// The BM25 index the search cases read.
await new Promise<void>((resolve, reject) =>
  spawn(process.execPath, [cli, 'index', 'bm25', '--data', good, '--out', join(root, 'good.bm25')], { stdio: 'ignore' }).on('close', (s) => (s === 0 ? resolve() : reject(new Error('index bm25 of the good dataset failed')))),
);
const selected = cases.filter((c) => c.name.includes(only));
let failed = 0;
const queue = [...selected];
await Promise.all(
  [0, 1].map(async () => {
    for (let c = queue.shift(); c; c = queue.shift()) {
      const why = await runCase(c);
      if (why) {
        failed++;
        console.log(`FAIL ${c.name}: ${why}`);
      }
    }
  }),
);
console.log(`${selected.length} cases; ${failed} failed`);
process.exitCode = failed ? 1 : 0;
rmSync(root, { recursive: true, force: true });

