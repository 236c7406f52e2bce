// TREC run and qrels files, read by streaming and written atomically enough for tools (one write).
//   run:   qid Q0 docid rank score tag
//   qrels: qid 0 docid grade (or BEIR's query-id<TAB>corpus-id<TAB>score)
import { QuorumError } from '../errors.js';
import { writeFileAtomic } from './files.js';
import { type Qrels, type Run, type ScoredDoc, rankDocs } from './runs.js';
import { lineError, readLines } from './lines.js';
import { checkRun, mustBeArray, mustBeObject, mustBeString } from '../validate.js';

/**
 * Reads a TREC run file. Scores are kept; the rank column is checked to be an integer but not used (trec_eval
 * re-sorts by score too). Lines with fewer than 6 fields or a non-numeric score are ERR_FORMAT with file:line;
 * a document repeated within a query is ERR_FORMAT as well.
 *
 * @example
 * const run = await readRun('runs/bm25.trec');
 * evaluate(run, qrels, ['mrr@10']).mean;
 */
export async function readRun(path: string): Promise<Map<string, ScoredDoc[]>> {
  mustBeString(path, 'run path');
  const run = new Map<string, ScoredDoc[]>();
  const seen = new Map<string, Set<string>>();
  for await (const { text, line } of readLines(path)) {
    if (!text.trim()) continue;
    const f = text.trim().split(/\s+/);
    if (f.length < 6) throw lineError(path, line, `expected "qid Q0 docid rank score tag", got ${f.length} fields`);
    const [qid, , doc, rank, score] = f as [string, string, string, string, string];
    const s = Number(score);
    if (!Number.isFinite(s)) throw lineError(path, line, `score "${score}" is not a number`);
    if (!/^-?\d+$/.test(rank)) throw lineError(path, line, `rank "${rank}" is not an integer`);
    let docs = run.get(qid);
    if (!docs) {
      docs = [];
      run.set(qid, docs);
      seen.set(qid, new Set());
    }
    if (seen.get(qid)!.has(doc)) throw lineError(path, line, `document ${doc} appears twice for query ${qid}`);
    seen.get(qid)!.add(doc);
    docs.push({ id: doc, score: s });
  }
  if (!run.size) throw new QuorumError('ERR_FORMAT', `${path} holds no results (empty or blank)`);
  return run;
}

/**
 * One qrels line in either layout, told apart per line: TREC (`qid iter docid grade`, whitespace-separated, the
 * iteration column ignored) or BEIR (`query-id<TAB>corpus-id<TAB>score`; its header line is skipped). Grades must
 * be integers. Adds the judgment to `qrels`; a malformed line throws ERR_FORMAT naming `source:line`.
 */
function addQrelsLine(qrels: Map<string, Map<string, number>>, text: string, line: number, source: string): void {
  if (!text.trim()) return;
  const tabs = text.split('\t');
  let qid: string, doc: string, grade: string;
  if (tabs.length === 3) {
    if (line === 1 && tabs[0] === 'query-id') return;
    [qid, doc, grade] = tabs.map((t) => t.trim()) as [string, string, string];
  } else {
    const f = text.trim().split(/\s+/);
    if (f.length !== 4)
      throw lineError(
        source,
        line,
        `expected TREC "qid iter docid grade" or BEIR "query-id<TAB>corpus-id<TAB>score", got ${f.length} fields`,
      );
    [qid, , doc, grade] = f as [string, string, string, string];
  }
  // Number('') is 0: a line cut after its last tab would judge the passage irrelevant.
  if (!qid || !doc || grade === '') throw lineError(source, line, `expected a query id, a passage id and a grade, got "${text.trim()}"`);
  const g = Number(grade);
  // trec_eval reads grades as 32-bit integers; 1e20 is an integer to JavaScript, but no judgment.
  if (!Number.isInteger(g) || Math.abs(g) > 0x7fffffff)
    throw lineError(source, line, `grade "${grade}" is not an integer between -2147483647 and 2147483647`);
  if (!qrels.has(qid)) qrels.set(qid, new Map());
  qrels.get(qid)!.set(doc, g);
}

/**
 * Reads a qrels file, TREC or BEIR layout (what `quorum data build` writes), streamed; grades are kept.
 *
 * @example
 * const qrels = await readQrels('data/xquad-en/qrels/test.tsv');
 */
export async function readQrels(path: string): Promise<Map<string, Map<string, number>>> {
  mustBeString(path, 'qrels path');
  const qrels = new Map<string, Map<string, number>>();
  for await (const { text, line } of readLines(path)) addQrelsLine(qrels, text, line, path);
  return qrels;
}

/**
 * {@link readQrels} on text already in memory.
 *
 * @example
 * parseQrels('q1 0 d1 1\nq1 0 d2 2\n');   // Map { 'q1' => Map { 'd1' => 1, 'd2' => 2 } }
 */
export function parseQrels(text: string, source = 'qrels'): Map<string, Map<string, number>> {
  mustBeString(text, 'qrels text');
  const qrels = new Map<string, Map<string, number>>();
  text.split('\n').forEach((l, i) => addQrelsLine(qrels, l, i + 1, source));
  return qrels;
}

/**
 * A run as TREC text, each query ranked in trec_eval's order, ranks from 1, cut at `depth`.
 *
 * @example
 * formatRun(new Map([['q1', [{ id: 'd2', score: 1.5 }, { id: 'd1', score: 2 }]]]), 'bm25');
 * // 'q1 Q0 d1 1 2 bm25\nq1 Q0 d2 2 1.5 bm25\n'
 */
