// Serving a trained or pretrained encoder without libtorch: the weights file is read as plain arrays; a 0-layer
// encoder (the shipped model, GloVe-started experts) runs on the core's embeddingBag kernel (embedding-bag.ts) with nothing else
// needed, a Transformer encoder as ONNX graphs built in memory (onnx-export.ts) and run by onnxruntime-node, an
// optional peer dependency; the tokenizer is the core's. A server needs the prebuilt core (and, for Transformer
// encoders, onnxruntime-node): no compiler and no libtorch (docs/guides/bring-your-own-model.md#serving-without-libtorch).
import { createRequire } from 'node:module';

import { AsyncLifetime } from '../native-resource.js';
import { QuorumError } from '../errors.js';
import type { NativeTextsToEmbed } from '../bindings/embedding_bag_bindings.js';
import { readTokenizerFiles } from '../text/tokenizer-files.js';
import type { EncodedBatch, EncodeOptions, WordPieceTokenizer } from '../text/tokenizer.js';
import { passageTexts, type PassageText } from '../data/examples.js';
import { checkOptions, mustBeArray, mustBeObject, mustBeString, optionKeys } from '../validate.js';
import { retrieverEncoderNames, type RetrieverConfig } from './config.js';
import { retrieverGraphs } from './export.js';
import { isHfModelDir, mapPretrained, pretrainedText, readPretrained, type PretrainedOptions } from './hf.js';
import { EmbeddingBagEncoder, isEmbeddingBag } from './embedding-bag.js';
import {
  modelDir,
  parameterSource,
  queryTask,
  readModelCard,
  readModelParameters,
  type StoredHybrid,
  type TextSettings,
} from './model-dir.js';

/** @internal What ServingEncoder needs of onnxruntime-node (declared here so that the package's types do not need it). */
interface OrtTensor {
  data: unknown;
  dims: readonly number[];
}
/** @internal An ONNX Runtime session, as the serving path uses it. */
export interface OrtSession {
  run(feeds: Record<string, OrtTensor>, fetches?: string[]): Promise<Record<string, OrtTensor>>;
  release(): Promise<void>;
}
/** @internal The part of onnxruntime-node the serving path uses. */
interface Ort {
  InferenceSession: { create(model: Uint8Array, options?: Record<string, unknown>): Promise<OrtSession> };
  Tensor: new (type: 'int64' | 'float32', data: BigInt64Array | Float32Array, dims: readonly number[]) => OrtTensor;
}

let ortModule: Ort | undefined;

/**
 * ONNX Runtime session options for serving beside Quorum's own kernels: all graph optimizations, and intra-op threads
 * that sleep when idle. ORT's default spins its threads after each run, and on a small machine they then take the
 * cores from the next kernel call (measured on 2 cores: DPR-MUF search 29.9 ms with spinning, 9 ms without, where
 * the heads themselves take 2.7 ms).
 */
export function servingSessionOptions(threads?: number): Record<string, unknown> {
  checkThreads(threads);
  return {
    graphOptimizationLevel: 'all',
    ...(threads ? { intraOpNumThreads: threads } : {}),
    extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
  };
}

/** ERR_RANGE unless `threads` is left out or an integer from 1 to 1024 (ONNX Runtime would try to start 2^31 threads). */
function checkThreads(threads: unknown): void {
  if (threads !== undefined && (!Number.isInteger(threads) || (threads as number) < 1 || (threads as number) > 1024))
    throw new QuorumError('ERR_RANGE', `threads must be an integer from 1 to 1024, got ${String(threads)}`);
}

/** onnxruntime-node, loaded on first use; ERR_BACKEND_UNAVAILABLE with the install command when it is missing. */
export function onnxRuntime(): Ort {
  if (ortModule) return ortModule;
  try {
    ortModule = createRequire(import.meta.url)('onnxruntime-node') as Ort;
  } catch (e) {
    throw new QuorumError(
      'ERR_BACKEND_UNAVAILABLE',
      `onnxruntime-node is not installed (${(e as Error).message.split('\n')[0]}): npm install onnxruntime-node (ONNXRUNTIME_NODE_INSTALL=skip installs it offline, CPU only)`,
      { cause: e },
    );
  }
  return ortModule;
}

/** What a side's texts are tokenized with: the length limit, and the passages' texts or a question's task marker. */
type TextOptions = Pick<EncodeOptions, 'maxLength' | 'pairs' | 'marker'> & { maxLength: number };

