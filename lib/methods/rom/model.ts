// ROM end to end (Fun, Gandhi, Ravi): one network that retrieves (its retrieval head over questions and passages)
// and reads (its span and relevance logits), an exact in-memory index of the corpus, and open-domain QA: retrieve
// the top passages, read each, answer with the best span of the passage the reader ranks first. The retrieval side
// may be another model: the pipeline schedule's retrieval checkpoint, or a separately trained bi-encoder (the
// "three models" baseline).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { replaceDirectorySync, writeFileAtomic } from '../../data/files.js';
import { checkCard, readSavedCard, savedFile, writeSavedCard, type SavedFormat } from '../../io/saved-dir.js';
import { scoreTopK } from '../../dense.js';
import { QuorumError } from '../../errors.js';
import { readSafetensors, writeSafetensors } from '../../io/safetensors.js';
import { Tensor } from '../../tensor.js';
import { WordPieceTokenizer } from '../../text/tokenizer.js';
import { readTokenizerFiles, writeTokenizerFiles } from '../../text/tokenizer-files.js';
import { encodeTable, type TableEncoder } from '../../models/encode-corpus.js';
import type { PassageText } from '../../data/examples.js';
import { readWeights, writeWeights, type WeightStorage } from '../../models/model-dir.js';
import { Retriever } from '../../models/retriever.js';
import { TokenTable } from '../../models/token-table.js';
import type { TokenBatchArg } from '../../native.js';
import { encoderConfigSchema } from '../../models/config.js';
import { checkOptions, count, mustBeArray, mustBeObject, optionKeys, positiveInt, z } from '../../validate.js';
import { RomNetwork, type ReaderLogits, type RomConfig, type RomNetworkOptions } from './network.js';
import { passagePieces, readerRows, spanText, type PassagePieces } from './reader-inputs.js';
import { bestSpans } from './spans.js';
import { brandClass } from '../../brand.js';

const romFormat = { card: 'rom.json', format: 'quorum-rom', version: 1, what: 'a ROM directory' } as const satisfies SavedFormat;
const romIndexFormat = { card: 'index.json', format: 'quorum-rom-index', version: 1, what: 'a ROM index' } as const satisfies SavedFormat;

// rom.json and the index's card, every field (issue 48).
const romConfigSchema = z.object({ encoder: encoderConfigSchema, headDim: count }).strict();
const romCardSchema = z
  .object({
    format: z.literal(romFormat.format),
    version: z.literal(romFormat.version),
    config: romConfigSchema,
    text: z.object({ maxQueryLength: positiveInt, maxPassageLength: positiveInt, readerLength: positiveInt, maxAnswerLength: positiveInt }).strict(),
    weights: z.string(),
    retrieval: z
      .discriminatedUnion('kind', [
        z.object({ kind: z.literal('rom'), config: romConfigSchema, weights: z.string() }).strict(),
        z.object({ kind: z.literal('retriever'), dir: z.literal('retriever') }).strict(),
      ])
      .optional(),
    training: z.record(z.unknown()).optional(),
  })
  .strict();
const romIndexSchema = z
  .object({ format: z.literal(romIndexFormat.format), version: z.literal(romIndexFormat.version), ids: z.array(z.string().min(1)) })
  .strict();

/** How texts become the network's inputs. */
export interface RomTextSettings {
  /** Question pieces for retrieval (with framing) and, cut to this, in the reader's rows. */
  maxQueryLength: number;
  /** A passage row for retrieval ("[CLS] title [SEP] text [SEP]"). */
  maxPassageLength: number;
  /** A reader row ("[CLS] question [SEP] passage [SEP]"). */
  readerLength: number;
  /** Longest answer in pieces. */
  maxAnswerLength: number;
}

/** The text settings a ROM model gets unless `RomModel.create`'s `text` overrides them. */
export const defaultRomText: RomTextSettings = { maxQueryLength: 32, maxPassageLength: 128, readerLength: 192, maxAnswerLength: 10 };

const createKeys = optionKeys<Parameters<typeof RomModel.create>[0]>()(['tokenizer', 'network', 'text']);
const textKeys = optionKeys<RomTextSettings>()(['maxQueryLength', 'maxPassageLength', 'readerLength', 'maxAnswerLength']);
const kKeys = optionKeys<{ k?: number }>()(['k']);
const readKeys = optionKeys<{ batchQuestions?: number }>()(['batchQuestions']);
const saveKeys = optionKeys<{ dtype?: unknown }>()(['dtype']);

/** One answer of {@link RomModel.answer}. */
export interface RomAnswer {
  /** The span as it stands in the passage's text ('' when no passage had a span). */
  answer: string;
  /** Corpus row of the passage the answer comes from (-1 when none). */
  passage: number;
  /** The reader's relevance logit of that passage. */
  passageScore: number;
  /** The span's start + end logit. */
  spanScore: number;
  /** The passage's retrieval score for the question. */
  retrievalScore: number;
}

