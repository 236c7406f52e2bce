// ROM's self-supervised examples (docs/methods/rom.md#tasks-schedules-and-index-refresh,
// docs/methods/rom.md#references), streamed from any corpus and reproducible from a seed:
//   ICT        (Lee et al.) one sentence of a passage is the pseudo-query; the evidence is the passage with that
//              sentence removed, except in a `keepRate` share of the examples (Lee et al. keep it 10% of the time,
//              so that the encoder still learns word matching)
//   PhraseICT  a phrase of n words, n uniform in 1..4, is the pseudo-query: every span of n consecutive words scores
//              the sum of its words' TF-IDF and one span is drawn with probability proportional to its score; the
//              evidence is the passage without the phrase, with the same keep rate
import { QuorumError } from '../errors.js';
import { seededRandom } from '../random.js';
import { checkOptions, mustBeArray, mustBeString, optionKeys } from '../validate.js';

/** A pseudo-query and the evidence to retrieve for it; `passage` is the source's position in the stream. */
export interface SelfSupervisedExample {
  /** The pseudo-query: a sentence (ICT) or a phrase (PhraseICT) of the passage. */
  query: string;
  /** The evidence: the passage without the pseudo-query (unless `kept`). */
  context: string;
  /** Position of the source passage in the stream. */
  passage: number;
  /** Whether the query was left in the context (the keep rate). */
  kept: boolean;
}

/** Options of {@link ictExamples} (and, with `maxWords`, {@link phraseIctExamples}). */
export interface IctOptions {
  /** Seed of the draws: which sentence or phrase, and whether it is kept (default 0). */
  seed?: number;
  /** Share of examples whose evidence keeps the pseudo-query (default 0.1, Lee et al.'s). */
  keepRate?: number;
}

/** Options of {@link phraseIctExamples}. */
export interface PhraseIctOptions extends IctOptions {
  /** Longest phrase in words (default 4: n is uniform in 1..maxWords). */
  maxWords?: number;
}

const ictKeys = optionKeys<IctOptions>()(['seed', 'keepRate']);
const phraseKeys = optionKeys<PhraseIctOptions>()(['seed', 'keepRate', 'maxWords']);

function checkRate(o: IctOptions): number {
  const r = o.keepRate ?? 0.1;
  if (!(r >= 0 && r <= 1)) throw new QuorumError('ERR_RANGE', `keepRate must be in [0, 1], got ${r}`);
  return r;
}

function textOf(p: unknown, i: number): string {
  const t = typeof p === 'string' ? p : (p as { text?: unknown } | null)?.text;
  if (typeof t !== 'string') throw new QuorumError('ERR_ARG', `passage ${i} is not a string or a { text } object`);
  return t;
}

/**
 * Sentences of a text with their character ranges: a sentence ends at . ! or ? (and closing quotes or brackets)
 * followed by whitespace and an upper-case letter, a digit or an opening quote.
 *
 * @example
 * splitSentences('It rained. Then it stopped.').map((s) => s.text) // ['It rained.', 'Then it stopped.']
 */
