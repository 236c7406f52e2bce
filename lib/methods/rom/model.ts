// ROM end to end (Fun, Gandhi, Ravi): one network that retrieves (its retrieval head over questions and passages)
// and reads (its span and relevance logits), an exact in-memory index of the corpus, and open-domain QA: retrieve
// the top passages, read each, answer with the best span of the passage the reader ranks first. The retrieval side
// may be another model: the pipeline schedule's retrieval checkpoint, or a separately trained bi-encoder (the
// "three models" baseline).
import { join } from 'node:path';

import { replaceDirectorySync } from '../../data/files.js';
import { savedFile } from '../../io/saved-dir.js';
import { scoreTopK } from '../../dense.js';
import { QuorumError } from '../../errors.js';
import { checkK } from '../../search-request.js';
import { Tensor } from '../../tensor.js';
import { WordPieceTokenizer } from '../../text/tokenizer.js';
import { readTokenizerFiles, writeTokenizerFiles } from '../../text/tokenizer-files.js';
import { encodeTable, type TableEncoder } from '../../models/encode-corpus.js';
import type { PassageText } from '../../data/examples.js';
import { readWeights, writeWeights, type WeightStorage } from '../../models/model-dir.js';
import { Retriever } from '../../models/retriever.js';
import { TokenTable } from '../../models/token-table.js';
import { checkOptions, mustBeArray, mustBeObject, optionKeys } from '../../validate.js';
import { RomNetwork, type RomNetworkOptions } from './network.js';
import {
  defaultRomText,
  readRomCard,
  readRomIndex,
  romFormat,
  writeRomCard,
  writeRomIndex,
  type RomCard,
  type RomConfig,
  type RomTextSettings,
} from './format.js';
import { readCandidates, type RomAnswer } from './reading.js';
import { passagePieces, type PassagePieces } from './reader-inputs.js';
import { brandClass } from '../../brand.js';

const createKeys = optionKeys<Parameters<typeof RomModel.create>[0]>()(['tokenizer', 'network', 'text']);
const textKeys = optionKeys<RomTextSettings>()(['maxQueryLength', 'maxPassageLength', 'readerLength', 'maxAnswerLength']);
const kKeys = optionKeys<{ k?: number }>()(['k']);
const saveKeys = optionKeys<{ dtype?: unknown }>()(['dtype']);

/** Where the retrieval side comes from when it is not the network's own retrieval head. */
export type RomRetrievalSide = { kind: 'rom'; network: RomNetwork } | { kind: 'retriever'; model: Retriever };

/**
 * ROM: train (see trainRom), index a corpus, search, answer; save and load as a directory.
 *
 * @example
 * const rom = RomModel.create({ tokenizer });
 * await trainRom(rom, { passages, train, dev }, { schedule: 'random' });
 * await rom.index(passages);
 * const [a] = await rom.answer(['who founded the monastery?']); // { answer: 'St. Gregory', passage: 812, ... }
 * rom.save('models/rom');
 */
export class RomModel {
  /** The free-form training record (options, per-phase figures, index refreshes), saved with the model. */
  training?: Record<string, unknown>;
  private corpus?: { passages: readonly PassageText[]; vectors: Tensor<'f32'> };
  // Per corpus (the array itself), its passages' pieces by row: a re-index with another corpus, or a training
  // corpus beside the indexed one, never reads another corpus's pieces.
  private readonly pieces = new WeakMap<readonly PassageText[], Map<number, PassagePieces>>();

  private constructor(
    readonly tokenizer: WordPieceTokenizer,
    public network: RomNetwork,
    readonly text: RomTextSettings,
    /** The retrieval side when it is not `network`'s retrieval head. */
    public retrieval?: RomRetrievalSide,
  ) {}

  /** A new, untrained model over `tokenizer`'s vocabulary. ERR_ARG without a tokenizer. */
  static create(o: { tokenizer: WordPieceTokenizer; network?: RomNetworkOptions; text?: Partial<RomTextSettings> }): RomModel {
    mustBeObject(o, 'RomModel options');
    checkOptions(o, createKeys, 'RomModel options');
    checkOptions(o.text, textKeys, 'RomModel options text');
    if (!(o.tokenizer instanceof WordPieceTokenizer)) throw new QuorumError('ERR_ARG', 'RomModel needs a WordPieceTokenizer');
    const net = o.network ?? {};
    mustBeObject(net, 'network options');
    const network = RomNetwork.create({ ...net, encoder: { ...net.encoder, vocabSize: o.tokenizer.size } });
    const text = { ...defaultRomText, ...o.text };
    for (const [k, v] of Object.entries(text))
      if (!Number.isInteger(v) || v < 1) throw new QuorumError('ERR_RANGE', `text setting ${k} must be a positive integer`);
    if (text.readerLength < 8) throw new QuorumError('ERR_RANGE', 'readerLength must be at least 8');
    return new RomModel(o.tokenizer, network, text);
  }

  /** Trainable values of the network and of a separate retrieval side. */
  get parameterCount(): number {
    const r = this.retrieval;
    return this.network.parameterCount + (r ? (r.kind === 'rom' ? r.network.parameterCount : r.model.parameterCount) : 0);
  }