/** Where the retrieval side comes from when it is not the network's own retrieval head. */
export type RomRetrievalSide = { kind: 'rom'; network: RomNetwork } | { kind: 'retriever'; model: Retriever };

/** rom.json. */
export interface RomCard {
  format: typeof romFormat.format;
  version: typeof romFormat.version;
  config: RomConfig;
  text: RomTextSettings;
  weights: string;
  retrieval?: { kind: 'rom'; config: RomConfig; weights: string } | { kind: 'retriever'; dir: string };
  training?: Record<string, unknown>;
}

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
    const k = options.k ?? 20;
    if (!Number.isInteger(k) || k < 1) throw new QuorumError('ERR_RANGE', 'k must be an integer >= 1');
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
      { tokenizer: this.tokenizer, text: this.text, marksMatches: this.network.marksMatches, pieces: (row) => this.passagePieces(row, passages), read: (inputs) => this.network.read(inputs) },
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
    if (ids.length !== corpus.passages.length) throw new QuorumError('ERR_SHAPE', `${ids.length} ids for an index of ${corpus.passages.length} passages`);
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
    replaceDirectorySync(dir, (tmp) => this.writeFiles(tmp, options.dtype ?? 'F32'), { keepOthers: true });
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
      r.model.saveModel(join(dir, 'retriever'), { tokenizer: this.tokenizer, dtype, maxQueryLength: this.text.maxQueryLength, maxPassageLength: this.text.maxPassageLength, taskMarkers: false });
      retrieval = { kind: 'retriever', dir: 'retriever' };
    }
    const card: Omit<RomCard, 'format' | 'version'> = {
      config: this.network.config,
      text: this.text,
      weights: 'network.safetensors',
      ...(retrieval ? { retrieval } : {}),
      ...(this.training ? { training: this.training } : {}),
    };
    writeSavedCard(dir, romFormat, card);
  }

  /** Loads {@link save}'s directory. ERR_IO for a missing directory or file, ERR_FORMAT for another version or damage. */
  static async load(dir: string): Promise<RomModel> {
    const { card, path } = readRomCard(dir);
    const t = card.text;
    const weights = savedFile(dir, card.weights, path, 'weights');
    const tokenizer = await readTokenizerFiles(dir);
    const network = networkOf(card.config, tokenizer, path);
    readWeights(network, weights);
    const model = new RomModel(tokenizer, network, t as RomTextSettings);
    const r = card.retrieval;
    if (r?.kind === 'rom') {
      const sideWeights = savedFile(dir, r.weights, path, 'retrieval');
      const side = networkOf(r.config, tokenizer, path);
      readWeights(side, sideWeights);
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
    if (e instanceof QuorumError && e.code !== 'ERR_BACKEND_UNAVAILABLE') throw new QuorumError('ERR_FORMAT', `${path}: bad configuration: ${e.message}`, { cause: e });
    throw e;
  }
  if (config.encoder.vocabSize !== tokenizer.size) throw new QuorumError('ERR_FORMAT', `${path}: vocab.txt has ${tokenizer.size} tokens, the network ${config.encoder.vocabSize}`);
  return network;
}

/** What {@link readCandidates} reads with: the tokenizer and lengths, a passage's pieces, the reader's forward. */
export interface RomReading {
  tokenizer: WordPieceTokenizer;
  text: RomTextSettings;
  /** Reader rows mark passage tokens the question contains (type 2). */
  marksMatches: boolean;
  /** A corpus row's pieces. */
  pieces(row: number): PassagePieces;
  /** The reader's logits for a batch of reader rows (RomNetwork.read, or the reader graph in ONNX Runtime). */
  read(inputs: TokenBatchArg): Promise<ReaderLogits>;
}

/**
 * Reads each question's candidate passages and answers with the best span (at most maxAnswerLength pieces) of the
 * passage whose relevance logit is highest (RomModel.read and RomServer).
 */
