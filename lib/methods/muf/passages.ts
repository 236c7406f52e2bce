// The corpus of a saved DPR-MUF directory changed without retraining (docs/methods/muf.md#changing-the-corpus): the
// heads and the calibration belong to the experts, not to the passages, so adding a passage is each expert encoding
// it, and removing one is dropping its row. A live server picks the new corpus up by loading the directory again
// behind Live (docs/api.md#swapping-a-live-index).
import { join } from 'node:path';

import { readFileBytes, writeFileAtomic } from '../../data/files.js';
import { QuorumError } from '../../errors.js';
import { readSafetensors, writeSafetensors } from '../../io/safetensors.js';
import { ServingEncoder } from '../../models/serving-encoder.js';
import { checkOptions, mustBeArray, mustBeObject, mustBeString, optionKeys } from '../../validate.js';
import { readMufDir } from './retriever.js';

/** What {@link updateMufPassages} changes: passages to add (new ids, or ids removed in the same call) and ids to remove. */
export interface MufPassageChanges {
  /** Passages to add, each with an id new to the corpus once the removals are done. */
  add?: ReadonlyArray<{ id: string; title?: string; text: string }>;
  /** Passage ids to remove (unknown ones are skipped). */
  remove?: readonly string[];
}

/** What {@link updateMufPassages} did. */
export interface MufPassageUpdate {
  /** Passages added. */
  added: number;
  /** Passages removed (ids that were in the corpus). */
  removed: number;
  /** Passages in the directory now. */
  passages: number;
}

const changeKeys = optionKeys<MufPassageChanges>()(['add', 'remove']);

/**
 * Adds and removes passages of a saved MUF directory: removals first (unknown ids are skipped), then each expert
 * encodes the added passages with its own model (no libtorch: ServingEncoder) and its passage vectors and the corpus
 * ids are rewritten. An id of an added passage must not be in the corpus after the removals (so one call can update
 * a passage: remove its id and add it again); ids must be non-empty and fit one line. Each file is replaced
 * atomically, the experts' vectors first and the corpus ids last: a crash in between leaves a directory whose loader
 * says ERR_FORMAT (ids and vectors disagree), never a wrong corpus.
 *
 * @example
 * await updateMufPassages('muf/', { add: [{ id: 'p9', title: 'Hamlet', text: 'A tragedy.' }], remove: ['p3'] });
 */
export async function updateMufPassages(dir: string, changes: MufPassageChanges): Promise<MufPassageUpdate> {
  mustBeString(dir, 'MUF directory');
  mustBeObject(changes, 'passage changes');
  checkOptions(changes, changeKeys, 'passage changes');
  const add = changes.add ?? [];
  const remove = changes.remove ?? [];
  mustBeArray(add, 'add');
  mustBeArray(remove, 'remove');
  if (add.length === 0 && remove.length === 0) throw new QuorumError('ERR_ARG', 'nothing to change: give passages to add or ids to remove');
  remove.forEach((id, i) => mustBeString(id, `remove[${i}]`));
  const { ids, experts } = readMufDir(dir);
  const gone = new Set(remove.filter((id) => ids.includes(id)));
  const kept = ids.flatMap((id, row) => (gone.has(id) ? [] : [row]));
  const keptIds = new Set(kept.map((row) => ids[row]!));
  const seen = new Set<string>();
  add.forEach((p, i) => {
    if (p === null || typeof p !== 'object' || typeof p.id !== 'string' || typeof p.text !== 'string')
      throw new QuorumError('ERR_ARG', `add[${i}] must be { id, title?, text }`);
    if (!p.id || /[\r\n]/.test(p.id)) throw new QuorumError('ERR_ARG', `add[${i}]: a passage id must be non-empty and fit one line`);
    if (keptIds.has(p.id) || seen.has(p.id)) throw new QuorumError('ERR_ARG', `add[${i}]: passage id '${p.id}' is already in the corpus or repeated`);
    seen.add(p.id);
  });
  const total = kept.length + add.length;
  if (total === 0) throw new QuorumError('ERR_ARG', 'a MUF directory needs at least one passage: this would remove them all');
  // Every expert's new vectors are computed before anything is written.
  const updated: Array<{ path: string; bytes: Uint8Array }> = [];
  for (const { base } of experts) {
    const path = join(base, 'passages.safetensors');
    const old = readSafetensors(readFileBytes(path)).get('passages');
    if (!old || old.shape.length !== 2 || old.shape[0] !== ids.length) throw new QuorumError('ERR_FORMAT', `${path}: expected [${ids.length}, dim] passage vectors`);
    const dim = old.shape[1]!;
    const data = new Float32Array(total * dim);
    kept.forEach((row, i) => data.set(old.data.subarray(row * dim, (row + 1) * dim), i * dim));
    if (add.length) {
      const encoder = await ServingEncoder.load(join(base, 'model'));
      try {
        if (encoder.dim !== dim) throw new QuorumError('ERR_FORMAT', `${base}: the model's dimension ${encoder.dim} differs from its passage vectors' ${dim}`);
        data.set(await encoder.encodePassages(add.map((p) => ({ title: p.title ?? '', text: p.text }))), kept.length * dim);
      } finally {
        await encoder.dispose();
      }
    }
    updated.push({ path, bytes: writeSafetensors({ passages: { shape: [total, dim], data } }) });
  }
  for (const u of updated) writeFileAtomic(u.path, u.bytes);
  const newIds = [...kept.map((row) => ids[row]!), ...add.map((p) => p.id)];
  writeFileAtomic(join(dir, 'corpus-ids.txt'), Buffer.from(newIds.join('\n') + '\n'));
  return { added: add.length, removed: gone.size, passages: total };
}
