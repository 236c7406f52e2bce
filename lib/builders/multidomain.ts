// The multi-domain benchmark (docs/data.md#source-files-of-the-multi-domain-benchmark), built deterministically from
// the released files: one
// corpus shared by six tasks, split into train / dev / test by document (article, post, paper), never by
// question, so that no test passage is seen in training.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { QuorumError } from '../errors.js';
import { type Passage, type Qrels, type Query, writeBeir, writeQrelsTsv } from '../data/beir.js';
import { readJsonFile, readTextFile } from '../data/files.js';
import { parseJsonObjectLine } from '../data/lines.js';
import { checkOptions, mustBeString, optionKeys } from '../validate.js';

/** The six tasks of the multi-domain benchmark that `quorum data build` writes, in its order. */
export const TASKS = ['wiki', 'xquad', 'reddit', 'covid', 'climate', 'selqa'] as const;
/** One of {@link TASKS}. */
export type TaskName = (typeof TASKS)[number];
/** A split of the benchmark's questions (documents never cross splits). */
export type Split = 'train' | 'dev' | 'test';

/** Where each task comes from and under which licence (the metadata carries it). */
export const TASK_SOURCES: Record<TaskName, { file: string; licence: string }> = {
  wiki: { file: 'squadshifts/new_wiki_v1.0.json', licence: 'SQuADShifts (no licence file; evaluation only, not shipped)' },
  xquad: { file: 'xquad/xquad.en.json', licence: 'CC BY-SA 4.0' },
  reddit: { file: 'squadshifts/reddit_v1.0.json', licence: 'SQuADShifts (no licence file; evaluation only, not shipped)' },
  covid: { file: 'covid-qa/200423_covidQA.json', licence: 'Apache-2.0' },
  climate: { file: 'climate-fever/climate-fever.jsonl', licence: 'CLIMATE-FEVER (no licence file; evaluation only, not shipped)' },
  selqa: { file: 'selqa/selqa-ass-dev.json', licence: 'Apache-2.0' },
};

/** Options of {@link buildMultiDomain}. */
export interface MultiDomainOptions {
  /** Seed of the document split (default 13). */
  seed?: number;
  /** Fractions of documents in train / dev / test (default 0.8 / 0.1 / 0.1). XQuAD is test only. */
  fractions?: readonly [number, number, number];
  /** COVID-QA papers are cut into windows of this many words (default 100). */
  chunkWords?: number;
  /** Tasks to include (default all six). */
  tasks?: readonly TaskName[];
  /** Keep at most this many documents of a task (the first ones in hash order; for small subsets). */
  maxDocs?: Partial<Record<TaskName, number>>;
}

const buildKeys = optionKeys<MultiDomainOptions>()(['seed', 'fractions', 'chunkWords', 'tasks', 'maxDocs']);

/** What {@link buildMultiDomain} returns and {@link writeMultiDomain} writes. */
export interface MultiDomainBenchmark {
  /** One corpus shared by every task and split. */
  corpus: Passage[];
  /** Every question of every split, each with its `task`. */
  queries: Query[];
  /** Judgements per split. */
  qrels: Record<Split, Qrels>;
  /** How it was built: seed, fractions, per-task counts, sources and licences (metadata.json). */
  metadata: Record<string, unknown>;
}

// A task's documents: each with its passages and the queries whose gold passages all lie in it (by local index).
interface SourceDoc {
  key: string;
  title: string;
  passages: string[];
  queries: Array<{ id: string; text: string; answers?: string[]; gold: number[] }>;
}

type SquadArticle = {
  title?: string;
  paragraphs: Array<{
    context: string;
    qas: Array<{ id: string | number; question: string; answers?: Array<{ text: string; answer_start: number }>; is_impossible?: boolean }>;
  }>;
};

function squadArticles(path: string): SquadArticle[] {
  const root = readJsonFile(path) as { data?: SquadArticle[] };
  if (!Array.isArray(root?.data)) throw new QuorumError('ERR_FORMAT', `${path}: expected SQuAD JSON with a "data" array`);
  return root.data;
}

