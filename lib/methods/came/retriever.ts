// CAME end to end (Cai et al.; docs/methods/fusion.md#came-fusion, docs/methods/came.md#competitive-learning): the
// model (one joint three-expert model, or one model per expert
// for independently trained experts), its tokenizer and text settings, an index per expert over the corpus (lexical:
// SparseIndex of SPLADE weights; local: token vectors in faiss, then exact MaxSim; global: DenseIndex), and fused
// search. One directory holds it: came.json, vocab.txt, tokenizer.json and one weights file per model.

import { join } from 'node:path';

import { checkKeptRows } from '../../data/corpus-change.js';
import { replaceDirectory, replaceDirectorySync, writeFileAtomic } from '../../data/files.js';
import { DenseIndex } from '../../dense-index.js';
import { QuorumError } from '../../errors.js';
import { SparseIndex } from '../../sparse-index.js';
import { Tensor } from '../../tensor.js';
import { WordPieceTokenizer } from '../../text/tokenizer.js';
import { readTokenizerFiles, writeTokenizerFiles } from '../../text/tokenizer-files.js';
import type { PassageText } from '../../data/examples.js';
import { savedFile } from '../../io/saved-dir.js';
import { readWeights, writeWeights, type WeightStorage } from '../../models/model-dir.js';
import { TokenTable } from '../../models/token-table.js';
import { checkOptions, mustBeArray, mustBeObject, optionKeys } from '../../validate.js';
import { type CameEncoding } from './encode.js';
import { type LinearFusion } from './fusion.js';
import { CameModel, cameConfig, type CameModelOptions } from './model.js';
import {
  CAME_PASSAGE_TERMS,
  CAME_QUERY_TERMS,
  cameFormat,
  cameIndexFormat,
  readCameCard,
  writeCameCard,
  writeCameIndexCard,
  type CameCard,
  type CameExpertName,
  type CameTextSettings,
} from './format.js';
import {
  cameExperts,
  cameIndexDims,
  searchCame,
  disposeCameIndexes,
  encodeCameModels,
  readCameIndex,
  type CameIndexes,
  type CameModelsEncodeOptions,
  type CameSearchOptions,
  type CameSearchResult,
} from './search.js';
import { TokenIndex, type TokenIndexOptions } from './token-index.js';

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

const createKeys = optionKeys<CameRetrieverOptions>()(['tokenizer', 'model', 'independent', 'text']);
const textKeys = optionKeys<CameTextSettings>()(['maxQueryLength', 'maxPassageLength']);
const encodeKeys = optionKeys<CameModelsEncodeOptions>()(['rows', 'maxTerms', 'experts', 'onProgress']);
const indexKeys = optionKeys<CameIndexOptions>()(['passageTerms', 'queryTerms', 'tokens', 'onProgress']);
const saveKeys = optionKeys<{ dtype?: WeightStorage }>()(['dtype']);

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
      throw new QuorumError(
        'ERR_SHAPE',
        `vocabSize ${base.encoder.vocabSize} differs from the tokenizer's ${options.tokenizer.size} tokens`,
      );
    const models = options.independent
      ? base.experts.map((e) => CameModel.fromConfig({ ...base, experts: [e] }))
      : [CameModel.fromConfig(base)];
    const text = { maxQueryLength: 32, maxPassageLength: 192, ...options.text };
    for (const [k, v] of Object.entries(text))
      if (!Number.isInteger(v) || v < 2 || v > base.encoder.maxPositions)
        throw new QuorumError('ERR_RANGE', `${k} must be an integer in [2, maxPositions], got ${v}`);
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
  async encode(table: TokenTable, side: 'query' | 'passage', options: CameModelsEncodeOptions = {}): Promise<CameEncoding> {
    checkOptions(options, encodeKeys, 'CAME encode options');
    return encodeCameModels(this.models, table, side, options);
  }

  /** Encodes the corpus and builds each expert's index (row i of `passages` is id i). */
  async index(passages: readonly PassageText[], options: CameIndexOptions = {}): Promise<void> {
    mustBeArray(passages, 'passages');
    checkOptions(options, indexKeys, 'CAME index options');
    if (!passages.length) throw new QuorumError('ERR_ARG', 'the corpus is empty');
    const table = await this.passageTable(passages);
    const enc = await this.encode(table, 'passage', {
      maxTerms: options.passageTerms ?? CAME_PASSAGE_TERMS,
      onProgress: options.onProgress,
    });
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
    if (bad >= 0)
      throw new QuorumError('ERR_ARG', `ids[${bad}] must be a non-empty string without line breaks, got ${JSON.stringify(ids[bad])}`);
    await replaceDirectory(
      dir,
      async (tmp) => {
        if (ix.lexical) await ix.lexical.save(join(tmp, 'lexical.sparse'));
        if (ix.global) await ix.global.save(join(tmp, 'global.faiss'));
        if (ix.local) await ix.local.save(join(tmp, 'local'));
        writeCameIndexCard(tmp, { size: ix.size, queryTerms: ix.queryTerms, passageTerms: ix.passageTerms, experts: this.experts });
        writeFileAtomic(join(tmp, 'ids.txt'), Buffer.from(ids.join('\n') + '\n'));
      },
      { keepOthers: true, kind: cameIndexFormat },
    );
  }

  /** Loads {@link saveIndex}'s directory; returns the corpus ids. ERR_IO when missing, ERR_FORMAT when damaged. */
  async loadIndex(dir: string): Promise<string[]> {
    const { ids, indexes } = await readCameIndex(dir, this.experts, cameIndexDims(this.models));
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
        next.lexical.relabel(
          keep,
          Array.from(keep, (_, i) => i),
        );
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
        await next.global.add(
          all,
          Array.from({ length: size }, (_, i) => i),
        );
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
    return searchCame(this.indexes, this.experts, questions, options, {
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
    replaceDirectorySync(dir, (tmp) => this.writeFiles(tmp, options.dtype ?? 'F32'), { keepOthers: true, kind: cameFormat });
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
    writeCameCard(dir, card);
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
        if (e instanceof QuorumError && e.code !== 'ERR_BACKEND_UNAVAILABLE')
          throw new QuorumError('ERR_FORMAT', `${path}: bad configuration: ${e.message}`, { cause: e });
        throw e;
      }
      if (m.config.encoder.vocabSize !== tokenizer.size)
        throw new QuorumError('ERR_FORMAT', `${dir}: vocab.txt has ${tokenizer.size} tokens, the model ${m.config.encoder.vocabSize}`);
      readWeights(model, weights, 'any', cameFormat.format);
      return model;
    });
    const r = new CameRetriever(tokenizer, models, card.independent === true, card.text);
    if (card.linear) r.linear = card.linear;
    if (card.training) r.training = card.training;
    return r;
  }
}