/** One encoder of a side: ONNX Runtime on its graph, or the 0-layer forward. */
interface Runner {
  run(batch: Pick<EncodedBatch, 'ids' | 'typeIds' | 'lengths' | 'rows' | 'seqLen'>): Promise<Float32Array>;
  /** Tokenizes and encodes in one native call, where the runner can (the 0-layer forward). */
  texts?(tokenizer: WordPieceTokenizer, texts: readonly string[], options: TextOptions): Promise<Float32Array>;
  /** The same texts for a native call that embeds them in its own task (the 0-layer forward). */
  toEmbed?(tokenizer: WordPieceTokenizer, texts: readonly string[], options: TextOptions): NativeTextsToEmbed;
  release(): Promise<void>;
}

/**
 * Runs a graph with Hugging Face's token inputs (input_ids, attention_mask, token_type_ids, int64 [rows, seqLen]) on
 * a token batch and returns the asked-for float outputs: the encoders', CAME's and ROM's graphs (onnx-export.ts).
 */
export async function runTokenGraph(
  session: OrtSession,
  b: Pick<EncodedBatch, 'ids' | 'typeIds' | 'lengths' | 'rows' | 'seqLen'>,
  fetches: readonly string[],
): Promise<Record<string, Float32Array>> {
  const ort = onnxRuntime();
  const dims = [b.rows, b.seqLen];
  const mask = new BigInt64Array(b.rows * b.seqLen);
  for (let r = 0; r < b.rows; r++) mask.fill(1n, r * b.seqLen, r * b.seqLen + b.lengths[r]!);
  let out: Record<string, OrtTensor>;
  try {
    out = await session.run(
      {
        input_ids: new ort.Tensor('int64', BigInt64Array.from(b.ids, BigInt), dims),
        attention_mask: new ort.Tensor('int64', mask, dims),
        token_type_ids: new ort.Tensor('int64', BigInt64Array.from(b.typeIds, BigInt), dims),
      },
      [...fetches],
    );
  } catch (e) {
    // ONNX Runtime's own errors (a token id past the vocabulary, a released session) as one typed line.
    throw new QuorumError('ERR_NATIVE', `ONNX Runtime: ${String((e as Error)?.message ?? e).split('\n')[0]}`, { cause: e });
  }
  return Object.fromEntries(fetches.map((f) => [f, out[f]!.data as Float32Array]));
}

function ortRunner(session: OrtSession): Runner {
  return {
    run: async (b) => (await runTokenGraph(session, b, ['sentence_embedding'])).sentence_embedding!,
    release: () => session.release(),
  };
}

function bagRunner(bag: EmbeddingBagEncoder): Runner {
  return {
    run: (b) => bag.encode(b),
    texts: (tok, texts, o) => bag.encodeTexts(tok, texts, o),
    toEmbed: (tok, texts, o) => bag.textsToEmbed(tok, texts, o),
    release: async () => bag.dispose(),
  };
}

/** Options of {@link ServingEncoder.load}. */
export interface ServingEncoderOptions extends Omit<PretrainedOptions, 'sentenceTransformers'> {
  /** ONNX Runtime's intra-op threads (default: its own choice, one per core). */
  threads?: number;
}

const loadKeys = optionKeys<ServingEncoderOptions>()(['pooling', 'normalize', 'threads']);
const queryKeys = optionKeys<{ task?: string }>()(['task']);

// Rows per session.run: long enough to amortize the call, short enough that padding to the longest row stays small.
const CHUNK = 64;

/**
 * A retriever's encoders for serving, loaded from a model directory (Quorum's, `'default'`, or a Hugging Face
 * BERT-family one) without libtorch: 0-layer encoders as a plain forward (`backend` 'core'), Transformer encoders in
 * ONNX Runtime ('onnx-runtime'). The same vectors as `Retriever.load(dir).encodeQueries` to float rounding.
 *
 * @example
 * const enc = await ServingEncoder.load('default');
 * const q = await enc.encodeQueries(['who wrote hamlet?']);          // Float32Array [1, enc.dim]
 * const p = await enc.encodePassages([{ title: 'Hamlet', text: 'A tragedy by Shakespeare.' }]);
 */
