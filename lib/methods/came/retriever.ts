// CAME end to end (Cai et al.; docs/methods/fusion.md#came-fusion, docs/methods/came.md#competitive-learning): the model (one joint three-expert model, or one model per expert
// for independently trained experts), its tokenizer and text settings, an index per expert over the corpus (lexical:
// SparseIndex of SPLADE weights; local: token vectors in faiss, then exact MaxSim; global: DenseIndex), and fused
// search. One directory holds it: came.json, vocab.txt, tokenizer.json and one weights file per model.

import { join } from 'node:path';

import { checkKeptRows } from '../../data/corpus-change.js';
import { replaceDirectory, replaceDirectorySync, readTextFile, writeFileAtomic } from '../../data/files.js';
import { DenseIndex } from '../../dense-index.js';
import { QuorumError } from '../../errors.js';
import { SparseIndex } from '../../sparse-index.js';
import { Tensor } from '../../tensor.js';
import { WordPieceTokenizer } from '../../text/tokenizer.js';
import { readTokenizerFiles, writeTokenizerFiles } from '../../text/tokenizer-files.js';
import type { PassageText } from '../../data/examples.js';
import { checkCard, readSavedCard, savedFile, writeSavedCard, type SavedFormat } from '../../io/saved-dir.js';
import { readWeights, writeWeights, type WeightStorage } from '../../models/model-dir.js';
import { encoderConfigSchema } from '../../models/config.js';
import { TokenTable } from '../../models/token-table.js';
import { checkOptions, count, finite, mustBeArray, mustBeObject, optionKeys, positiveInt, z } from '../../validate.js';
import { encodeCame, type CameEncoderModel, type CameEncoding } from './encode.js';
import { CAME_FUSIONS, type CameFusion, type Hit, type LinearFusion } from './fusion.js';
import { searchStage } from './stage.js';
import { CAME_EXPERTS, CameModel, cameConfig, type CameConfig, type CameExpertName, type CameModelOptions } from './model.js';
import { TokenIndex, ascendingRows, type TokenIndexOptions, type TokenSearchOptions } from './token-index.js';

/** SPLADE weights kept per passage (the largest): what the lexical index holds. */
export const CAME_PASSAGE_TERMS = 256;
/** SPLADE weights kept per question (the largest). */
export const CAME_QUERY_TERMS = 64;

const cameFormat = { card: 'came.json', format: 'quorum-came', version: 1, what: 'a CAME directory' } as const satisfies SavedFormat;
const cameIndexFormat = { card: 'index.json', format: 'quorum-came-index', version: 1, what: 'a CAME index' } as const satisfies SavedFormat;

const expertList = z
  .array(z.enum(CAME_EXPERTS as [CameExpertName, ...CameExpertName[]]))
  .min(1)
  .refine((e) => new Set(e).size === e.length, 'an expert is listed twice');

// came.json and index.json, every field (issue 48: a string bias made the fused scores strings).
const cameCardSchema = z
  .object({
    format: z.literal(cameFormat.format),
    version: z.literal(cameFormat.version),
    independent: z.boolean(),
    models: z
      .array(
        z
          .object({
            config: z.object({ encoder: encoderConfigSchema, expertLayers: count, experts: expertList, localDim: positiveInt, referenceOps: z.boolean().optional() }).strict(),
            weights: z.string(),
          })
          .strict(),
      )
      .min(1)
      .refine((m) => new Set(m.flatMap((x) => x.config.experts)).size === m.reduce((a, x) => a + x.config.experts.length, 0), 'two models hold one expert'),
    text: z.object({ maxQueryLength: positiveInt, maxPassageLength: positiveInt }).strict(),
    linear: z.object({ weights: z.array(finite), bias: finite }).strict().optional(),
    training: z.record(z.unknown()).optional(),
  })
  .strict()
  // The linear layer weighs every expert the models hold, in order: a wrong count would misread them (issue 48).
  .refine((c) => !c.linear || c.linear.weights.length === c.models.reduce((a, m) => a + m.config.experts.length, 0), {
    message: 'the linear layer needs one weight per expert',
    path: ['linear', 'weights'],
  });
