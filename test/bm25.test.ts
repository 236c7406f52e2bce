import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { Bm25Index } from '../lib/index.js';
import { englishAnalyzer, luceneQuantizedLength } from '../lib/entries/text.js';
import { forEachWord, wordSegments } from '../lib/bm25/analyzer.js';
import { packageRoot } from '../lib/native.js';
import { loadBeirCorpus } from '../lib/entries/data.js';
import { referenceEnglishTerms, referenceWords } from './reference/bm25-analyzer.js';

const fixture = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'bm25-mini.json'), 'utf8')) as {
  docs: Array<{ id: string; text: string }>;
  queries: string[];
};

describe('English analyzer (Lucene EnglishAnalyzer model)', () => {
  it('segments, drops possessives and stopwords, lowercases and stems', () => {
    const a = englishAnalyzer();
    expect(a("The system's Operating Systems, and IBM's computers!")).toEqual(['system', 'oper', 'system', 'ibm', 'comput']);
    expect(englishAnalyzer({ stem: false })('The Operating Systems')).toEqual(['operating', 'systems']);
    expect(englishAnalyzer({ stopwords: false, stem: false })('The end')).toEqual(['the', 'end']);
    expect(a('Café déjà-vu 3.14')).toEqual(['café', 'déjà', 'vu', '3.14']);
  });

  it('segments piecewise exactly as one Intl.Segmenter call, and a 40,000-word passage in linear time (it took 42 s)', () => {
    const whole = new Intl.Segmenter('en', { granularity: 'word' });
    const pieces = ['The system\'s', 'operating  systems,', 'IBM\u2019s', '3.14', 'e-mail', 'naïve café', '東京 は', '😀👍🏽', 'x\u0301y', '\n\n', 'U.S.A.', 'don\'t', 'a\tb', 'https://example.com/a?b=c'];
    for (let seed = 0; seed < 40; seed++) {
      const text = Array.from({ length: 60 }, (_, i) => pieces[(i * 7 + seed * 3) % pieces.length]).join(seed % 2 ? ' ' : '\n');
      for (const chunk of [32, 64, 100]) {  // above the longest run without whitespace here (25 characters)
        const got = Array.from(wordSegments(text, chunk), (x) => [x.segment, x.isWordLike]);
        expect(got, `seed ${seed} chunk ${chunk}`).toEqual(Array.from(whole.segment(text), (x) => [x.segment, x.isWordLike]));
      }
    }
    // A run without whitespace longer than two pieces is cut there: nothing lost, no surrogate pair split.
    const run = '😀a'.repeat(3000);
    const cut = Array.from(wordSegments(run, 16), (x) => x.segment);
    expect(cut.join('')).toBe(run);
    expect(cut.every((x) => !/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/.test(x))).toBe(true);
    const long = Array.from({ length: 40_000 }, (_, i) => ['alpha', 'beta', 'running', "system's"][i % 4]).join(' ');
    expect(englishAnalyzer()(long)).toHaveLength(40_000);
  });
});

describe('the analyzer\'s fast path (UAX #29 in the common Latin alphabet, docs/api.md#sparse-index-bm25-hybrid)', () => {
  const words = (text: string) => {
    const out: string[] = [];
    forEachWord(text, (w) => out.push(w));
    return out;
  };
  it('gives the words of one Intl.Segmenter call on random strings of its alphabet, controls and other scripts mixed in', () => {
    // Letters and digits, every mid / extend character, the signs that stand alone, ASCII controls and whitespace,
    // and characters outside the fast alphabet (letters to ICU such as U+00AA and U+00B8, the soft hyphen, NBSP and
    // BOM, combining marks, Greek, CJK, emoji), which send their piece to Intl.Segmenter.
    const alphabet = [...'aZq09_.\':,;-@!?/"#$%&*+<=>[]\\^`{|}~', 'é', 'Ö', 'ł', 'ș', 'ß', 'ÿ', 'À', '\u00B7', '\u2018', '\u2019', '\u201C', '\u201D',
      '\u2013', '\u2014', '\u2026', '\u00A0', '\u00A7', '\u00B0', '\u00B2', '\u00B9', '\u00BF', '\u00D7', '\u00F7', '\u00AB', '\u00BB',
      ' ', ' ', '\t', '\n', '\r', '\u000b', '\u0001', '\u007f', '\u00AA', '\u00B5', '\u00B8', '\u00AD', '\uFEFF', '\u0301', 'λ', '東', '😀', '\u2028'];
    let seed = 12345;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (let n = 0; n < 60_000; n++) {
      let t = '';
      for (let i = 1 + Math.floor(rnd() * 14); i > 0; i--) t += alphabet[Math.floor(rnd() * alphabet.length)];
      const got = words(t);
      const want = referenceWords(t);
      if (got.length !== want.length || got.some((w, i) => w !== want[i])) expect({ t, got }).toEqual({ t, got: want });
    }
  });

  it('gives the terms of the Intl.Segmenter analyzer on every passage of the embedded benchmark', () => {
    const a = englishAnalyzer();
    const corpus = loadBeirCorpus(join(packageRoot, 'data', 'multidomain-mini'));
    let differ = 0;
    for (const p of corpus) {
      const text = p.title ? `${p.title}. ${p.text}` : p.text;
      if (JSON.stringify(a(text)) !== JSON.stringify(referenceEnglishTerms(text))) differ++;
    }
    expect({ passages: corpus.length, differ }).toEqual({ passages: 3014, differ: 0 });
    for (const d of fixture.docs) expect(a(d.text)).toEqual(referenceEnglishTerms(d.text));
  });
});

