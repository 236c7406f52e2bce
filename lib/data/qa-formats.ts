// SQuAD JSON and DPR JSON: readers into Quorum's passages / queries / qrels (or DPR training examples), and
// writers back. Both formats are one JSON document, so these read the whole file (the line-based formats stream).
import { writeFileSync } from 'node:fs';

import { QuorumError } from '../errors.js';
import { type BeirDataset, type Passage, type Query } from './beir.js';
import { readJsonFile } from './files.js';
import { readJsonArray } from './lines.js';

const bad = (path: string, where: string, what: string) => new QuorumError('ERR_FORMAT', `${path}: ${where}: ${what}`);

function arr(v: unknown, path: string, where: string): unknown[] {
  if (!Array.isArray(v)) throw bad(path, where, 'expected an array');
  return v;
}
function obj(v: unknown, path: string, where: string): Record<string, unknown> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw bad(path, where, 'expected an object');
  return v as Record<string, unknown>;
}
function text(v: unknown, path: string, where: string): string {
  if (typeof v !== 'string') throw bad(path, where, 'expected a string');
  return v;
}

/**
 * SQuAD v1.1 JSON (`data[].paragraphs[].{context, qas[]}`) as passages (one per paragraph, id
 * `<prefix><article>-<paragraph>`, titled by the article), queries (the question ids, with their distinct answer
 * texts) and qrels (each question -> its paragraph). Unanswerable SQuAD 2.0 questions are skipped.
 *
 * @example
 * const { corpus, queries, qrels } = readSquad('xquad.en.json');
 * corpus[0].id;   // 'p0-0': article 0, paragraph 0
 */
export function readSquad(path: string, prefix = 'p'): BeirDataset {
  const root = obj(readJsonFile(path), path, 'root');
  const corpus: Passage[] = [];
  const queries: Query[] = [];
  const qrels = new Map<string, Map<string, number>>();
  arr(root.data, path, 'data').forEach((a, ai) => {
    const article = obj(a, path, `data[${ai}]`);
    const title = typeof article.title === 'string' ? article.title.replace(/_/g, ' ') : '';
    arr(article.paragraphs, path, `data[${ai}].paragraphs`).forEach((p, pi) => {
      const where = `data[${ai}].paragraphs[${pi}]`;
      const para = obj(p, path, where);
      const id = `${prefix}${ai}-${pi}`;
      corpus.push({ id, title, text: text(para.context, path, `${where}.context`) });
      arr(para.qas ?? [], path, `${where}.qas`).forEach((q, qi) => {
        const qa = obj(q, path, `${where}.qas[${qi}]`);
        if (qa.is_impossible === true) return;
        const qid = text(qa.id, path, `${where}.qas[${qi}].id`);
        const answers = [
          ...new Set(arr(qa.answers ?? [], path, `${where}.qas[${qi}].answers`).map((x) => String((x as { text?: unknown }).text ?? ''))),
        ];
        queries.push({ id: qid, text: text(qa.question, path, `${where}.qas[${qi}].question`), answers });
        qrels.set(qid, new Map([[id, 1]]));
      });
    });
  });
  return { corpus, queries, qrels };
}

/**
 * Writes passages, queries and qrels as SQuAD v1.1 JSON (one article per title; answer_start found by search, -1 if absent).
 *
 * @example
 * writeSquad('tiny.json', loadBeir('out/tiny', 'test'));
 * readSquad('tiny.json').qrels;   // Map { 'q1' => Map { 'p0-0' => 1 } }: passages renamed by position
 */