  /** What encodes questions and passages for retrieval. */
  retrievalEncoder(): TableEncoder {
    const r = this.retrieval;
    if (!r) return this.network.head('retrieval');
    return r.kind === 'rom' ? r.network.head('retrieval') : r.model;
  }

  /** Passages as the retrieval side reads them. */
  passageTable(passages: readonly PassageText[]): Promise<TokenTable> {
    return TokenTable.passages(this.tokenizer, passages, this.text.maxPassageLength);
  }

  /** Questions as the retrieval side reads them. */
  questionTable(questions: readonly string[]): Promise<TokenTable> {
    return TokenTable.build(this.tokenizer, questions, { maxLength: this.text.maxQueryLength });
  }

  /** Encodes the corpus with the retrieval side (replacing any earlier index); row i is passages[i]. */
  async index(passages: readonly PassageText[], table?: TokenTable): Promise<void> {
    mustBeArray(passages, 'passages');
    passages.forEach((p, i) => mustBeObject(p, `passages[${i}]`));
    const t = table ?? (await this.passageTable(passages));
    const vectors = await encodeTable(this.retrievalEncoder(), t, { side: 'passage' });
    this.corpus = { passages, vectors };
  }

  /**
   * Frees the network, a separate retrieval side and the corpus index (each when its call in flight ends); any later
   * use is ERR_DISPOSED.
   */
  dispose(): void {
    this.network.dispose();
    if (this.retrieval?.kind === 'retriever') this.retrieval.model.dispose();
    else if (this.retrieval?.kind === 'rom' && this.retrieval.network !== this.network) this.retrieval.network.dispose();
    this.corpus?.vectors.dispose();
    this.corpus = undefined;
  }

  /** Forgets the index (e.g. after training changed the encoder). */
  dropIndex(): void {
    this.corpus = undefined;
  }

  /** Whether a corpus is indexed (search and answer need one). */
  get indexed(): boolean {
    return this.corpus !== undefined;
  }

  /** The top `k` corpus rows of each question by the retrieval side's dot product. */
  async search(questions: readonly string[], options: { k?: number } = {}): Promise<Array<Array<{ id: number; score: number }>>> {
    checkOptions(options, kKeys, 'search options');
    const corpus = this.requireIndex();
    mustBeArray(questions, 'questions');
    const k = checkK(options.k ?? 20);
    if (!questions.length) return [];
    const q = await encodeTable(this.retrievalEncoder(), await this.questionTable(questions), { side: 'query' });
    const top = await scoreTopK(q, corpus.vectors, Math.min(k, corpus.passages.length));
    return questions.map((_, i) => top.hits(i));
  }

  /** A passage's pieces (cached per corpus), by its row in `passages` (default: the indexed corpus). */
  passagePieces(row: number, passages: readonly PassageText[] = this.requireIndex().passages): PassagePieces {
    let cache = this.pieces.get(passages);
    if (!cache) this.pieces.set(passages, (cache = new Map()));
    let p = cache.get(row);
    if (!p) {
      const passage = passages[row];
      if (!passage) throw new QuorumError('ERR_RANGE', `passage row ${row} outside the corpus of ${passages.length}`);
      p = passagePieces(this.tokenizer, passage.text);
      cache.set(row, p);
    }
    return p;
  }

  /**
   * Reads each question's candidate passages and answers with the best span (at most maxAnswerLength pieces) of
   * the passage whose relevance logit is highest.
   */
  async read(
    questions: readonly string[],
    candidates: readonly (readonly { id: number; score: number }[])[],
    passages?: readonly PassageText[],
    options: { batchQuestions?: number } = {},
  ): Promise<RomAnswer[]> {
    return readCandidates(
      {
        tokenizer: this.tokenizer,
        text: this.text,
        marksMatches: this.network.marksMatches,
        pieces: (row) => this.passagePieces(row, passages),
        read: (inputs) => this.network.read(inputs),
      },
      questions,
      candidates,
      options,
    );
  }

  /**
   * Open-domain QA: retrieve the top `k` passages (default 10, the reader's training width), read them, answer.
   *
   * @example
   * const [a] = await rom.answer(['how many brotherhoods are in the Armenian church?']);
   * console.log(a.answer, a.passage);
   */
  async answer(questions: readonly string[], options: { k?: number } = {}): Promise<RomAnswer[]> {
    checkOptions(options, kKeys, 'answer options');
    const hits = await this.search(questions, { k: options.k ?? 10 });
    return this.read(questions, hits);
  }

  /**
   * Saves the index's vectors under `dir` with the corpus ids (`ids[i]` names row i); {@link loadIndex} restores it
   * for the same corpus.
   */
  saveIndex(dir: string, ids: readonly string[]): void {
    const corpus = this.requireIndex();
    mustBeArray(ids, 'ids');
    if (ids.length !== corpus.passages.length)
      throw new QuorumError('ERR_SHAPE', `${ids.length} ids for an index of ${corpus.passages.length} passages`);
    writeRomIndex(dir, ids, corpus.vectors.data, corpus.vectors.shape[1]!);
  }

