import { backendOf, cpuOnly } from './cuda.js';
import { QuorumError, awaitNative, callNative } from './errors.js';
import { type NativeTensorHandle } from './native.js';
import { denseBindings } from './bindings/dense_bindings.js';
import type { CodedOperand } from './bindings/quant_bindings.js';
import { type Int32Input, Operands, rowHits, runAsync, runSync } from './operand.js';
import { QuantizedTensor } from './quantized.js';
import { Tensor } from './tensor.js';
import { checkOptions, optionKeys } from './validate.js';

/**
 * A matrix operand: a {@link Tensor}, or a typed array with its shape (read in place by the Sync forms, copied by the
 * Promise forms, whose work runs off the main thread).
 * Queries may also be a bare Float32Array whose length is a multiple of the corpus dimension.
 */
export type MatrixInput =
  | Tensor
  | { data: Float32Array; shape: readonly [number, number] }
  | { data: Uint16Array; shape: readonly [number, number]; dtype: 'bf16' | 'f16' };

/**
 * A query operand: a {@link MatrixInput}, or a bare Float32Array of `B * dim` values (rows inferred from the corpus
 * dimension).
 */
export type QueryInput = MatrixInput | Float32Array;

/** Options shared by the dense kernels. */
export interface DenseOptions {
  /** Scan queries and corpus for NaN and Infinity first and fail with ERR_NONFINITE (costs one pass). */
  checkFinite?: boolean;
}

const denseKeys = optionKeys<DenseOptions>()(['checkFinite']);

/** Options of {@link scoreTopK}. */
export interface ScoreTopKOptions extends DenseOptions {
  /**
   * Search only these corpus rows (strictly ascending; a metadata filter's allowed rows, {@link compileFilter}):
   * exactly the top-k of the filtered corpus, at the cost of the rows read (CPU only). An empty list gives no hits.
   */
  rows?: Int32Input;
  /**
   * Full vectors of the same rows (f32, bf16, f16 or an int8 {@link QuantizedTensor}; a mapped file keeps them out of
   * RAM): the best `k * oversample` rows of `corpus` are rescored exactly with them and the best k returned. What a
   * binary corpus needs to reach the recall of the full vectors (docs/methods/quantization.md). CPU only.
   */
  rescore?: MatrixInput | QuantizedTensor;
  /** With `rescore`: candidates a query as a multiple of k (default 4; at least 1). */
  oversample?: number;
  /**
   * A quantized corpus's query form: int8 corpora 32 (f32 queries) or 8 (int8 queries, VNNI); binary corpora 4 (the
   * query on 16 levels, the default) or 1 (its signs: Hamming distance). Default: the faster form at equal recall
   * on this CPU (docs/results/quantization.md).
   */
  queryBits?: 1 | 4 | 8 | 32;
}

const topKKeys = optionKeys<ScoreTopKOptions>()(['checkFinite', 'rows', 'rescore', 'oversample', 'queryBits']);

/** A corpus operand: a matrix, or a quantized corpus (CPU). */
export type CorpusInput = MatrixInput | QuantizedTensor;

/** The query forms each quantization takes. */
const queryBitsOf = { int8: [8, 32], binary: [1, 4] } as const;

/** The option keys, and checkFinite a boolean: `{ checkFinite: 'yes' }` checked nothing (issue 65). */
function checkDenseOptions(options: DenseOptions, keys: ReadonlySet<string>, what: string): void {
  checkOptions(options, keys, what);
  if (options.checkFinite !== undefined && typeof options.checkFinite !== 'boolean')
    throw new QuorumError('ERR_ARG', `${what}: checkFinite must be a boolean`);
}

/** The allowed rows as an operand, or undefined (a Tensor must be i32: the binding checks the rest). */
function rowsOperand(ops: Operands, rows: Int32Input | undefined, q: Tensor, c: Tensor): Tensor | undefined {
  if (rows === undefined) return undefined;
  cpuOnly([q, c], 'scoreTopK with rows');
  return ops.int32(rows, 'rows');
}

/**
 * Top-k results, row-major `[rows, k]`, in native memory (zero-copy views). Row i lists corpus row ids by
 * score descending, ties by id ascending. Slots beyond the corpus size (k > N) hold id -1 and score -Infinity.
 */