const cameIndexSchema = z
  .object({
    format: z.literal(cameIndexFormat.format),
    version: z.literal(cameIndexFormat.version),
    size: positiveInt,
    queryTerms: positiveInt,
    passageTerms: positiveInt.optional(),
    experts: expertList,
  })
  .strict();

/** How texts are cut before encoding (came.json stores them). */
export interface CameTextSettings {
  /** Tokens per question, framing included (default 32). */
  maxQueryLength: number;
  /** Tokens per passage, title and framing included (default 192). */
  maxPassageLength: number;
}

/** Options of {@link CameRetriever.create}. */
export interface CameRetrieverOptions {
  /** The tokenizer; its size sets the vocabulary (and so the lexical expert's width). */
  tokenizer: WordPieceTokenizer;
  /** Model fields to override (see {@link cameConfig}). */
  model?: CameModelOptions;
  /** One model per expert (CAME's "independently trained" baseline) instead of one joint model. */
  independent?: boolean;
  /** Question and passage lengths (defaults 32 and 192 tokens). */
  text?: Partial<CameTextSettings>;
}

/** Options of {@link CameRetriever.index}. */
export interface CameIndexOptions {
  /** SPLADE terms kept per passage, the largest weights (default 256). */
  passageTerms?: number;
  /** SPLADE terms kept per question at search time (default 64). */
  queryTerms?: number;
  /** The local expert's token index (faiss factory, nprobe). */
  tokens?: TokenIndexOptions;
  /** Called after each encoded batch with the passages done so far. */
  onProgress?: (done: number, total: number) => void;
}

/** Options of {@link CameRetriever.search}. */
export interface CameSearchOptions {
  /** Fused results per question (default 100). */
  k?: number;
  /** Results each expert retrieves, K in the paper's filling rule (default 100). */
  expertK?: number;
  /** How the experts' lists are fused (default `'sum'`; see {@link CAME_FUSIONS}). */
  fusion?: CameFusion;
  /** The experts to fuse (default all the retriever has): for ablations. */
  experts?: readonly CameExpertName[];
  /**
   * The local expert: passages re-scored exactly by MaxSim after the centroid approximation (default 256), or 'all'
   * (exact MaxSim over every passage). {@link TokenSearchOptions.candidates}.
   */
  localCandidates?: number | 'all';
  /** The local expert: centroids per question token whose passages are approximated (default 4; 0: every passage). */
  localProbe?: number;
  /**
   * A filter inside the search: only these corpus rows (as compileFilter gives them) can be returned, by every
   * expert (SparseIndex / DenseIndex allowed ids, the token index's candidates), so the fusion sees them only.
   */
  rows?: ArrayLike<number>;
}

/** What {@link CameRetriever.search} returns. */
export interface CameSearchResult {
  /** Per question, the fused top-k (ids are corpus rows). */
  fused: Hit[][];
  /** Per expert, per question, its own top-expertK. */
  experts: Partial<Record<CameExpertName, Hit[][]>>;
  /** Milliseconds per stage: encode (all experts), each expert's search, fuse. */
  timings: Record<string, number>;
}

const createKeys = optionKeys<CameRetrieverOptions>()(['tokenizer', 'model', 'independent', 'text']);
const textKeys = optionKeys<CameTextSettings>()(['maxQueryLength', 'maxPassageLength']);
const encodeKeys = optionKeys<NonNullable<Parameters<CameRetriever['encode']>[2]>>()(['rows', 'maxTerms', 'experts', 'onProgress']);
const indexKeys = optionKeys<CameIndexOptions>()(['passageTerms', 'queryTerms', 'tokens', 'onProgress']);
const searchKeys = optionKeys<CameSearchOptions>()(['k', 'expertK', 'fusion', 'experts', 'localCandidates', 'localProbe', 'rows']);
const saveKeys = optionKeys<{ dtype?: WeightStorage }>()(['dtype']);

/** came.json. */
export interface CameCard {
  format: typeof cameFormat.format;
  version: typeof cameFormat.version;
  independent: boolean;
  models: Array<{ config: CameConfig; weights: string }>;
  text: CameTextSettings;
  linear?: LinearFusion;
  training?: Record<string, unknown>;
}


