// Issue 20's diagnosis: what each pooling keeps of the GloVe signal before any training. Every model is initialised
// from GloVe and scored on the test split of data/multidomain-mini at step 0, beside the GloVe averages, with the
// spread of its passage vectors (mean norm, and the mean cosine over all pairs: near 1 means every passage gets
// nearly the same vector). Seconds per row.
//   node --import tsx bench/train-diagnose.ts [--data=DIR]
import { join } from 'node:path';
import { packageRoot } from '../lib/native.js';
import { loadBeir } from '../lib/data/beir.js';
import { evaluate, rankedRun } from '../lib/eval/ranking.js';
import { WordPieceTokenizer } from '../lib/text/tokenizer.js';
import { encodeTable, indexTable } from '../lib/train/encode-corpus.js';
import { loadGloveVectors } from '../lib/train/glove.js';
import { initFromGlove } from '../lib/train/init.js';
import { Retriever } from '../lib/train/retriever.js';
import { TokenTable } from '../lib/train/token-table.js';
import { GloveAverageEncoder } from '../lib/encoders/glove-average.js';
import { scoreTopK } from '../lib/dense.js';
const dir = process.argv.find((a) => a.startsWith('--data='))?.slice(7) ?? join(packageRoot, 'data', 'multidomain-mini');
const test = loadBeir(dir, 'test');
const passages = test.corpus;
const tq = test.queries.filter((q) => test.qrels.has(q.id));
const tok = await WordPieceTokenizer.load();
const glove = await loadGloveVectors();
const evalRun = (run: Map<string,string[]>) => { const m = evaluate(rankedRun(run), test.qrels, ['recall@20', 'mrr@10']).mean; return `R@20 ${m['recall@20']!.toFixed(3)} MRR@10 ${m['mrr@10']!.toFixed(3)}`; };
for (const fit of [false, true]) {
  const enc = GloveAverageEncoder.fromVectors(glove, fit ? { fitOn: passages.map((p) => `${p.title} ${p.text}`) } : {});
  const C = enc.encode(passages.map((p) => `${p.title} ${p.text}`));
  const Q = enc.encode(tq.map((q) => q.text));
  const top = await scoreTopK(Q, C, 20);
  const run = new Map(tq.map((q, i) => [q.id, top.hits(i).map((h) => passages[h.id]!.id)]));
  console.log(`GloVe average${fit ? ' (IDF, centred)' : ''}: ${evalRun(run)}`);
}
const ptable = await TokenTable.passages(tok, passages, 96);
const qtable = await TokenTable.build(tok, tq.map((q) => q.text), { maxLength: 32 });
// Mean norm (and its spread) and the mean cosine over all pairs of rows, from the sum of the unit rows.
function stats(E: Float32Array, d: number) {
  const n = E.length / d; let nsum = 0; const u = new Float64Array(d); const norms: number[] = [];
  for (let i = 0; i < n; i++) { let s = 0; for (let j = 0; j < d; j++) s += E[i*d+j]! ** 2; const nr = Math.sqrt(s); norms.push(nr); nsum += nr; for (let j = 0; j < d; j++) u[j] = u[j]! + E[i*d+j]! / nr; }
  let us = 0; for (let j = 0; j < d; j++) us += u[j]! ** 2;
  const mean = nsum / n; const sd = Math.sqrt(norms.reduce((a, x) => a + (x - mean) ** 2, 0) / n);
  return `norm ${mean.toFixed(2)}±${sd.toFixed(3)}, mean pairwise cos ${((us - n) / (n * (n - 1))).toFixed(4)}`;
}
for (const [name, enc] of [
  // The issue-6 bench's model: 4 layers of 128, GloVe projected up, [CLS] pooling, dot product.
  ['cls, 4 layers, hidden 128 (projected GloVe)', { hiddenSize: 128, embeddingSize: 100, layers: 4, pooling: 'cls', normalize: false }],
  ['mean, 4 layers, hidden 128 (projected GloVe)', { hiddenSize: 128, embeddingSize: 100, layers: 4, pooling: 'mean', normalize: false }],
  ['max, 4 layers, hidden 128 (projected GloVe)', { hiddenSize: 128, embeddingSize: 100, layers: 4, pooling: 'max', normalize: false }],
  ['mean, 0 layers, GloVe kept at 100', { hiddenSize: 100, embeddingSize: 100, layers: 0, pooling: 'mean', normalize: false }],
  ['mean, 0 layers, GloVe kept at 100, normalized', { hiddenSize: 100, embeddingSize: 100, layers: 0, pooling: 'mean', normalize: true }],
  ['mean, 2 layers, hidden 100', { hiddenSize: 100, embeddingSize: 100, layers: 2, heads: 4, ffnSize: 400, pooling: 'mean', normalize: false }],
  ['mean, 2 layers, hidden 100, normalized', { hiddenSize: 100, embeddingSize: 100, layers: 2, heads: 4, ffnSize: 400, pooling: 'mean', normalize: true }],
  ['cls, 2 layers, hidden 100, normalized', { hiddenSize: 100, embeddingSize: 100, layers: 2, heads: 4, ffnSize: 400, pooling: 'cls', normalize: true }],
] as const) {
  Retriever.seed(12345);
  const m = Retriever.create({ preset: 'siamese', encoder: { maxPositions: 256, ...enc } as never });
  await initFromGlove(m, tok.vocabulary, { glove, seed: 12345 });
  const { embeddings, index } = await indexTable(m, ptable);
  const Q = await encodeTable(m, qtable, { side: 'query' });
  const top = await index.search(Q, 20);
  const run = new Map(tq.map((q, i) => [q.id, top.hits(i).map((h) => passages[Number(h.id)]!.id)]));
  console.log(`${name}: ${evalRun(run)}; passages ${stats(embeddings.data, m.dim)}`);
}