export interface TopKResult {
  /** `rows * k` corpus row ids, row-major; -1 in padding slots. */
  readonly ids: Int32Array;
  /** `rows * k` scores, row-major; -Infinity in padding slots. */
  readonly scores: Float32Array;
  /** Number of query rows. */
  readonly rows: number;
  /** Slots per row (the k asked for). */
  readonly k: number;
  /** The hits of query `row`, best first, padding left out. */
  hits(row: number): Array<{ id: number; score: number }>;
}

function matrix(ops: Operands, m: MatrixInput, what: string): Tensor {
  if (m instanceof Tensor) return m;
  if (m && typeof m === 'object' && 'data' in m && 'shape' in m) {
    const dtype = 'dtype' in m ? m.dtype : 'f32';
    return ops.typed(m.data, m.shape, dtype);
  }
  throw new QuorumError('ERR_ARG', `${what} must be a Tensor or { data, shape }`);
}

/**
 * ERR_NONFINITE for a query value that is NaN or infinite (a NaN question scores NaN against every passage, and its top-k
 * is arbitrary). The queries are B x D values, read once; the corpus is checked only with `checkFinite`, which costs
 * a pass over all of it. A query tensor on the GPU is left to checkFinite.
 */
function checkFiniteQueries(q: Tensor): void {
  if (q.device !== 'cpu') return;
  const d = q.data as ArrayLike<number>;
  // bf16 and f16 hold their bits: all-ones exponent is NaN or infinity.
  const bad =
    q.dtype === 'bf16'
      ? (x: number) => (x & 0x7f80) === 0x7f80
      : q.dtype === 'f16'
        ? (x: number) => (x & 0x7c00) === 0x7c00
        : (x: number) => !Number.isFinite(x);
  for (let i = 0; i < d.length; i++) if (bad(d[i]!)) throw new QuorumError('ERR_NONFINITE', `queries hold a non-finite value at ${i}`);
}

function operands(ops: Operands, queries: QueryInput, corpus: MatrixInput): [Tensor, Tensor] {
  const [q, c] = queryAndCorpus(ops, queries, corpus);
  checkFiniteQueries(q);
  return [q, c];
}

/** The queries as f32 rows of `dim` (a quantized corpus's width), checked finite. */
function queriesFor(ops: Operands, queries: QueryInput, dim: number): Tensor {
  const q = queryRows(ops, queries, dim, true);
  checkFiniteQueries(q);
  return q;
}

/**
 * The queries as a matrix: a Tensor or `{ data, shape }` as given, a flat Float32Array cut into rows of `dim` (ERR_SHAPE
 * unless `corpus2d` and it divides into them).
 */
function queryRows(ops: Operands, queries: QueryInput, dim: number, corpus2d: boolean): Tensor {
  if (!(queries instanceof Float32Array)) return matrix(ops, queries, 'queries');
  if (!corpus2d || dim === 0 || queries.length % dim !== 0)
    throw new QuorumError(
      'ERR_SHAPE',
      `a flat query array of length ${queries.length} does not divide into rows of the corpus dimension ${dim}`,
    );
  return ops.typed(queries, [queries.length / dim, dim], 'f32');
}

/**
 * scoreTopK's CPU path for what only the CPU kernels take: a quantized corpus, rescoring, a query form. The operands,
 * then the call (either form); `made` lists the tensors made here, disposed by the caller after the call.
 */