export async function readCandidates(
  ctx: RomReading,
  questions: readonly string[],
  candidates: readonly (readonly { id: number; score: number }[])[],
  options: { batchQuestions?: number } = {},
): Promise<RomAnswer[]> {
  mustBeArray(questions, 'questions');
  mustBeArray(candidates, 'candidates');
  checkOptions(options, readKeys, 'read options');
  if (candidates.length !== questions.length) throw new QuorumError('ERR_SHAPE', `${candidates.length} candidate lists for ${questions.length} questions`);
  const per = options.batchQuestions ?? 8;
  if (!Number.isInteger(per) || per < 1) throw new QuorumError('ERR_RANGE', 'batchQuestions must be an integer >= 1');
  const out: RomAnswer[] = [];
  // Several questions per native call: one [rows, T] batch of every (question, passage) row.
  for (let s = 0; s < questions.length; s += per) {
    const qs = Array.from({ length: Math.min(per, questions.length - s) }, (_, i) => s + i);
    const pieces: PassagePieces[] = [];
    const questionOf: number[] = [];
    const first: number[] = [];
    qs.forEach((q, i) => {
      first.push(pieces.length);
      for (const h of candidates[q]!) {
        pieces.push(ctx.pieces(h.id));
        questionOf.push(i);
      }
    });
    const rows = pieces.length
      ? readerRows(ctx.tokenizer, qs.map((q) => ctx.tokenizer.ids(questions[q]!)), questionOf, pieces, {
          maxLength: ctx.text.readerLength,
          maxQuestion: ctx.text.maxQueryLength,
          markMatches: ctx.marksMatches,
        })
      : undefined;
    const logits = rows ? await ctx.read(rows.inputs) : undefined;
    qs.forEach((q, i) => {
      const list = candidates[q]!;
      if (!list.length || !rows || !logits) {
        out.push({ answer: '', passage: -1, passageScore: -Infinity, spanScore: -Infinity, retrievalScore: -Infinity });
        return;
      }
      const T = rows.inputs.seqLen;
      let best = first[i]!;
      for (let r = first[i]! + 1; r < first[i]! + list.length; r++) if (logits.relevance[r]! > logits.relevance[best]!) best = r;
      const span = bestSpans(logits.start, logits.end, { offset: best * T + rows.offset[best]!, length: rows.count[best]!, maxLength: ctx.text.maxAnswerLength })[0];
      const hit = list[best - first[i]!]!;
      out.push({
        answer: span ? spanText(pieces[best]!, span.start, span.end) : '',
        passage: hit.id,
        passageScore: logits.relevance[best]!,
        spanScore: span ? span.score : -Infinity,
        retrievalScore: hit.score,
      });
    });
  }
  return out;
}

/**
 * {@link RomModel.saveIndex}'s vectors for `passages` (the corpus they were built from, same ids in the same order)
 * of width `dim` (RomModel.loadIndex and RomServer). ERR_IO when missing, ERR_FORMAT when damaged or built from
 * another corpus.
 */
export function readRomIndex(dir: string, passages: readonly (PassageText & { id: string })[], dim: number): Tensor<'f32'> {
  mustBeArray(passages, 'passages');
  const { card: raw, path } = readSavedCard(dir, romIndexFormat);
  const card = checkCard(romIndexSchema, raw, path);
  if (card.ids.length !== passages.length || card.ids.some((id, i) => id !== passages[i]!.id))
    throw new QuorumError('ERR_FORMAT', `${dir} indexes another corpus (${card.ids.length} passages; rebuild it with \`quorum rom index\`)`);
  let tensors;
  try {
    tensors = readSafetensors(readFileSync(join(dir, 'vectors.safetensors')));
  } catch (e) {
    throw new QuorumError(e instanceof QuorumError ? 'ERR_FORMAT' : 'ERR_IO', `${dir}/vectors.safetensors: ${(e as Error).message}`, { cause: e });
  }
  const v = tensors.get('vectors');
  if (!v || v.shape.length !== 2 || v.shape[0] !== passages.length || v.shape[1] !== dim)
    throw new QuorumError('ERR_FORMAT', `${dir}/vectors.safetensors does not hold [${passages.length}, ${dim}] vectors`);
  return Tensor.from(v.data, [passages.length, dim], 'f32');
}

/**
 * Writes a ROM index directory: the passage vectors `[ids.length, dim]` (row i is ids[i]) and the card naming the ids,
 * swapped in whole (RomModel.saveIndex, updateRomIndex).
 */
export function writeRomIndex(dir: string, ids: readonly string[], vectors: Float32Array, dim: number): void {
  if (vectors.length !== ids.length * dim) throw new QuorumError('ERR_SHAPE', `${vectors.length / dim} vectors for ${ids.length} ids`);
  replaceDirectorySync(
    dir,
    (tmp) => {
      writeFileAtomic(join(tmp, 'vectors.safetensors'), writeSafetensors({ vectors: { shape: [ids.length, dim], data: vectors } }, { format: romFormat.format }));
      writeSavedCard(tmp, romIndexFormat, { ids }, 0);
    },
    { keepOthers: true },
  );
}

/** {@link RomModel.save}'s rom.json, checked (RomModel.load and RomServer). ERR_IO / ERR_FORMAT. */
export function readRomCard(dir: string): { card: RomCard; path: string } {
  const { card: raw, path } = readSavedCard<RomCard>(dir, romFormat);
  return { card: checkCard(romCardSchema, raw, path) as RomCard, path };
}

// `instanceof RomModel` holds for the other package copy's instances too (ESM and CommonJS in one process: lib/brand.ts).
brandClass(RomModel, 'RomModel');
