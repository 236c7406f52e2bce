// Span decoding for the extractive reader: the best (start, end) pairs of one row's logits, start <= end, at most
// `maxLength` tokens long, scored start[i] + end[j] (DPR's reader). Positions whose logit is -Infinity (outside the
// passage) are never part of a span.
import { QuorumError } from '../../errors.js';
import { checkOptions, mustBeArray, optionKeys } from '../../validate.js';

const spanKeys = optionKeys<{ maxLength?: number; top?: number; offset?: number; length?: number }>()([
  'maxLength',
  'top',
  'offset',
  'length',
]);

/** One decoded answer span of a reader row, in token positions. */
export interface Span {
  /** First token. */
  start: number;
  /** Last token (inclusive). */
  end: number;
  /** start logit + end logit. */
  score: number;
}

/**
 * The `top` best non-overlapping spans of one row, best first (ties: the earlier start, then the shorter span).
 * O(T maxLength) candidates, then a sort.
 *
 * @example
 * bestSpans(Float32Array.of(-Infinity, 2, 0), Float32Array.of(-Infinity, 0, 1), { maxLength: 2 })
 * // [{ start: 1, end: 2, score: 3 }]
 */
export function bestSpans(
  start: ArrayLike<number>,
  end: ArrayLike<number>,
  options: { maxLength?: number; top?: number; offset?: number; length?: number } = {},
): Span[] {
  mustBeArray(start, 'start logits', true);
  mustBeArray(end, 'end logits', true);
  checkOptions(options, spanKeys, 'bestSpans options');
  const maxLength = options.maxLength ?? 10;
  const top = options.top ?? 1;
  const offset = options.offset ?? 0;
  const T = options.length ?? start.length - offset;
  if (!Number.isInteger(maxLength) || maxLength < 1) throw new QuorumError('ERR_RANGE', 'maxLength must be an integer >= 1');
  if (!Number.isInteger(top) || top < 1) throw new QuorumError('ERR_RANGE', 'top must be an integer >= 1');
  if (!Number.isInteger(offset) || !Number.isInteger(T) || offset < 0 || T < 0 || offset + T > start.length || offset + T > end.length)
    throw new QuorumError('ERR_RANGE', 'the row lies outside the logits');
  const cand: Span[] = [];
  for (let i = 0; i < T; i++) {
    const s = start[offset + i]!;
    if (!Number.isFinite(s)) continue;
    for (let j = i; j < Math.min(T, i + maxLength); j++) {
      const e = end[offset + j]!;
      if (Number.isFinite(e)) cand.push({ start: i, end: j, score: s + e });
    }
  }
  cand.sort((a, b) => b.score - a.score || a.start - b.start || a.end - b.end);
  const out: Span[] = [];
  for (const c of cand) {
    if (out.some((o) => c.start <= o.end && o.start <= c.end)) continue;
    out.push(c);
    if (out.length === top) break;
  }
  return out;
}
