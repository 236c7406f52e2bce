// ROM search and open-domain QA without libtorch (docs/methods/rom.md#serving): the retrieval side as a graph in
// onnxruntime-node (romOnnx's `retrieval`; a separate bi-encoder through ServingEncoder), the saved index searched by
// the core's scoreTopK, and the reader graph (romOnnx's `reader`) over the same reader rows and span search as
// RomModel.read (readCandidates). The same hits and answers as RomModel with the same index.
import { join } from 'node:path';

import type { PassageText } from '../../data/examples.js';
import { scoreTopK } from '../../dense.js';
import { QuorumError } from '../../errors.js';
import { AsyncLifetime } from '../../native-resource.js';
import { checkK } from '../../search-request.js';
import { savedFile } from '../../io/saved-dir.js';
import { parameterSource, readWeightFile } from '../../models/model-dir.js';
import { romOnnx } from '../../models/onnx-export.js';
import { ServingEncoder, onnxRuntime, runTokenGraph, servingSessionOptions, type OrtSession } from '../../models/serving-encoder.js';
import { TokenTable } from '../../models/token-table.js';
import { Tensor } from '../../tensor.js';
import { WordPieceTokenizer } from '../../text/tokenizer.js';
import { readTokenizerFiles } from '../../text/tokenizer-files.js';
import { checkOptions, mustBeArray, mustBeObject, mustBeString, optionKeys } from '../../validate.js';
import { readRomCard, romFormat, readRomIndex, romMarksMatches, type RomConfig, type RomTextSettings } from './format.js';
import { readCandidates, type RomAnswer } from './reading.js';
import { passagePieces, type PassagePieces } from './reader-inputs.js';

const loadKeys = optionKeys<{ passages: unknown; index?: string; threads?: number }>()(['passages', 'index', 'threads']);
const kKeys = optionKeys<{ k?: number }>()(['k']);
// Questions per retrieval graph run.
const CHUNK = 64;

/** A network's parameters from its weights file, for the graph builder. */
function parametersOf(path: string): { getParameter(name: string): Float32Array } {
  return parameterSource(readWeightFile(path, romFormat.format), path);
}

/**
 * A saved ROM directory and its saved index (`quorum rom index`) served without libtorch: onnxruntime-node (an
 * optional peer dependency) runs the retrieval encoder and the reader, the prebuilt core the search.
 *
 * @example
 * const rom = await RomServer.load('rom/', { passages: corpus });   // the corpus the index was built from
 * const [a] = await rom.answer(['how many brotherhoods are in the Armenian church?']);
 * a.answer;
 */
export class RomServer {
  // Calls in flight hold the sessions; dispose waits for them, and later calls are ERR_DISPOSED (native-resource.ts).
  readonly #life = new AsyncLifetime('this RomServer', () => this.releaseAll());

  private readonly pieces = new Map<number, PassagePieces>();

  private constructor(
    private readonly tokenizer: WordPieceTokenizer,
    private readonly text: RomTextSettings,
    private readonly config: RomConfig,
    private readonly retrieval: { kind: 'graph'; session: OrtSession } | { kind: 'encoder'; encoder: ServingEncoder },
    private readonly reader: OrtSession,
    private readonly passages: readonly PassageText[],
    private readonly vectors: Tensor<'f32'>,
  ) {}

  /**
   * Reads the ROM directory (rom.json, tokenizer files, weights, a separate retrieval side) and its index (default
   * DIR/index) for `passages`, and opens the ONNX Runtime sessions. ERR_IO / ERR_FORMAT for missing or damaged files
   * or an index of another corpus, ERR_BACKEND_UNAVAILABLE without onnxruntime-node.
   */
  static async load(
    dir: string,
    options: { passages: readonly (PassageText & { id: string })[]; index?: string; threads?: number },
  ): Promise<RomServer> {
    mustBeString(dir, 'ROM directory');
    mustBeObject(options, 'RomServer options');
    checkOptions(options, loadKeys, 'RomServer options');
    mustBeArray(options.passages, 'passages');
    const indexDir = options.index ?? join(dir, 'index');
    mustBeString(indexDir, 'index directory');
    const { card, path } = readRomCard(dir);
    const ort = onnxRuntime();
    const tokenizer = await readTokenizerFiles(dir);
    if (card.config.encoder?.vocabSize !== tokenizer.size)
      throw new QuorumError('ERR_FORMAT', `${path}: vocab.txt has ${tokenizer.size} tokens, the network ${card.config.encoder?.vocabSize}`);
    const opts = servingSessionOptions(options.threads);
    const open: OrtSession[] = [];
    let encoder: ServingEncoder | undefined;
    try {
      const network = parametersOf(savedFile(dir, card.weights, path, 'weights'));
      const reader = await ort.InferenceSession.create(romOnnx(network, card.config, 'reader'), opts);
      open.push(reader);
      let retrieval: { kind: 'graph'; session: OrtSession } | { kind: 'encoder'; encoder: ServingEncoder };
      let dim: number;
      const r = card.retrieval;
      if (r?.kind === 'retriever') {
        encoder = await ServingEncoder.load(join(dir, r.dir), options.threads ? { threads: options.threads } : {});
        retrieval = { kind: 'encoder', encoder };
        dim = encoder.dim;
      } else {
        const side =
          r?.kind === 'rom'
            ? { params: parametersOf(savedFile(dir, r.weights, path, 'retrieval')), config: r.config }
            : { params: network, config: card.config };
        const session = await ort.InferenceSession.create(romOnnx(side.params, side.config, 'retrieval'), opts);
        open.push(session);
        retrieval = { kind: 'graph', session };
        dim = side.config.headDim > 0 ? side.config.headDim : side.config.encoder.hiddenSize;
      }
      const vectors = readRomIndex(indexDir, options.passages, dim);
      return new RomServer(tokenizer, card.text, card.config, retrieval, reader, options.passages, vectors);
    } catch (e) {
      for (const s of open) await s.release();
      await encoder?.dispose();
      throw e;
    }
  }

