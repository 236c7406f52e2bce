import type { PassageMetadata } from '../filter.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { QuorumError } from '../errors.js';
import type { Qrels } from './runs.js';
import { makeDirs, readTextFile } from './files.js';
import { parseQrels, readQrels } from './trec-files.js';
import { lineError, parseJsonObjectLine, readJsonLines } from './lines.js';
import { mustBeString } from '../validate.js';

/** One corpus entry (a line of BEIR's corpus.jsonl: `_id`, `title`, `text`). */
export interface Passage {
  /** The passage id (BEIR's `_id`). */
  id: string;
  /** Its title, '' when it has none. */
  title: string;
  /** Its text. */
  text: string;
  /** BEIR's optional `metadata` object (keyword and numeric fields: what metadata filters read, lib/filter.ts). */
  metadata?: PassageMetadata;
}

/** One question (a line of BEIR's queries.jsonl). */
export interface Query {
  /** The question id (BEIR's `_id`). */
  id: string;
  /** The question. */
  text: string;
  /** Answer strings, where the dataset gives them (for answer-based metrics and the ROM reader). */
  answers?: string[];
  /** The task or domain it belongs to, where the dataset gives one (the multi-domain benchmark does). */
  task?: string;
}

/** query id -> (corpus id -> relevance) */
export type { Qrels };

/** A BEIR-layout dataset in memory: the corpus, the queries and one split's qrels. */
export interface BeirDataset {
  /** Every passage. */
  corpus: Passage[];
  /** Every question of queries.jsonl (not only the split's). */
  queries: Query[];
  /** The split's judgements: question id -> (passage id -> grade). */
  qrels: Qrels;
}

// A whole JSON-lines file, each non-empty line parsed by `parse` (given "file:line" for its messages).
function readJsonl<T>(path: string, parse: (o: Record<string, unknown>, where: string) => T): T[] {
  const out: T[] = [];
  readTextFile(path)
    .split('\n')
    .forEach((line, i) => {
      if (line.trim()) out.push(parse(parseJsonObjectLine(line, path, i + 1), `${path}:${i + 1}`));
    });
  return out;
}

/**
 * A dataset file's records, checked as a whole: ERR_FORMAT naming the file when it holds none (empty, blank) or when
 * an id repeats (a second passage or query under one id would be silently merged or dropped downstream).
 */
function checkedRecords<T extends { id: string }>(items: T[], path: string, what: string): T[] {
  if (!items.length) throw new QuorumError('ERR_FORMAT', `${path} holds no ${what}`);
  const seen = new Set<string>();
  for (const it of items) {
    if (seen.has(it.id)) throw new QuorumError('ERR_FORMAT', `${path}: the id '${it.id}' appears twice`);
    seen.add(it.id);
  }
  return items;
}

/** Qrels read from a dataset: ERR_FORMAT when they judge nothing (empty, blank or header-only). */
function checkedQrels(qrels: Map<string, Map<string, number>>, path: string): Map<string, Map<string, number>> {
  if (!qrels.size) throw new QuorumError('ERR_FORMAT', `${path} holds no judgments`);
  return qrels;
}

function str(o: Record<string, unknown>, key: string, where: string, optional = false): string {
  const v = o[key];
  if (typeof v === 'string') return v;
  if (optional && v === undefined) return '';
  throw new QuorumError('ERR_FORMAT', `${where}: field "${key}" must be a string`);
}

const passageOf = (o: Record<string, unknown>, w: string): Passage => {
  const p: Passage = { id: str(o, '_id', w), title: str(o, 'title', w, true), text: str(o, 'text', w) };
  const m = o.metadata;
  if (m !== undefined && m !== null) {
    if (typeof m !== 'object' || Array.isArray(m)) throw new QuorumError('ERR_FORMAT', `${w}: metadata must be an object of fields`);
    p.metadata = m as PassageMetadata;
  }
  return p;
};

function queryOf(o: Record<string, unknown>, w: string): Query {
  const q: Query = { id: str(o, '_id', w), text: str(o, 'text', w) };
  if (Array.isArray(o.answers)) q.answers = o.answers.map(String);
  if (typeof o.task === 'string') q.task = o.task;
  return q;
}

/**
 * A BEIR dataset's corpus alone (corpus.jsonl): what indexing it needs, whatever its splits. `dir` is the dataset's
 * directory, or a corpus file itself (a path ending in .jsonl).
 *
 * @example
 * const corpus = loadBeirCorpus('data/multidomain-mini');   // Passage[]: { id, title, text }
 */
export function loadBeirCorpus(dir: string): BeirDataset['corpus'] {
  mustBeString(dir, 'dataset directory');
  const path = dir.endsWith('.jsonl') ? dir : join(dir, 'corpus.jsonl');
  return checkedRecords(readJsonl(path, passageOf), path, 'passages');
}

