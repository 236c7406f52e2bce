// BM25's English analyzer: words per second of the fast path (lib/bm25/analyzer.ts) against the Intl.Segmenter analyzer
// it replaced (test/reference/bm25-analyzer.ts), in one run, at 10k, 100k and 1M words, as many short passages (CACM
// abstracts, in order, repeated as needed) and as few long ones (the same words in passages of 10,000 words); each
// analyzer starts cold (a new one per row, empty cache). Then the terms of both on every passage of the real corpora
// (CACM documents and topics, SQuADShifts, XQuAD, COVID-QA, Climate-FEVER): equal terms on CACM mean an unchanged
// MAP. Reads ../shared/data (skipped when absent).
//   node --import tsx bench/bm25-analyzer.ts
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { englishAnalyzer } from '../lib/bm25/analyzer.js';
import { loadTrecCollection } from './lib/trec-collection.js';
import { packageRoot } from '../lib/native.js';
import { capabilities } from '../lib/runtime.js';
import { referenceEnglishTerms } from '../test/reference/bm25-analyzer.js';
import { fmt, printTable, writeResults } from './harness.js';

const data = join(packageRoot, '..', 'shared', 'data');
if (!existsSync(join(data, 'cacm', 'cacm.json'))) {
  console.log('../shared/data/cacm not found: analyzer benchmark skipped');
  process.exit(0);
}
console.log(`isa ${capabilities().isa} (the analyzer is JavaScript); node ${process.version}`);
const { docs, topics } = loadTrecCollection(join(data, 'cacm'), 'cacm');
const cacmWords = docs.map((d) => d.text.split(/\s+/).filter(Boolean));

/** Passages of `total` words: CACM's abstracts as they are (repeated), or their words in passages of `long` words. */
function passages(total: number, long?: number): string[] {
  const out: string[] = [];
  let words: string[] = [];
  let count = 0;
  for (let i = 0; count < total; i = (i + 1) % cacmWords.length) {
    const w = cacmWords[i]!.slice(0, total - count);
    count += w.length;
    if (!long) {
      out.push(w.join(' '));
      continue;
    }
    words.push(...w);
    while (words.length >= long) {
      out.push(words.slice(0, long).join(' '));
      words = words.slice(long);
    }
  }
  if (words.length) out.push(words.join(' '));
  return out;
}

function wordsPerSecond(texts: readonly string[], analyze: (t: string) => string[]): { rate: number; terms: string[][] } {
  const t0 = performance.now();
  const terms = texts.map(analyze);
  const s = (performance.now() - t0) / 1000;
  return { rate: texts.reduce((a, t) => a + t.split(/\s+/).length, 0) / s, terms };
}

const rows: Array<Array<string | number>> = [];
const json: Array<Record<string, unknown>> = [];
for (const total of [10_000, 100_000, 1_000_000]) {
  for (const [shape, texts] of [['short (CACM abstracts)', passages(total)], ['long (10,000 words)', passages(total, 10_000)]] as const) {
    const ref = wordsPerSecond(texts, referenceEnglishTerms);
    const fast = wordsPerSecond(texts, englishAnalyzer());
    const same = ref.terms.every((t, i) => JSON.stringify(t) === JSON.stringify(fast.terms[i]));
    rows.push([total.toLocaleString('en'), shape, String(texts.length), fmt(ref.rate / 1e6), fmt(fast.rate / 1e6), fmt(fast.rate / ref.rate), same ? 'yes' : 'NO']);
    json.push({ words: total, shape, passages: texts.length, referenceMWordsPerSec: ref.rate / 1e6, fastMWordsPerSec: fast.rate / 1e6, sameTerms: same });
  }
}
printTable(['words', 'passages', 'n', 'Intl.Segmenter M words/s', 'fast path M words/s', 'ratio', 'same terms'], rows);

// Every passage of the real corpora, both analyzers.
function squadContexts(path: string): string[] {
  const j = JSON.parse(readFileSync(path, 'utf8')) as { data: Array<{ paragraphs: Array<{ context: string }> }> };
  return j.data.flatMap((a) => a.paragraphs.map((p) => p.context));
}
const corpora: Array<[string, string[]]> = [
  ['CACM documents + topics', [...docs.map((d) => d.text), ...topics.map((t) => t.text)]],
  ['SQuADShifts new_wiki', squadContexts(join(data, 'squadshifts', 'new_wiki_v1.0.json'))],
  ['SQuADShifts reddit', squadContexts(join(data, 'squadshifts', 'reddit_v1.0.json'))],
  ['XQuAD en', squadContexts(join(data, 'xquad', 'xquad.en.json'))],
  ['COVID-QA papers', squadContexts(join(data, 'covid-qa', '200423_covidQA.json'))],
  ['Climate-FEVER evidence', readFileSync(join(data, 'climate-fever', 'climate-fever.jsonl'), 'utf8').trim().split('\n').flatMap((l) => (JSON.parse(l) as { evidences: Array<{ evidence: string }> }).evidences.map((e) => e.evidence))],
];
const equal: Array<Array<string | number>> = [];
for (const [name, texts] of corpora) {
  const a = englishAnalyzer();
  const ref = wordsPerSecond(texts, referenceEnglishTerms);
  const fast = wordsPerSecond(texts, a);
  const differ = ref.terms.filter((t, i) => JSON.stringify(t) !== JSON.stringify(fast.terms[i])).length;
  equal.push([name, String(texts.length), String(differ), fmt(ref.rate / 1e6), fmt(fast.rate / 1e6), fmt(fast.rate / ref.rate)]);
  json.push({ corpus: name, passages: texts.length, differ, referenceMWordsPerSec: ref.rate / 1e6, fastMWordsPerSec: fast.rate / 1e6 });
}
console.log('\nThe real corpora: passages whose terms differ (0 everywhere is the claim), and the speed on each:');
printTable(['corpus', 'passages', 'terms differ', 'Intl.Segmenter M words/s', 'fast path M words/s', 'ratio'], equal);
writeResults('bm25-analyzer', json);