const answersOf = (qa: { answers?: Array<{ text: string }> }) => [...new Set((qa.answers ?? []).map((a) => a.text))];

/** SQuAD-style articles as documents: each paragraph a passage (or, `perParagraph`, each paragraph its own document). */
function squadDocs(path: string, task: string, perParagraph: boolean): SourceDoc[] {
  const docs: SourceDoc[] = [];
  squadArticles(path).forEach((a, ai) => {
    const title = (a.title ?? '').replace(/_/g, ' ');
    const paragraphs = a.paragraphs.map((p, pi) => ({
      key: perParagraph ? `${ai}-${pi}` : `${ai}`,
      text: p.context,
      queries: p.qas.filter((q) => !q.is_impossible).map((q) => ({ id: `${task}-${q.id}`, text: q.question, answers: answersOf(q) })),
    }));
    if (perParagraph) {
      for (const p of paragraphs)
        docs.push({ key: p.key, title, passages: [p.text], queries: p.queries.map((q) => ({ ...q, gold: [0] })) });
    } else {
      docs.push({
        key: `${ai}`,
        title,
        passages: paragraphs.map((p) => p.text),
        queries: paragraphs.flatMap((p, pi) => p.queries.map((q) => ({ ...q, gold: [pi] }))),
      });
    }
  });
  return docs;
}

/** COVID-QA: whole papers cut into `words`-word windows; a question's gold window holds its answer's start. */
function covidDocs(path: string, words: number): SourceDoc[] {
  return squadArticles(path).flatMap((a, ai) =>
    a.paragraphs.map((p, pi) => {
      const context = p.context;
      const starts: number[] = []; // character offset of each word
      for (const m of context.matchAll(/\S+/g)) starts.push(m.index as number);
      const windows: string[] = [];
      const windowStart: number[] = [];
      for (let w = 0; w < starts.length; w += words) {
        const from = starts[w] as number;
        const to = w + words < starts.length ? (starts[w + words] as number) : context.length;
        windows.push(context.slice(from, to).trim());
        windowStart.push(from);
      }
      const windowOf = (offset: number) => {
        let i = 0;
        while (i + 1 < windowStart.length && (windowStart[i + 1] as number) <= offset) i++;
        return i;
      };
      const firstWords = context.split(/\s+/).slice(0, 8).join(' ');
      return {
        key: `${ai}-${pi}`,
        title: `COVID-QA paper ${ai + 1}: ${firstWords}`,
        passages: windows,
        queries: p.qas
          .filter((q) => !q.is_impossible && q.answers?.length)
          .map((q) => ({ id: `covid-${q.id}`, text: q.question, answers: answersOf(q), gold: [windowOf(q.answers![0]!.answer_start)] })),
      };
    }),
  );
}

/** SelQA: each article a document, each of its sections a passage (the section's sentences joined). */
function selqaDocs(path: string): SourceDoc[] {
  const rows = readJsonFile(path) as Array<{ article: string; section: string; question: string; candidates: string[]; answers: number[] }>;
  if (!Array.isArray(rows)) throw new QuorumError('ERR_FORMAT', `${path}: expected a JSON array`);
  const byArticle = new Map<string, { sections: Map<string, number>; passages: string[]; queries: SourceDoc['queries'] }>();
  rows.forEach((r, i) => {
    let a = byArticle.get(r.article);
    if (!a) byArticle.set(r.article, (a = { sections: new Map(), passages: [], queries: [] }));
    let s = a.sections.get(r.section);
    if (s === undefined) {
      s = a.passages.length;
      a.sections.set(r.section, s);
      a.passages.push(r.candidates.join(' '));
    }
    a.queries.push({ id: `selqa-${i}`, text: r.question, answers: r.answers.map((k) => r.candidates[k] ?? '').filter(Boolean), gold: [s] });
  });
  return [...byArticle].map(([article, a]) => ({ key: article, title: article, passages: a.passages, queries: a.queries }));
}

