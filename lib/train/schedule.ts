// Learning-rate schedules and batch composition for contrastive training.
import { QuorumError } from '../errors.js';
import { shuffle } from '../random.js';
import { seededRandom } from '../random.js';
import { checkOptions, optionKeys } from '../validate.js';

/**
 * DPR's schedule: linear warmup over `warmup` steps, then linear decay to 0 at `total`, never below `floor` (1e-7)
 * times the base rate. Returns the multiplier for (0-based) `step`.
 *
 * @example
 * const mult = linearSchedule(100, 1000);
 * mult(0) // 0;  mult(50) // 0.5;  mult(100) // 1;  mult(550) // 0.5
 */
export function linearSchedule(warmup: number, total: number, floor = 1e-7): (step: number) => number {
  return (step) => {
    if (step < warmup) return step / Math.max(1, warmup);
    return Math.max(floor, (total - step) / Math.max(1, total - warmup));
  };
}

/** One homogeneous batch: indices into its task's example list. */
export interface TaskBatch {
  /** Index of the task whose examples fill the batch. */
  task: number;
  /** Indices into that task's example list. */
  examples: number[];
}

/**
 * A random order in which the examples of one group (e.g. questions about one document) stand together: the groups
 * shuffled, and the examples within each. Consecutive batches cut from it hold few groups each, so the in-batch
 * negatives are other passages of the same document (TAS, Hofstätter et al. 2021, with groups for clusters).
 */
function groupedOrder(keys: readonly string[], random: () => number): number[] {
  const byKey = new Map<string, number[]>();
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    if (typeof k !== 'string') throw new QuorumError('ERR_ARG', `group key ${i} must be a string`);
    const members = byKey.get(k);
    if (members) members.push(i);
    else byKey.set(k, [i]);
  }
  return shuffle([...byKey.values()], random).flatMap((members) => shuffle(members, random));
}

const batchKeys = optionKeys<NonNullable<Parameters<typeof homogeneousBatches>[2]>>()(['rates', 'seed', 'epoch', 'groups']);

/**
 * DPR's multi-set iterator (Maillard et al.'s multi-task training,
 * docs/methods/training.md#multi-task-batches-maillard-et-al): every batch comes from one task;
 * task i contributes floor(ceil(n_i / batchSize) * rate_i) batches per epoch (a rate above 1 cycles through its
 * data again); each task's data and then the sequence of batches are shuffled with seed + epoch. With `groups` (per
 * task, a key per example) a task's batches are cut from an order that keeps each group's examples together.
 *
 * @example
 * homogeneousBatches([500, 80], 16, { rates: [0.5, 1], seed: 1, epoch: 0 }) // 16 + 5 batches, tasks interleaved
 */
export function homogeneousBatches(
  sizes: readonly number[],
  batchSize: number,
  options: { rates?: readonly number[]; seed?: number; epoch?: number; groups?: ReadonlyArray<readonly string[] | undefined> } = {},
): TaskBatch[] {
  if (!Array.isArray(sizes)) throw new QuorumError('ERR_ARG', 'sizes must be an array of task sizes');
  checkOptions(options, batchKeys, 'homogeneousBatches options');
  const random = seededRandom((options.seed ?? 0) + (options.epoch ?? 0));
  const out: TaskBatch[] = [];
  sizes.forEach((n, task) => {
    if (n === 0) return;
    const rate = options.rates?.[task] ?? 1;
    const count = Math.floor(Math.ceil(n / batchSize) * rate);
    const keys = options.groups?.[task];
    if (keys !== undefined && !Array.isArray(keys)) throw new QuorumError('ERR_ARG', `groups[${task}] must be an array of keys`);
    if (keys && keys.length !== n) throw new QuorumError('ERR_SHAPE', `groups[${task}] has ${keys.length} keys for ${n} examples`);
    const order = keys
      ? groupedOrder(keys, random)
      : shuffle(
          Array.from({ length: n }, (_, i) => i),
          random,
        );
    for (let b = 0; b < count; b++) {
      const examples: number[] = [];
      for (let i = 0; i < batchSize && (rate > 1 || b * batchSize + i < n); i++) examples.push(order[(b * batchSize + i) % n] as number);
      out.push({ task, examples });
    }
  });
  return shuffle(out, random);
}