/**
 * CAME: train (see trainCame), index a corpus, search with one of the six fusions; save and load as a directory.
 *
 * @example
 * const came = CameRetriever.create({ tokenizer, model: { encoder: { vocabSize: tokenizer.size } } });
 * await trainCame(came, { passages, train, dev }, { epochs: 3 });
 * await came.index(passages);
 * const { fused } = await came.search(['what is covid?'], { k: 10 });
 * came.save('models/came');
 */
export class CameRetriever {
  /** The tokenizer the models were trained with. */
  readonly tokenizer: WordPieceTokenizer;
  /** One joint model, or one model per expert (independent). */
  readonly models: CameModel[];
  /** Whether each expert is its own model (CAME's independently trained baseline). */
  readonly independent: boolean;
  /** Question and passage lengths. */
  readonly text: CameTextSettings;
  /** The linear fusion layer, once fitted (fitLinearFusion on dev). */
  linear?: LinearFusion;
  /** Free-form training record (trainCame writes it). */
  training?: Record<string, unknown>;
  private indexes?: CameIndexes;

  private constructor(tokenizer: WordPieceTokenizer, models: CameModel[], independent: boolean, text: CameTextSettings) {
    this.tokenizer = tokenizer;
    this.models = models;
    this.independent = independent;
    this.text = text;
  }

  /**
   * A new, untrained retriever. ERR_ARG without a tokenizer, ERR_SHAPE if vocabSize disagrees with it, ERR_RANGE for
   * lengths outside [2, maxPositions].
   */
  static create(options: CameRetrieverOptions): CameRetriever {
    mustBeObject(options, 'CAME options');
    checkOptions(options, createKeys, 'CAME options');
    checkOptions(options.text, textKeys, 'CAME options text');
    if (!(options.tokenizer instanceof WordPieceTokenizer)) throw new QuorumError('ERR_ARG', 'CAME needs a WordPieceTokenizer');
    const base = cameConfig({ ...options.model, encoder: { vocabSize: options.tokenizer.size, ...options.model?.encoder } });
    if (base.encoder.vocabSize !== options.tokenizer.size)
      throw new QuorumError('ERR_SHAPE', `vocabSize ${base.encoder.vocabSize} differs from the tokenizer's ${options.tokenizer.size} tokens`);
    const models = options.independent
      ? base.experts.map((e) => CameModel.fromConfig({ ...base, experts: [e] }))
      : [CameModel.fromConfig(base)];
    const text = { maxQueryLength: 32, maxPassageLength: 192, ...options.text };
    for (const [k, v] of Object.entries(text))
      if (!Number.isInteger(v) || v < 2 || v > base.encoder.maxPositions) throw new QuorumError('ERR_RANGE', `${k} must be an integer in [2, maxPositions], got ${v}`);
    return new CameRetriever(options.tokenizer, models, options.independent === true, text);
  }

  /** The experts, in lexical, local, global order. */
  get experts(): CameExpertName[] {
    return cameExperts(this.models);
  }

  /** The model holding expert `e`. */
  modelOf(e: CameExpertName): CameModel {
    const m = this.models.find((x) => x.config.experts.includes(e));
    if (!m) throw new QuorumError('ERR_ARG', `this CAME retriever has no ${e} expert`);
    return m;
  }

  /** Parameters of every model together. */
  get parameterCount(): number {
    return this.models.reduce((a, m) => a + m.parameterCount, 0);
  }

  /** Questions as token rows (no task markers: CAME's experts are task-agnostic). */
  questionTable(questions: readonly string[]): Promise<TokenTable> {
    return TokenTable.build(this.tokenizer, questions, { maxLength: this.text.maxQueryLength });
  }

  /** Passages as token rows (title and text as a pair). */
  passageTable(passages: readonly PassageText[]): Promise<TokenTable> {
    return TokenTable.passages(this.tokenizer, passages, this.text.maxPassageLength);
  }

  /** Every expert's encoding of rows of a table, each from its own model (one pass per model). */
  async encode(table: TokenTable, side: 'query' | 'passage', options: { rows?: readonly number[]; maxTerms?: number; experts?: readonly CameExpertName[]; onProgress?: (d: number, t: number) => void } = {}): Promise<CameEncoding> {
    checkOptions(options, encodeKeys, 'CAME encode options');
    return encodeCameModels(this.models, table, side, options);
  }

