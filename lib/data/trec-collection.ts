// Reads a small TREC-style test collection as the CACM files in ../shared/data/cacm lay it out: documents as
// JSON lines `{ id, contents }`, topics as `<DOC><DOCNO> n </DOCNO> text </DOC>`, and TREC qrels.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { rankDocs } from '../eval/ranking.js';
import { type Qrels, parseQrels } from '../eval/trec.js';
import { parseTrecTopics } from './trec-files.js';

export interface TrecCollection {
  docs: Array<{ id: string; text: string }>;
  topics: Array<{ id: string; text: string }>;
  qrels: Qrels;
}

/** Loads `<name>.json`, `topics.<name>.txt` and `qrels.<name>.txt` from `dir`. */
export function loadTrecCollection(dir: string, name: string): TrecCollection {
  const docs = readFileSync(join(dir, `${name}.json`), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { id: string; contents: string })
    .map((d) => ({ id: d.id, text: d.contents }));
  const topicsPath = join(dir, `topics.${name}.txt`);
  const topics = parseTrecTopics(readFileSync(topicsPath, 'utf8'), topicsPath).map((t) => ({ id: t.id, text: t.title }));
  return { docs, topics, qrels: parseQrels(readFileSync(join(dir, `qrels.${name}.txt`), 'utf8')) };
}

/** A ranked list in trec_eval's order: score descending, then document id descending. */
export function trecOrder(hits: ReadonlyArray<{ id: string; score: number }>): string[] {
  return rankDocs(hits, 'trec_eval');
}
