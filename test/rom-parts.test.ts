// ROM's parts that need no libtorch (lib/methods/rom): ICT / PhraseICT generation, the learning schedules against
// the paper's definitions, span decoding against brute force, SQuAD's EM / F1, the index-refresh rule, and the
// reader's rows and answer alignment.
import { describe, expect, it } from 'vitest';

import { IndexRefresh } from '../lib/methods/rom/refresh.js';
import { findAnswer, passagePieces, readerRows, spanText } from '../lib/methods/rom/reader-inputs.js';
import { ROM_SCHEDULES, retrievalWeight } from '../lib/methods/rom/schedule.js';
import { TermIdf, drawSpan, ictExamples, phraseIctExamples, splitSentences, words } from '../lib/train/self-supervised.js';
import { bestSpans, type Span } from '../lib/methods/rom/spans.js';
import { exactMatch, f1Score, normalizeAnswer, squadEvaluate, squadScores } from '../lib/methods/rom/squad.js';
import { seededRandom } from '../lib/random.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { code, rng } from './basics.js';

const CORPUS = [
  'The Nile is the longest river in Africa. It flows north into the Mediterranean Sea. Its delta is very fertile.',
  'Mount Kenya is a volcano. Its summit is 5,199 metres high!',
  'A single sentence without a second one',
  'Coffee was first cultivated in Yemen. "Arabica" is the most common species. Brazil grows the most today.',
  'Penguins live mostly in the Southern Hemisphere. Emperor penguins breed during the Antarctic winter.',
];

describe('ICT', () => {
  it('splits sentences at . ! ? followed by a capital, a digit or a quote, keeping their ranges', () => {
    const s = splitSentences(CORPUS[3]!);
    expect(s.map((x) => x.text)).toEqual(['Coffee was first cultivated in Yemen.', '"Arabica" is the most common species.', 'Brazil grows the most today.']);
    for (const x of s) expect(CORPUS[3]!.slice(x.start, x.end)).toBe(x.text);
    expect(splitSentences('No boundary in 5.2 metres. or here').length).toBe(1);
  });

  it('takes one sentence as the query and removes it from the evidence (keep rate 0)', () => {
    const ex = [...ictExamples(CORPUS, { seed: 3, keepRate: 0 })];
    expect(ex.map((e) => e.passage)).toEqual([0, 1, 3, 4]); // the one-sentence passage gives no example
    for (const e of ex) {
      const source = CORPUS[e.passage]!;
      expect(splitSentences(source).map((s) => s.text)).toContain(e.query);
      expect(e.context).not.toContain(e.query);
      expect(e.kept).toBe(false);
      // The evidence is the source minus the query: the same words in the same order.
      const rest = source.replace(e.query, ' ').split(/\s+/).filter(Boolean).join(' ');
      expect(e.context).toBe(rest);
    }
  });

  it('keeps the query in the evidence at the keep rate, reproducibly from the seed', () => {
    const many = Array.from({ length: 400 }, (_, i) => CORPUS[i % CORPUS.length]!);
    const a = [...ictExamples(many, { seed: 9, keepRate: 0.25 })];
    const b = [...ictExamples(many, { seed: 9, keepRate: 0.25 })];
    expect(a).toEqual(b);
    const kept = a.filter((e) => e.kept);
    expect(kept.length / a.length).toBeGreaterThan(0.18);
    expect(kept.length / a.length).toBeLessThan(0.32);
    for (const e of kept) expect(e.context).toBe(many[e.passage]);
    expect([...ictExamples(many, { seed: 9, keepRate: 1 })].every((e) => e.kept)).toBe(true);
    expect([...ictExamples(many, { seed: 10, keepRate: 0.25 })]).not.toEqual(a);
  });

  it('rejects a bad keep rate and bad passages with typed errors', () => {
    expect(code(() => [...ictExamples(CORPUS, { keepRate: 2 })])).toBe('ERR_RANGE');
    expect(code(() => [...ictExamples([42 as unknown as string])])).toBe('ERR_ARG');
  });
});