function codedTopK(ops: Operands, queries: QueryInput, corpus: CorpusInput, k: number, options: ScoreTopKOptions) {
  const made: Tensor[] = [];
  const keep = (t: Tensor, given: unknown) => {
    if (t !== given) made.push(t);
    return t;
  };
  try {
    const coded = corpus instanceof QuantizedTensor ? corpus : undefined;
    const c = coded ? undefined : keep(matrix(ops, corpus as MatrixInput, 'corpus'), corpus);
    const dim = coded ? coded.dim : (c!.shape[1] ?? 0);
    const q = keep(queriesFor(ops, queries, dim), queries);
    cpuOnly(c ? [q, c] : [q], 'scoreTopK of a quantized corpus or with rescore');
    const bits = options.queryBits;
    if (bits !== undefined) {
      if (!coded) throw new QuorumError('ERR_ARG', 'queryBits applies to a quantized corpus');
      if (!(queryBitsOf[coded.kind] as readonly number[]).includes(bits))
        throw new QuorumError(
          'ERR_ARG',
          `queryBits of a ${coded.kind} corpus must be ${queryBitsOf[coded.kind].join(' or ')}, got ${String(bits)}`,
        );
    }
    let full: Tensor | QuantizedTensor | undefined;
    let candidates: number | undefined;
    if (options.rescore !== undefined) {
      const r = options.rescore;
      full = r instanceof QuantizedTensor ? r : keep(matrix(ops, r, 'rescore'), r);
      if (full instanceof Tensor) cpuOnly([full], 'rescore');
      const over = options.oversample ?? 4;
      if (typeof over !== 'number' || !Number.isFinite(over) || over < 1 || over > 1024)
        throw new QuorumError('ERR_ARG', `oversample must be a number in [1, 1024], got ${String(over)}`);
      if (!Number.isSafeInteger(k) || k < 1) throw new QuorumError('ERR_ARG', `k must be a positive integer, got ${String(k)}`);
      candidates = Math.min(Math.ceil(k * over), 2 ** 20);
    } else if (options.oversample !== undefined) {
      throw new QuorumError('ERR_ARG', 'oversample needs rescore (the full vectors to rescore the candidates with)');
    }
    const rows = options.rows === undefined ? undefined : keep(ops.int32(options.rows, 'rows'), options.rows);
    const corpusArg = coded ? coded.operand(bits) : c!.handle;
    const fullArg = full === undefined ? null : full instanceof QuantizedTensor ? full.operand() : full.handle;
    const call = (async: boolean) =>
      denseBindings().scoreTopK(q.handle, corpusArg, k, options.checkFinite === true, async, rows?.handle ?? null, fullArg, candidates);
    return { call, made };
  } catch (e) {
    made.forEach((t) => t.dispose());
    throw e;
  }
}

/** Whether a scoreTopK call takes the CPU path of {@link codedTopK}. */
function needsCoded(corpus: CorpusInput, options: ScoreTopKOptions): boolean {
  return (
    corpus instanceof QuantizedTensor ||
    (options !== null &&
      typeof options === 'object' &&
      (options.rescore !== undefined || options.queryBits !== undefined || options.oversample !== undefined))
  );
}

function queryAndCorpus(ops: Operands, queries: QueryInput, corpus: MatrixInput): [Tensor, Tensor] {
  const c = matrix(ops, corpus, 'corpus');
  return [queryRows(ops, queries, c.shape[1] ?? 0, c.shape.length === 2), c];
}

type RawTopK = { ids: NativeTensorHandle; scores: NativeTensorHandle };

/** The result's tensors on the CPU: a GPU result (rows x k) is copied back, so the result has one form everywhere. */
function hostPair(r: RawTopK): [Tensor<'i32'>, Tensor<'f32'>] {
  const ids = Tensor.fromHandle<'i32'>(r.ids);
  const scores = Tensor.fromHandle<'f32'>(r.scores);
  if (ids.device === 'cpu') return [ids, scores];
  const out: Tensor[] = [];
  try {
    out.push(ids.to('cpu'), scores.to('cpu'));
    return out as [Tensor<'i32'>, Tensor<'f32'>];
  } catch (e) {
    out.forEach((t) => t.dispose());
    throw e;
  } finally {
    ids.dispose();
    scores.dispose();
  }
}

async function hostPairAsync(r: RawTopK): Promise<[Tensor<'i32'>, Tensor<'f32'>]> {
  const ids = Tensor.fromHandle<'i32'>(r.ids);
  const scores = Tensor.fromHandle<'f32'>(r.scores);
  if (ids.device === 'cpu') return [ids, scores];
  try {
    const [hi, hs] = await Promise.allSettled([ids.toAsync('cpu'), scores.toAsync('cpu')]);
    if (hi.status === 'fulfilled' && hs.status === 'fulfilled') return [hi.value, hs.value];
    for (const x of [hi, hs]) if (x.status === 'fulfilled') x.value.dispose();
    throw hi.status === 'rejected' ? hi.reason : (hs as PromiseRejectedResult).reason;
  } finally {
    ids.dispose();
    scores.dispose();
  }
}

function topKResult([ids, scores]: [Tensor<'i32'>, Tensor<'f32'>]): TopKResult {
  const [rows = 0, k = 0] = ids.shape;
  // Copied to V8's memory (rows x k, small beside the kernel's work) and the native tensors freed now: their
  // finalizers would run only when the event loop turns, so a Sync loop that never yields held every result.
  const idv = ids.data.slice();
  const sv = scores.data.slice();
  ids.dispose();
  scores.dispose();
  return {
    ids: idv,
    scores: sv,
    rows,
    k,
    hits: (row: number) => rowHits(idv, sv, rows, k, row),
  };
}

