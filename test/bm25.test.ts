import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { Bm25Index, englishAnalyzer, luceneQuantizedLength } from '../lib/index.js';

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