  /** The top `k` corpus rows of each question by the retrieval side's dot product (default 20): as RomModel.search. */
  search(questions: readonly string[], options: { k?: number } = {}): Promise<Array<Array<{ id: number; score: number }>>> {
    return this.#life.use(() => this.searchNow(questions, options));
  }

  private async searchNow(
    questions: readonly string[],
    options: { k?: number } = {},
  ): Promise<Array<Array<{ id: number; score: number }>>> {
    checkOptions(options, kKeys, 'search options');
    mustBeArray(questions, 'questions');
    questions.forEach((q, i) => mustBeString(q, `questions[${i}]`));
    const k = checkK(options.k ?? 20);
    if (!questions.length) return [];
    const q = await this.encodeQuestions(questions);
    const top = await scoreTopK(
      Tensor.wrap(q, [questions.length, q.length / questions.length], 'f32'),
      this.vectors,
      Math.min(k, this.passages.length),
    );
    return questions.map((_, i) => top.hits(i));
  }

  /** Open-domain QA: retrieve the top `k` passages (default 10), read them, answer: as RomModel.answer. */
  answer(questions: readonly string[], options: { k?: number } = {}): Promise<RomAnswer[]> {
    return this.#life.use(() => this.answerNow(questions, options));
  }

  private async answerNow(questions: readonly string[], options: { k?: number } = {}): Promise<RomAnswer[]> {
    checkOptions(options, kKeys, 'answer options');
    const hits = await this.search(questions, { k: options.k ?? 10 });
    const reader = this.reader;
    return readCandidates(
      {
        tokenizer: this.tokenizer,
        text: this.text,
        marksMatches: romMarksMatches(this.config),
        pieces: (row) => {
          let p = this.pieces.get(row);
          if (!p) this.pieces.set(row, (p = passagePieces(this.tokenizer, this.passages[row]!.text)));
          return p;
        },
        read: async (inputs) => {
          const o = await runTokenGraph(reader, inputs, ['start_logits', 'end_logits', 'relevance']);
          return { start: o.start_logits!, end: o.end_logits!, relevance: o.relevance! };
        },
      },
      questions,
      hits,
    );
  }

  /** Releases the sessions and the index. */
  dispose(): Promise<void> {
    return this.#life.dispose();
  }

  private async releaseAll(): Promise<void> {
    this.vectors.dispose();
    await this.reader.release();
    if (this.retrieval.kind === 'graph') await this.retrieval.session.release();
    else await this.retrieval.encoder.dispose();
  }

  /** The index's passage vectors `[passages, dim]`, row-major (a view: valid until dispose), and dim. */
  indexVectors(): { data: Float32Array; dim: number } {
    return { data: this.vectors.data as Float32Array, dim: this.vectors.shape[1]! };
  }

  /**
   * Passages as the index holds them: the retrieval side's passage vectors `[n, dim]`, as RomModel.index computes them
   * (updateRomIndex adds passages this way, without libtorch).
   */
  encodePassages(passages: readonly PassageText[]): Promise<Float32Array> {
    return this.#life.use(() => this.encodePassagesNow(passages));
  }

  private async encodePassagesNow(passages: readonly PassageText[]): Promise<Float32Array> {
    mustBeArray(passages, 'passages');
    passages.forEach((p, i) => mustBeObject(p, `passages[${i}]`));
    if (this.retrieval.kind === 'encoder') return this.retrieval.encoder.encodePassages(passages);
    return this.runRetrieval(await TokenTable.passages(this.tokenizer, passages, this.text.maxPassageLength), passages.length);
  }

  private async encodeQuestions(questions: readonly string[]): Promise<Float32Array> {
    if (this.retrieval.kind === 'encoder') return this.retrieval.encoder.encodeQueries(questions);
    return this.runRetrieval(await TokenTable.build(this.tokenizer, questions, { maxLength: this.text.maxQueryLength }), questions.length);
  }

  /** The retrieval graph over a token table's rows, CHUNK at a time. */
  private async runRetrieval(table: TokenTable, n: number): Promise<Float32Array> {
    if (this.retrieval.kind !== 'graph') throw new QuorumError('ERR_STATE', 'the retrieval side is a bi-encoder');
    const session = this.retrieval.session;
    const parts: Float32Array[] = [];
    for (let s = 0; s < n; s += CHUNK) {
      const rows = Array.from({ length: Math.min(CHUNK, n - s) }, (_, i) => s + i);
      parts.push((await runTokenGraph(session, table.batch(rows), ['embedding'])).embedding!);
    }
    const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}
