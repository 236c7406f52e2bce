// Encoding a token table with a CAME model: rows sorted by length so batches carry little padding, each batch run
// off the main thread, the three experts' outputs gathered in the table's order: SPLADE weights as sparse rows, the
// local expert's token vectors packed (real tokens only) with their counts, the global vectors as one table.
import { QuorumError } from '../../errors.js';
import { sparseVectors, toSparse, type SparseVectors } from '../../splade.js';
import { Tensor } from '../../tensor.js';
import { TokenTable } from '../../models/token-table.js';
import { checkOptions, mustBeObject, optionKeys } from '../../validate.js';
import { type TokenBatchArg } from '../../bindings/torch_addon.js';
import type { CameEncoded, CameExpertName } from './format.js';

/** One side's encoding of a set of texts, row i = text i. */
export interface CameEncoding {
  /** Number of texts encoded. */
  rows: number;
  /** SPLADE weights (term ids ascending per row), the top `maxTerms` of each row when set. */
  lexical?: SparseVectors;
  /** Unit token vectors of every real token, packed: `[sum of tokens, localDim]`. */
  local?: { vectors: Float32Array; lengths: Int32Array; dim: number };
  /** `[rows, globalDim]`. */
  global?: Float32Array;
}

/**
 * What {@link encodeCame} reads of a model: its experts' forward on a token batch. A CameModel (libtorch), or CAME's
 * graphs in ONNX Runtime (CameServer).
 */
export interface CameEncoderModel {
  /** Its configuration (the local expert's width, the experts it holds). */
  readonly config: { readonly localDim: number; readonly experts: readonly CameExpertName[] };
  /** Width of the global expert's vectors. */
  readonly globalDim: number;
  /** Width of the lexical expert's SPLADE vectors. */
  readonly vocabSize: number;
  /** The experts the model holds. */
  readonly experts: readonly CameExpertName[];
  /** The asked-for experts' representations of a tokenized batch. */
  encode(batch: TokenBatchArg, side: 'query' | 'passage', experts: readonly CameExpertName[]): Promise<CameEncoded>;
}

/** Options of {@link encodeCame}. */
export interface CameEncodeOptions {
  /** Which side's encoders read the rows. */
  side: 'query' | 'passage';
  /** Default: every expert of the model. */
  experts?: readonly CameExpertName[];
  /** Encode only these rows of the table (output row i is table row rows[i]). */
  rows?: readonly number[];
  /** Rows per native call (default 32). */
  batchSize?: number;
  /** Keep each SPLADE row's largest `maxTerms` weights (default: every non-zero weight). */
  maxTerms?: number;
  /** Called after each batch with the rows done so far. */
  onProgress?: (done: number, total: number) => void;
}

const encodeKeys = optionKeys<CameEncodeOptions>()(['side', 'experts', 'rows', 'batchSize', 'maxTerms', 'onProgress']);

/**
 * Runs `model` over rows of `table` and returns each asked-for expert's representation, in row order.
 *
 * @example
 * const table = await TokenTable.passages(tokenizer, corpus, 192);
 * const enc = await encodeCame(model, table, { side: 'passage', maxTerms: 256 });
 * enc.lexical!.row(0); // [{ index, value }, ...]
 */
export async function encodeCame(model: CameEncoderModel, table: TokenTable, options: CameEncodeOptions): Promise<CameEncoding> {
  mustBeObject(model, 'model');
  mustBeObject(table, 'token table');
  mustBeObject(options, 'encode options');
  checkOptions(options, encodeKeys, 'encodeCame options');
  const experts = options.experts ?? model.experts;
  const which = options.rows ?? Array.from({ length: table.size }, (_, i) => i);
  const n = which.length;
  const size = options.batchSize ?? 32;
  if (!Number.isInteger(size) || size < 1) throw new QuorumError('ERR_RANGE', `batchSize must be a positive integer, got ${size}`);
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => table.length(which[a]!) - table.length(which[b]!));
  const G = model.globalDim;
  const L = model.config.localDim;
  const global = experts.includes('global') ? new Float32Array(n * G) : undefined;
  // Per output row: its sparse row and its token vectors, placed once every batch is back.
  const lexRows: Array<{ indices: Int32Array; values: Float32Array }> = new Array(n);
  const localRows: Float32Array[] = new Array(n);
  for (let s = 0; s < n; s += size) {
    const rows = order.slice(s, s + size);
    const batch = table.batch(rows.map((i) => which[i]!));
    const out = await model.encode(batch, options.side, experts);
    if (global) rows.forEach((r, i) => global.set(out.global!.subarray(i * G, (i + 1) * G), r * G));
    if (out.lexical) {
      const sp = await toSparse(Tensor.wrap(out.lexical, [rows.length, model.vocabSize], 'f32'), { topK: options.maxTerms ?? 0 });
      rows.forEach((r, i) => {
        const a = Number(sp.offsets[i]);
        const b = Number(sp.offsets[i + 1]);
        lexRows[r] = { indices: sp.indices.slice(a, b), values: sp.values.slice(a, b) };
      });
    }
    if (out.local) {
      rows.forEach((r, i) => {
        const len = batch.lengths[i] as number;
        const at = i * batch.seqLen * L;
        localRows[r] = out.local!.slice(at, at + len * L);
      });
    }
    options.onProgress?.(Math.min(n, s + size), n);
  }
  const result: CameEncoding = { rows: n };
  if (global) result.global = global;
  if (experts.includes('lexical')) result.lexical = packSparse(lexRows);
  if (experts.includes('local')) {
    const lengths = Int32Array.from(localRows, (v) => v.length / L);
    const vectors = new Float32Array(lengths.reduce((a, b) => a + b, 0) * L);
    let at = 0;
    for (const v of localRows) {
      vectors.set(v, at);
      at += v.length;
    }
    result.local = { vectors, lengths, dim: L };
  }
  return result;
}

function packSparse(rows: ReadonlyArray<{ indices: Int32Array; values: Float32Array }>): SparseVectors {
  const offsets = new BigInt64Array(rows.length + 1);
  let nnz = 0;
  rows.forEach((r, i) => {
    nnz += r.indices.length;
    offsets[i + 1] = BigInt(nnz);
  });
  const indices = new Int32Array(nnz);
  const values = new Float32Array(nnz);
  rows.forEach((r, i) => {
    indices.set(r.indices, Number(offsets[i]));
    values.set(r.values, Number(offsets[i]));
  });
  return sparseVectors(offsets, indices, values);
}