  /**
   * Loads {@link saveIndex}'s directory as the index of `passages` (the corpus it was built from, with the same
   * ids in the same order). ERR_IO when missing, ERR_FORMAT when damaged or built from another corpus.
   */
  loadIndex(dir: string, passages: readonly (PassageText & { id: string })[]): void {
    this.corpus = { passages, vectors: readRomIndex(dir, passages, this.retrievalEncoder().dim) };
  }

  private requireIndex(): { passages: readonly PassageText[]; vectors: Tensor<'f32'> } {
    if (this.network.disposed) throw new QuorumError('ERR_DISPOSED', 'this RomModel was disposed');
    if (!this.corpus) throw new QuorumError('ERR_STATE', 'no index: call index(passages) first (and again after training)');
    return this.corpus;
  }

  /**
   * Writes rom.json, vocab.txt, tokenizer.json and network.safetensors (plus the separate retrieval side: retrieval.safetensors, or
   * a bi-encoder's model directory under retriever/). The index is not saved: `index` rebuilds it.
   */
  save(dir: string, options: { dtype?: WeightStorage } = {}): void {
    if (typeof dir !== 'string' || !dir) throw new QuorumError('ERR_ARG', 'dir must be a non-empty string');
    checkOptions(options, saveKeys, 'save options');
    replaceDirectorySync(dir, (tmp) => this.writeFiles(tmp, options.dtype ?? 'F32'), { keepOthers: true, kind: romFormat });
  }

  private writeFiles(dir: string, dtype: WeightStorage): void {
    writeWeights(this.network, join(dir, 'network.safetensors'), dtype, romFormat.format);
    writeTokenizerFiles(dir, this.tokenizer);
    let retrieval: RomCard['retrieval'];
    const r = this.retrieval;
    if (r?.kind === 'rom') {
      writeWeights(r.network, join(dir, 'retrieval.safetensors'), dtype, romFormat.format);
      retrieval = { kind: 'rom', config: r.network.config, weights: 'retrieval.safetensors' };
    } else if (r?.kind === 'retriever') {
      r.model.saveModel(join(dir, 'retriever'), {
        tokenizer: this.tokenizer,
        dtype,
        maxQueryLength: this.text.maxQueryLength,
        maxPassageLength: this.text.maxPassageLength,
        taskMarkers: false,
      });
      retrieval = { kind: 'retriever', dir: 'retriever' };
    }
    const card: Omit<RomCard, 'format' | 'version'> = {
      config: this.network.config,
      text: this.text,
      weights: 'network.safetensors',
      ...(retrieval ? { retrieval } : {}),
      ...(this.training ? { training: this.training } : {}),
    };
    writeRomCard(dir, card);
  }

  /** Loads {@link save}'s directory. ERR_IO for a missing directory or file, ERR_FORMAT for another version or damage. */
  static async load(dir: string): Promise<RomModel> {
    const { card, path } = readRomCard(dir);
    const t = card.text;
    const weights = savedFile(dir, card.weights, path, 'weights');
    const tokenizer = await readTokenizerFiles(dir);
    const network = networkOf(card.config, tokenizer, path);
    readWeights(network, weights, 'any', romFormat.format);
    const model = new RomModel(tokenizer, network, t as RomTextSettings);
    const r = card.retrieval;
    if (r?.kind === 'rom') {
      const sideWeights = savedFile(dir, r.weights, path, 'retrieval');
      const side = networkOf(r.config, tokenizer, path);
      readWeights(side, sideWeights, 'any', romFormat.format);
      model.retrieval = { kind: 'rom', network: side };
    } else if (r?.kind === 'retriever') {
      if (r.dir !== 'retriever') throw new QuorumError('ERR_FORMAT', `${path}: malformed retrieval entry`);
      model.retrieval = { kind: 'retriever', model: await Retriever.load(join(dir, r.dir)) };
    } else if (r !== undefined) {
      throw new QuorumError('ERR_FORMAT', `${path}: unknown retrieval side`);
    }
    if (card.training) model.training = card.training;
    return model;
  }
}

function networkOf(config: RomConfig, tokenizer: WordPieceTokenizer, path: string): RomNetwork {
  let network: RomNetwork;
  try {
    network = RomNetwork.fromConfig(config);
  } catch (e) {
    if (e instanceof QuorumError && e.code !== 'ERR_BACKEND_UNAVAILABLE')
      throw new QuorumError('ERR_FORMAT', `${path}: bad configuration: ${e.message}`, { cause: e });
    throw e;
  }
  if (config.encoder.vocabSize !== tokenizer.size)
    throw new QuorumError('ERR_FORMAT', `${path}: vocab.txt has ${tokenizer.size} tokens, the network ${config.encoder.vocabSize}`);
  return network;
}

// `instanceof RomModel` holds for the other package copy's instances too (ESM and CommonJS in one process: lib/brand.ts).
brandClass(RomModel, 'RomModel');
