// What every training command reads before it trains: a BEIR dataset's train split (and dev split when present) as
// training examples with BM25 hard negatives, and the tokenizer: BERT's WordPiece vocabulary, extended with the
// corpus's and the questions' whole words that GloVe has a vector for (so such words keep their own vector).
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { loadBeir } from '../data/beir.js';
import { QuorumError } from '../errors.js';
import { WordPieceTokenizer, extendVocabulary } from '../text/tokenizer.js';
import { addBm25Negatives, examplesFromQrels, type PassageText, type TrainingExample } from './examples.js';
import { loadGloveVectors, type GloveVectors } from '../models/glove.js';
import { checkOptions, mustBeObject, mustBeString, optionKeys } from '../validate.js';

/**
 * `base`'s vocabulary plus the whole words of `texts` that GloVe has a vector for, read with `base`'s normalization
 * (the words are counted as the tokenizer will read them: with `nfkc`, "inﬂuenza" counts as "influenza").
 *
 * @example
 * const tok = gloveWordTokenizer(await WordPieceTokenizer.load(undefined, { nfkc: true }), texts, glove);
 */
export function gloveWordTokenizer(base: WordPieceTokenizer, texts: Iterable<string>, glove: GloveVectors): WordPieceTokenizer {
  const { nfkc } = base;
  return new WordPieceTokenizer(extendVocabulary(base.vocabulary, texts, { keep: (w) => glove.words.has(w), nfkc }), { nfkc });
}

/** What {@link prepareTraining} returns: everything {@link trainRetriever} and the methods' trainers need. */
export interface PreparedData {
  /** The corpus (row i is passage i). */
  passages: PassageText[];
  /** Training questions with 30 BM25 hard negatives each. */
  train: TrainingExample[];
  /** Dev questions (empty without a dev split), with BM25 negatives for the validation pool. */
  dev: TrainingExample[];
  /** The training questions' task names, sorted. */
  tasks: string[];
  /** BERT's vocabulary, extended with the corpus's GloVe words when `wordVocab` is set. */
  tokenizer: WordPieceTokenizer;
  /** The GloVe vectors, when `glove` was set. */
  glove?: GloveVectors;
}

const prepareKeys = optionKeys<Parameters<typeof prepareTraining>[1]>()(['tasks', 'glove', 'wordVocab', 'nfkc', 'tokenizer', 'log']);

/**
 * Loads `dir`'s train (and dev) questions, optionally of some tasks only, adds 30 BM25 negatives to each, loads GloVe
 * when asked and extends the vocabulary with it (`wordVocab`). The tokenizer folds compatibility characters (NFKC:
 * ligatures such as "ﬂ") unless `nfkc` is false. A given `tokenizer` (a pretrained checkpoint's) is used as it is:
 * no GloVe, no added words, its own normalization.
 *
 * @example
 * const d = await prepareTraining('data/multidomain-mini', { glove: true, wordVocab: true, log: console.log });
 */
export async function prepareTraining(
  dir: string,
  o: {
    tasks?: readonly string[];
    glove: boolean;
    wordVocab: boolean;
    nfkc?: boolean;
    tokenizer?: WordPieceTokenizer;
    log?: (line: string) => void;
  },
): Promise<PreparedData> {
  mustBeString(dir, 'dataset directory');
  mustBeObject(o, 'prepareTraining options');
  checkOptions(o, prepareKeys, 'prepareTraining options');
  const log = o.log ?? (() => {});
  const train = loadBeir(dir, 'train');
  const dev = existsSync(join(dir, 'qrels', 'dev.tsv')) ? loadBeir(dir, 'dev') : undefined;
  const taskOf = (e: { task: string }) => !o.tasks || o.tasks.includes(e.task);
  const all = examplesFromQrels(train, train.qrels);
  const trainEx = all.filter(taskOf);
  const devEx = dev ? examplesFromQrels(dev, dev.qrels).filter(taskOf) : [];
  const known = [...new Set(all.map((e) => e.task))].sort();
  for (const t of o.tasks ?? [])
    if (!known.includes(t))
      throw new QuorumError('ERR_ARG', `task '${t}' has no training questions in ${dir} (tasks: ${known.join(', ')})`);
  if (!trainEx.length) throw new QuorumError('ERR_ARG', `${dir} has no training questions${o.tasks ? ` for ${o.tasks.join(', ')}` : ''}`);
  const tasks = [...new Set(trainEx.map((e) => e.task))].sort();
  const passages = train.corpus;
  log(`${dir}: ${passages.length} passages, ${trainEx.length} train and ${devEx.length} dev questions, tasks ${tasks.join(', ')}`);

  if (o.tokenizer !== undefined && !(o.tokenizer instanceof WordPieceTokenizer))
    throw new QuorumError('ERR_ARG', 'tokenizer must be a WordPieceTokenizer');
  if (o.tokenizer && o.glove) throw new QuorumError('ERR_ARG', "a pretrained checkpoint's tokenizer and GloVe vectors do not go together");
  // Quorum's models fold compatibility characters (PDF ligatures: COVID-QA's "inﬂuenza") unless told otherwise.
  const base = o.tokenizer ?? (await WordPieceTokenizer.load(undefined, { nfkc: o.nfkc ?? true }));
  const glove = o.glove ? await loadGloveVectors() : undefined;
  const words = [...passages.flatMap((p) => [p.title, p.text]), ...trainEx.map((e) => e.query)];
  const tokenizer = glove && o.wordVocab ? gloveWordTokenizer(base, words, glove) : base;
  if (tokenizer !== base) log(`vocabulary: ${tokenizer.size} tokens (${tokenizer.size - base.size} whole words of the corpus added)`);
  const bm25 = await addBm25Negatives(trainEx, passages, { k: 30 });
  if (devEx.length) await addBm25Negatives(devEx, passages, { k: 30, index: bm25 });
  return { passages, train: trainEx, dev: devEx, tasks, tokenizer, ...(glove ? { glove } : {}) };
}
