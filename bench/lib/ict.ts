// Self-supervised training questions for a dense retriever: ROM's ICT examples (Lee et al.; docs/methods/rom.md#tasks-schedules-and-index-refresh) drawn from
// the corpus itself and added to the labelled questions. A small task (COVID-QA in the mini set: 727 questions over
// 2,094 passages) then sees every passage's vocabulary in training, not only the gold passages' words; no label of
// any split is read.
import type { Bm25Index } from '../../lib/bm25/bm25.js';
import { QuorumError } from '../../lib/errors.js';
import { ictExamples } from '../../lib/train/self-supervised.js';
import { checkOptions, mustBeArray, mustBeObject, mustBeString, optionKeys } from '../../lib/validate.js';
import { addBm25Negatives, type PassageText, type TrainingExample } from '../../lib/train/examples.js';

export interface IctTrainingOptions {
  /** The task of corpus row `row`, or undefined to draw no example from it. */
  taskOf: (row: number) => string | undefined;
  /** Share of examples whose evidence keeps the pseudo-query (default 0.1, Lee et al.'s). */
  keepRate?: number;
  seed?: number;
  /** BM25 over the original passages, for hard negatives (built when absent). */
  index?: Bm25Index;
  /** Hard negatives per example (default 30, as for the labelled questions). */
  k?: number;
}

const ictKeys = optionKeys<IctTrainingOptions>()(['taskOf', 'keepRate', 'seed', 'index', 'k']);

/**
 * One ICT example per passage of two or more sentences whose task is known: the question is a sentence, the gold
 * passage the rest of the passage, appended to the corpus as a new row (the whole passage when the sentence is kept).
 * Hard negatives come from BM25 over the original corpus, never the source passage (it holds the evidence too).
 * Returns the extended corpus and the examples; the inputs are not modified.
 *
 * @example
 * const { passages, examples } = await ictTrainingExamples(corpus, { taskOf: (r) => corpus[r].id.split('-')[0] });
 * await trainRetriever(model, tokenizer, { passages, train: [...train, ...examples], dev }, options);
 */
export async function ictTrainingExamples(
  passages: readonly PassageText[],
  options: IctTrainingOptions,
): Promise<{ passages: PassageText[]; examples: TrainingExample[] }> {
  mustBeArray(passages, 'passages');
  mustBeObject(options, 'ictTrainingExamples options');
  checkOptions(options, ictKeys, 'ictTrainingExamples options');
  if (typeof options.taskOf !== 'function') throw new QuorumError('ERR_ARG', 'taskOf must be a function of a corpus row');
  const k = options.k ?? 30;
  if (!Number.isInteger(k) || k < 0) throw new QuorumError('ERR_RANGE', `k must be an integer >= 0, got ${String(k)}`);
  passages.forEach((p, i) => {
    mustBeObject(p, `passages[${i}]`);
    mustBeString(p.text, `passages[${i}].text`);
  });
  const rows: number[] = [];
  const tasks: string[] = [];
  passages.forEach((_, r) => {
    const t = options.taskOf(r);
    if (t !== undefined) {
      rows.push(r);
      tasks.push(t);
    }
  });
  const out = [...passages];
  const examples: TrainingExample[] = [];
  const sources: number[] = [];
  const made = ictExamples(
    rows.map((r) => passages[r]!),
    { seed: options.seed ?? 0, ...(options.keepRate !== undefined ? { keepRate: options.keepRate } : {}) },
  );
  for (const ex of made) {
    const source = rows[ex.passage]!;
    let gold = source;
    if (!ex.kept) {
      gold = out.length;
      out.push({ title: passages[source]!.title, text: ex.context });
    }
    examples.push({ query: ex.query, task: tasks[ex.passage]!, positives: [gold], hardNegatives: [] });
    sources.push(source);
  }
  await addBm25Negatives(examples, passages, { k: k + 1, ...(options.index ? { index: options.index } : {}) });
  examples.forEach((e, i) => (e.hardNegatives = e.hardNegatives.filter((r) => r !== sources[i]).slice(0, k)));
  return { passages: out, examples };
}
