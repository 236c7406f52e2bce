// Console tables and progress bars for the CLI.
import cliProgress from 'cli-progress';

/** Prints rows as an aligned table (numbers: 3 decimals below 100, integers above). */
export function table(rows: Array<Record<string, string | number>>): void {
  const headers = Object.keys(rows[0] ?? {});
  const cell = (v: string | number | undefined) => (typeof v === 'number' ? (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(3)) : (v ?? ''));
  const widths = headers.map((h) => Math.max(h.length, ...rows.map((r) => cell(r[h]).length)));
  const line = (cells: string[]) => '  ' + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  console.log(line(headers));
  for (const r of rows) console.log(line(headers.map((h) => cell(r[h]))));
}

/** A progress bar on stderr when it is a terminal; a no-op otherwise (CI logs, pipes). */
export function progress(label: string, total: number): { tick(n?: number): void; stop(): void } {
  if (!process.stderr.isTTY || total <= 0) return { tick: () => undefined, stop: () => undefined };
  const bar = new cliProgress.SingleBar(
    { format: `${label} [{bar}] {value}/{total} {eta_formatted}`, stream: process.stderr, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  return { tick: (n = 1) => bar.increment(n), stop: () => bar.stop() };
}

/**
 * Runs `work(start, end)` over [0, total) in batches of `size`, one after another, with a progress bar (see
 * {@link progress}) that is stopped whatever happens.
 */
export async function inBatches(label: string, total: number, size: number, work: (start: number, end: number) => Promise<void>): Promise<void> {
  const bar = progress(label, total);
  try {
    for (let start = 0; start < total; start += size) {
      const end = Math.min(start + size, total);
      await work(start, end);
      bar.tick(end - start);
    }
  } finally {
    bar.stop();
  }
}