describe('PhraseICT', () => {
  const idf = TermIdf.fit(CORPUS);

  it('scores words by TF-IDF, idf = log(N / df)', () => {
    expect(idf.documents).toBe(5);
    expect(idf.idf('nile')).toBeCloseTo(Math.log(5 / 1), 12);
    expect(idf.idf('is')).toBeCloseTo(Math.log(5 / 3), 12); // passages 0, 1 and 3
    const ws = words('the Nile, the Nile is');
    expect(ws.map((w) => w.term)).toEqual(['the', 'nile', 'the', 'nile', 'is']);
    const s = idf.scores(ws);
    expect(s[1]).toBeCloseTo(2 * Math.log(5), 12); // twice in the passage
    expect(s[4]).toBeCloseTo(Math.log(5 / 3), 12);
  });

  it('draws phrases of 1 to 4 words that are contiguous in the passage and removed from the evidence', () => {
    const many = Array.from({ length: 300 }, (_, i) => CORPUS[i % CORPUS.length]!);
    const ex = [...phraseIctExamples(many, idf, { seed: 5, keepRate: 0 })];
    const lengths = new Set<number>();
    for (const e of ex) {
      const n = e.query.split(/\s+/).length;
      lengths.add(n);
      const source = many[e.passage]!;
      expect(source).toContain(e.query);
      // The evidence is the source cut at one occurrence of the phrase (a phrase like "the" may occur twice).
      const cuts: string[] = [];
      for (let at = source.indexOf(e.query); at >= 0; at = source.indexOf(e.query, at + 1))
        cuts.push(`${source.slice(0, at).trimEnd()} ${source.slice(at + e.query.length).trimStart()}`.trim());
      expect(cuts).toContain(e.context);
    }
    expect([...lengths].sort()).toEqual([1, 2, 3, 4]);
  });

  it('draws a span with probability proportional to its score', () => {
    const scores = [0, 1, 3, 0, 2, 0];
    const n = 2;
    const want = [1, 4, 3, 2, 2]; // sums of each pair of neighbours
    const total = want.reduce((a, b) => a + b, 0);
    const counts = new Array<number>(want.length).fill(0);
    const random = seededRandom(17);
    const draws = 40000;
    for (let i = 0; i < draws; i++) counts[drawSpan(scores, n, random).start]!++;
    counts.forEach((c, s) => expect(Math.abs(c / draws - want[s]! / total)).toBeLessThan(0.01));
    // A span of score 0 is never drawn while another scores above 0; all zero is uniform.
    const zeroAround = [0, 0, 5, 0, 0];
    for (let i = 0; i < 200; i++) expect(drawSpan(zeroAround, 1, random).start).toBe(2);
    const flat = new Array<number>(4).fill(0);
    for (let i = 0; i < 8000; i++) flat[drawSpan([0, 0, 0, 0], 1, random).start]!++;
    flat.forEach((c) => expect(Math.abs(c / 8000 - 0.25)).toBeLessThan(0.02));
  });

  it('follows the TF-IDF scores in what it picks from a corpus', () => {
    // "zebra" is in one passage of many, "the" in all: one-word phrases of passage 0 must favour "zebra".
    const corpus = ['the zebra the', ...Array.from({ length: 50 }, () => 'the the the')];
    const rare = TermIdf.fit(corpus);
    const seen = new Map<string, number>();
    for (let seed = 0; seed < 200; seed++)
      for (const e of phraseIctExamples([corpus[0]!], rare, { seed, maxWords: 1 })) seen.set(e.query, (seen.get(e.query) ?? 0) + 1);
    // zebra scores log(51) and each "the" 2 * log(51 / 51) = 0.
    expect(seen.get('zebra')).toBe(200);
  });

  it('checks its arguments', () => {
    expect(code(() => [...phraseIctExamples(CORPUS, {} as TermIdf)])).toBe('ERR_ARG');
    expect(code(() => [...phraseIctExamples(CORPUS, idf, { maxWords: 0 })])).toBe('ERR_RANGE');
    expect(code(() => drawSpan([1, 2], 3, Math.random))).toBe('ERR_RANGE');
  });
});