/**
 * Reads a BEIR-layout dataset (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) whole; see readBeir for streaming.
 *
 * @example
 * const { corpus, queries, qrels } = loadBeir('data/multidomain-mini', 'dev');
 */
export function loadBeir(dir: string, split = 'test'): BeirDataset {
  mustBeString(dir, 'dataset directory');
  mustBeString(split, 'split');
  const corpus = loadBeirCorpus(dir);
  const queries = checkedRecords(readJsonl(join(dir, 'queries.jsonl'), queryOf), join(dir, 'queries.jsonl'), 'queries');
  const path = join(dir, 'qrels', `${split}.tsv`);
  return { corpus, queries, qrels: checkedQrels(parseQrels(readTextFile(path), path), path) };
}

/**
 * {@link loadBeir}, streamed line by line (for corpora that do not fit a string); errors name file:line.
 *
 * @example
 * const { corpus, queries, qrels } = await readBeir('/data/beir/nq', 'test');
 */
export async function readBeir(dir: string, split = 'test'): Promise<BeirDataset> {
  mustBeString(dir, 'dataset directory');
  mustBeString(split, 'split');
  const corpus = await readBeirCorpus(dir);
  const qrelsPath = join(dir, 'qrels', `${split}.tsv`);
  return { corpus, queries: await readBeirQueries(join(dir, 'queries.jsonl')), qrels: checkedQrels(await readQrels(qrelsPath), qrelsPath) };
}

/**
 * Only corpus.jsonl of a BEIR-layout dataset, streamed (what an index needs).
 *
 * @example
 * const index = await Bm25Index.build((await readBeirCorpus('/data/beir/nq')).map((p) => ({ id: p.id, text: `${p.title} ${p.text}` })));
 */
export async function readBeirCorpus(dir: string): Promise<Passage[]> {
  mustBeString(dir, 'dataset directory');
  const corpus: Passage[] = [];
  const path = join(dir, 'corpus.jsonl');
  for await (const { value, line } of readJsonLines(path)) corpus.push(wrapLine(() => passageOf(value, ''), path, line));
  return checkedRecords(corpus, path, 'passages');
}

/**
 * A queries.jsonl file ({_id, text, answers?, task?} per line), streamed: ERR_FORMAT naming file:line for a bad line,
 * and for a file with no query or a repeated id.
 *
 * @example
 * const queries = await readBeirQueries('data/multidomain-mini/queries.jsonl');
 */
export async function readBeirQueries(path: string): Promise<Query[]> {
  mustBeString(path, 'queries path');
  const queries: Query[] = [];
  for await (const { value, line } of readJsonLines(path)) queries.push(wrapLine(() => queryOf(value, ''), path, line));
  return checkedRecords(queries, path, 'queries');
}

function wrapLine<T>(f: () => T, path: string, line: number): T {
  try {
    return f();
  } catch (e) {
    throw lineError(path, line, (e as Error).message.replace(/^: /, ''));
  }
}

/**
 * Writes a dataset in the BEIR layout: corpus.jsonl ({_id, title, text}), queries.jsonl ({_id, text} plus answers
 * and task when present) and qrels/<split>.tsv with its header.
 *
 * @example
 * writeBeir('out/tiny', {
 *   corpus: [{ id: 'p1', title: 'Paris', text: 'The Eiffel Tower is in Paris.' }],
 *   queries: [{ id: 'q1', text: 'Where is the Eiffel Tower?', answers: ['Paris'] }],
 *   qrels: new Map([['q1', new Map([['p1', 1]])]]),
 * }, 'test');
 * loadBeir('out/tiny', 'test').qrels;   // Map { 'q1' => Map { 'p1' => 1 } }
 */
export function writeBeir(dir: string, data: BeirDataset, split = 'test'): void {
  makeDirs(join(dir, 'qrels'));
  writeFileSync(
    join(dir, 'corpus.jsonl'),
    data.corpus
      .map((p) => JSON.stringify({ _id: p.id, title: p.title, text: p.text, ...(p.metadata ? { metadata: p.metadata } : {}) }))
      .join('\n') + '\n',
  );
  writeFileSync(
    join(dir, 'queries.jsonl'),
    data.queries
      .map((q) =>
        JSON.stringify({ _id: q.id, text: q.text, ...(q.answers ? { answers: q.answers } : {}), ...(q.task ? { task: q.task } : {}) }),
      )
      .join('\n') + '\n',
  );
  writeQrelsTsv(join(dir, 'qrels', `${split}.tsv`), data.qrels);
}

/** BEIR's qrels TSV (`query-id<TAB>corpus-id<TAB>score`, with its header). */
export function writeQrelsTsv(path: string, qrels: Qrels): void {
  const rows = ['query-id\tcorpus-id\tscore'];
  for (const [q, rel] of qrels) for (const [c, s] of rel) rows.push(`${q}\t${c}\t${s}`);
  writeFileSync(path, rows.join('\n') + '\n');
}
