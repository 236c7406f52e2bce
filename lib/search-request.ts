// One search request's rules (docs/api.md#search-requests), written once for every search a user sends: the servers
// (MufServer, CameServer, RomServer), the lab classes (MufRetriever, CameRetriever, RomModel), the CLI and the example
// server check the result count `k` and list depths, fusion names, abstention thresholds and filter rows here, each
// with one message. The kernels keep their own native contracts (native/napi/scalar_args.cc bounds k the same way).
import { QuorumError } from './errors.js';
import { mustBeArray } from './validate.js';

/** The largest `k` or list depth any search takes: the dense kernels' bound, 2^20. */
export const MAX_K = 1 << 20;

/** A value as a message quotes it: strings in quotes, anything else as String() gives it. */
function quoted(v: unknown): string {
  return typeof v === 'string' ? `'${v}'` : String(v);
}

/**
 * `k` (or a list depth, named by `what`) checked: an integer in [1, max] (default {@link MAX_K}), else ERR_RANGE.
 * A server passes its own smaller `max`; the bound also keeps a request from sizing its result buffers past memory.
 */
export function checkK(k: unknown, what = 'k', max = MAX_K): number {
  if (typeof k !== 'number' || !Number.isInteger(k) || k < 1 || k > max)
    throw new QuorumError('ERR_RANGE', `${what} must be an integer in [1, ${max}], got ${quoted(k)}`);
  return k;
}

/** A fusion name checked against the ones a search offers (ERR_ARG listing them). */
export function checkFusion<F extends string>(fusion: unknown, allowed: readonly F[], what = 'fusion'): F {
  mustBeArray(allowed, 'the fusions a search offers');
  if (typeof fusion !== 'string' || !(allowed as readonly string[]).includes(fusion))
    throw new QuorumError('ERR_ARG', `${what} must be one of ${allowed.join(', ')}, got ${quoted(fusion)}`);
  return fusion as F;
}

/** An abstention threshold checked: a probability in [0, 1], else ERR_RANGE. */
export function checkAbstain(abstain: unknown, what = 'abstain'): number {
  if (typeof abstain !== 'number' || !(abstain >= 0 && abstain <= 1))
    throw new QuorumError('ERR_RANGE', `${what} must be a number in [0, 1], got ${quoted(abstain)}`);
  return abstain;
}

/**
 * The abstention rule (docs/api.md#search-requests): a question abstains when no expert's confidence reaches the
 * threshold, i.e. every confidence is below it (a NaN confidence never lets it abstain).
 */
export function abstains(confidence: ArrayLike<number>, abstain: number): boolean {
  mustBeArray(confidence, 'confidence', true);
  checkAbstain(abstain);
  for (let i = 0; i < confidence.length; i++) if (!((confidence[i] as number) < abstain)) return false;
  return true;
}

/**
 * A filter's corpus rows (what compileFilter gives, or any list of rows) checked for a corpus of `n` passages:
 * integers in [0, n) (ERR_RANGE naming the first that is not), in any order, repeats ignored; returned ascending
 * without repeats, as the native search stages take them. ERR_ARG for something that is not a list.
 */
export function filterRows(rows: unknown, n: number, what = 'rows'): Int32Array {
  if (rows === null || typeof rows !== 'object' || typeof (rows as { length?: unknown }).length !== 'number')
    throw new QuorumError('ERR_ARG', `${what} must be an Int32Array or an array of corpus rows`);
  const list = rows as ArrayLike<unknown>;
  const out = new Int32Array(list.length);
  let ascending = true;
  for (let i = 0; i < list.length; i++) {
    const r = list[i];
    if (typeof r !== 'number' || !Number.isInteger(r) || r < 0 || r >= n)
      throw new QuorumError('ERR_RANGE', `${what}[${i}] = ${quoted(r)} is not a corpus row (0..${n - 1})`);
    out[i] = r;
    if (i && r <= out[i - 1]!) ascending = false;
  }
  // compileFilter's rows are already ascending: only a hand-made list pays for the sort.
  if (ascending) return out;
  out.sort();
  return out.filter((r, i) => i === 0 || r !== out[i - 1]);
}
