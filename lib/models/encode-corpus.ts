// Encoding a corpus with a trained Retriever (or any TableEncoder): rows sorted by length so batches carry little padding, each batch
// encoded off the main thread straight into its rows of one f32 Tensor, optionally added to a DenseIndex.
import { DenseIndex, type DenseIndexOptions } from '../dense-index.js';
import { Tensor } from '../tensor.js';
import { type TokenBatchArg } from '../bindings/torch_addon.js';
import type { TokenTable } from './token-table.js';
import { checkOptions, mustBeObject, optionKeys } from '../validate.js';

/** Options of {@link encodeTable}. */
export interface EncodeTableOptions {
  /** Which encoder reads the rows (a bi-encoder has two; TASER's Det-R routes by it). */
  side: 'query' | 'passage';
  /** Task index for per-task query encoders. */
  task?: number;
  /** Rows per native call (default 64). */
  batchSize?: number;
  /** Encode only these rows of the table (output row i is table row rows[i]). */
  rows?: readonly number[];
  /** Encode the pooled states (width hiddenSize) instead of the embeddings. */
  pooledState?: boolean;
  /** Called after each batch with the rows done so far. */
  onProgress?: (done: number, total: number) => void;
}

const encodeTableKeys = optionKeys<EncodeTableOptions>()(['side', 'task', 'batchSize', 'rows', 'pooledState', 'onProgress']);
const indexTableKeys = optionKeys<Partial<DenseIndexOptions> & Omit<EncodeTableOptions, 'side'>>()([
  'dim',
  'factory',
  'mips',
  'phi',
  'efConstruction',
  'efSearch',
  'nprobe',
  'quantization',
  'task',
  'batchSize',
  'rows',
  'pooledState',
  'onProgress',
]);

/** What encoding a table needs of a model: a Retriever, or one of ROM's heads (RomNetwork.head). */
export interface TableEncoder {
  /** Width of the vectors `encode` returns. */
  readonly dim: number;
  /** Its encoder's hidden width (the pooled states' width). */
  readonly config: { readonly encoder: { readonly hiddenSize: number } };
  /** Embeds a tokenized batch off the main thread: `[rows, dim]` row-major. */
  encode(
    batch: TokenBatchArg,
    side: 'query' | 'passage',
    options?: { task?: number; out?: Float32Array; pooledState?: boolean },
  ): Promise<Float32Array>;
}

/**
 * Embeds the rows of a token table into a [rows, dim] f32 tensor (row i is text i, or table row options.rows[i]).
 *
 * @example
 * const table = await TokenTable.build(tok, titles, { pairs: texts, maxLength: 128 });
 * const emb = await encodeTable(model, table, { side: 'passage' });
 */
export async function encodeTable(model: TableEncoder, table: TokenTable, options: EncodeTableOptions): Promise<Tensor<'f32'>> {
  mustBeObject(model, 'model');
  mustBeObject(table, 'token table');
  mustBeObject(options, 'encodeTable options');
  checkOptions(options, encodeTableKeys, 'encodeTable options');
  const which = options.rows ?? Array.from({ length: table.size }, (_, i) => i);
  const n = which.length;
  const dim = options.pooledState ? model.config.encoder.hiddenSize : model.dim;
  const out = Tensor.zeros([n, dim], 'f32');
  // Positions into `which`, shortest rows first.
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => table.length(which[a]!) - table.length(which[b]!));
  const size = options.batchSize ?? 64;
  const data = out.data;
  for (let s = 0; s < n; s += size) {
    const rows = order.slice(s, s + size);
    // No `out` buffer: the Promise forms write into their own array (a caller's `out` would be one copy more).
    const emb = await model.encode(table.batch(rows.map((i) => which[i]!)), options.side, {
      ...(options.task !== undefined ? { task: options.task } : {}),
      ...(options.pooledState ? { pooledState: true } : {}),
    });
    rows.forEach((r, i) => data.set(emb.subarray(i * dim, (i + 1) * dim), r * dim));
    options.onProgress?.(Math.min(n, s + size), n);
  }
  return out;
}

/**
 * Embeds a corpus and adds it to a new DenseIndex, row i under id i (default exact inner-product search).
 *
 * @example
 * const table = await TokenTable.passages(tokenizer, passages, 256);
 * const { index } = await indexTable(model, table, { factory: 'HNSW32' });
 * const hits = await index.search(queryEmbeddings, 20);
 */
export async function indexTable(
  model: TableEncoder,
  table: TokenTable,
  options: Partial<DenseIndexOptions> & Omit<EncodeTableOptions, 'side'> = {},
): Promise<{ embeddings: Tensor<'f32'>; index: DenseIndex }> {
  mustBeObject(model, 'model');
  mustBeObject(table, 'token table');
  checkOptions(options, indexTableKeys, 'indexTable options');
  // Each half of the options to its own consumer: both refuse keys they do not know.
  const { dim: _dim, factory, mips, phi, efConstruction, efSearch, nprobe, quantization, ...encoding } = options;
  const embeddings = await encodeTable(model, table, { ...encoding, side: 'passage' });
  // An option left undefined takes its default, as if absent.
  const index = DenseIndex.create({ factory, mips, phi, efConstruction, efSearch, nprobe, quantization, dim: model.dim });
  if (!index.info.trained) await index.train(embeddings);
  await index.add(
    embeddings,
    Array.from({ length: table.size }, (_, i) => i),
  );
  return { embeddings, index };
}