  /** Encodes the corpus and builds each expert's index (row i of `passages` is id i). */
  async index(passages: readonly PassageText[], options: CameIndexOptions = {}): Promise<void> {
    mustBeArray(passages, 'passages');
    checkOptions(options, indexKeys, 'CAME index options');
    if (!passages.length) throw new QuorumError('ERR_ARG', 'the corpus is empty');
    const table = await this.passageTable(passages);
    const enc = await this.encode(table, 'passage', { maxTerms: options.passageTerms ?? CAME_PASSAGE_TERMS, onProgress: options.onProgress });
    const ids = Array.from({ length: passages.length }, (_, i) => i);
    const passageTerms = options.passageTerms ?? CAME_PASSAGE_TERMS;
    const indexes: CameIndexes = { size: passages.length, queryTerms: options.queryTerms ?? CAME_QUERY_TERMS, passageTerms };
    if (enc.lexical) {
      indexes.lexical = new SparseIndex();
      await indexes.lexical.add(ids, enc.lexical);
    }
    if (enc.local) indexes.local = await TokenIndex.build(enc.local, options.tokens);
    if (enc.global) {
      const G = enc.global.length / passages.length;
      indexes.global = DenseIndex.create({ dim: G });
      await indexes.global.add(Tensor.wrap(enc.global, [passages.length, G], 'f32'), ids);
    }
    this.indexes = indexes;
  }

  /**
   * Saves the indexes under `dir` with the corpus ids (`ids[i]` names row i), so that {@link loadIndex} serves
   * searches without encoding the corpus again. The directory is swapped in whole: a crash leaves the old index or
   * the new one.
   */
  async saveIndex(dir: string, ids: readonly string[]): Promise<void> {
    const ix = this.indexes;
    if (!ix) throw new QuorumError('ERR_STATE', 'index a corpus first (CameRetriever.index)');
    mustBeArray(ids, 'ids');
    if (ids.length !== ix.size) throw new QuorumError('ERR_SHAPE', `${ids.length} ids for ${ix.size} indexed passages`);
    // ids.txt holds one id per line: an id it cannot carry would shift every later row (issue 48).
    const bad = ids.findIndex((id) => typeof id !== 'string' || id === '' || /[\r\n]/.test(id));
    if (bad >= 0) throw new QuorumError('ERR_ARG', `ids[${bad}] must be a non-empty string without line breaks, got ${JSON.stringify(ids[bad])}`);
    await replaceDirectory(dir, async (tmp) => {
      if (ix.lexical) await ix.lexical.save(join(tmp, 'lexical.sparse'));
      if (ix.global) await ix.global.save(join(tmp, 'global.faiss'));
      if (ix.local) await ix.local.save(join(tmp, 'local'));
      writeSavedCard(tmp, cameIndexFormat, { size: ix.size, queryTerms: ix.queryTerms, passageTerms: ix.passageTerms, experts: this.experts }, 0);
      writeFileAtomic(join(tmp, 'ids.txt'), Buffer.from(ids.join('\n') + '\n'));
    }, { keepOthers: true });
  }

  /** Loads {@link saveIndex}'s directory; returns the corpus ids. ERR_IO when missing, ERR_FORMAT when damaged. */
  async loadIndex(dir: string): Promise<string[]> {
    const { ids, indexes } = await readCameIndex(dir, this.experts);
    this.indexes = indexes;
    return ids;
  }

