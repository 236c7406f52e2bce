// Validation for checkpoint selection (docs/methods/evaluation.md#average-rank): every dev question is ranked against one pool of passages
// (the dev questions' gold passages and hard negatives, topped up with random passages); the rank of a question is
// the number of pool passages scoring strictly above its best gold passage (0 = first; ties count in its favour).
import { QuorumError } from '../errors.js';
import type { TrainingExample } from './examples.js';
import { score } from '../dense.js';
import { seededRandom, shuffle } from '../random.js';
import type { TokenTable } from '../models/token-table.js';
import { encodeTable, type TableEncoder } from '../models/encode-corpus.js';
import { mustBeArray, mustBeMap, mustBeObject } from '../validate.js';

/** The dev figures of one epoch: each dev question ranks the shared pool of passages. */
export interface ValidationResult {
  /** mean 1 / (rank + 1) */
  mrr: number;
  /** mean 0-based rank (DPR's average rank) */
  averageRank: number;
  /** Dev questions ranked. */
  questions: number;
  /** Passages in the pool. */
  pool: number;
}

/** The pool of corpus rows for a set of dev examples: gold, then hard negatives (up to 30 each), then random rows. */
export function validationPool(examples: readonly TrainingExample[], corpusSize: number, size: number, seed = 0): number[] {
  mustBeArray(examples, 'examples');
  examples.forEach((e, i) => mustBeObject(e, `examples[${i}]`));
  // A NaN size would compare false everywhere and leave only the gold passages: a pool that ranks nothing.
  if (!Number.isInteger(size) || size < 1)
    throw new QuorumError('ERR_RANGE', `the validation pool size must be a positive integer, got ${size}`);
  if (!Number.isInteger(corpusSize) || corpusSize < 0)
    throw new QuorumError('ERR_RANGE', `corpusSize must be a non-negative integer, got ${corpusSize}`);
  const pool = new Set<number>();
  for (const e of examples) e.positives.forEach((r) => pool.add(r));
  for (const e of examples) e.hardNegatives.slice(0, 30).forEach((r) => pool.size < size && pool.add(r));
  if (pool.size < size) {
    const rest = shuffle(
      Array.from({ length: corpusSize }, (_, i) => i).filter((r) => !pool.has(r)),
      seededRandom(seed),
    );
    for (const r of rest.slice(0, size - pool.size)) pool.add(r);
  }
  return [...pool];
}

/** What validation ranks: the dev questions (tokenized per task) against one pool of passages. */
export interface ValidationInput {
  /** The whole corpus, tokenized (the pool's rows index it). */
  passages: TokenTable;
  /** Question rows per task: queries.get(task) is that task's table, `rows[i]` example i's row in it. */
  queries: ReadonlyMap<string, TokenTable>;
  /** Example i's row in its task's question table. */
  rows: readonly number[];
  /** The dev examples, whose `positives` are the gold rows. */
  examples: readonly TrainingExample[];
  /** Task name -> index (for per-task question encoders). */
  taskIndex: ReadonlyMap<string, number>;
  /** Corpus rows every question ranks (from {@link validationPool}). */
  pool: readonly number[];
}

/**
 * Scores the questions of one task against the pool: `[questions.length, pool.length]` row-major, question i being
 * row `rows[i]` of `table`.
 */
export type PoolScores = (task: string, table: TokenTable, rows: readonly number[]) => Promise<Float32Array>;

function checkInput(input: ValidationInput): void {
  mustBeObject(input, 'validation input');
  mustBeObject(input.passages, 'validation passages');
  mustBeMap(input.queries, 'validation queries');
  mustBeMap(input.taskIndex, 'validation taskIndex');
  mustBeArray(input.rows, 'validation rows');
  mustBeArray(input.examples, 'validation examples');
  mustBeArray(input.pool, 'validation pool');
  if (input.examples.length === 0) throw new QuorumError('ERR_ARG', 'validation needs at least one dev question');
}

/**
 * Ranks each dev question against the pool with any scorer (a dense model's dot products, CAME's fused experts).
 *
 * @example
 * const v = await rankAgainstPool(input, async (task, table, rows) => myScores(task, table, rows));
 */
export async function rankAgainstPool(input: ValidationInput, scores: PoolScores): Promise<ValidationResult> {
  checkInput(input);
  const { examples, pool } = input;
  const where = new Map(pool.map((r, i) => [r, i]));
  let rr = 0;
  let rankSum = 0;
  for (const [task, table] of input.queries) {
    const idx = examples.map((e, i) => (e.task === task ? i : -1)).filter((i) => i >= 0);
    if (!idx.length) continue;
    const S = await scores(
      task,
      table,
      idx.map((i) => input.rows[i]!),
    );
    idx.forEach((ei, qi) => {
      const row = S.subarray(qi * pool.length, (qi + 1) * pool.length);
      let gold = -Infinity;
      for (const r of examples[ei]!.positives) {
        const j = where.get(r);
        if (j !== undefined) gold = Math.max(gold, row[j] as number);
      }
      let rank = 0;
      for (const s of row) if (s > gold) rank++;
      rr += 1 / (rank + 1);
      rankSum += rank;
    });
  }
  return { mrr: rr / examples.length, averageRank: rankSum / examples.length, questions: examples.length, pool: pool.length };
}

/**
 * Ranks each dev question against the pool by a dense retriever's dot products.
 *
 * @example
 * const v = await validate(model, { passages, queries: devQueries, rows, examples: dev, taskIndex, pool });
 * console.log(v.mrr, v.averageRank);
 */
export async function validate(model: TableEncoder, input: ValidationInput): Promise<ValidationResult> {
  mustBeObject(model, 'model');
  checkInput(input);
  const P = await encodeTable(model, input.passages, { side: 'passage', rows: input.pool });
  return rankAgainstPool(input, async (task, table, rows) => {
    const Q = await encodeTable(model, table, { side: 'query', task: input.taskIndex.get(task) ?? 0, rows });
    return (await score(Q, P)).data;
  });
}
