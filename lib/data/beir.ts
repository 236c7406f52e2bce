import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { QuorumError } from '../errors.js';

export interface Passage {
  id: string;
  title: string;
  text: string;
}

export interface Query {
  id: string;
  text: string;
  answers?: string[];
  task?: string;
}

/** query id -> (corpus id -> relevance) */
export type Qrels = Map<string, Map<string, number>>;

export interface BeirDataset {
  corpus: Passage[];
  queries: Query[];
  qrels: Qrels;
}

function readJsonl<T>(path: string, parse: (o: Record<string, unknown>, where: string) => T): T[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new QuorumError('ERR_ARG', `cannot read ${path}: ${(e as Error).message}`);
  }
  const out: T[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    const where = `${path}:${i + 1}`;
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch {
      throw new QuorumError('ERR_ARG', `${where}: not valid JSON`);
    }
    if (!o || typeof o !== 'object') throw new QuorumError('ERR_ARG', `${where}: expected a JSON object`);
    out.push(parse(o as Record<string, unknown>, where));
  });
  return out;
}

function str(o: Record<string, unknown>, key: string, where: string, optional = false): string {
  const v = o[key];
  if (typeof v === 'string') return v;
  if (optional && v === undefined) return '';
  throw new QuorumError('ERR_ARG', `${where}: field "${key}" must be a string`);
}

/** Reads a BEIR-layout dataset: corpus.jsonl, queries.jsonl and qrels/<split>.tsv. */
export function loadBeir(dir: string, split = 'test'): BeirDataset {
  const corpus = readJsonl(join(dir, 'corpus.jsonl'), (o, w) => ({ id: str(o, '_id', w), title: str(o, 'title', w, true), text: str(o, 'text', w) }));
  const queries = readJsonl(join(dir, 'queries.jsonl'), (o, w) => {
    const q: Query = { id: str(o, '_id', w), text: str(o, 'text', w) };
    if (Array.isArray(o.answers)) q.answers = o.answers.map(String);
    if (typeof o.task === 'string') q.task = o.task;
    return q;
  });
  const qrels: Qrels = new Map();
  const path = join(dir, 'qrels', `${split}.tsv`);
  let lines: string[];
  try {
    lines = readFileSync(path, 'utf8').split('\n');
  } catch (e) {
    throw new QuorumError('ERR_ARG', `cannot read ${path}: ${(e as Error).message}`);
  }
  lines.forEach((line, i) => {
    if (!line.trim() || (i === 0 && line.startsWith('query-id'))) return;
    const [q, c, s] = line.split('\t');
    const rel = Number(s);
    if (!q || !c || !Number.isFinite(rel)) throw new QuorumError('ERR_ARG', `${path}:${i + 1}: expected "query-id<TAB>corpus-id<TAB>score"`);
    if (!qrels.has(q)) qrels.set(q, new Map());
    qrels.get(q)?.set(c, rel);
  });
  return { corpus, queries, qrels };
}