export class ServingEncoder {
  private constructor(
    /** The retriever's configuration. */
    readonly config: RetrieverConfig,
    /** How texts become ids (lengths, task markers). */
    readonly text: TextSettings,
    /** The model's tokenizer. */
    readonly tokenizer: WordPieceTokenizer,
    /** Output width. */
    readonly dim: number,
    /** What computes the vectors: the 0-layer forward in this process ('core') or ONNX Runtime. */
    readonly backend: 'core' | 'onnx-runtime',
    private readonly sessions: { query: Runner; passage: Runner; tasks: Map<string, Runner> },
    /** The dense + BM25 hybrid's alpha `quorum train` tuned and stored in the model's card, if any. */
    readonly hybrid?: StoredHybrid,
  ) {}

  // Calls in flight hold the sessions; dispose waits for them, and later calls are ERR_DISPOSED.
  readonly #life = new AsyncLifetime('this ServingEncoder', async () => {
    const all = new Set([this.sessions.query, this.sessions.passage, ...this.sessions.tasks.values()]);
    for (const r of all) await r.release();
  });

  /**
   * Reads the directory; for a Transformer encoder builds its graphs and opens an ONNX Runtime session per graph.
   * ERR_IO / ERR_FORMAT as `Retriever.load`; ERR_BACKEND_UNAVAILABLE without onnxruntime-node where a Transformer
   * encoder needs it; ERR_ARG for an encoder the graph does not compute (windowed attention).
   */
  static async load(nameOrDir: string, options: ServingEncoderOptions = {}): Promise<ServingEncoder> {
    mustBeString(nameOrDir, 'model directory');
    mustBeObject(options, 'ServingEncoder options');
    checkOptions(options, loadKeys, 'ServingEncoder options');
    const { threads, ...pretrained } = options;
    checkThreads(threads);
    const dir = modelDir(nameOrDir);
    let config: RetrieverConfig;
    let text: TextSettings;
    let tokenizer: WordPieceTokenizer;
    let params: Map<string, Float32Array>;
    let hybrid: StoredHybrid | undefined;
    if (isHfModelDir(dir)) {
      const bert = readPretrained(dir, pretrained);
      config = { preset: 'siamese', encoder: bert.encoder, tasks: [], perTaskQueryEncoders: false };
      const mapped = mapPretrained(bert, bert.encoder, { strict: true });
      params = new Map([...mapped.tensors].map(([n, v]) => [`encoder.${n}`, v]));
      text = pretrainedText(bert);
      tokenizer = bert.tokenizer;
    } else {
      if (Object.keys(pretrained).length)
        throw new QuorumError('ERR_ARG', `${dir} is a Quorum model directory: its pooling and normalization are its own`);
      const card = readModelCard(dir);
      hybrid = card.hybrid;
      config = card.config;
      text = card.text;
      tokenizer = await readTokenizerFiles(dir);
      params = readModelParameters(dir, card);
    }
    const source = { config, encoderNames: () => retrieverEncoderNames(config), ...parameterSource(params, dir) };
    const e = config.encoder;
    const dim = e.projectionDim > 0 ? e.projectionDim : e.hiddenSize;
    if (isEmbeddingBag(e)) {
      // No runtime: one plain forward per encoder, named as the retriever names them.
      const runner = (name: string) => bagRunner(new EmbeddingBagEncoder(e, source.getParameter, name));
      const names = retrieverEncoderNames(config);
      const tasks = new Map(names.filter((n) => n.startsWith('query.')).map((n) => [n.slice('query.'.length), runner(n)]));
      const query = names.includes('query') ? runner('query') : names.includes('encoder') ? runner('encoder') : [...tasks.values()][0]!;
      return new ServingEncoder(
        config,
        text,
        tokenizer,
        dim,
        'core',
        { query, passage: names.includes('passage') ? runner('passage') : query, tasks },
        hybrid,
      );
    }
    const ort = onnxRuntime();
    const bytes = new Map<string, Uint8Array>();
    const graphs = retrieverGraphs(source, (file, make) => bytes.set(file, make()));
    const opts = servingSessionOptions(threads);
    const opened = new Map<string, Runner>();
    const session = async (file: string) => {
      if (!opened.has(file)) opened.set(file, ortRunner(await ort.InferenceSession.create(bytes.get(file)!, opts)));
      return opened.get(file)!;
    };
    const tasks = new Map<string, Runner>();
    for (const [t, f] of Object.entries(graphs.tasks ?? {})) tasks.set(t, await session(f));
    return new ServingEncoder(
      config,
      text,
      tokenizer,
      dim,
      'onnx-runtime',
      { query: await session(graphs.query), passage: await session(graphs.passage), tasks },
      hybrid,
    );
  }

  /**
   * Embeds questions as the model was trained to (its tokenizer, length limit and task marker); `task` names one of
   * the model's tasks. Rows of `dim` floats, one per question.
   */
  async encodeQueries(texts: readonly string[], options: { task?: string } = {}): Promise<Float32Array> {
    const { session, o } = this.querySide(texts, options);
    return this.#life.use(() => this.encodeChunks(texts.length, session, (s, e) => ({ texts: texts.slice(s, e), options: o })));
  }

  /**
   * @internal The questions as {@link encodeQueries} takes them, for a native call to embed in its own task (MufServer's
   * search: encodings and scans in one hop); undefined unless the encoder is a 0-layer one (the core's forward).
   */
  queriesToEmbed(texts: readonly string[], options: { task?: string } = {}): NativeTextsToEmbed | undefined {
    this.#life.check();
    const { session, o } = this.querySide(texts, options);
    if (texts.length === 0) throw new QuorumError('ERR_ARG', 'nothing to encode: give at least one text');
    return session.toEmbed?.(this.tokenizer, texts, o);
  }

  /** Checks the questions and options; the runner for the task and the encode options. */
  private querySide(texts: readonly string[], options: { task?: string }): { session: Runner; o: TextOptions } {
    checkOptions(options, queryKeys, 'encodeQueries options');
    mustBeArray(texts, 'questions');
    texts.forEach((t, i) => mustBeString(t, `questions[${i}]`));
    const { marker } = queryTask(this.config.tasks, this.text, this.tokenizer, options.task);
    const session =
      (options.task !== undefined ? this.sessions.tasks.get(options.task) : undefined) ??
      (this.sessions.tasks.size ? [...this.sessions.tasks.values()][0]! : this.sessions.query);
    return { session, o: { maxLength: this.text.maxQueryLength, ...(marker !== undefined ? { marker } : {}) } };
  }

  /** Embeds passages (title and text as a pair, as the model was trained). */
  async encodePassages(passages: readonly PassageText[]): Promise<Float32Array> {
    const texts = passageTexts(passages);
    return this.#life.use(() =>
      this.encodeChunks(texts.length, this.sessions.passage, (s, e) => {
        const part = texts.slice(s, e);
        return { texts: part.map((p) => p.title), options: { pairs: part.map((p) => p.text), maxLength: this.text.maxPassageLength } };
      }),
    );
  }

  /** One tokenized batch through a side's graph: [rows, dim]. */
  async encodeBatch(
    batch: Pick<EncodedBatch, 'ids' | 'typeIds' | 'lengths' | 'rows' | 'seqLen'>,
    side: 'query' | 'passage',
    task?: string,
  ): Promise<Float32Array> {
    const session =
      side === 'passage'
        ? this.sessions.passage
        : ((task !== undefined ? this.sessions.tasks.get(task) : undefined) ?? this.sessions.query);
    return this.#life.use(() => this.run(session, batch));
  }

  /** Releases the sessions once the calls in flight end; later calls are ERR_DISPOSED, a second dispose does nothing. */
  dispose(): Promise<void> {
    return this.#life.dispose();
  }

  /**
   * The texts in chunks of CHUNK rows (`part` gives rows s..e and their options): each tokenized and encoded in one
   * native call where the runner can, else tokenized and then run.
   */
  private async encodeChunks(
    n: number,
    session: Runner,
    part: (s: number, e: number) => { texts: readonly string[]; options: TextOptions },
  ): Promise<Float32Array> {
    if (n === 0) throw new QuorumError('ERR_ARG', 'nothing to encode: give at least one text');
    const chunk = async (s: number, e: number) => {
      const { texts, options } = part(s, e);
      return session.texts
        ? session.texts(this.tokenizer, texts, options)
        : this.run(session, await this.tokenizer.encodeAsync(texts, options));
    };
    // embedTexts' array is the caller's own: one chunk needs no copy (a run's result may view native memory).
    if (n <= CHUNK && session.texts) return chunk(0, n);
    const out = new Float32Array(n * this.dim);
    for (let s = 0; s < n; s += CHUNK) out.set(await chunk(s, Math.min(n, s + CHUNK)), s * this.dim);
    return out;
  }

  private run(runner: Runner, b: Pick<EncodedBatch, 'ids' | 'typeIds' | 'lengths' | 'rows' | 'seqLen'>): Promise<Float32Array> {
    return runner.run(b);
  }
}