  /**
   * Changes the indexed corpus without retraining (docs/methods/came.md#changing-the-corpus): keeps the passages at
   * rows `keep` (ascending, distinct), renumbered 0, 1, ... in that order, and appends `add`, each encoded by the
   * experts. The lexical postings of the kept rows are relabelled, the global vectors and the local token vectors
   * copied (the token index keeps its centroids). The new indexes replace the old ones at once: a search in flight
   * finishes on the old ones, which GC then frees.
   *
   * @example
   * await came.changeIndex(Int32Array.of(0, 2), [{ id: 'p9', title: 'Hamlet', text: 'A tragedy.' }]);   // rows 0, 2 -> 0, 1; p9 is row 2
   */
  async changeIndex(keep: Int32Array, add: readonly PassageText[]): Promise<void> {
    const ix = this.indexes;
    if (!ix) throw new QuorumError('ERR_STATE', 'index a corpus first (CameRetriever.index or loadIndex)');
    checkKeptRows(keep, ix.size);
    mustBeArray(add, 'add');
    const size = keep.length + add.length;
    if (!size) throw new QuorumError('ERR_ARG', 'a CAME index needs at least one passage');
    const enc = add.length ? await this.encode(await this.passageTable(add), 'passage', { maxTerms: ix.passageTerms }) : undefined;
    const added = Array.from({ length: add.length }, (_, i) => keep.length + i);
    const next: CameIndexes = { size, queryTerms: ix.queryTerms, passageTerms: ix.passageTerms };
    try {
      if (ix.lexical) {
        next.lexical = SparseIndex.fromBuffer(ix.lexical.toBuffer());
        const kept = new Set(keep);
        await next.lexical.remove(Array.from({ length: ix.size }, (_, r) => r).filter((r) => !kept.has(r)));
        next.lexical.relabel(keep, Array.from(keep, (_, i) => i));
        if (enc) await next.lexical.add(added, enc.lexical!);
      }
      if (ix.local) next.local = await ix.local.changed({ keep, ...(enc ? { add: enc.local! } : {}) });
      if (ix.global) {
        const G = ix.global.dim;
        const vectors = new Float32Array(size * G);
        if (keep.length) vectors.set(await ix.global.reconstruct(BigInt64Array.from(keep, BigInt)));
        if (enc) vectors.set(enc.global!, keep.length * G);
        const info = ix.global.info;
        next.global = DenseIndex.create({ dim: G, factory: info.factory, mips: info.mips });
        const all = Tensor.wrap(vectors, [size, G], 'f32');
        if (!next.global.info.trained) await next.global.train(all);
        await next.global.add(all, Array.from({ length: size }, (_, i) => i));
      }
    } catch (e) {
      disposeCameIndexes(next);
      throw e;
    }
    this.indexes = next;
  }

  /** Forgets the indexes (they hold the experts' encodings of the moment: training makes them stale). */
  dropIndex(): void {
    this.indexes = undefined;
  }

  /** Passages indexed (0 before {@link index}). */
  get indexed(): number {
    return this.indexes?.size ?? 0;
  }

  /**
   * Each expert's top-expertK over the whole corpus, fused per question.
   *
   * @example
   * const r = await came.search(['who wrote hamlet?'], { k: 10, fusion: 'sum' });
   * r.fused[0];            // [{ id, score }, ...]
   * r.experts.local![0];   // the local expert's own list
   */
  async search(questions: readonly string[], options: CameSearchOptions = {}): Promise<CameSearchResult> {
    return cameSearch(this.indexes, this.experts, questions, options, {
      encode: async (qs, experts, maxTerms) => this.encode(await this.questionTable(qs), 'query', { experts, maxTerms }),
      linear: this.linear,
    });
  }

  /**
   * Frees every model's and every index's native memory (each when its call in flight ends); any later use is
   * ERR_DISPOSED.
   */
  dispose(): void {
    for (const m of this.models) m.dispose();
    if (this.indexes) disposeCameIndexes(this.indexes);
  }

  /**
   * Writes the retriever as one directory: came.json, vocab.txt, tokenizer.json and model-<i>.safetensors per model (f32, bf16 or q8).
   * The indexes are not saved: `index` rebuilds them from the corpus.
   */
  save(dir: string, options: { dtype?: WeightStorage } = {}): void {
    checkOptions(options, saveKeys, 'CAME save options');
    replaceDirectorySync(dir, (tmp) => this.writeFiles(tmp, options.dtype ?? 'F32'), { keepOthers: true });
  }

  private writeFiles(dir: string, dtype: WeightStorage): void {
    const models = this.models.map((m, i) => {
      const weights = `model-${i}.safetensors`;
      writeWeights(m, join(dir, weights), dtype, cameFormat.format);
      return { config: m.config, weights };
    });
    writeTokenizerFiles(dir, this.tokenizer);
    const card: Omit<CameCard, 'format' | 'version'> = {
      independent: this.independent,
      models,
      text: this.text,
      ...(this.linear ? { linear: this.linear } : {}),
      ...(this.training ? { training: this.training } : {}),
    };
    writeSavedCard(dir, cameFormat, card);
  }