describe('learning schedules', () => {
  const all = (s: (typeof ROM_SCHEDULES)[number], E: number, o = {}) => Array.from({ length: E }, (_, e) => retrievalWeight(s, e, E, o));

  it('pipeline: retrieval alone for the first half, then the reader alone', () => {
    expect(all('pipeline', 4)).toEqual([1, 1, 0, 0]);
    expect(all('pipeline', 5)).toEqual([1, 1, 1, 0, 0]);
  });

  it('equal: 0.5 throughout', () => expect(all('equal', 3)).toEqual([0.5, 0.5, 0.5]));

  it('gradual: 1 for the first quarter, linear to 0 over the next half, 0 in the last quarter', () => {
    expect(all('gradual', 4)).toEqual([1, 0.75, 0.25, 0]);
    const w8 = all('gradual', 8);
    [1, 1, 0.875, 0.625, 0.375, 0.125, 0, 0].forEach((v, e) => expect(w8[e]).toBeCloseTo(v, 12));
  });

  it('random: U(0, 1) per epoch, reproducible from the seed', () => {
    const w = all('random', 200, { seed: 4 });
    expect(all('random', 200, { seed: 4 })).toEqual(w);
    expect(all('random', 200, { seed: 5 })).not.toEqual(w);
    expect(Math.min(...w)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...w)).toBeLessThan(1);
    const mean = w.reduce((a, b) => a + b, 0) / w.length;
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.08);
    expect(w.filter((x) => x < 0.5).length).toBeGreaterThan(70);
  });

  it('iterative: back and forth each epoch, neither weight ever 0', () => {
    expect(all('iterative', 4)).toEqual([0.99, 0.01, 0.99, 0.01]);
    expect(all('iterative', 3, { floor: 0.1 })).toEqual([0.9, 0.1, 0.9]);
  });

  it('rejects unknown schedules and epochs outside the run', () => {
    expect(code(() => retrievalWeight('cosine' as 'equal', 0, 2))).toBe('ERR_ARG');
    expect(code(() => retrievalWeight('equal', 2, 2))).toBe('ERR_RANGE');
    expect(code(() => retrievalWeight('equal', 0, 0))).toBe('ERR_RANGE');
    expect(code(() => retrievalWeight('iterative', 0, 2, { floor: 0 }))).toBe('ERR_RANGE');
  });
});

/** Every span, then the best non-overlapping ones greedily: the plain reference of bestSpans. */
function bruteSpans(start: number[], end: number[], maxLength: number, top: number): Span[] {
  const all: Span[] = [];
  for (let i = 0; i < start.length; i++)
    for (let j = 0; j < end.length; j++)
      if (j >= i && j - i + 1 <= maxLength && Number.isFinite(start[i]!) && Number.isFinite(end[j]!)) all.push({ start: i, end: j, score: start[i]! + end[j]! });
  all.sort((a, b) => b.score - a.score || a.start - b.start || a.end - b.end);
  const out: Span[] = [];
  for (const s of all) if (out.length < top && !out.some((o) => s.start <= o.end && o.start <= s.end)) out.push(s);
  return out;
}

describe('span decoding', () => {
  it('equals brute force on random logits with masked positions, lengths and tops', () => {
    const r = rng(21);
    for (let trial = 0; trial < 60; trial++) {
      const T = 1 + Math.floor(((r() + 1) / 2) * 40);
      const start = Array.from({ length: T }, () => (r() < -0.6 ? -Infinity : r() * 3));
      const end = Array.from({ length: T }, () => (r() < -0.6 ? -Infinity : r() * 3));
      const maxLength = 1 + (trial % 7);
      const top = 1 + (trial % 4);
      expect(bestSpans(Float32Array.from(start), Float32Array.from(end), { maxLength, top })).toEqual(
        bruteSpans(Array.from(Float32Array.from(start)), Array.from(Float32Array.from(end)), maxLength, top),
      );
    }
  });

  it('reads one row of a [rows, T] matrix and returns nothing for a row without passage tokens', () => {
    const start = Float32Array.of(-Infinity, -Infinity, -Infinity, 5, 1, -Infinity);
    const end = Float32Array.of(-Infinity, -Infinity, -Infinity, 0, 2, -Infinity);
    expect(bestSpans(start, end, { offset: 3, length: 3 })).toEqual([{ start: 0, end: 1, score: 7 }]);
    expect(bestSpans(start, end, { offset: 0, length: 3 })).toEqual([]);
    expect(code(() => bestSpans(start, end, { offset: 4, length: 3 }))).toBe('ERR_RANGE');
    expect(code(() => bestSpans(start, end, { maxLength: 0 }))).toBe('ERR_RANGE');
  });
});

