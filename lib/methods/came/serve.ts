// CAME search without libtorch (docs/methods/came.md#serving, docs/guides/bring-your-own-model.md#serving-without-libtorch):
// each model's three experts as one ONNX graph (cameOnnx, built in memory from the saved weights) in onnxruntime-node,
// the encodings cut and packed as CameRetriever's (encodeCame), then the saved indexes (SparseIndex, the token index's
// faiss + MaxSim, DenseIndex: the prebuilt core and faiss modules) and the fusion (searchCame). The same hits as
// CameRetriever.search with the same index.
import { join } from 'node:path';

import { QuorumError } from '../../errors.js';
import { AsyncLifetime } from '../../native-resource.js';
import { parameterSource, readWeightFile } from '../../models/model-dir.js';
import { cameOnnx } from '../../models/onnx-export.js';
import { onnxRuntime, runTokenGraph, servingSessionOptions, type OrtSession } from '../../models/serving-encoder.js';
import { TokenTable } from '../../models/token-table.js';
import { type TokenBatchArg } from '../../bindings/torch_addon.js';
import { savedFile } from '../../io/saved-dir.js';
import { WordPieceTokenizer } from '../../text/tokenizer.js';
import { readTokenizerFiles } from '../../text/tokenizer-files.js';
import { checkOptions, mustBeObject, mustBeString, optionKeys } from '../../validate.js';
import type { CameEncoderModel } from './encode.js';
import { cameFormat, readCameCard, type CameConfig, type CameEncoded, type CameExpertName, type CameTextSettings } from './format.js';
import {
  cameExperts,
  cameIndexDims,
  searchCame,
  disposeCameIndexes,
  encodeCameModels,
  int8GlobalIndex,
  readCameIndex,
  type CameIndexes,
  type CameSearchOptions,
  type CameSearchResult,
} from './search.js';
import type { LinearFusion } from './fusion.js';

/** One model's query-side graph in ONNX Runtime, read as encodeCame reads a CameModel. */
class OnnxCameModel implements CameEncoderModel {
  constructor(
    readonly config: CameConfig,
    private readonly session: OrtSession,
  ) {}

  get experts(): CameExpertName[] {
    return [...this.config.experts];
  }

  get globalDim(): number {
    return this.config.encoder.hiddenSize;
  }

  get vocabSize(): number {
    return this.config.encoder.vocabSize;
  }

  async encode(b: TokenBatchArg, side: 'query' | 'passage', experts: readonly CameExpertName[]): Promise<CameEncoded> {
    if (side !== 'query') throw new QuorumError('ERR_ARG', 'CameServer encodes questions only: the corpus comes from the saved index');
    const want = experts.filter((e) => this.config.experts.includes(e));
    return (await runTokenGraph(this.session, b, want)) as CameEncoded;
  }

  release(): Promise<void> {
    return this.session.release();
  }
}

const loadKeys = optionKeys<{ index?: string; threads?: number; global?: 'f32' | 'int8' }>()(['index', 'threads', 'global']);

/**
 * A saved CAME directory and its saved index served without libtorch: onnxruntime-node (an optional peer
 * dependency) runs the experts' encoders, the prebuilt core and faiss modules the indexes.
 *
 * @example
 * const came = await CameServer.load('came/');   // quorum came train, then quorum came index
 * const r = await came.search(['who wrote hamlet?'], { k: 10 });
 * r.fused[0].map((h) => came.ids[h.id]);
 */
export class CameServer {
  // Calls in flight hold the sessions; dispose waits for them, and later calls are ERR_DISPOSED (native-resource.ts).
  readonly #life = new AsyncLifetime('this CameServer', () => this.releaseAll());

  private constructor(
    private readonly models: OnnxCameModel[],
    private readonly tokenizer: WordPieceTokenizer,
    private readonly text: CameTextSettings,
    private readonly indexes: CameIndexes,
    /** The corpus ids: row i of every hit list is `ids[i]`. */
    readonly ids: readonly string[],
    private readonly linear: LinearFusion | undefined,
  ) {}

  /**
   * Reads the CAME directory (came.json, tokenizer files, weights) and the index directory (default DIR/index:
   * `quorum came index`, CameRetriever.saveIndex), and opens one ONNX Runtime session per model. ERR_IO / ERR_FORMAT for missing or
   * damaged files, ERR_BACKEND_UNAVAILABLE without onnxruntime-node. `global: 'int8'` holds the global expert's
   * passage vectors as int8 codes (a quarter of the memory; docs/methods/quantization.md).
   */
  static async load(dir: string, options: { index?: string; threads?: number; global?: 'f32' | 'int8' } = {}): Promise<CameServer> {
    mustBeString(dir, 'CAME directory');
    mustBeObject(options, 'CameServer options');
    checkOptions(options, loadKeys, 'CameServer options');
    if (options.global !== undefined && options.global !== 'f32' && options.global !== 'int8')
      throw new QuorumError('ERR_ARG', `global must be 'f32' or 'int8', got ${JSON.stringify(options.global)}`);
    const indexDir = options.index ?? join(dir, 'index');
    mustBeString(indexDir, 'index directory');
    const { card, path } = readCameCard(dir);
    const ort = onnxRuntime();
    const tokenizer = await readTokenizerFiles(dir);
    const models: OnnxCameModel[] = [];
    try {
      for (const m of card.models) {
        if (m.config.encoder?.vocabSize !== tokenizer.size)
          throw new QuorumError('ERR_FORMAT', `${dir}: vocab.txt has ${tokenizer.size} tokens, the model ${m.config.encoder?.vocabSize}`);
        const weightsPath = savedFile(dir, m.weights, path, 'model weights');
        const graph = cameOnnx(parameterSource(readWeightFile(weightsPath, cameFormat.format), weightsPath), m.config, 'query');
        models.push(new OnnxCameModel(m.config, await ort.InferenceSession.create(graph, servingSessionOptions(options.threads))));
      }
      const { ids, indexes } = await readCameIndex(indexDir, cameExperts(models), cameIndexDims(models));
      if (options.global === 'int8')
        try {
          await int8GlobalIndex(indexes);
        } catch (e) {
          disposeCameIndexes(indexes);
          throw e;
        }
      return new CameServer(models, tokenizer, card.text, indexes, ids, card.linear);
    } catch (e) {
      for (const m of models) await m.release();
      throw e;
    }
  }

  /** The experts, in lexical, local, global order. */
  get experts(): CameExpertName[] {
    return cameExperts(this.models);
  }

  /** Each expert's top-expertK over the indexed corpus, fused per question: as CameRetriever.search. */
  search(questions: readonly string[], options: CameSearchOptions = {}): Promise<CameSearchResult> {
    return this.#life.use(() => this.searchNow(questions, options));
  }

  private async searchNow(questions: readonly string[], options: CameSearchOptions = {}): Promise<CameSearchResult> {
    return searchCame(this.indexes, this.experts, questions, options, {
      encode: async (qs, experts, maxTerms) =>
        encodeCameModels(this.models, await TokenTable.build(this.tokenizer, qs, { maxLength: this.text.maxQueryLength }), 'query', {
          experts,
          maxTerms,
        }),
      ...(this.linear ? { linear: this.linear } : {}),
    });
  }

  /** Releases the sessions and the indexes. */
  dispose(): Promise<void> {
    return this.#life.dispose();
  }

  private async releaseAll(): Promise<void> {
    for (const m of this.models) await m.release();
    disposeCameIndexes(this.indexes);
  }
}