/**
 * CLIMATE-FEVER: each Wikipedia article a document of its evidence sentences. A claim's relevant passages are its
 * SUPPORTS / REFUTES evidences; a claim is kept only when they all lie in one article (so it has one split).
 */
function climateDocs(path: string): { docs: SourceDoc[]; dropped: number } {
  const articles = new Map<string, { ids: Map<string, number>; passages: string[]; queries: SourceDoc['queries'] }>();
  const claims: Array<{ id: string; text: string; gold: Array<[string, number]> }> = [];
  readTextFile(path)
    .split('\n')
    .forEach((line, i) => {
      if (!line.trim()) return;
      const c = parseJsonObjectLine(line, path, i + 1) as unknown as {
        claim_id: string;
        claim: string;
        evidences: Array<{ evidence_id: string; evidence_label: string; article: string; evidence: string }>;
      };
      const gold: Array<[string, number]> = [];
      for (const e of c.evidences) {
        let a = articles.get(e.article);
        if (!a) articles.set(e.article, (a = { ids: new Map(), passages: [], queries: [] }));
        let p = a.ids.get(e.evidence_id);
        if (p === undefined) {
          p = a.passages.length;
          a.ids.set(e.evidence_id, p);
          a.passages.push(e.evidence);
        }
        if (e.evidence_label === 'SUPPORTS' || e.evidence_label === 'REFUTES') gold.push([e.article, p]);
      }
      if (gold.length) claims.push({ id: `climate-${c.claim_id}`, text: c.claim, gold });
    });
  let dropped = 0;
  for (const c of claims) {
    const homes = new Set(c.gold.map(([a]) => a));
    if (homes.size !== 1) {
      dropped++;
      continue;
    }
    articles.get(c.gold[0]![0])!.queries.push({ id: c.id, text: c.text, gold: c.gold.map(([, p]) => p) });
  }
  return {
    docs: [...articles].map(([article, a]) => ({ key: article, title: article, passages: a.passages, queries: a.queries })),
    dropped,
  };
}

/** A uniform number in [0, 1) from the seed, task and document key (stable across runs and machines). */
function unit(seed: number, task: string, key: string): number {
  const h = createHash('sha256').update(`${seed}\u0000${task}\u0000${key}`).digest();
  return h.readUInt32BE(0) / 2 ** 32;
}

/**
 * Builds the benchmark from `dataDir` (laid out as docs/data.md#source-files-of-the-multi-domain-benchmark describes).
 * Passage ids are `<task>-<doc>-<passage>` in
 * source order; query ids keep the source ids behind a task prefix; every query carries its `task`.
 *
 * @example
 * const bench = buildMultiDomain('/data/multidomain-sources', { seed: 13 });
 * writeMultiDomain('datasets/multidomain', bench);
 */