describe('SQuAD EM and F1 (evaluate-v1.1.py)', () => {
  it('normalizes as the official script: lower case, no punctuation, no articles, single spaces', () => {
    expect(normalizeAnswer('The  Denver Broncos!')).toBe('denver broncos');
    expect(normalizeAnswer('U.S.')).toBe('us');
    expect(normalizeAnswer('an apple and a pear')).toBe('apple and pear');
    expect(normalizeAnswer('theory of them')).toBe('theory of them'); // articles only as whole words
    expect(normalizeAnswer('Thé café')).toBe('thé café'); // only ASCII punctuation goes; accents stay
  });

  it('scores the official examples', () => {
    // SQuAD v1.1 dev, Super Bowl 50: "Which NFL team represented the AFC at Super Bowl 50?"
    expect(squadScores('Denver Broncos', ['Denver Broncos', 'Denver Broncos', 'Denver Broncos'])).toEqual({ em: 1, f1: 1 });
    expect(squadScores('the Denver Broncos', ['Denver Broncos'])).toEqual({ em: 1, f1: 1 });
    // Partial overlap: prediction "Broncos won" against "Denver Broncos": 1 shared token, P = 1/2, R = 1/2.
    expect(f1Score('Broncos won', 'Denver Broncos')).toBeCloseTo(0.5, 12);
    expect(f1Score('Denver Broncos won', 'Denver Broncos')).toBeCloseTo(0.8, 12);
    expect(exactMatch('Denver Broncos won', 'Denver Broncos')).toBe(0);
    // Repeated tokens count once per occurrence (the script's Counter intersection).
    expect(f1Score('the cat the cat', 'cat')).toBeCloseTo((2 * 0.5 * 1) / 1.5, 12);
    expect(f1Score('', 'cat')).toBe(0);
    // The best over the gold answers.
    expect(squadScores('Santa Clara', ["Levi's Stadium", 'Santa Clara, California'])).toEqual({ em: 0, f1: 0.8 });
    expect(squadEvaluate(['Denver Broncos', 'Carolina'], [['Denver Broncos'], ['Carolina Panthers']])).toEqual({ em: 0.5, f1: (1 + 2 / 3) / 2, questions: 2 });
  });

  it('checks its arguments', () => {
    expect(code(() => squadScores('x', []))).toBe('ERR_ARG');
    expect(code(() => squadEvaluate(['x'], []))).toBe('ERR_SHAPE');
    expect(code(() => normalizeAnswer(3 as unknown as string))).toBe('ERR_ARG');
  });
});

