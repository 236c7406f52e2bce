// Issue 65, item 3: bad values of every kind into every field of the public surface, each case isolated. A case is
// one call with one bad value in one place (a function's argument, an option, a file of a saved directory); its
// outcome is one of: typed (a QuorumError), untyped (any other error), silent (it returned), crash (the process
// died) or hang (no answer within 30 s). Only typed passes, or silent where the field lists the kind as a value it
// rightly takes. The cases run in a worker process that the parent restarts after a crash or a hang, from the next
// case, so every case runs whatever the one before it did. Prints a table by outcome and one line per failing case:
//   node --import tsx test/sweep-inputs.ts [--only substring]       (in the suite: test/robustness-inputs.test.ts)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { packageRoot } from '../lib/native.js';
import { surfaces, type Outcome } from './sweep-surfaces.js';

const self = fileURLToPath(import.meta.url);
const CASE_TIMEOUT_MS = 30_000;

/** The bad values, by kind. */
export const KINDS = {
  string: 'x',
  number: 5,
  object: {},
  array: [],
  null: null,
  undefined: undefined,
  NaN: Number.NaN,
  Infinity: Number.POSITIVE_INFINITY,
  negative: -3,
  huge: 2 ** 31,
  fractional: 2.5,
  empty: '',
} as const;
export type Kind = keyof typeof KINDS;

interface Case {
  id: string;
  run: (scratch: string) => unknown;
  /** The kinds (or named values) the slot rightly takes. */
  accepts: readonly string[];
  /** This case's kind, or the name of its value. */
  label: string;
}

/** Every case, in a fixed order (the worker and the parent enumerate the same list). */
function cases(scratch: string): Case[] {
  const out: Case[] = [];
  for (const s of surfaces(scratch))
    for (const f of s.fields) {
      if (f.values) {
        for (const [name, v] of Object.entries(f.values))
          out.push({ id: `${s.name} ${f.name}: ${name}`, run: () => f.call(v), accepts: f.accepts ?? [], label: name });
        continue;
      }
      for (const kind of Object.keys(KINDS) as Kind[])
        out.push({ id: `${s.name} ${f.name}: ${kind}`, run: () => f.call(KINDS[kind]), accepts: f.accepts ?? [], label: kind });
    }
  return out;
}

async function classify(run: () => unknown): Promise<{ outcome: Outcome; detail: string }> {
  const { QuorumError } = await import('../lib/errors.js');
  try {
    let r = run();
    if (r instanceof Promise) r = await r;
    return { outcome: 'silent', detail: '' };
  } catch (e) {
    if (e instanceof QuorumError) {
      // One line, as the CLI and the server print it.
      return { outcome: e.message.includes('\n') ? 'untyped' : 'typed', detail: `${e.code}: ${e.message.slice(0, 100)}` };
    }
    return { outcome: 'untyped', detail: `${(e as Error)?.name}: ${String((e as Error)?.message).slice(0, 100)}` };
  }
}

async function worker(scratch: string, from: number, only: string): Promise<void> {
  const all = cases(scratch);
  for (let i = from; i < all.length; i++) {
    const c = all[i]!;
    if (only && !c.id.includes(only)) continue;
    process.stdout.write(`S ${i}\n`);
    const { outcome, detail } = await classify(() => c.run(scratch));
    process.stdout.write(`E ${i} ${outcome} ${JSON.stringify(detail)}\n`);
  }
  process.stdout.write('DONE\n');
  process.exit(0);
}

/** Runs the worker from case `from`; resolves with what it reported and where it stopped. */
function runWorker(scratch: string, from: number, only: string): Promise<{ results: Map<number, [Outcome, string]>; stuck?: [number, Outcome] }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', self, '--worker', scratch, String(from), only], { cwd: packageRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    const results = new Map<number, [Outcome, string]>();
    let current: number | undefined;
    let buffer = '';
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        hung = true;
        child.kill('SIGKILL');
      }, CASE_TIMEOUT_MS);
    };
    let hung = false;
    arm();
    child.stdout.on('data', (d: Buffer) => {
      buffer += d.toString();
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line.startsWith('S ')) {
          current = Number(line.slice(2));
          arm();
        } else if (line.startsWith('E ')) {
          const [, i, outcome, ...rest] = line.split(' ');
          results.set(Number(i), [outcome as Outcome, JSON.parse(rest.join(' ')) as string]);
          current = undefined;
        } else if (line === 'DONE') done = true;
      }
    });
    child.stderr.on('data', () => {});
    child.on('exit', () => {
      clearTimeout(timer);
      if (done || current === undefined) resolve({ results });
      else resolve({ results, stuck: [current, hung ? 'hang' : 'crash'] });
    });
  });
}

async function parent(only: string): Promise<void> {
  const scratch = mkdtempSync(join(tmpdir(), 'quorum-sweep-inputs-'));
  try {
    const { prepare } = await import('./sweep-surfaces.js');
    await prepare(scratch);
    const all = cases(scratch);
    const results = new Map<number, [Outcome, string]>();
    let from = 0;
    for (;;) {
      const r = await runWorker(scratch, from, only);
      for (const [i, v] of r.results) results.set(i, v);
      if (!r.stuck) break;
      results.set(r.stuck[0], [r.stuck[1], '']);
      from = r.stuck[0] + 1;
    }
    const counts: Record<Outcome, number> = { typed: 0, accepted: 0, untyped: 0, silent: 0, crash: 0, hang: 0 };
    const failing: string[] = [];
    all.forEach((c, i) => {
      const r = results.get(i);
      if (!r) return;
      let [outcome, detail] = r;
      if (outcome === 'silent' && c.accepts.includes(c.label)) outcome = 'accepted';
      counts[outcome]++;
      if (outcome !== 'typed' && outcome !== 'accepted') failing.push(`${outcome}: ${c.id}${detail ? ` (${detail})` : ''}`);
    });
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    console.log(
      `${total} cases: ${counts.typed} typed, ${counts.accepted} valid values taken, ${counts.untyped} untyped, ${counts.silent} silent, ${counts.crash} crashes, ${counts.hang} hangs`,
    );
    for (const f of failing) console.log(f);
    process.exitCode = counts.untyped + counts.crash + counts.hang > 0 || counts.silent > 5 ? 1 : 0;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const argv = process.argv.slice(2);
if (argv[0] === '--worker') await worker(argv[1]!, Number(argv[2]), argv[3] ?? '');
else await parent(argv.includes('--only') ? argv[argv.indexOf('--only') + 1]! : '');
