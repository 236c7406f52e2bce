// Issue 20's step-0 diagnosis of IDF token weights: a 0-layer Siamese model from GloVe (IDF-weighted mean pooling,
// centred unit vectors) scored on the test split of data/multidomain-mini per task, with task markers, punctuation
// and specials, and tokens without a GloVe vector at their IDF weight or near 0, beside the GloVe average.
//   node --import tsx bench/train-diagnose-tokens.ts
import { join } from 'node:path';

import { loadBeir } from '../lib/data/beir.js';
import { scoreTopK } from '../lib/dense.js';
import { GloveAverageEncoder } from '../lib/encoders/glove-average.js';
import { evaluate, rankedRun } from '../lib/eval/ranking.js';
import { packageRoot } from '../lib/native.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { gloveWordTokenizer } from '../lib/train/prepare.js';
import { encodeTable, indexTable } from '../lib/train/encode-corpus.js';
import { loadGloveVectors } from '../lib/train/glove.js';
import { MUTED_LOG_WEIGHT, corpusLogIdf, fitCentre, initFromGlove, isContentFree } from '../lib/train/init.js';
import { Retriever } from '../lib/train/retriever.js';
import { TokenTable } from '../lib/train/token-table.js';

const dir = join(packageRoot, 'data', 'multidomain-mini');
const test = loadBeir(dir, 'test');
const train = loadBeir(dir, 'train');
const passages = test.corpus;
const questions = test.queries.filter((q) => test.qrels.has(q.id));
const tasks = ['covid', 'selqa'];
const glove = await loadGloveVectors();
const base = await WordPieceTokenizer.load();
const tok = gloveWordTokenizer(base, [...passages.flatMap((p) => [p.title, p.text]), ...train.queries.map((q) => q.text)], glove);
const perTask = (run: Map<string, string[]>) =>
  ['covid', 'selqa', 'xquad', 'all']
    .map((t) => {
      const qrels = new Map([...test.qrels].filter(([id]) => t === 'all' || questions.find((q) => q.id === id)?.task === t));
      return `${t} ${evaluate(rankedRun(run), qrels, ['recall@20', 'mrr@10']).mean['mrr@10']!.toFixed(3)}`;
    })
    .join('  ');
{
  const texts = passages.map((p) => `${p.title} ${p.text}`);
  const enc = GloveAverageEncoder.fromVectors(glove, { fitOn: texts });
  const top = await scoreTopK(enc.encode(questions.map((q) => q.text)), enc.encode(texts), 20);
  console.log(`GloVe average (IDF, centred): ${perTask(new Map(questions.map((q, i) => [q.id, top.hits(i).map((h) => passages[h.id]!.id)])))}`);
}
const table = await TokenTable.passages(tok, passages, 192);
// ln(idf) per token over the passages, as fitPoolingToCorpus computes it before muting anything.
const logIdf = corpusLogIdf(table, tok.size);
for (const variant of ['IDF for every token', 'task markers near 0', '+ punctuation and specials near 0', '+ tokens without a GloVe vector near 0']) {
  Retriever.seed(12345);
  const m = Retriever.create({ preset: 'siamese', tasks, encoder: { vocabSize: tok.size, hiddenSize: 100, embeddingSize: 100, layers: 0, maxPositions: 256, pooling: 'mean', normalize: true, tokenWeights: true, center: true } });
  const { uncovered } = await initFromGlove(m, tok.vocabulary, { glove, seed: 12345 });
  const w = Float32Array.from(logIdf);
  if (variant !== 'IDF for every token') for (const t of [1, 2]) w[tok.markerId(t)] = MUTED_LOG_WEIGHT;
  if (variant.startsWith('+')) tok.vocabulary.forEach((t, i) => isContentFree(t) && (w[i] = MUTED_LOG_WEIGHT));
  if (variant.includes('GloVe')) for (const i of uncovered) w[i] = MUTED_LOG_WEIGHT;
  m.setParameter('encoder.embeddings.token_weights.weight', w);
  await fitCentre(m, table);
  const { index } = await indexTable(m, table);
  const run = new Map<string, string[]>();
  for (const t of ['covid', 'selqa', 'xquad']) {
    const qs = questions.filter((q) => q.task === t);
    const ti = tasks.indexOf(t);
    const qt = await TokenTable.build(tok, qs.map((q) => q.text), { maxLength: 32, marker: ti >= 0 ? tok.markerId(ti + 1) : undefined });
    const top = await index.search(await encodeTable(m, qt, { side: 'query', task: 0 }), 20);
    qs.forEach((q, i) => run.set(q.id, top.hits(i).map((h) => passages[Number(h.id)]!.id)));
  }
  console.log(`${variant}: ${perTask(run)}`);
}