/**
 * Queries given as arrays (not a Tensor) beside a GPU corpus are copied to the GPU for the call; a Tensor must
 * already be where the corpus is.
 */
function needsUpload(q: Tensor, c: Tensor, given: QueryInput): boolean {
  return c.device === 'cuda' && q.device === 'cpu' && !(given instanceof Tensor);
}

/**
 * Exact maximum-inner-product search: for each query row, the k corpus rows with the highest dot product.
 * Scoring and selection are fused, so the [B, N] score matrix is never materialised. Runs off the main
 * thread on the native pool ({@link setThreads}).
 *
 * @param queries f32 `[B, D]` (or a flat Float32Array of B * D values)
 * @param corpus f32, bf16 or f16 `[N, D]`, or a {@link QuantizedTensor} (int8 or binary; CPU)
 * @param k integer in [1, 2^20]; k > N pads with id -1
 * @example
 * const corpus = Tensor.from(vectors, [n, 768], 'bf16');
 * const top = await scoreTopK(queryVector, corpus, 10);
 * console.log(top.hits(0)); // [{ id, score }, ...]
 */
export async function scoreTopK(queries: QueryInput, corpus: CorpusInput, k: number, options: ScoreTopKOptions = {}): Promise<TopKResult> {
  checkDenseOptions(options, topKKeys, 'scoreTopK options');
  if (needsCoded(corpus, options)) {
    const { call, made } = codedTopK(Operands.copied, queries, corpus, k, options);
    try {
      return topKResult(hostPair(await awaitNative(callNative(() => call(true)) as Promise<RawTopK>)));
    } finally {
      made.forEach((t) => t.dispose());
    }
  }
  const [q0, c] = operands(Operands.copied, queries, corpus as MatrixInput);
  let q = q0;
  try {
    if (needsUpload(q0, c, queries)) q = await q0.toAsync('cuda');
    const backend = backendOf([q, c], ['queries', 'corpus']);
    const rows = rowsOperand(Operands.copied, options.rows, q, c);
    const raw = await awaitNative(
      callNative(() =>
        backend.scoreTopK(q.handle, c.handle, k, options.checkFinite === true, true, rows?.handle ?? null),
      ) as Promise<RawTopK>,
    );
    return topKResult(await hostPairAsync(raw));
  } finally {
    if (q !== q0) q.dispose();
    releaseWraps([q0, c], [queries, corpus]);
  }
}

/**
 * {@link scoreTopK} on the calling thread (blocks the event loop; for scripts and small corpora).
 *
 * @example
 * const top = scoreTopKSync(queries, corpus, 10);
 * top.hits(0);   // [{ id, score }, ...] for the first query, best first
 */
export function scoreTopKSync(queries: QueryInput, corpus: CorpusInput, k: number, options: ScoreTopKOptions = {}): TopKResult {
  checkDenseOptions(options, topKKeys, 'scoreTopK options');
  if (needsCoded(corpus, options)) {
    const { call, made } = codedTopK(Operands.borrowed, queries, corpus, k, options);
    try {
      return topKResult(hostPair(callNative(() => call(false)) as RawTopK));
    } finally {
      made.forEach((t) => t.dispose());
    }
  }
  const [q0, c] = operands(Operands.borrowed, queries, corpus as MatrixInput);
  let q = q0;
  try {
    if (needsUpload(q0, c, queries)) q = q0.to('cuda');
    const backend = backendOf([q, c], ['queries', 'corpus']);
    const rows = rowsOperand(Operands.borrowed, options.rows, q, c);
    return topKResult(
      hostPair(
        callNative(() => backend.scoreTopK(q.handle, c.handle, k, options.checkFinite === true, false, rows?.handle ?? null)) as RawTopK,
      ),
    );
  } finally {
    if (q !== q0) q.dispose();
    releaseWraps([q0, c], [queries, corpus]);
  }
}

/** Drops the wraps this module made around the caller's arrays at once (not the caller's own Tensors). */
function releaseWraps(made: readonly Tensor[], given: readonly unknown[]): void {
  made.forEach((t, i) => {
    if (t !== given[i]) t.dispose();
  });
}

const f32Result = (h: NativeTensorHandle) => Tensor.fromHandle<'f32'>(h);

