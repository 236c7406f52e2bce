// The corpus of a saved DPR-MUF directory changed without retraining (docs/methods/muf.md#changing-the-corpus): the
// heads and the calibration belong to the experts, not to the passages, so adding a passage is each expert encoding
// it, and removing one is dropping its row. A live server picks the new corpus up by loading the directory again
// behind Live (docs/api.md#swapping-a-live-index).
import { dirname, join, relative } from 'node:path';

import { keptRowsThen, planCorpusChange } from '../../data/corpus-change.js';
import { makeDirs, readFileBytes, replaceDirectorySync, withDirectoryLock, writeFileAtomic } from '../../data/files.js';
import { QuorumError } from '../../errors.js';
import { floatTensor, readSafetensors, writeSafetensors } from '../../io/safetensors.js';
import { ServingEncoder } from '../../models/serving-encoder.js';
import { checkOptions, mustBeObject, mustBeString, optionKeys } from '../../validate.js';
import { mufFormat, readMufDir } from './format.js';

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
 * a passage: remove its id and add it again); ids must be non-empty and fit one line. The directory is swapped in
 * whole: a crash leaves the old corpus or the new one.
 *
 * @example
 * await updateMufPassages('muf/', { add: [{ id: 'p9', title: 'Hamlet', text: 'A tragedy.' }], remove: ['p3'] });
 */
export async function updateMufPassages(dir: string, changes: MufPassageChanges): Promise<MufPassageUpdate> {
  mustBeString(dir, 'MUF directory');
  // One update of a directory at a time: two at once would both read the old corpus and one would be lost.
  return withDirectoryLock(dir, () => updateMufPassagesNow(dir, changes));
}

async function updateMufPassagesNow(dir: string, changes: MufPassageChanges): Promise<MufPassageUpdate> {
  mustBeString(dir, 'MUF directory');
  mustBeObject(changes, 'passage changes');
  checkOptions(changes, changeKeys, 'passage changes');
  const { ids, experts } = readMufDir(dir);
  const { kept, removed, add } = planCorpusChange(ids, changes, 'a MUF directory', { oneLineIds: true });
  const total = kept.length + add.length;
  // Every expert's new vectors are computed before anything is written.
  const updated: Array<{ path: string; bytes: Uint8Array }> = [];
  for (const { base } of experts) {
    const path = join(base, 'passages.safetensors');
    const old = floatTensor(readSafetensors(readFileBytes(path)).get('passages'), path, 'passages');
    if (!old || old.shape.length !== 2 || old.shape[0] !== ids.length)
      throw new QuorumError('ERR_FORMAT', `${path}: expected [${ids.length}, dim] passage vectors`);
    const dim = old.shape[1]!;
    let added: Float32Array = new Float32Array(0);
    if (add.length) {
      const encoder = await ServingEncoder.load(join(base, 'model'));
      try {
        if (encoder.dim !== dim)
          throw new QuorumError('ERR_FORMAT', `${base}: the model's dimension ${encoder.dim} differs from its passage vectors' ${dim}`);
        added = await encoder.encodePassages(add.map((p) => ({ title: p.title ?? '', text: p.text })));
      } finally {
        await encoder.dispose();
      }
    }
    const data = keptRowsThen(old.data, dim, kept, added);
    updated.push({ path: relative(dir, path), bytes: writeSafetensors({ passages: { shape: [total, dim], data } }) });
  }
  const newIds = [...kept.map((row) => ids[row]!), ...add.map((p) => p.id)];
  // The vectors and the ids change together: the directory is swapped in whole, its models kept as links.
  replaceDirectorySync(
    dir,
    (tmp) => {
      for (const u of updated) {
        makeDirs(dirname(join(tmp, u.path)));
        writeFileAtomic(join(tmp, u.path), u.bytes);
      }
      writeFileAtomic(join(tmp, 'corpus-ids.txt'), Buffer.from(newIds.join('\n') + '\n'));
    },
    { keepOthers: true, kind: mufFormat },
  );
  return { added: add.length, removed, passages: total };
}
