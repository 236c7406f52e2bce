/**
 * `quorum-retrieval/methods/rom`: ROM (docs/methods/rom.md): one encoder for retrieval and reading, ICT /
 * PhraseICT, learning schedules, index refresh, SQuAD metrics.
 *
 * @packageDocumentation
 */
export {
  RomNetwork,
  ROM_HEADS,
  romConfig,
  type ReaderBatchArg,
  type RomHead,
  type RomNetworkOptions,
  type RomStepStats,
} from '../../methods/rom/network.js';
export { RomModel, type RomRetrievalSide } from '../../methods/rom/model.js';
export { defaultRomText, type ReaderLogits, type RomConfig, type RomTextSettings } from '../../methods/rom/format.js';
export type { RomAnswer } from '../../methods/rom/reading.js';
export { trainRom, type RomEpochRecord, type RomTrainingData, type RomTrainOptions, type RomTrainRecord } from '../../methods/rom/train.js';
export { ROM_SCHEDULES, retrievalWeight, type RomSchedule, type ScheduleOptions } from '../../methods/rom/schedule.js';
export { bestSpans, type Span } from '../../methods/rom/spans.js';
export { exactMatch, f1Score, normalizeAnswer, squadEvaluate, squadScores } from '../../methods/rom/squad.js';
export { IndexRefresh, type RefreshEvent, type RefreshHooks } from '../../methods/rom/refresh.js';
export { findAnswer, passagePieces, readerRows, spanText, type PassagePieces, type ReaderRows } from '../../methods/rom/reader-inputs.js';
export { romExportOnnx, type RomOnnxCard } from '../../methods/rom/export.js';
export { RomServer } from '../../methods/rom/serve.js';
export { updateRomIndex, type RomIndexChanges } from '../../methods/rom/passages.js';
