/**
 * `quorum-retrieval/data`: file formats (JSON lines, TREC runs / qrels / topics, SQuAD, DPR, BEIR) and the
 * multi-domain benchmark builder.
 *
 * @packageDocumentation
 */
export { readLines, readJsonLines, readJsonArray, lineError } from '../data/lines.js';
export {
  formatRun,
  formatTrecTopics,
  parseQrels,
  parseTrecTopics,
  readQrels,
  readRun,
  writeQrels,
  writeRun,
  type TrecTopic,
} from '../data/trec-files.js';
export { readSquad, writeSquad, readDpr, streamDpr, writeDpr, type DprExample } from '../data/qa-formats.js';
export {
  loadBeir,
  loadBeirCorpus,
  readBeirQueries,
  readBeir,
  readBeirCorpus,
  writeBeir,
  type BeirDataset,
  type Passage,
  type Query,
} from '../data/beir.js';
export {
  TASKS,
  TASK_SOURCES,
  buildMultiDomain,
  writeMultiDomain,
  type MultiDomainBenchmark,
  type MultiDomainOptions,
  type Split,
  type TaskName,
} from '../builders/multidomain.js';