  /** Loads {@link save}'s directory. ERR_IO for a missing directory or file, ERR_FORMAT for another version or damage. */
  static async load(dir: string): Promise<CameRetriever> {
    const { card, path } = readCameCard(dir);
    const tokenizer = await readTokenizerFiles(dir);
    const models = card.models.map((m) => {
      const weights = savedFile(dir, m.weights, path, 'model weights');
      let model: CameModel;
      try {
        model = CameModel.fromConfig(m.config);
      } catch (e) {
        if (e instanceof QuorumError && e.code !== 'ERR_BACKEND_UNAVAILABLE') throw new QuorumError('ERR_FORMAT', `${path}: bad configuration: ${e.message}`, { cause: e });
        throw e;
      }
      if (m.config.encoder.vocabSize !== tokenizer.size) throw new QuorumError('ERR_FORMAT', `${dir}: vocab.txt has ${tokenizer.size} tokens, the model ${m.config.encoder.vocabSize}`);
      readWeights(model, weights);
      return model;
    });
    const r = new CameRetriever(tokenizer, models, card.independent === true, card.text);
    if (card.linear) r.linear = card.linear;
    if (card.training) r.training = card.training;
    return r;
  }
}

/** The indexes of a corpus, one per expert. */
export interface CameIndexes {
  size: number;
  /** Terms kept per passage by the lexical expert (what an added passage is encoded with). */
  passageTerms: number;
  lexical?: SparseIndex;
  local?: TokenIndex;
  global?: DenseIndex;
  queryTerms: number;
}

/**
 * Reads {@link CameRetriever.saveIndex}'s directory for a retriever with `experts` (CameRetriever.loadIndex and
 * CameServer): each expert's index and the corpus ids. ERR_IO when missing, ERR_FORMAT when damaged or made for
 * other experts.
 */
export async function readCameIndex(dir: string, experts: readonly CameExpertName[]): Promise<{ ids: string[]; indexes: CameIndexes }> {
  const { card: raw, path } = readSavedCard(dir, cameIndexFormat);
  const card = checkCard(cameIndexSchema, raw, path);
  // Indexes saved before passageTerms was recorded used the default.
  const passageTerms = card.passageTerms ?? CAME_PASSAGE_TERMS;
  if (JSON.stringify(card.experts) !== JSON.stringify(experts)) throw new QuorumError('ERR_FORMAT', `${path} indexes experts ${String(card.experts)}, this retriever has ${experts.join(',')}`);
  // One id per corpus row (CRLF accepted): a short or long file would name the wrong passages (issue 48).
  const lines = readTextFile(join(dir, 'ids.txt')).split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  if (lines.length !== card.size) throw new QuorumError('ERR_FORMAT', `${join(dir, 'ids.txt')}: ${lines.length} ids for the ${card.size} indexed passages`);
  const empty = lines.findIndex((id) => id === '');
  if (empty >= 0) throw new QuorumError('ERR_FORMAT', `${join(dir, 'ids.txt')}: line ${empty + 1} is an empty id`);
  const ids = lines;
  const ix: CameIndexes = { size: card.size, queryTerms: card.queryTerms, passageTerms };
  try {
    if (experts.includes('lexical')) ix.lexical = await SparseIndex.load(join(dir, 'lexical.sparse'));
    if (experts.includes('global')) ix.global = await DenseIndex.load(join(dir, 'global.faiss'));
    if (experts.includes('local')) ix.local = await TokenIndex.load(join(dir, 'local'));
    for (const [name, n] of [['lexical', ix.lexical?.size], ['global', ix.global?.size], ['local', ix.local?.size]] as const)
      if (n !== undefined && n !== ix.size) throw new QuorumError('ERR_FORMAT', `${dir}: the ${name} index holds ${n} passages, index.json ${ix.size}`);
  } catch (e) {
    disposeCameIndexes(ix);
    throw e;
  }
  return { ids, indexes: ix };
}

/** How {@link cameSearch} encodes questions and fuses linearly: the retriever's models or the serving graphs. */
export interface CameSearchBackend {
  /** The questions' encodings by `experts`, SPLADE rows cut to `maxTerms` terms. */
  encode(questions: readonly string[], experts: readonly CameExpertName[], maxTerms: number): Promise<CameEncoding>;
  /** The fitted linear fusion over every expert, if any. */
  linear?: LinearFusion;
}

