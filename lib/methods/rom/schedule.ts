// ROM's learning schedules for the joint phase (docs/methods/rom.md#references, the paper's §3.3): the retrieval loss weight of each epoch,
// the reader's being 1 - lambda_retrieval.
//   pipeline   retrieval alone for the first half of the epochs, then the reader alone (two checkpoints, as DPR)
//   equal      0.5 / 0.5 throughout
//   gradual    retrieval 1 for the first quarter, a linear hand-over to the reader over the next half, reader 1 in the
//              last quarter (read at the middle of each epoch)
//   random     lambda_retrieval ~ U(0, 1), drawn per epoch from the seed
//   iterative  back and forth, one epoch each, between retrieval and the reader, neither weight ever 0: the one off
//              duty keeps `floor` (default 0.01)
import { QuorumError } from '../../errors.js';
import { seededRandom } from '../../random.js';
import { checkOptions, optionKeys } from '../../validate.js';

/** ROM's joint-phase schedules, by name (see the head of this file for what each does). */
export const ROM_SCHEDULES = ['pipeline', 'equal', 'gradual', 'random', 'iterative'] as const;
/** One of {@link ROM_SCHEDULES}. */
export type RomSchedule = (typeof ROM_SCHEDULES)[number];

/** Options of {@link retrievalWeight}. */
export interface ScheduleOptions {
  /** random: the seed of the per-epoch draws. */
  seed?: number;
  /** iterative: the weight of the task off duty (default 0.01). */
  floor?: number;
}

const scheduleKeys = optionKeys<ScheduleOptions>()(['seed', 'floor']);

/**
 * lambda_retrieval of (0-based) `epoch` out of `epochs` joint epochs.
 *
 * @example
 * retrievalWeight('gradual', 0, 4) // 1
 * retrievalWeight('gradual', 2, 4) // 0.25
 */
export function retrievalWeight(schedule: RomSchedule, epoch: number, epochs: number, options: ScheduleOptions = {}): number {
  checkOptions(options, scheduleKeys, 'retrievalWeight options');
  if (!ROM_SCHEDULES.includes(schedule))
    throw new QuorumError('ERR_ARG', `schedule must be one of ${ROM_SCHEDULES.join(', ')}, got ${String(schedule)}`);
  if (!Number.isInteger(epochs) || epochs < 1) throw new QuorumError('ERR_RANGE', 'epochs must be an integer >= 1');
  if (!Number.isInteger(epoch) || epoch < 0 || epoch >= epochs)
    throw new QuorumError('ERR_RANGE', `epoch must be an integer in [0, ${epochs})`);
  const floor = options.floor ?? 0.01;
  if (!(floor > 0 && floor < 0.5)) throw new QuorumError('ERR_RANGE', 'floor must be in (0, 0.5)');
  switch (schedule) {
    case 'pipeline':
      return epoch < epochs / 2 ? 1 : 0;
    case 'equal':
      return 0.5;
    case 'gradual': {
      const t = (epoch + 0.5) / epochs;
      return t < 0.25 ? 1 : t > 0.75 ? 0 : 1 - (t - 0.25) / 0.5;
    }
    case 'random':
      // One stream per (seed, epoch), so that a resumed run draws what the uninterrupted one drew.
      return seededRandom(((options.seed ?? 0) * 1000003 + epoch) >>> 0)();
    case 'iterative':
      return epoch % 2 === 0 ? 1 - floor : floor;
  }
}