export function buildMultiDomain(dataDir: string, options: MultiDomainOptions = {}): MultiDomainBenchmark {
  mustBeString(dataDir, 'data directory');
  checkOptions(options, buildKeys, 'buildMultiDomain options');
  const seed = options.seed ?? 13;
  const fractions = options.fractions ?? [0.8, 0.1, 0.1];
  if (fractions.length !== 3 || fractions.some((f) => !(f >= 0)) || Math.abs(fractions[0] + fractions[1] + fractions[2] - 1) > 1e-9)
    throw new QuorumError('ERR_RANGE', 'fractions must be three numbers >= 0 that sum to 1');
  const chunkWords = options.chunkWords ?? 100;
  if (!Number.isInteger(chunkWords) || chunkWords < 1) throw new QuorumError('ERR_RANGE', 'chunkWords must be a positive integer');
  const tasks = options.tasks ?? TASKS;
  for (const t of tasks)
    if (!(TASKS as readonly string[]).includes(t)) throw new QuorumError('ERR_ARG', `unknown task '${t}': use ${TASKS.join(', ')}`);

  const corpus: Passage[] = [];
  const queries: Query[] = [];
  const qrels: Record<Split, Map<string, Map<string, number>>> = { train: new Map(), dev: new Map(), test: new Map() };
  const counts: Record<string, Record<string, number>> = {};
  let droppedClaims = 0;
  for (const task of tasks) {
    const path = join(dataDir, TASK_SOURCES[task].file);
    let docs: SourceDoc[];
    if (task === 'wiki' || task === 'xquad') docs = squadDocs(path, task, false);
    else if (task === 'reddit') docs = squadDocs(path, task, true);
    else if (task === 'covid') docs = covidDocs(path, chunkWords);
    else if (task === 'selqa') docs = selqaDocs(path);
    else {
      const c = climateDocs(path);
      docs = c.docs;
      droppedClaims = c.dropped;
    }
    // Documents in a seeded hash order; maxDocs keeps a prefix of it. Walking that order, documents go to train
    // until it holds its fraction of the task's queries, then to dev, then to test: whole documents, but query
    // counts near the fractions even when documents differ in size (COVID-QA has 98 papers of very different
    // lengths).
    const ranked = docs.map((d, i) => ({ d, i, u: unit(seed, task, d.key) })).sort((a, b) => a.u - b.u || a.i - b.i);
    const kept = ranked.slice(0, options.maxDocs?.[task] ?? ranked.length);
    const total = kept.reduce((n, k) => n + k.d.queries.length, 0);
    const splitOf = new Map<number, Split>();
    let seen = 0;
    for (const k of kept) {
      const at = total ? seen / total : 0;
      splitOf.set(k.i, task === 'xquad' ? 'test' : at < fractions[0] ? 'train' : at < fractions[0] + fractions[1] ? 'dev' : 'test');
      seen += k.d.queries.length;
    }
    kept.sort((a, b) => a.i - b.i);
    const c = (counts[task] = { documents: kept.length, passages: 0, train: 0, dev: 0, test: 0 });
    for (const { d, i } of kept) {
      const split = splitOf.get(i) as Split;
      const ids = d.passages.map((text, p) => {
        const id = `${task}-${i}-${p}`;
        corpus.push({ id, title: d.title, text });
        return id;
      });
      c.passages += ids.length;
      for (const q of d.queries) {
        queries.push({ id: q.id, text: q.text, task, ...(q.answers?.length ? { answers: q.answers } : {}) });
        qrels[split].set(q.id, new Map(q.gold.map((g) => [ids[g] as string, 1])));
        c[split]++;
      }
    }
  }
  return {
    corpus,
    queries,
    qrels,
    metadata: {
      builder: 'quorum buildMultiDomain',
      seed,
      fractions,
      chunkWords,
      splitBy:
        'document (article, post, paper), in seeded hash order, filling train then dev then test to the query fractions; XQuAD is test only',
      tasks: Object.fromEntries(tasks.map((t) => [t, { ...counts[t], source: TASK_SOURCES[t].file, licence: TASK_SOURCES[t].licence }])),
      droppedClimateClaims: droppedClaims,
      ...(options.maxDocs ? { maxDocs: options.maxDocs } : {}),
    },
  };
}

/**
 * Writes the benchmark in the BEIR layout: corpus.jsonl, queries.jsonl (with task), qrels/{train,dev,test}.tsv, metadata.json.
 *
 * @example
 * writeMultiDomain('/tmp/quorum-full/data', buildMultiDomain('/data/multidomain-sources'));   // what `quorum data build` does
 */
export function writeMultiDomain(dir: string, b: MultiDomainBenchmark): void {
  writeBeir(dir, { corpus: b.corpus, queries: b.queries, qrels: b.qrels.test }, 'test');
  writeQrelsTsv(join(dir, 'qrels', 'train.tsv'), b.qrels.train);
  writeQrelsTsv(join(dir, 'qrels', 'dev.tsv'), b.qrels.dev);
  writeFileSync(join(dir, 'metadata.json'), JSON.stringify(b.metadata, null, 2) + '\n');
}