// score's one definition: the operands, then the call (runSync / runAsync run it in either form).
function scoreCall(ops: Operands, queries: QueryInput, corpus: CorpusInput, options: DenseOptions) {
  checkDenseOptions(options, denseKeys, 'score options');
  const core = denseBindings();
  const [q, c] = operandsOf(ops, queries, corpus, 'score');
  cpuOnly([q], 'score');
  return (async: boolean) => core.scoreMatrix(q.handle, c, options.checkFinite === true, async);
}

/** Queries and a corpus operand for score and gatherScores (a quantized corpus included). */
function operandsOf(ops: Operands, queries: QueryInput, corpus: CorpusInput, what: string): [Tensor, NativeTensorHandle | CodedOperand] {
  if (corpus instanceof QuantizedTensor) return [queriesFor(ops, queries, corpus.dim), corpus.operand()];
  const [q, c] = operands(ops, queries, corpus);
  cpuOnly([c], what);
  return [q, c.handle];
}

/**
 * The full score matrix `S = Q · Cᵀ` as an f32 Tensor `[B, N]`. Prefer {@link scoreTopK} for retrieval:
 * this writes B x N floats.
 *
 * @example
 * const s = await score(Tensor.from(new Float32Array([1, 0]), [1, 2]), Tensor.from(new Float32Array([1, 0, 0.6, 0.8]), [2, 2]));
 * s.data;   // Float32Array [1, 0.6]
 */
export async function score(queries: QueryInput, corpus: CorpusInput, options: DenseOptions = {}): Promise<Tensor<'f32'>> {
  return runAsync((ops) => scoreCall(ops, queries, corpus, options), f32Result);
}

/**
 * {@link score} on the calling thread.
 *
 * @example
 * const s = scoreSync(queries, corpus);   // Tensor f32 [B, N]
 */
export function scoreSync(queries: QueryInput, corpus: CorpusInput, options: DenseOptions = {}): Tensor<'f32'> {
  return runSync((ops) => scoreCall(ops, queries, corpus, options), f32Result);
}

/** Ids per query row: an i32 or i64 Tensor `[B, m]`, or an Int32Array / BigInt64Array of B * m ids. */
export type IdsInput = Tensor<'i32'> | Tensor<'i64'> | Int32Array | BigInt64Array;

function idsTensor(ops: Operands, ids: IdsInput, rows: number): Tensor {
  if (ids instanceof Tensor) return ids;
  if (ids instanceof Int32Array || ids instanceof BigInt64Array) {
    if (rows === 0 || ids.length % rows !== 0) {
      throw new QuorumError('ERR_SHAPE', `${ids.length} ids do not divide into ${rows} query rows`);
    }
    return ops.typed(ids, [rows, ids.length / rows]);
  }
  throw new QuorumError('ERR_ARG', 'ids must be a Tensor, Int32Array or BigInt64Array');
}

// gatherScores' one definition.
function gatherCall(ops: Operands, queries: QueryInput, corpus: CorpusInput, ids: IdsInput, options: DenseOptions) {
  checkDenseOptions(options, denseKeys, 'gatherScores options');
  const core = denseBindings();
  const [q, c] = operandsOf(ops, queries, corpus, 'gatherScores');
  const i = idsTensor(ops, ids, q.shape[0] ?? 0);
  cpuOnly([q], 'gatherScores');
  return (async: boolean) => core.gatherScores(q.handle, c, i.handle, options.checkFinite === true, async);
}

/**
 * Scores of given corpus rows: `out[b, j] = dot(q_b, corpus[ids[b, j]])`, an f32 Tensor `[B, m]`. Used to
 * rescore candidates from another system (e.g. DPR-MUF's experts). An id outside the corpus is ERR_RANGE.
 *
 * @example
 * const s = await gatherScores(queries, corpus, new Int32Array([7, 2, 40]));   // one query row: its scores for rows 7, 2, 40
 */
export async function gatherScores(
  queries: QueryInput,
  corpus: CorpusInput,
  ids: IdsInput,
  options: DenseOptions = {},
): Promise<Tensor<'f32'>> {
  return runAsync((ops) => gatherCall(ops, queries, corpus, ids, options), f32Result);
}

/**
 * {@link gatherScores} on the calling thread.
 *
 * @example
 * const s = gatherScoresSync(queries, corpus, new Int32Array([7, 2, 40]));   // Tensor f32 [1, 3]
 */
export function gatherScoresSync(queries: QueryInput, corpus: CorpusInput, ids: IdsInput, options: DenseOptions = {}): Tensor<'f32'> {
  return runSync((ops) => gatherCall(ops, queries, corpus, ids, options), f32Result);
}
