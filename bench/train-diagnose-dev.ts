// Issue 20's question on the mini set: does training help the tasks it trains on? The shipped recipe (a 0-layer
// Siamese model from GloVe, `scripts/train-default-model.sh`) and variants of it, each scored on the whole corpus at
// step 0 and after every epoch, on the dev split (what a selection may read) and the test split (report only),
// MRR@10 per task, beside the GloVe average. The trainer's own dev metric (MRR in a pool of 1,000 passages) is
// printed as well: it is what chooses the kept epoch.
//   node --import tsx bench/train-diagnose-dev.ts [--variants=base,lr3e-4,hard3,batch64,temp0.1] [--epochs=3] [--layers=0]
//     [--passage-length=192] [--query-length=32]
import { join } from 'node:path';

import { loadBeir } from '../lib/data/beir.js';
import { GloveAverageEncoder } from '../lib/encoders/glove-average.js';
import { scoreTopK } from '../lib/dense.js';
import { evaluate, groupMeans, rankedRun } from '../lib/eval/ranking.js';
import { packageRoot } from '../lib/native.js';
import { encodeTable } from '../lib/train/encode-corpus.js';
import { fitPoolingToCorpus, initFromGlove } from '../lib/train/init.js';
import { prepareTraining } from '../lib/train/prepare.js';
import { Retriever } from '../lib/train/retriever.js';
import { TokenTable } from '../lib/train/token-table.js';
import { trainRetriever, type TrainOptions } from '../lib/train/trainer.js';
import type { Tensor } from '../lib/tensor.js';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const dir = arg('data', join(packageRoot, 'data', 'multidomain-mini'));
const epochs = Number(arg('epochs', '3'));
const layers = Number(arg('layers', '0'));
const plen = Number(arg('passage-length', '192'));
const qlen = Number(arg('query-length', '32'));
const variants = arg('variants', 'base,lr3e-4,hard3,batch64,temp0.1').split(',').filter(Boolean);
const tasks = ['covid', 'selqa'];
const seed = 1;

const VARIANTS: Record<string, Partial<TrainOptions>> = {
  base: {},
  'lr3e-4': { lr: 3e-4 },
  'lr3e-3': { lr: 3e-3 },
  hard3: { hardNegatives: 3 },
  hard0: { hardNegatives: 0 },
  batch64: { batchSize: 64 },
  batch16: { batchSize: 16 },
  'temp0.1': { temperature: 0.1 },
  'temp0.02': { temperature: 0.02 },
};

const d = await prepareTraining(dir, { tasks, glove: true, wordVocab: true });
const splits = { dev: loadBeir(dir, 'dev'), test: loadBeir(dir, 'test') };
const passages = d.passages;
// The same corpus.jsonl, in the same order, with its ids.
const corpusIds = splits.test.corpus.map((p) => p.id);
const judged = (s: keyof typeof splits) => splits[s].queries.filter((q) => splits[s].qrels.has(q.id));

function scores(s: keyof typeof splits, ranked: Map<string, string[]>): string {
  const qs = judged(s);
  const { perQuery, mean } = evaluate(rankedRun(ranked), splits[s].qrels, ['mrr@10']);
  const g = groupMeans(perQuery, new Map(qs.map((q) => [q.id, q.task ?? ''])), ['mrr@10']);
  return `${s} ${Object.entries(g).map(([t, v]) => `${t} ${v.mean['mrr@10']!.toFixed(3)}`).join(' ')} all ${mean['mrr@10']!.toFixed(3)}`;
}

async function rankTop(queries: Tensor<'f32'>, corpus: Tensor<'f32'>, ids: readonly string[]): Promise<string[][]> {
  const top = await scoreTopK(queries, corpus, 10);
  return ids.map((_, i) => top.hits(i).map((h) => corpusIds[h.id]!));
}

{
  const enc = GloveAverageEncoder.fromVectors(d.glove!, { fitOn: passages.map((p) => `${p.title} ${p.text}`) });
  const corpus = enc.encode(passages.map((p) => `${p.title} ${p.text}`));
  for (const s of ['dev', 'test'] as const) {
    const qs = judged(s);
    const top = await rankTop(enc.encode(qs.map((q) => q.text)), corpus, qs.map((q) => q.id));
    console.log(`GloVe average  ${scores(s, new Map(qs.map((q, i) => [q.id, top[i]!])))}`);
  }
}

const passageTable = await TokenTable.passages(d.tokenizer, passages, plen);
async function scoreModel(m: Retriever, label: string): Promise<void> {
  const corpus = await encodeTable(m, passageTable, { side: 'passage' });
  const line: string[] = [];
  for (const s of ['dev', 'test'] as const) {
    const ranked = new Map<string, string[]>();
    for (const task of [...new Set(judged(s).map((q) => q.task ?? ''))]) {
      const qs = judged(s).filter((q) => q.task === task);
      const ti = tasks.indexOf(task);
      const table = await TokenTable.build(d.tokenizer, qs.map((q) => q.text), { maxLength: qlen, ...(ti >= 0 ? { marker: d.tokenizer.markerId(ti + 1) } : {}) });
      const top = await rankTop(await encodeTable(m, table, { side: 'query', task: 0 }), corpus, qs.map((q) => q.id));
      qs.forEach((q, i) => ranked.set(q.id, top[i]!));
    }
    line.push(scores(s, ranked));
  }
  console.log(`${label.padEnd(14)} ${line.join(' | ')}`);
}

for (const v of variants) {
  Retriever.seed(seed);
  const m = Retriever.create({
    preset: 'siamese',
    encoder: { vocabSize: d.tokenizer.size, hiddenSize: 100, embeddingSize: 100, layers, heads: 4, ffnSize: 400, maxPositions: Math.max(plen, qlen), pooling: 'mean', tokenWeights: true, center: true },
    tasks,
  });
  const { uncovered } = await initFromGlove(m, d.tokenizer.vocabulary, { glove: d.glove!, seed });
  await fitPoolingToCorpus(m, d.tokenizer, passages, { maxPassageLength: plen, mute: uncovered });
  console.log(`\n=== ${v} (${layers} layers) ===`);
  await scoreModel(m, 'step 0');
  if (epochs > 0)
    await trainRetriever(m, d.tokenizer, { passages, train: d.train, dev: d.dev }, {
      epochs,
      batchSize: 32,
      lr: 1e-3,
      hardNegatives: 1,
      maxQueryLength: qlen,
      maxPassageLength: plen,
      seed,
      taskMarkers: true,
      ...VARIANTS[v],
      onEpoch: async (e) => {
        await scoreModel(m, `epoch ${e.epoch + 1} (pool ${e.validation?.mrr.toFixed(3)})`);
      },
    });
}
