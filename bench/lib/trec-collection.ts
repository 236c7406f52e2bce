// Reads a small TREC-style test collection as the CACM collection is laid out (docs/data.md#cacm): documents as
// JSON lines `{ id, contents }`, topics as `<DOC><DOCNO> n </DOCNO> text </DOC>`, and TREC qrels.
import { join } from 'node:path';

import { type Qrels } from '../../lib/data/runs.js';
import { readTextFile } from '../../lib/data/files.js';
import { parseJsonObjectLine } from '../../lib/data/lines.js';
import { parseQrels, parseTrecTopics } from '../../lib/data/trec-files.js';

export interface TrecCollection {
  docs: Array<{ id: string; text: string }>;
  topics: Array<{ id: string; text: string }>;
  qrels: Qrels;
}

/** Loads `<name>.json`, `topics.<name>.txt` and `qrels.<name>.txt` from `dir`. */
export function loadTrecCollection(dir: string, name: string): TrecCollection {
  const docsPath = join(dir, `${name}.json`);
  const docs = readTextFile(docsPath)
    .split('\n')
    .map((l, i) => (l.trim() ? parseJsonObjectLine(l, docsPath, i + 1) : undefined))
    .filter((d) => d !== undefined)
    .map((d) => ({ id: String(d.id), text: String(d.contents) }));
  const topicsPath = join(dir, `topics.${name}.txt`);
  const topics = parseTrecTopics(readTextFile(topicsPath), topicsPath).map((t) => ({ id: t.id, text: t.title }));
  return { docs, topics, qrels: parseQrels(readTextFile(join(dir, `qrels.${name}.txt`)), join(dir, `qrels.${name}.txt`)) };
}

