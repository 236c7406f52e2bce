// The one reader and writer of saved directories (a retriever, MUF, CAME and its index, ROM): a JSON card names its
// format and version beside the files it lists. Every loader checks the same things in the same words: the card is
// there (ERR_IO), it is this format (ERR_FORMAT), of the version this Quorum reads (ERR_FORMAT), and a file it names
// is a plain name inside the directory (ERR_FORMAT), so a damaged card never sends a read elsewhere.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { makeDirs, readJsonFile, readTextFile, writeFileAtomic } from '../data/files.js';
import { QuorumError } from '../errors.js';
import type { z } from '../validate.js';

/** A saved directory's kind: its card's file name, format tag and version, and a name for messages. */
export interface SavedFormat {
  /** The card's file name inside the directory, e.g. 'model.json'. */
  card: string;
  /** The `format` field every card of this kind carries. */
  format: string;
  /** The version this Quorum writes and reads. */
  version: number;
  /** What such a directory is, for messages: 'a Quorum retriever', 'a MUF directory', ... */
  what: string;
}

/** A card as read: every field still to be checked by its loader, and the card's path for messages. */
interface ReadCard<T> {
  card: Partial<T> & Record<string, unknown>;
  path: string;
}

/**
 * Reads and checks `dir`'s card: ERR_ARG when `dir` is not a string, ERR_IO when the card is missing (an empty `dir`
 * included), ERR_FORMAT when it is not this format or not this version.
 */
export function readSavedCard<T>(dir: string, f: SavedFormat): ReadCard<T> {
  if (typeof dir !== 'string') throw new QuorumError('ERR_ARG', 'dir must be a string');
  const path = join(dir, f.card);
  if (!existsSync(path)) throw new QuorumError('ERR_IO', `${dir} is not ${f.what} (no ${f.card})`);
  const card = readJsonFile(path) as (Partial<T> & Record<string, unknown>) | null;
  if (!card || typeof card !== 'object' || Array.isArray(card) || card.format !== f.format)
    throw new QuorumError('ERR_FORMAT', `${path} is not ${f.what} (format ${JSON.stringify(card?.format)})`);
  if (card.version !== f.version)
    throw new QuorumError(
      'ERR_FORMAT',
      `${path} has format version ${JSON.stringify(card.version)}; this Quorum reads version ${f.version}`,
    );
  return { card, path };
}

/**
 * Writes `dir`'s card (the directory created if needed; the file atomically), format and version first, and returns
 * it as written.
 */
export function writeSavedCard<F extends SavedFormat, B extends object>(
  dir: string,
  f: F,
  body: B,
  indent = 1,
): { format: F['format']; version: F['version'] } & B {
  makeDirs(dir);
  const card = { format: f.format as F['format'], version: f.version as F['version'], ...body };
  writeFileAtomic(join(dir, f.card), Buffer.from(JSON.stringify(card, null, indent) + '\n'));
  return card;
}

/**
 * A saved directory's id file (one id per row: MUF's corpus-ids.txt, a CAME index's ids.txt), checked the same way
 * for every reader (issue 65): LF or CRLF line ends, one final line end optional; no empty id, none twice, and exactly
 * `rows` of them when given. ERR_FORMAT naming the file and line otherwise: a shifted or ambiguous id names the wrong
 * passage in every answer.
 */
export function readIdFile(path: string, rows?: number, what = 'indexed passages'): string[] {
  const ids = readTextFile(path).split(/\r?\n/);
  if (ids.at(-1) === '') ids.pop();
  if (rows !== undefined && ids.length !== rows) throw new QuorumError('ERR_FORMAT', `${path}: ${ids.length} ids for the ${rows} ${what}`);
  const seen = new Map<string, number>();
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    if (id === '') throw new QuorumError('ERR_FORMAT', `${path}: line ${i + 1} is an empty id`);
    const first = seen.get(id);
    if (first !== undefined)
      throw new QuorumError('ERR_FORMAT', `${path}: line ${i + 1} repeats the id ${JSON.stringify(id)} of line ${first + 1}`);
    seen.set(id, i);
  }
  return ids;
}

/** A file a card names: a plain file name (no directory part), returned as its path in `dir`; else ERR_FORMAT. */
export function savedFile(dir: string, name: unknown, cardPath: string, what: string): string {
  if (typeof name !== 'string' || !name || /[\\/]/.test(name) || name === '.' || name === '..')
    throw new QuorumError('ERR_FORMAT', `${cardPath}: missing or malformed ${what} entry`);
  return join(dir, name);
}

/**
 * A card (or a part of one) checked against its schema, every field: the first problem is ERR_FORMAT naming the card
 * and the field, e.g. "m/model.json: config.encoder.normalize: Expected boolean, received string".
 */
export function checkCard<S extends z.ZodTypeAny>(schema: S, value: unknown, path: string, at = ''): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const field = [at, ...issue.path.map(String)].filter(Boolean).join('.');
  throw new QuorumError('ERR_FORMAT', `${path}: ${field ? `${field}: ` : ''}${issue.message}`);
}
