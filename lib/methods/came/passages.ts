// The corpus of a saved CAME index changed without retraining (docs/methods/came.md#changing-the-corpus): the experts
// belong to the model, not to the passages, so adding a passage is the experts encoding it and removing one is
// dropping its row from the three indexes (CameRetriever.changeIndex). The new index directory replaces the old one
// whole, so a reader sees one corpus or the other; a live server loads it again behind Live.
import { join } from 'node:path';

import { planCorpusChange } from '../../data/corpus-change.js';
import { withDirectoryLock } from '../../data/files.js';
import { checkOptions, mustBeObject, mustBeString, optionKeys } from '../../validate.js';
import { CameRetriever } from './retriever.js';

/** What {@link updateCamePassages} changes. */
export interface CamePassageChanges {
  /** Passages to add, each with an id new to the corpus once the removals are done. */
  add?: ReadonlyArray<{ id: string; title?: string; text: string }>;
  /** Passage ids to remove (unknown ones are skipped). */
  remove?: readonly string[];
  /** The index directory (default DIR/index). */
  index?: string;
}

/** What {@link updateCamePassages} did. */
export interface CamePassageUpdate {
  /** Passages added. */
  added: number;
  /** Passages removed (ids that were in the corpus). */
  removed: number;
  /** Passages in the index now. */
  passages: number;
}

const changeKeys = optionKeys<CamePassageChanges>()(['add', 'remove', 'index']);

/**
 * Adds and removes passages of a saved CAME index: removals first (unknown ids are skipped), then the experts encode
 * the added passages (libtorch, as `quorum came index`). An added id must not be in the corpus after the removals
 * (so one call can update a passage: remove its id and add it again); ids must be non-empty and fit one line. The
 * index directory is rewritten beside the old one and swapped in (saveIndex): a failure leaves it as it was.
 *
 * @example
 * await updateCamePassages('came/', { add: [{ id: 'p9', title: 'Hamlet', text: 'A tragedy.' }], remove: ['p3'] });
 */
export async function updateCamePassages(dir: string, changes: CamePassageChanges): Promise<CamePassageUpdate> {
  mustBeString(dir, 'CAME directory');
  // One update of a directory at a time: two at once would both read the old corpus and one would be lost.
  return withDirectoryLock(dir, () => updateCamePassagesNow(dir, changes));
}

async function updateCamePassagesNow(dir: string, changes: CamePassageChanges): Promise<CamePassageUpdate> {
  mustBeString(dir, 'CAME directory');
  mustBeObject(changes, 'passage changes');
  checkOptions(changes, changeKeys, 'passage changes');
  const indexDir = changes.index ?? join(dir, 'index');
  mustBeString(indexDir, 'index directory');
  const came = await CameRetriever.load(dir);
  try {
    const ids = await came.loadIndex(indexDir);
    const { kept, removed, add } = planCorpusChange(ids, changes, 'a CAME index', { oneLineIds: true });
    await came.changeIndex(
      Int32Array.from(kept),
      add.map((p) => ({ title: p.title ?? '', text: p.text })),
    );
    const next = [...kept.map((row) => ids[row]!), ...add.map((p) => p.id)];
    await came.saveIndex(indexDir, next);
    return { added: add.length, removed, passages: next.length };
  } finally {
    came.dispose();
  }
}
