// Streaming text input for large data files: lines one at a time (never the whole file in memory), and errors
// that name file:line.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

import { QuorumError } from '../errors.js';
import { checkRegularFile } from './files.js';

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
  checkRegularFile(path);
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
    yield { value: parseJsonObjectLine(text, path, line), line };
  }
}

/** One JSON-lines line parsed as an object; ERR_FORMAT naming file:line otherwise. */
export function parseJsonObjectLine(text: string, path: string, line: number): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw lineError(path, line, `not valid JSON (${(e as Error).message})`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw lineError(path, line, 'expected a JSON object');
  return value as Record<string, unknown>;
}

/**
 * The elements of a file holding one top-level JSON array, parsed one at a time as the file streams in (DPR's
 * training files run to gigabytes, beyond what one string can hold). Errors name file:line of the element.
 */
export async function* readJsonArray(path: string): AsyncGenerator<{ value: unknown; line: number; index: number }> {
  checkRegularFile(path);
  const stream = createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 20 });
  const opened = new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', (e) => reject(new QuorumError('ERR_IO', `cannot read ${path}: ${e.message}`)));
  });
  await opened;
  let line = 1;
  let started = false; // past the opening '['
  let ended = false;
  let depth = 0; // inside an element: nesting of {} and []
  let inString = false;
  let escaped = false;
  let buf = '';
  let elementLine = 1;
  let elementStarted = false;
  let index = 0;
  const emit = () => {
    const text = buf.trim();
    buf = '';
    elementStarted = false;
    if (!text) return undefined;
    try {
      return { value: JSON.parse(text) as unknown, line: elementLine, index: index++ };
    } catch (e) {
      throw lineError(path, elementLine, `element ${index} is not valid JSON (${(e as Error).message})`);
    }
  };
  try {
    for await (const chunk of stream as AsyncIterable<string>) {
      let from = 0;
      for (let i = 0; i < chunk.length; i++) {
        const c = chunk[i] as string;
        if (c === '\n') line++;
        if (!started) {
          if (c === '[') {
            started = true;
            from = i + 1;
          } else if (!/\s/.test(c)) throw lineError(path, line, 'expected a JSON array');
          continue;
        }
        if (ended) {
          if (!/\s/.test(c)) throw lineError(path, line, 'text after the closing ]');
          continue;
        }
        if (inString) {
          if (escaped) escaped = false;
          else if (c === '\\') escaped = true;
          else if (c === '"') inString = false;
          continue;
        }
        if (depth === 0 && !elementStarted && c !== ',' && c !== ']' && !/\s/.test(c)) {
          elementStarted = true;
          elementLine = line;
        }
        if (c === '"') {
          inString = true;
        } else if (c === '{' || c === '[') {
          depth++;
        } else if (c === '}' || c === ']') {
          if (depth === 0 && c === ']') {
            buf += chunk.slice(from, i);
            const el = emit();
            if (el) yield el;
            ended = true;
            from = i + 1;
            continue;
          }
          depth--;
        } else if (c === ',' && depth === 0) {
          buf += chunk.slice(from, i);
          const el = emit();
          if (!el) throw lineError(path, line, 'empty array element');
          yield el;
          from = i + 1;
          continue;
        }
      }
      if (started && !ended) buf += chunk.slice(from);
    }
  } finally {
    stream.destroy();
  }
  if (!started || !ended) throw lineError(path, line, started ? 'the array is not closed (truncated file?)' : 'expected a JSON array');
}