describe("Lucene's one-byte length", () => {
  it('is exact below 40 and rounds down to 4 significant bits above', () => {
    for (let n = 0; n < 40; n++) expect(luceneQuantizedLength(n)).toBe(n);
    expect(luceneQuantizedLength(100)).toBe(96);
    let prev = 0;
    for (let n = 0; n < 5000; n++) {
      const q = luceneQuantizedLength(n);
      expect(q).toBeLessThanOrEqual(n);
      expect(q).toBeGreaterThanOrEqual(prev);
      expect(q).toBeGreaterThan(n * 0.87 - 1);
      prev = q;
    }
  });
});

describe('BM25 scoring formula', () => {
  it.each(['exact', 'lucene'] as const)('matches an independent computation on the fixture (%s lengths)', async (lengthNorm) => {
    const k1 = 0.9, b = 0.4;
    const analyze = englishAnalyzer();
    const docs = fixture.docs.map((d) => ({ id: d.id, terms: analyze(d.text) }));
    const N = docs.length;
    const avgdl = docs.reduce((s, d) => s + d.terms.length, 0) / N;
    const expected = fixture.queries.map((q) => {
      const qterms = analyze(q);
      return docs
        .map((d) => {
          const dl = lengthNorm === 'exact' ? d.terms.length : luceneQuantizedLength(d.terms.length);
          let score = 0;
          let reached = false;
          for (const t of qterms) {
            const tf = d.terms.filter((x) => x === t).length;
            const df = docs.filter((x) => x.terms.includes(t)).length;
            if (tf === 0) continue;
            reached = true;
            const idf = Math.log(1 + (N - df + 0.5) / (df + 0.5));
            score += (idf * tf) / (tf + k1 * (1 - b + (b * dl) / avgdl));
          }
          return { id: d.id, score, reached };
        })
        .filter((x) => x.reached)
        .sort((x, y) => y.score - x.score);
    });
    const bm25 = await Bm25Index.build(fixture.docs, { k1, b, lengthNorm });
    const got = await bm25.search(fixture.queries, 10);
    expect(got[2]).toEqual([]); // no query term in the collection
    got.forEach((hits, qi) => {
      expect(hits.map((h) => h.id)).toEqual(expected[qi]!.map((e) => e.id));
      hits.forEach((h, j) => expect(h.score).toBeCloseTo(expected[qi]![j]!.score, 5));
    });
    // "computers" twice in query 2 counts twice (Anserini boosts a term by its count).
    expect(got[1]!.length).toBeGreaterThan(0);
    expect(bm25.searchSync(fixture.queries, 10)).toEqual(got);
  });

  it('rejects bad parameters and duplicate ids', async () => {
    await expect(Bm25Index.build(fixture.docs, { b: 2 })).rejects.toMatchObject({ code: 'ERR_RANGE' });
    await expect(Bm25Index.build([fixture.docs[0]!, fixture.docs[0]!])).rejects.toMatchObject({ code: 'ERR_ARG' });
  });
});