export function writeSquad(path: string, data: BeirDataset): void {
  const passages = new Map(data.corpus.map((p) => [p.id, p]));
  const qasOf = new Map<string, Array<Record<string, unknown>>>();
  for (const q of data.queries) {
    for (const [pid, rel] of data.qrels.get(q.id) ?? []) {
      if (rel <= 0 || !passages.has(pid)) continue;
      const context = passages.get(pid)!.text;
      const answers = (q.answers ?? []).map((t) => ({ text: t, answer_start: context.indexOf(t) }));
      if (!qasOf.has(pid)) qasOf.set(pid, []);
      qasOf.get(pid)!.push({ id: q.id, question: q.text, answers });
      break; // SQuAD ties a question to one paragraph
    }
  }
  const articles = new Map<string, Array<Record<string, unknown>>>();
  for (const p of data.corpus) {
    if (!articles.has(p.title)) articles.set(p.title, []);
    articles.get(p.title)!.push({ context: p.text, qas: qasOf.get(p.id) ?? [] });
  }
  const json = { version: '1.1', data: [...articles].map(([title, paragraphs]) => ({ title, paragraphs })) };
  writeFileSync(path, JSON.stringify(json));
}

/** One DPR training / dev example. */
export interface DprExample {
  /** The question. */
  question: string;
  /** Its answer strings. */
  answers: string[];
  /** Passages that answer it (DPR's `positive_ctxs`). */
  positives: Passage[];
  /** Random negatives (DPR's `negative_ctxs`). */
  negatives: Passage[];
  /** Hard negatives, e.g. BM25's top non-answers (DPR's `hard_negative_ctxs`). */
  hardNegatives: Passage[];
}

function ctxs(v: unknown, path: string, where: string): Passage[] {
  return arr(v ?? [], path, where).map((c, i) => {
    const o = obj(c, path, `${where}[${i}]`);
    const id = o.passage_id ?? o.psg_id ?? o.id ?? '';
    return { id: String(id), title: typeof o.title === 'string' ? o.title : '', text: text(o.text, path, `${where}[${i}].text`) };
  });
}

function dprExample(e: unknown, path: string, where: string): DprExample {
  const o = obj(e, path, where);
  return {
    question: text(o.question, path, `${where}.question`),
    answers: arr(o.answers ?? [], path, `${where}.answers`).map(String),
    positives: ctxs(o.positive_ctxs, path, `${where}.positive_ctxs`),
    negatives: ctxs(o.negative_ctxs, path, `${where}.negative_ctxs`),
    hardNegatives: ctxs(o.hard_negative_ctxs, path, `${where}.hard_negative_ctxs`),
  };
}

/**
 * DPR's JSON (`[{question, answers, positive_ctxs, negative_ctxs, hard_negative_ctxs}]`, ids from passage_id or psg_id), whole.
 *
 * @example
 * const [first] = readDpr('nq-dev.json');
 * first.question; first.positives[0].id;
 */
export function readDpr(path: string): DprExample[] {
  return arr(readJsonFile(path), path, 'root').map((e, i) => dprExample(e, path, `[${i}]`));
}

/**
 * {@link readDpr} one example at a time as the file streams in (DPR's training files run to gigabytes).
 *
 * @example
 * for await (const e of streamDpr('nq-train.json')) if (e.hardNegatives.length) count++;
 */
export async function* streamDpr(path: string): AsyncGenerator<DprExample> {
  for await (const { value, line, index } of readJsonArray(path)) yield dprExample(value, path, `line ${line}, [${index}]`);
}

/**
 * Writes examples in DPR's JSON layout.
 *
 * @example
 * writeDpr('tiny-dpr.json', [{ question: 'Where is the Eiffel Tower?', answers: ['Paris'], positives: corpus,
 * negatives: [], hardNegatives: [] }]);
 */
export function writeDpr(path: string, examples: readonly DprExample[]): void {
  const c = (ps: Passage[]) => ps.map((p) => ({ passage_id: p.id, title: p.title, text: p.text }));
  writeFileSync(
    path,
    JSON.stringify(
      examples.map((e) => ({
        question: e.question,
        answers: e.answers,
        positive_ctxs: c(e.positives),
        negative_ctxs: c(e.negatives),
        hard_negative_ctxs: c(e.hardNegatives),
      })),
    ),
  );
}
