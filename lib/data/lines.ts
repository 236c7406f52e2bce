// Streaming text input for large data files: lines one at a time (never the whole file in memory), and errors
// that name file:line.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

import { QuorumError } from '../errors.js';

/** A parse failure at `file:line`. */
export function lineError(path: string, line: number, message: string): QuorumError {
  return new QuorumError('ERR_FORMAT', `${path}:${line}: ${message}`);
}

/**
 * The lines of a UTF-8 text file with their 1-based numbers, streamed. A missing or unreadable file is ERR_IO.
 *
 * @example
 * for await (const { text, line } of readLines('run.trec')) { ... }
 */
export async function* readLines(path: string): AsyncGenerator<{ text: string; line: number }> {
  const stream = createReadStream(path, { encoding: 'utf8' });
  const opened = new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', (e) => reject(new QuorumError('ERR_IO', `cannot read ${path}: ${e.message}`)));
  });
  await opened;
  const rl = createInterface({ input: stream, crlfDelay: Infinity });
  let line = 0;
  try {
    for await (const text of rl) yield { text, line: ++line };
  } catch (e) {
    throw new QuorumError('ERR_IO', `cannot read ${path}: ${(e as Error).message}`);
  } finally {
    rl.close();
    stream.destroy();
  }
}

/** Each non-empty line of a JSON-lines file parsed as an object (ERR_FORMAT naming file:line otherwise). */
export async function* readJsonLines(path: string): AsyncGenerator<{ value: Record<string, unknown>; line: number }> {
  for await (const { text, line } of readLines(path)) {
    if (!text.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw lineError(path, line, `not valid JSON (${(e as Error).message})`);
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) throw lineError(path, line, 'expected a JSON object');
    yield { value: value as Record<string, unknown>, line };
  }
}