export function formatRun(run: Run, tag = 'quorum', depth?: number): string {
  checkRun(run, 'run', false);
  if (/\s/.test(tag) || !tag) throw new QuorumError('ERR_ARG', 'the run tag must be one non-empty word');
  const out: string[] = [];
  for (const [qid, docs] of run) {
    checkTrecId(qid, 'a query id');
    for (const d of docs) checkTrecId(d.id, `a passage id of query ${qid}`);
    const byId = new Map(docs.map((d) => [d.id, d.score]));
    const ranked = rankDocs(docs, 'trec_eval');
    ranked.slice(0, depth ?? ranked.length).forEach((id, i) => out.push(`${qid} Q0 ${id} ${i + 1} ${byId.get(id)} ${tag}`));
  }
  return out.length ? out.join('\n') + '\n' : '';
}

/**
 * Writes {@link formatRun}'s text to `path`.
 *
 * @example
 * writeRun('runs/hybrid.trec', run, 'hybrid', 100);
 */
export function writeRun(path: string, run: Run, tag = 'quorum', depth?: number): void {
  writeFileAtomic(path, Buffer.from(formatRun(run, tag, depth)));
}

/** An id a TREC line can carry: a non-empty string without whitespace (a space would shift every later column). */
function checkTrecId(id: string, what: string): void {
  if (!id || /\s/.test(id))
    throw new QuorumError('ERR_ARG', `${what} must be non-empty and without whitespace to be written as TREC, got ${JSON.stringify(id)}`);
}

/**
 * Writes graded qrels as TREC text (`qid 0 docid grade`).
 *
 * @example
 * writeQrels('qrels/test.tsv', new Map([['q1', new Map([['d1', 1]])]]));   // q1 0 d1 1
 */
export function writeQrels(path: string, qrels: Qrels): void {
  const out: string[] = [];
  for (const [qid, rel] of qrels)
    for (const [doc, g] of rel) {
      checkTrecId(qid, 'a query id');
      checkTrecId(doc, `a passage id of query ${qid}`);
      out.push(`${qid} 0 ${doc} ${g}`);
    }
  writeFileAtomic(path, Buffer.from(out.length ? out.join('\n') + '\n' : ''));
}

/** A TREC topic: its number and fields (title, desc, narr; CACM-style files give only `title`). */
export interface TrecTopic {
  /** The topic number, as written after `Number:`. */
  id: string;
  /** The short query. */
  title: string;
  /** The description, without its `Description:` label. */
  desc?: string;
  /** The narrative, without its `Narrative:` label. */
  narr?: string;
}

/**
 * Parses TREC topics: `<top> <num> Number: 301 <title> ... <desc> Description: ... <narr> Narrative: ... </top>`
 * blocks, or CACM-style `<DOC> <DOCNO> 1 </DOCNO> text </DOC>` blocks. ERR_FORMAT when neither is found.
 *
 * @example
 * parseTrecTopics('<top>\n<num> Number: 301\n<title> International Organized Crime\n<desc> Description:\nIdentify organizations.\n</top>');
 * // [{ id: '301', title: 'International Organized Crime', desc: 'Identify organizations.' }]
 */
export function parseTrecTopics(text: string, source = 'topics'): TrecTopic[] {
  mustBeString(text, 'topics text');
  const tops = [...text.matchAll(/<top>([\s\S]*?)<\/top>/gi)];
  if (tops.length) {
    return tops.map((m, i) => {
      const body = m[1] as string;
      const field = (tag: string) => {
        const f = new RegExp(`<${tag}>([\\s\\S]*?)(?=<[a-z]+>|$)`, 'i').exec(body);
        return f
          ? (f[1] as string)
              .replace(/^\s*(Number|Description|Narrative|Topic)\s*:\s*/i, '')
              .replace(/\s+/g, ' ')
              .trim()
          : undefined;
      };
      const id = field('num');
      if (!id) throw new QuorumError('ERR_FORMAT', `${source}: topic ${i + 1} has no <num>`);
      const t: TrecTopic = { id, title: field('title') ?? '' };
      const desc = field('desc');
      const narr = field('narr');
      if (desc !== undefined) t.desc = desc;
      if (narr !== undefined) t.narr = narr;
      return t;
    });
  }
  const docs = [...text.matchAll(/<DOCNO>\s*(\S+)\s*<\/DOCNO>([\s\S]*?)<\/DOC>/g)];
  if (docs.length) return docs.map((m) => ({ id: m[1] as string, title: (m[2] as string).replace(/\s+/g, ' ').trim() }));
  throw new QuorumError('ERR_FORMAT', `${source}: no <top> or <DOC> topics found`);
}

/**
 * Topics as TREC `<top>` blocks.
 *
 * @example
 * formatTrecTopics([{ id: '301', title: 'International Organized Crime' }]);
 * // '<top>\n<num> Number: 301\n<title> International Organized Crime\n</top>\n'
 */
export function formatTrecTopics(topics: readonly TrecTopic[]): string {
  mustBeArray(topics, 'topics');
  topics.forEach((t, i) => mustBeObject(t, `topics[${i}]`));
  return topics
    .map((t) =>
      [
        '<top>',
        `<num> Number: ${t.id}`,
        `<title> ${t.title}`,
        ...(t.desc !== undefined ? ['', '<desc> Description:', t.desc] : []),
        ...(t.narr !== undefined ? ['', '<narr> Narrative:', t.narr] : []),
        '</top>',
        '',
      ].join('\n'),
    )
    .join('\n');
}