/**
 * CAME's search over a corpus's indexes (CameRetriever.search and CameServer.search): each expert's top-expertK,
 * fused per question.
 */
export async function cameSearch(ix: CameIndexes | undefined, all: readonly CameExpertName[], questions: readonly string[], options: CameSearchOptions, backend: CameSearchBackend): Promise<CameSearchResult> {
  mustBeArray(questions, 'questions');
  checkOptions(options, searchKeys, 'CAME search options');
  if (!ix) throw new QuorumError('ERR_STATE', 'index a corpus first (CameRetriever.index)');
  const k = options.k ?? 100;
  const K = options.expertK ?? 100;
  const fusion = options.fusion ?? 'sum';
  if (!CAME_FUSIONS.includes(fusion)) throw new QuorumError('ERR_ARG', `fusion must be one of ${CAME_FUSIONS.join(', ')}, got '${String(fusion)}'`);
  const experts = options.experts ?? all;
  for (const e of experts) if (!all.includes(e)) throw new QuorumError('ERR_ARG', `this CAME retriever has no ${e} expert`);
  const rows = options.rows === undefined ? undefined : ascendingRows(options.rows, ix.size);
  let linear: LinearFusion | undefined;
  if (fusion === 'linear') {
    // The layer is fitted over every expert: restricted to the ones searched.
    if (!backend.linear) throw new QuorumError('ERR_STATE', 'linear fusion needs fitted weights (fitCameLinear on dev)');
    const fitted = backend.linear;
    linear = { weights: experts.map((e) => fitted.weights[all.indexOf(e)]!), bias: fitted.bias };
  }
  const t0 = performance.now();
  const enc = await backend.encode(questions, experts, ix.queryTerms);
  const encode = performance.now() - t0;
  const local = { ...(options.localCandidates !== undefined ? { candidates: options.localCandidates } : {}), ...(options.localProbe !== undefined ? { nprobe: options.localProbe } : {}) };
  const r = await searchStage(ix, experts, enc, questions.length, { k, expertK: K, fusion, local, ...(linear ? { linear } : {}), ...(rows ? { rows } : {}) });
  // The stage's own clock splits its time among the experts and the fusion.
  return { fused: r.fused, experts: r.experts, timings: { encode, ...r.ms } };
}

/** {@link CameRetriever.save}'s came.json, checked (CameRetriever.load and CameServer). ERR_IO / ERR_FORMAT. */
export function readCameCard(dir: string): { card: CameCard; path: string } {
  const { card: raw, path } = readSavedCard<CameCard>(dir, cameFormat);
  return { card: checkCard(cameCardSchema, raw, path) as CameCard, path };
}

/** Frees every index of a corpus (each when its call in flight ends). */
export function disposeCameIndexes(ix: CameIndexes): void {
  ix.lexical?.dispose();
  ix.local?.dispose();
  ix.global?.dispose();
}

/** The experts a set of models holds, in lexical, local, global order (CameRetriever and CameServer). */
export function cameExperts(models: ReadonlyArray<{ readonly config: { readonly experts: readonly CameExpertName[] } }>): CameExpertName[] {
  const have = new Set(models.flatMap((m) => m.config.experts));
  return CAME_EXPERTS.filter((e) => have.has(e));
}

/**
 * Every model's part of the asked-for experts (default all) over rows of a table, merged into one encoding: one pass
 * per model (CameRetriever.encode and CameServer).
 */
export async function encodeCameModels(
  models: readonly CameEncoderModel[],
  table: TokenTable,
  side: 'query' | 'passage',
  options: { rows?: readonly number[]; maxTerms?: number; experts?: readonly CameExpertName[]; onProgress?: (d: number, t: number) => void } = {},
): Promise<CameEncoding> {
  const want = options.experts ?? cameExperts(models);
  let out: CameEncoding = { rows: options.rows?.length ?? table.size };
  for (const m of models) {
    const experts = m.config.experts.filter((e) => want.includes(e));
    if (!experts.length) continue;
    const enc = await encodeCame(m, table, { side, experts, ...(options.rows ? { rows: options.rows } : {}), ...(options.maxTerms ? { maxTerms: options.maxTerms } : {}), ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
    out = { ...out, ...enc };
  }
  return out;
}