describe('index refresh (ROM joint optimization)', () => {
  it('refreshes only on a strict improvement of the average rank, and updates the reader only on better retrieval', async () => {
    const calls: string[] = [];
    const retrieval = [0.5, 0.4, 0.6];
    const r = new IndexRefresh(
      {
        refresh: async () => {
          calls.push('refresh');
          return retrieval.shift()!;
        },
        updateReader: async () => void calls.push('update'),
      },
      { averageRank: 10 },
    );
    expect(await r.observe(0, 12)).toBe(false); // worse
    expect(await r.observe(1, 10)).toBe(false); // equal is not an improvement
    expect(await r.observe(2, 8)).toBe(true); // retrieval 0.5 > -inf: reader updated
    expect(await r.observe(3, 8)).toBe(false);
    expect(await r.observe(4, 7.5)).toBe(true); // retrieval 0.4 < 0.5: reader kept
    expect(await r.observe(5, 3)).toBe(true); // retrieval 0.6: reader updated
    expect(calls).toEqual(['refresh', 'update', 'refresh', 'refresh', 'update']);
    expect(r.events.map((e) => [e.round, e.updatedReader, e.forced])).toEqual([[2, true, false], [4, false, false], [5, true, false]]);
    expect(r.best).toBe(3);
    // A forced refresh (the pipeline's switch of retrieval side) happens at any rank, is marked, and updates the reader.
    await r.force(7, 9);
    expect(r.events.at(-1)).toMatchObject({ round: 7, averageRank: 9, forced: true, updatedReader: true });
    expect(r.best).toBe(3);
    await expect(r.observe(6, NaN)).rejects.toMatchObject({ code: 'ERR_ARG' });
  });
});

describe('reader rows and answers', () => {
  const tok = new WordPieceTokenizer(['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'the', 'nile', 'is', 'long', '##est', 'river', '.', ',', 'in', 'africa', 'where', '?']);

  it('tokenizes a passage word by word as the whole text, and maps pieces back to the original words', () => {
    const text = 'The Nile is the longest river, in Africa.';
    const p = passagePieces(tok, text);
    expect(Array.from(p.ids)).toEqual(Array.from(tok.ids(text)));
    const a = findAnswer(tok, p, ['nowhere', 'longest river'])!;
    expect(a).toEqual({ start: 4, end: 6 });
    expect(spanText(p, a.start, a.end)).toBe('longest river,'); // whole original words, punctuation attached
    expect(spanText(p, 1, 1)).toBe('Nile');
    expect(findAnswer(tok, p, ['Africa'], 7)).toBeUndefined(); // beyond the truncation
    expect(code(() => spanText(p, 3, 2))).toBe('ERR_RANGE');
  });

  it('lays out [CLS] question [SEP] passage [SEP] with type 1 on the passage', () => {
    const q = [tok.ids('where is the nile ?')];
    const ps = [passagePieces(tok, 'The Nile is in Africa.'), passagePieces(tok, 'The longest river.')];
    const r = readerRows(tok, q, [0, 0], ps, { maxLength: 10 });
    const { ids, typeIds, lengths, seqLen } = r.inputs;
    expect(seqLen).toBe(10);
    expect(Array.from(r.offset)).toEqual([7, 7]);
    expect(Array.from(r.count)).toEqual([2, 2]); // 10 - 5 question pieces - 3 framing
    expect(Array.from(lengths)).toEqual([10, 10]);
    expect(Array.from(ids.subarray(0, 10))).toEqual([2, 14, 6, 4, 5, 15, 3, 4, 5, 3]);
    expect(Array.from(typeIds.subarray(0, 10))).toEqual([0, 0, 0, 0, 0, 0, 0, 1, 1, 1]);
    // The exact-match feature: passage pieces that occur in the question get type 2 (the [SEP] keeps 1).
    const marked = readerRows(tok, q, [0, 0], ps, { maxLength: 10, markMatches: true });
    expect(Array.from(marked.inputs.typeIds.subarray(0, 10))).toEqual([0, 0, 0, 0, 0, 0, 0, 2, 2, 1]);
    expect(Array.from(marked.inputs.typeIds.subarray(10, 20))).toEqual([0, 0, 0, 0, 0, 0, 0, 2, 1, 1]); // 'the', 'long'
    const roomy = readerRows(tok, q, [0, 0], ps, { maxLength: 64 });
    expect(Array.from(roomy.count)).toEqual([ps[0]!.ids.length, ps[1]!.ids.length]);
    expect(roomy.inputs.seqLen).toBe(Math.max(...Array.from(roomy.inputs.lengths)));
    expect(code(() => readerRows(tok, q, [1], [ps[0]!]))).toBe('ERR_RANGE');
  });
});
