/**
 * `quorum-retrieval/train`: contrastive training (DPR, multi-task, TASER): examples, batches, the training loop,
 * validation, initialization from GloVe or a BERT checkpoint, self-supervised (ICT) examples, data-parallel training
 * (ProcessGroup).
 *
 * @packageDocumentation
 */
export { addBm25Negatives, examplesFromQrels } from '../train/examples.js';
export { type TrainingExample } from '../data/examples.js';
export { homogeneousBatches, linearSchedule, type TaskBatch } from '../train/schedule.js';
export {
  composeBatch,
  mineHardNegatives,
  trainRetriever,
  type EpochStats,
  type TrainableModel,
  type TrainOptions,
  type TrainResult,
  type TrainingData,
} from '../train/trainer.js';
export {
  validate,
  validationPool,
  type ValidationResult,
  rankAgainstPool,
  type PoolScores,
  type ValidationInput,
} from '../train/validate.js';
export { fitPoolingToCorpus, initFromBertCheckpoint, initFromGlove } from '../train/init.js';
export { ProcessGroup, groupOptions, rankPart, type GroupOptions } from '../models/process-group.js';
export { mapBertCheckpoint, type MappedCheckpoint } from '../models/checkpoint-map.js';
export { prepareTraining, type PreparedData } from '../train/prepare.js';
export {
  TermIdf,
  drawSpan,
  ictExamples,
  phraseIctExamples,
  splitSentences,
  words,
  type IctOptions,
  type PhraseIctOptions,
  type SelfSupervisedExample,
} from '../train/self-supervised.js';
