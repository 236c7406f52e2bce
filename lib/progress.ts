// Progress bars for long library calls (training, encoding, evaluation): on stderr when it is a terminal, silent
// otherwise. Library code, so that the trainers need nothing from the CLI.
import cliProgress from 'cli-progress';

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
export async function inBatches(
  label: string,
  total: number,
  size: number,
  work: (start: number, end: number) => Promise<void>,
): Promise<void> {
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
