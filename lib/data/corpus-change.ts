// A change to a saved corpus (passages removed, passages added) planned against the ids it holds: what the methods'
// corpus updates share (updateMufPassages, updateRomIndex, updateCamePassages). Removals come first, so one change can update a passage
// by removing its id and adding it again; kept rows stay in their order and added ones follow.
import { QuorumError } from '../errors.js';
import { mustBeArray, mustBeString } from '../validate.js';

/** A change to a corpus: passages to add and ids to remove. */
interface CorpusChange<P extends { id: string; text: string }> {
  add?: readonly P[];
  remove?: readonly string[];
}

/** A checked {@link CorpusChange}: the rows that stay (in order), how many went, and what is added. */
interface CorpusChangePlan<P> {
  kept: number[];
  removed: number;
  add: readonly P[];
}

/**
 * Checks `change` against `ids` (the corpus now): ERR_ARG when there is nothing to change, for a removal that is not a
 * string, an added passage that is not { id, text } or whose id is empty, has a line break (`oneLineIds`, for
 * one-id-per-line files), is still in the corpus after the removals or repeats, and when nothing would be left
 * (`what` names the corpus). Unknown removals are skipped.
 */
export function planCorpusChange<P extends { id: string; text: string }>(
  ids: readonly string[],
  change: CorpusChange<P>,
  what: string,
  options: { oneLineIds?: boolean } = {},
): CorpusChangePlan<P> {
  const add = change.add ?? [];
  const remove = change.remove ?? [];
  mustBeArray(add, 'add');
  mustBeArray(remove, 'remove');
  if (add.length === 0 && remove.length === 0) throw new QuorumError('ERR_ARG', 'nothing to change: give passages to add or ids to remove');
  remove.forEach((id, i) => mustBeString(id, `remove[${i}]`));
  const gone = new Set(remove);
  const kept = ids.flatMap((id, row) => (gone.has(id) ? [] : [row]));
  const keptIds = new Set(kept.map((row) => ids[row]!));
  const seen = new Set<string>();
  add.forEach((p, i) => {
    if (p === null || typeof p !== 'object' || typeof p.id !== 'string' || typeof p.text !== 'string')
      throw new QuorumError('ERR_ARG', `add[${i}] must be { id, title?, text }`);
    if (!p.id || (options.oneLineIds && /[\r\n]/.test(p.id)))
      throw new QuorumError('ERR_ARG', `add[${i}]: a passage id must be non-empty${options.oneLineIds ? ' and fit one line' : ''}`);
    if (keptIds.has(p.id) || seen.has(p.id))
      throw new QuorumError('ERR_ARG', `add[${i}]: passage id '${p.id}' is already in the corpus or repeated`);
    seen.add(p.id);
  });
  if (kept.length + add.length === 0) throw new QuorumError('ERR_ARG', `${what} needs at least one passage: this would remove them all`);
  return { kept, removed: ids.length - kept.length, add };
}

/** The vectors after a planned change: rows `kept` of `old` ([n, dim] row-major), then `added` ([m, dim]). */
export function keptRowsThen(old: Float32Array, dim: number, kept: readonly number[], added: Float32Array): Float32Array {
  const out = new Float32Array(kept.length * dim + added.length);
  kept.forEach((row, i) => out.set(old.subarray(row * dim, (row + 1) * dim), i * dim));
  out.set(added, kept.length * dim);
  return out;
}

/**
 * The rows a change keeps, checked against a corpus of `size` rows: ERR_ARG unless an Int32Array, ERR_RANGE unless
 * ascending, distinct and below `size` (CameRetriever.changeIndex, TokenIndex.changed).
 */
export function checkKeptRows(keep: unknown, size: number): Int32Array {
  if (!(keep instanceof Int32Array)) throw new QuorumError('ERR_ARG', 'keep must be an Int32Array of corpus rows');
  for (let i = 0; i < keep.length; i++) {
    const r = keep[i]!;
    if (r < 0 || r >= size || (i && r <= keep[i - 1]!))
      throw new QuorumError('ERR_RANGE', `keep[${i}] = ${r}: rows must be ascending corpus rows below ${size}`);
  }
  return keep;
}
