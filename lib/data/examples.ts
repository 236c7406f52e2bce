// The texts and labelled questions that training, validation and the methods' corpora pass around.
import { mustBeArray, mustBeObject, mustBeString } from '../validate.js';

/** One labelled question for contrastive training, its passages named by corpus row. */
export interface TrainingExample {
  /** The question text. */
  query: string;
  /** Task name (homogeneous batches, task markers, per-task query encoders, sampling rates). */
  task: string;
  /** Corpus rows of the gold passages (at least one). */
  positives: number[];
  /** Corpus rows of hard negatives, best first; never gold. */
  hardNegatives: number[];
  /** Answer strings, when the dataset has them (the reader's spans: ROM). */
  answers?: string[];
  /** A group key (e.g. the source document): with `TrainOptions.groupBatches` a group's questions share batches. */
  group?: string;
}

/** The text a passage is encoded from: its title and text as a pair ("[CLS] title [SEP] text [SEP]"). */
export interface PassageText {
  /** The passage's title (the first segment). */
  title: string;
  /** The passage's text (the second segment). */
  text: string;
}

/**
 * Passages as an encoder reads them, checked (ERR_ARG naming the first bad one): a passage without a title (a
 * corpus.jsonl line may have none) reads as one with an empty title.
 */
export function passageTexts(passages: readonly PassageText[]): PassageText[] {
  mustBeArray(passages, 'passages');
  return passages.map((p, i) => {
    mustBeObject(p, `passages[${i}]`);
    mustBeString(p.text, `passages[${i}].text`);
    if (p.title !== undefined) mustBeString(p.title, `passages[${i}].title`);
    return { title: p.title ?? '', text: p.text };
  });
}
