// Training examples for contrastive retrieval: a question, its gold passages and its hard negatives, as rows of one
// corpus. Built from a BEIR-layout dataset's split; hard negatives mined with BM25 (DPR's) or with a trained model's
// own index (Maillard et al.'s second round; trainer.ts mineHardNegatives).
import { Bm25Index } from '../bm25/bm25.js';
import type { BeirDataset, Qrels } from '../data/beir.js';
import { QuorumError } from '../errors.js';
import { checkOptions, mustBeArray, mustBeMap, mustBeObject, optionKeys } from '../validate.js';

export type { PassageText, TrainingExample } from '../data/examples.js';
import type { PassageText, TrainingExample } from '../data/examples.js';

/**
 * The judged questions of one split as examples (questions with no relevant passage are dropped, as DPR does).
 *
 * @example
 * const ds = loadBeir('data/multidomain-mini', 'train');
 * const train = examplesFromQrels(ds, ds.qrels);
 */
export function examplesFromQrels(ds: BeirDataset, qrels: Qrels, defaultTask = 'default'): TrainingExample[] {
  mustBeObject(ds, 'dataset');
  mustBeArray(ds.corpus, 'dataset corpus');
  mustBeArray(ds.queries, 'dataset queries');
  mustBeMap(qrels, 'qrels');
  const row = new Map(ds.corpus.map((p, i) => [p.id, i]));
  const out: TrainingExample[] = [];
  for (const q of ds.queries) {
    const judged = qrels.get(q.id);
    if (!judged) continue;
    const positives: number[] = [];
    for (const [doc, rel] of judged) {
      if (rel <= 0) continue;
      const r = row.get(doc);
      if (r === undefined) throw new QuorumError('ERR_NOT_FOUND', `qrels of query ${q.id} name passage ${doc}, which is not in the corpus`);
      positives.push(r);
    }
    // DPR's question hygiene: a typographic apostrophe becomes a plain one.
    if (positives.length)
      out.push({
        query: q.text.replace(/\u2019/g, "'"),
        task: q.task ?? defaultTask,
        positives,
        hardNegatives: [],
        ...(q.answers?.length ? { answers: q.answers } : {}),
      });
  }
  return out;
}

const negativeKeys = optionKeys<NonNullable<Parameters<typeof addBm25Negatives>[2]>>()(['k', 'index']);

/**
 * Fills each example's hard negatives with the top BM25 hits that are not gold (DPR's hard negatives).
 *
 * @example
 * await addBm25Negatives(train, ds.corpus, { k: 30 });
 */
export async function addBm25Negatives(
  examples: TrainingExample[],
  passages: readonly PassageText[],
  options: { k?: number; index?: Bm25Index } = {},
): Promise<Bm25Index> {
  mustBeArray(examples, 'examples');
  mustBeArray(passages, 'passages');
  checkOptions(options, negativeKeys, 'addBm25Negatives options');
  const k = options.k ?? 30;
  const index =
    options.index ??
    (await Bm25Index.build(
      passages.map((p, i) => ({ id: String(i), text: `${p.title} ${p.text}` })),
      { k1: 0.9, b: 0.4 },
    ));
  const hits = await index.search(
    examples.map((e) => e.query),
    k + 10,
  );
  examples.forEach((e, i) => {
    const gold = new Set(e.positives);
    e.hardNegatives = (hits[i] ?? [])
      .map((h) => Number(h.id))
      .filter((r) => !gold.has(r))
      .slice(0, k);
  });
  return index;
}