export function splitSentences(text: string): { text: string; start: number; end: number }[] {
  mustBeString(text, 'text');
  const out: { text: string; start: number; end: number }[] = [];
  const boundary = /[.!?]["')\]]*\s+(?=[\p{Lu}\p{N}"'(\[])/gu;
  let from = 0;
  const push = (end: number) => {
    const raw = text.slice(from, end);
    const lead = raw.length - raw.trimStart().length;
    const t = raw.trim();
    if (t) out.push({ text: t, start: from + lead, end: from + lead + t.length });
  };
  for (const m of text.matchAll(boundary)) {
    const end = m.index! + m[0].trimEnd().length;
    push(end);
    from = m.index! + m[0].length;
  }
  push(text.length);
  return out;
}

/** `text` without [start, end), the two sides joined by one space. */
function cut(text: string, start: number, end: number): string {
  return `${text.slice(0, start).trimEnd()} ${text.slice(end).trimStart()}`.trim();
}

/**
 * ICT examples, one per passage with at least two sentences, in corpus order.
 *
 * @example
 * for (const ex of ictExamples(corpus, { seed: 1 })) batch.push(ex); // { query: 'a sentence', context: 'the rest' }
 */
export function* ictExamples(passages: Iterable<string | { text: string }>, options: IctOptions = {}): Generator<SelfSupervisedExample> {
  checkOptions(options, ictKeys, 'ictExamples options');
  const keepRate = checkRate(options);
  const random = seededRandom(options.seed ?? 0);
  let i = 0;
  for (const p of passages) {
    const text = textOf(p, i);
    const sentences = splitSentences(text);
    if (sentences.length >= 2) {
      const s = sentences[Math.floor(random() * sentences.length)]!;
      const kept = random() < keepRate;
      yield { query: s.text, context: kept ? text : cut(text, s.start, s.end), passage: i, kept };
    }
    i++;
  }
}

/**
 * Words of a text with their ranges, and the term each stands for (lower case, letters and digits only).
 *
 * @example
 * words('Hello, world!');   // [{ start: 0, end: 6, term: 'hello' }, { start: 7, end: 13, term: 'world' }]
 */
export function words(text: string): { start: number; end: number; term: string }[] {
  mustBeString(text, 'text');
  const out: { start: number; end: number; term: string }[] = [];
  for (const m of text.matchAll(/\S+/g))
    out.push({ start: m.index!, end: m.index! + m[0].length, term: m[0].toLowerCase().replace(/[^\p{L}\p{N}]/gu, '') });
  return out;
}

/**
 * Inverse document frequencies log(N / df) over a corpus (terms as {@link words} makes them).
 *
 * @example
 * const idf = TermIdf.fit(['the cat sat', 'the dog ran']);
 * idf.idf('cat');                        // ln 2
 * idf.scores(words('the cat the'));      // [0, 0.693, 0]: 'the' is in every passage
 */
export class TermIdf {
  private constructor(
    private readonly df: Map<string, number>,
    readonly documents: number,
  ) {}

  /** Counts document frequencies over `passages` (strings or `{ text }`). */
  static fit(passages: Iterable<string | { text: string }>): TermIdf {
    if (
      passages === null ||
      typeof passages === 'string' ||
      typeof (passages as { [Symbol.iterator]?: unknown })?.[Symbol.iterator] !== 'function'
    )
      throw new QuorumError('ERR_ARG', 'TermIdf.fit needs an iterable of passages (strings or { text })');
    const df = new Map<string, number>();
    let n = 0;
    for (const p of passages) {
      const seen = new Set(
        words(textOf(p, n))
          .map((w) => w.term)
          .filter(Boolean),
      );
      for (const t of seen) df.set(t, (df.get(t) ?? 0) + 1);
      n++;
    }
    // log(0 / 1) is -Infinity: every weight of an empty fit would be (issue 65).
    if (n === 0) throw new QuorumError('ERR_ARG', 'TermIdf.fit needs at least one passage');
    return new TermIdf(df, n);
  }

  /** log(N / df); a term the corpus never holds counts as if seen once. */
  idf(term: string): number {
    if (!term) return 0;
    return Math.log(this.documents / Math.max(this.df.get(term) ?? 1, 1));
  }

  /** Each word's TF-IDF in its passage: (count of its term in the passage) x idf. */
  scores(ws: readonly { term: string }[]): number[] {
    const tf = new Map<string, number>();
    for (const w of ws) if (w.term) tf.set(w.term, (tf.get(w.term) ?? 0) + 1);
    return ws.map((w) => (w.term ? tf.get(w.term)! * this.idf(w.term) : 0));
  }
}

/**
 * The spans of `n` consecutive words and their scores (sum of the words' scores), and one drawn with probability
 * proportional to its score (uniformly when every score is 0).
 */
export function drawSpan(scores: readonly number[], n: number, random: () => number): { start: number; weights: number[] } {
  mustBeArray(scores, 'scores');
  if (!Number.isInteger(n) || n < 1) throw new QuorumError('ERR_RANGE', `the span length must be an integer >= 1, got ${String(n)}`);
  if (typeof random !== 'function') throw new QuorumError('ERR_ARG', 'random must be a function returning [0, 1)');
  const count = scores.length - n + 1;
  if (count < 1) throw new QuorumError('ERR_RANGE', `no span of ${n} words in ${scores.length} words`);
  const weights: number[] = [];
  let run = 0;
  for (let i = 0; i < n; i++) run += scores[i]!;
  for (let s = 0; s < count; s++) {
    if (s > 0) run += scores[s + n - 1]! - scores[s - 1]!;
    weights.push(Math.max(run, 0));
  }
  const total = weights.reduce((a, b) => a + b, 0);
  let u = random() * (total > 0 ? total : count);
  for (let s = 0; s < count; s++) {
    u -= total > 0 ? weights[s]! : 1;
    if (u < 0) return { start: s, weights };
  }
  // Rounding can leave u at 0 after the last span: the last span of positive weight.
  let last = count - 1;
  while (total > 0 && last > 0 && weights[last] === 0) last--;
  return { start: last, weights };
}

/**
 * PhraseICT examples, one per passage with more words than the drawn phrase length, in corpus order.
 *
 * @example
 * const idf = TermIdf.fit(corpus);
 * for (const ex of phraseIctExamples(corpus, idf, { seed: 1 })) batch.push(ex); // { query: 'yellow fever vaccine', ... }
 */
export function* phraseIctExamples(
  passages: Iterable<string | { text: string }>,
  idf: TermIdf,
  options: PhraseIctOptions = {},
): Generator<SelfSupervisedExample> {
  checkOptions(options, phraseKeys, 'phraseIctExamples options');
  if (!(idf instanceof TermIdf)) throw new QuorumError('ERR_ARG', 'idf must be a TermIdf (TermIdf.fit(corpus))');
  const keepRate = checkRate(options);
  const maxWords = options.maxWords ?? 4;
  if (!Number.isInteger(maxWords) || maxWords < 1) throw new QuorumError('ERR_RANGE', 'maxWords must be an integer >= 1');
  const random = seededRandom(options.seed ?? 0);
  let i = 0;
  for (const p of passages) {
    const text = textOf(p, i);
    const ws = words(text);
    const n = 1 + Math.floor(random() * maxWords);
    if (ws.length > n) {
      const { start } = drawSpan(idf.scores(ws), n, random);
      const from = ws[start]!.start;
      const to = ws[start + n - 1]!.end;
      const kept = random() < keepRate;
      yield { query: text.slice(from, to), context: kept ? text : cut(text, from, to), passage: i, kept };
    }
    i++;
  }
}