describe('BM25 deletes and updates', () => {
  it('adds and removes documents with Lucene\'s statistics between merges (an independent computation), and saves them', async () => {
    const k1 = 0.9, b = 0.4;
    const analyze = englishAnalyzer();
    const built = fixture.docs.slice(0, -2);
    const added = [...fixture.docs.slice(-2), { id: 'new-1', text: 'operating systems for IBM computers and new computers' }];
    const removed = new Set([built[0]!.id, added[0]!.id]);
    // Expected: N and df over every document built or added (removed ones still count), avgdl of the build, scores
    // for the live documents only.
    const all = [...built, ...added].map((d) => ({ id: d.id, terms: analyze(d.text) }));
    const avgdl = all.slice(0, built.length).reduce((a, d) => a + d.terms.length, 0) / built.length;
    const expected = (q: string) => {
      const qterms = analyze(q);
      return all
        .filter((d) => !removed.has(d.id))
        .map((d) => {
          const dl = luceneQuantizedLength(d.terms.length);
          let score = 0;
          let reached = false;
          for (const t of qterms) {
            const tf = d.terms.filter((x) => x === t).length;
            if (tf === 0) continue;
            reached = true;
            const df = all.filter((x) => x.terms.includes(t)).length;
            score += (Math.log(1 + (all.length - df + 0.5) / (df + 0.5)) * tf) / (tf + k1 * (1 - b + (b * dl) / avgdl));
          }
          return { id: d.id, score, reached };
        })
        .filter((x) => x.reached)
        .sort((x, y) => y.score - x.score);
    };
    const bm25 = await Bm25Index.build(built, { k1, b });
    await bm25.add(added);
    expect(await bm25.remove([...removed, 'no-such-id'])).toBe(2);
    expect(await bm25.remove([built[0]!.id])).toBe(0);
    expect([bm25.size, bm25.documents]).toEqual([all.length - 2, all.length]);
    const queries = [...fixture.queries, 'new computers'];
    const check = async (index: Bm25Index) => {
      const got = await index.search(queries, 20);
      got.forEach((hits, qi) => {
        const want = expected(queries[qi]!);
        expect(hits.map((h) => h.id), queries[qi]).toEqual(want.slice(0, 20).map((e) => e.id));
        hits.forEach((h, j) => expect(h.score).toBeCloseTo(want[j]!.score, 5));
      });
    };
    await check(bm25);
    // Rows keep their places: a removed document's row still names it.
    expect(bm25.documentIds.length).toBe(all.length);
    expect(bm25.documentIds[0]).toBe(built[0]!.id);
    // A save keeps the removals, the additions and the statistics.
    await check(Bm25Index.fromBuffer(bm25.toBuffer()));
    // An update: a removed id added again.
    await bm25.add([{ id: built[0]!.id, text: 'brand new text about computers' }]);
    expect(bm25.size).toBe(all.length - 1);
    expect((await bm25.search(['brand new text'], 1))[0]![0]!.id).toBe(built[0]!.id);
    await expect(bm25.add([{ id: added[1]!.id, text: 'again' }])).rejects.toMatchObject({ code: 'ERR_ARG' });
    await expect(bm25.remove('x' as never)).rejects.toMatchObject({ code: 'ERR_ARG' });
  });
});

describe('BM25 index files', () => {
  it('round-trips through a file and a buffer with identical results; damage is ERR_FORMAT', async () => {
    const { mkdtempSync, rmSync, writeFileSync, readdirSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { code } = await import('./helpers.js');
    const dir = mkdtempSync(join(tmpdir(), 'quorum-bm25-'));
    try {
      const index = await Bm25Index.build(fixture.docs, { k1: 1.2, b: 0.75, lengthNorm: 'exact' });
      const want = index.searchSync(fixture.queries, 5);
      const path = join(dir, 'docs.qbm');
      index.save(path);
      expect(readdirSync(dir)).toEqual(['docs.qbm']); // no temporary file left
      for (const again of [Bm25Index.load(path), Bm25Index.fromBuffer(index.toBuffer())]) {
        expect([again.k1, again.b, again.lengthNorm, again.documents, again.averageLength]).toEqual([1.2, 0.75, 'exact', index.documents, index.averageLength]);
        expect(again.searchSync(fixture.queries, 5)).toEqual(want);
        expect(again.idf('system')).toBe(index.idf('system'));
      }
      const bytes = index.toBuffer();
      for (const damaged of [bytes.subarray(0, bytes.length - 3), Uint8Array.from(bytes, (x, i) => (i === 40 ? x ^ 1 : x)), new Uint8Array(10)]) {
        writeFileSync(path, damaged);
        expect(code(() => Bm25Index.load(path))).toBe('ERR_FORMAT');
      }
      expect(code(() => Bm25Index.load(join(dir, 'missing.qbm')))).toBe('ERR_IO');
      const custom = await Bm25Index.build(fixture.docs, { analyzer: englishAnalyzer({ stem: false }) });
      expect(code(() => Bm25Index.fromBuffer(custom.toBuffer()))).toBe('ERR_ARG');
      const back = Bm25Index.fromBuffer(custom.toBuffer(), { analyzer: englishAnalyzer({ stem: false }) });
      expect(back.searchSync(fixture.queries, 3)).toEqual(custom.searchSync(fixture.queries, 3));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
