// Shared benchmark plumbing: timing, tables, JSON results.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Row {
  case: string;
  contender: string;
  qps: number;
  msPerCall: number;
  note?: string;
}

/**
 * Waits, up to maxMs, until no thread of this process is burning CPU. The OpenBLAS and OpenMP workers behind a
 * baseline (libtorch, faiss, sgemm) keep spinning after its last call: measured here, one of the two cores
 * stayed busy for about 130 ms while JS slept. A contender timed inside that window shares its cores with them.
 */
export async function settle(maxMs = 1000): Promise<void> {
  const start = performance.now();
  while (performance.now() - start < maxMs) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, 10));
    const c = process.cpuUsage(c0);
    if ((c.user + c.system) / 1e3 < 0.1 * (performance.now() - t0)) return;
  }
}

/**
 * Median seconds per call of fn, over at least minReps calls or minSeconds, after the process has settled (see
 * settle) and one warm-up call.
 */
export async function timeIt(fn: () => unknown, opts: { minReps?: number; minSeconds?: number; maxReps?: number } = {}): Promise<number> {
  const { minReps = 3, minSeconds = 1, maxReps = 50 } = opts;
  await settle();
  await fn();
  const times: number[] = [];
  const start = performance.now();
  while (times.length < maxReps && (times.length < minReps || performance.now() - start < minSeconds * 1000)) {
    const t0 = performance.now();
    await fn();
    times.push((performance.now() - t0) / 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

/** Deterministic fill with values in [-1, 1) (xorshift32): fast enough for 10^9 floats. */
export function fillRandom(a: Float32Array, seed = 1): Float32Array {
  let x = seed >>> 0 || 1;
  for (let i = 0; i < a.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    a[i] = (x >>> 0) / 2147483648 - 1;
  }
  return a;
}

export function fmt(x: number, digits = 3): string {
  if (!Number.isFinite(x)) return String(x);
  if (x >= 100) return x.toFixed(0);
  return x.toPrecision(digits);
}

export function printTable(headers: string[], rows: Array<Array<string | number>>): void {
  const cells = rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : c)));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  console.log(line(headers));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of cells) console.log(line(r));
}

export function writeResults(name: string, payload: unknown): string {
  const dir = join(import.meta.dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const path = join(dir, `${name}-${stamp}.json`);
  writeFileSync(path, JSON.stringify(payload, null, 2));
  return path;
}

/** The middle value (the mean of the two middle ones for an even count). */
/** The p-th percentile (nearest rank, from below) of a non-empty list. */
export function percentile(values: readonly number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/**
 * A question's source document: the middle part of its first relevant passage's id, `task-<doc>-<chunk>` (the ids
 * `quorum data build` writes; for COVID-QA the document is a paper), or undefined for ids of another shape.
 */
export function sourceDocument(relevant: ReadonlyMap<string, number>): string | undefined {
  const parts = [...relevant.keys()][0]?.split('-');
  return parts?.length === 3 ? parts[1] : undefined;
}

/** The value after `--name` on the command line, or `fallback`. */
export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : process.argv[i + 1]!;
}

/** Standard normal draws from a fixed LCG seed (Box-Muller): the same corpus on every run and machine. */
export function normalDraws(seed = 12345): () => number {
  let s = seed;
  return () => {
    // Math.imul: s * 1103515245 in doubles loses the low bits past 2^53, and the sequence fell into a cycle of a few
    // thousand draws (a 100k x 768 corpus repeated every 419 rows).
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const u = (s + 1) / 4294967297;
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const v = (s + 1) / 4294967297;
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
}
