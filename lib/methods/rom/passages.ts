// A ROM index's corpus changed without retraining (docs/methods/rom.md#changing-the-corpus): the retrieval side
// encodes the added passages (RomServer: no libtorch), removed rows are dropped, the rest of the index is kept as it
// is. A live server then loads the new index behind Live (docs/api.md#swapping-a-live-index).
import { join } from 'node:path';

import { keptRowsThen, planCorpusChange } from '../../data/corpus-change.js';
import type { PassageText } from '../../data/examples.js';
import { withDirectoryLock } from '../../data/files.js';
import { checkOptions, mustBeArray, mustBeObject, mustBeString, optionKeys } from '../../validate.js';
import { writeRomIndex } from './format.js';
import { RomServer } from './serve.js';

type IdPassage = PassageText & { id: string };

/** What {@link updateRomIndex} changes. */
export interface RomIndexChanges {
  /** The corpus the index holds now, in its order (as RomServer.load takes it). */
  passages: readonly IdPassage[];
  /** Passages to add, each with an id new to the corpus once the removals are done. */
  add?: readonly IdPassage[];
  /** Passage ids to remove (unknown ones are skipped). */
  remove?: readonly string[];
  /** The index directory (default: the ROM directory's `index/`); rewritten in place. */
  index?: string;
}

const changeKeys = optionKeys<RomIndexChanges>()(['passages', 'add', 'remove', 'index']);

/**
 * Adds passages to and removes passages from a ROM index: removals first, then the retrieval side encodes the added
 * passages; kept rows keep their vectors. Resolves to the new corpus (kept passages in order, then the added ones):
 * what RomServer.load and RomModel.loadIndex take with the new index. ERR_FORMAT when the index does not hold
 * `passages`; ERR_ARG for an added id already in the corpus after the removals, or for removing every passage.
 *
 * @example
 * const corpus2 = await updateRomIndex('rom/', { passages: corpus, add: [{ id: 'p9', title: 'Hamlet', text: '...' }], remove: ['p3'] });
 * const rom = await RomServer.load('rom/', { passages: corpus2 });
 */
export async function updateRomIndex(dir: string, changes: RomIndexChanges): Promise<IdPassage[]> {
  mustBeString(dir, 'ROM index directory');
  // One update of a directory at a time: two at once would both read the old corpus and one would be lost.
  return withDirectoryLock(dir, () => updateRomIndexNow(dir, changes));
}

async function updateRomIndexNow(dir: string, changes: RomIndexChanges): Promise<IdPassage[]> {
  mustBeString(dir, 'ROM directory');
  mustBeObject(changes, 'index changes');
  checkOptions(changes, changeKeys, 'index changes');
  const { passages } = changes;
  mustBeArray(passages, 'passages');
  const { kept, add } = planCorpusChange(
    passages.map((p) => p.id),
    changes,
    'a ROM index',
  );
  const indexDir = changes.index ?? join(dir, 'index');
  // Loading checks that the index holds `passages`; its retrieval side encodes the new ones.
  const server = await RomServer.load(dir, { passages, index: indexDir });
  try {
    const { data: old, dim } = server.indexVectors();
    const vectors = keptRowsThen(old, dim, kept, add.length ? await server.encodePassages(add) : new Float32Array(0));
    const corpus = [...kept.map((row) => passages[row]!), ...add];
    writeRomIndex(
      indexDir,
      corpus.map((p) => p.id),
      vectors,
      dim,
    );
    return corpus;
  } finally {
    await server.dispose();
  }
}
