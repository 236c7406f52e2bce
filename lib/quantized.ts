// Quantized corpora (docs/methods/quantization.md): int8 codes at a quarter of f32's bytes, binary codes at about a
// thirtieth, searched by scoreTopK like any corpus and, for binary, rescored with full vectors. The codes and their
// tables are native tensors; the native kernels read them in place (native/kernels/quant.h).
import { join } from 'node:path';

import { brandClass } from './brand.js';
import { type CodedOperand, quantBindings } from './bindings/quant_bindings.js';
import { replaceDirectory } from './data/files.js';
import { QuorumError, awaitNative, callNative } from './errors.js';
import { readSavedCard, savedFile, writeSavedCard, checkCard } from './io/saved-dir.js';
import { type NativeTensorHandle } from './native.js';
import { Operands, type TensorInput } from './operand.js';
import { Tensor } from './tensor.js';
import { checkOptions, optionKeys, z } from './validate.js';

/** How a corpus is quantized: 8-bit codes per dimension, or one sign bit per dimension. */
export type Quantization = 'int8' | 'binary';

/** Options of {@link quantize}. */
export interface QuantizeOptions {
  /**
   * int8: the share of each dimension's values clipped at either end (0 = its min and max, the default; 0.001 clips
   * the 0.1 % most extreme values on each side into the end codes). In [0, 0.5).
   */
  clip?: number;
  /**
   * binary: the bits are the signs of x - mean(x) (true, the default) or of x itself (false). Centring matters for
   * anisotropic embeddings, whose dimensions have non-zero means (docs/results/quantization.md).
   */
  center?: boolean;
  /**
   * binary: rotate the vectors (a fixed random orthogonal transform: random signs, Walsh-Hadamard blocks of 64 and a
   * permutation, three rounds) before taking the signs (true, the default), so that every bit carries a share of every
   * direction; dot products are unchanged. Recall@10 at 4x oversampling 0.96 -> 0.99 on a 768-d encoder's vectors
   * (docs/results/quantization.md).
   */
  rotate?: boolean;
}

const quantizeKeys = optionKeys<QuantizeOptions>()(['clip', 'center', 'rotate']);

/** The rotation's seed (any fixed number: it is saved with the codes, and queries are rotated with the same one). */
const ROTATION_SEED = 0x51a7e;

const quantizedFormat = { card: 'quantized.json', format: 'quorum-quantized', version: 1, what: 'a quantized corpus' } as const;

const cardSchema = z
  .object({
    format: z.literal('quorum-quantized'),
    version: z.literal(1),
    quantization: z.enum(['int8', 'binary']),
    rows: z.number().int().min(1),
    dim: z.number().int().min(1).max(65536),
    codes: z.string(),
    scale: z.string().optional(),
    offset: z.string().optional(),
    center: z.string().optional(),
    rotation: z
      .number()
      .int()
      .min(0)
      .max(2 ** 32 - 1)
      .optional(),
  })
  .strict();

/** Bytes of one stored row: dim for int8; for binary the bits padded to whole 64-bit words, then the row's scale and bit count (8 bytes). */
export function quantizedRowBytes(kind: Quantization, dim: number): number {
  return kind === 'int8' ? dim : Math.ceil(dim / 64) * 8 + 8;
}

interface Parts {
  kind: Quantization;
  dim: number;
  codes: Tensor<'u8'>;
  scale?: Tensor<'f32'>;
  offset?: Tensor<'f32'>;
  center?: Tensor<'f32'>;
  rotation?: number;
}

/**
 * A corpus of quantized vectors: int8 codes (one byte a dimension, with a per-dimension scale and offset) or binary
 * codes (one bit a dimension, with the corpus mean they were centred on and a scale per row). Pass it to
 * {@link scoreTopK} as the corpus; give binary corpora full vectors to rescore with (`rescore`). Make one with
 * {@link quantize}, read one with {@link QuantizedTensor.load}.
 *
 * @example
 * const q8 = await quantize(corpus, 'int8');             // 4x fewer bytes than f32
 * const top = await scoreTopK(queries, q8, 10);
 * const bits = await quantize(corpus, 'binary');         // 1 bit a dimension
 * const top2 = await scoreTopK(queries, bits, 10, { rescore: await Tensor.map('corpus.qtns') });
 */
export class QuantizedTensor {
  /** 'int8' or 'binary'. */
  readonly kind: Quantization;
  /** Vectors held. */
  readonly rows: number;
  /** Dimensions of each vector (before any padding). */
  readonly dim: number;
  /** The codes: u8 `[rows, rowBytes]` ({@link quantizedRowBytes}). */
  readonly codes: Tensor<'u8'>;
  /** int8: each dimension's step between codes (f32 `[dim]`); a value is `offset + scale * code`. */
  readonly scale: Tensor<'f32'> | undefined;
  /** int8: each dimension's value of code 0 (f32 `[dim]`). */
  readonly offset: Tensor<'f32'> | undefined;
  /** binary: the mean the signs were taken around (f32 `[dim]`), or undefined for plain signs. */
  readonly center: Tensor<'f32'> | undefined;
  /** binary: the seed of the rotation applied before the signs were taken, or undefined for none. */
  readonly rotation: number | undefined;

  /** @internal Built by {@link quantize}, {@link QuantizedTensor.encode} and {@link QuantizedTensor.load}. */
  constructor(parts: Parts) {
    this.kind = parts.kind;
    this.dim = parts.dim;
    this.codes = parts.codes;
    this.rows = parts.codes.shape[0] ?? 0;
    this.scale = parts.scale;
    this.offset = parts.offset;
    this.center = parts.center;
    this.rotation = parts.rotation;
  }

  /** Bytes in memory (codes and tables). */
  get bytes(): number {
    return this.codes.size + 4 * ((this.scale?.size ?? 0) + (this.offset?.size ?? 0) + (this.center?.size ?? 0));
  }

  /** @internal The native corpus operand; queryBits picks the queries' form (docs/methods/quantization.md). */
  operand(queryBits?: number): CodedOperand {
    return {
      coding: this.kind,
      dim: this.dim,
      codes: this.codes.handle,
      ...(this.scale ? { scale: this.scale.handle, offset: this.offset!.handle } : {}),
      ...(this.kind === 'binary' ? { center: this.center?.handle ?? null, rotation: this.rotation ?? null } : {}),
      ...(queryBits !== undefined ? { queryBits } : {}),
    };
  }

  /**
   * New vectors coded with this corpus's tables (passages added later: their codes match the old ones'). f32, bf16
   * or f16 `[n, dim]`; ERR_SHAPE for another dimension, ERR_NONFINITE for NaN or Infinity.
   */
  async encode(vectors: TensorInput): Promise<QuantizedTensor> {
    return encodeWith(this.kind, Operands.copied, vectors, { tables: this }, true) as Promise<QuantizedTensor>;
  }

  /** {@link QuantizedTensor.encode} on the calling thread. */
  encodeSync(vectors: TensorInput): QuantizedTensor {
    return encodeWith(this.kind, Operands.borrowed, vectors, { tables: this }, false) as QuantizedTensor;
  }

  /** The vectors the codes stand for, f32 `[rows, dim]` (int8: offset + scale * code; binary: center +- the row's scale). */
  dequantize(): Tensor<'f32'> {
    return new Tensor(callNative(() => quantBindings().dequantize(this.operand()))) as Tensor<'f32'>;
  }

  /**
   * Writes the corpus to the directory `dir` (a card, the codes as a mapped tensor file, the tables): an earlier
   * quantized corpus there is replaced whole, any other directory is written into (docs/api.md, where outputs go).
   */
  async save(dir: string): Promise<void> {
    await replaceDirectory(
      dir,
      async (tmp) => {
        await this.codes.save(join(tmp, 'codes.qtns'));
        const tables: Record<string, string> = {};
        for (const [name, t] of [
          ['scale', this.scale],
          ['offset', this.offset],
          ['center', this.center],
        ] as const) {
          if (!t) continue;
          await t.save(join(tmp, `${name}.qtns`));
          tables[name] = `${name}.qtns`;
        }
        writeSavedCard(tmp, quantizedFormat, {
          quantization: this.kind,
          rows: this.rows,
          dim: this.dim,
          codes: 'codes.qtns',
          ...tables,
          ...(this.rotation !== undefined ? { rotation: this.rotation } : {}),
        });
      },
      { kind: { card: quantizedFormat.card, format: quantizedFormat.format } },
    );
  }

  /**
   * Reads a corpus written by {@link QuantizedTensor.save}. The codes are mapped (Tensor.map: every process that
   * loads the directory shares one copy in the page cache), the tables read and checked against their checksums.
   * ERR_IO when the directory or a file is missing, ERR_FORMAT for a card, table or codes file that is corrupt or does
   * not match the card (another dimension, another row count, a non-finite or negative scale).
   */
  static async load(dir: string, options: { verify?: boolean } = {}): Promise<QuantizedTensor> {
    checkOptions(options, new Set(['verify']), 'QuantizedTensor.load options');
    if (options.verify !== undefined && typeof options.verify !== 'boolean') throw new QuorumError('ERR_ARG', 'verify must be a boolean');
    const { card: raw, path } = readSavedCard(dir, quantizedFormat);
    const card = checkCard(cardSchema, raw, path);
    const opened: Tensor[] = [];
    const open = async (name: string | undefined, what: string, dtype: 'u8' | 'f32', shape: number[], verify: boolean) => {
      if (name === undefined) throw new QuorumError('ERR_FORMAT', `${path}: the ${what} table is missing`);
      const t = await Tensor.map(savedFile(dir, name, path, what), { verify });
      opened.push(t);
      if (t.dtype !== dtype || t.shape.length !== shape.length || t.shape.some((x, i) => x !== shape[i]))
        throw new QuorumError(
          'ERR_FORMAT',
          `${path}: ${what} is ${t.dtype} [${t.shape.join(', ')}], expected ${dtype} [${shape.join(', ')}]`,
        );
      return t;
    };
    try {
      const codes = (await open(
        card.codes,
        'codes',
        'u8',
        [card.rows, quantizedRowBytes(card.quantization, card.dim)],
        options.verify === true,
      )) as Tensor<'u8'>;
      const table = (name: string | undefined, what: string) => open(name, what, 'f32', [card.dim], true) as Promise<Tensor<'f32'>>;
      let parts: Parts;
      if (card.quantization === 'int8') {
        parts = { kind: 'int8', dim: card.dim, codes, scale: await table(card.scale, 'scale'), offset: await table(card.offset, 'offset') };
      } else {
        parts = {
          kind: 'binary',
          dim: card.dim,
          codes,
          ...(card.center !== undefined ? { center: await table(card.center, 'center') } : {}),
          ...(card.rotation !== undefined ? { rotation: card.rotation } : {}),
        };
      }
      const q = new QuantizedTensor(parts);
      checkTables(q, path);
      return q;
    } catch (e) {
      opened.forEach((t) => t.dispose());
      throw e;
    }
  }

  /** Frees the codes and tables now (a call in flight keeps them until it ends). */
  dispose(): void {
    for (const t of [this.codes, this.scale, this.offset, this.center]) t?.dispose();
  }

  /** Same as {@link QuantizedTensor.dispose}, for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}
brandClass(QuantizedTensor, 'QuantizedTensor');

/** A table with NaN, Infinity or a negative scale would score every passage NaN or upside down. */
function checkTables(q: QuantizedTensor, path: string): void {
  for (const [name, t] of [
    ['scale', q.scale],
    ['offset', q.offset],
    ['center', q.center],
  ] as const) {
    if (!t) continue;
    const d = t.data;
    for (let i = 0; i < d.length; i++)
      if (!Number.isFinite(d[i]!) || (name === 'scale' && d[i]! < 0))
        throw new QuorumError('ERR_FORMAT', `${path}: the ${name} table holds ${d[i]} at ${i}: it is corrupt`);
  }
}

function checkKind(kind: unknown): asserts kind is Quantization {
  if (kind !== 'int8' && kind !== 'binary')
    throw new QuorumError('ERR_ARG', `quantization must be 'int8' or 'binary', got ${JSON.stringify(kind)}`);
}

function checkQuantizeOptions(kind: Quantization, options: QuantizeOptions): void {
  checkOptions(options, quantizeKeys, 'quantize options');
  if (options.clip !== undefined) {
    if (kind !== 'int8') throw new QuorumError('ERR_ARG', 'clip is an int8 option');
    if (typeof options.clip !== 'number' || !(options.clip >= 0 && options.clip < 0.5))
      throw new QuorumError('ERR_ARG', `clip must be a number in [0, 0.5), got ${String(options.clip)}`);
  }
  for (const key of ['center', 'rotate'] as const) {
    if (options[key] === undefined) continue;
    if (kind !== 'binary') throw new QuorumError('ERR_ARG', `${key} is a binary option`);
    if (typeof options[key] !== 'boolean') throw new QuorumError('ERR_ARG', `${key} must be a boolean`);
  }
}

type Raw = { codes: NativeTensorHandle; scale?: NativeTensorHandle; offset?: NativeTensorHandle; center?: NativeTensorHandle | null };

// quantize's and encode's one definition: fits the tables (or takes `tables`'), codes the rows.
function encodeWith(
  kind: Quantization,
  ops: Operands,
  vectors: TensorInput,
  how: { tables?: QuantizedTensor; options?: QuantizeOptions },
  async: boolean,
): QuantizedTensor | Promise<QuantizedTensor> {
  const v = ops.tensor(vectors, 'vectors');
  const dim = v.shape[1] ?? 0;
  const t = how.tables;
  if (t && (v.shape.length !== 2 || dim !== t.dim))
    throw new QuorumError('ERR_SHAPE', `vectors [${v.shape.join(', ')}] do not match a quantized corpus of dimension ${t.dim}`);
  const b = quantBindings();
  const rotation = kind !== 'binary' ? undefined : t ? t.rotation : how.options?.rotate === false ? undefined : ROTATION_SEED;
  const call = () =>
    kind === 'int8'
      ? b.quantizeInt8(v.handle, how.options?.clip ?? 0, t?.scale?.handle ?? null, t?.offset?.handle ?? null, async)
      : b.quantizeBinary(v.handle, t ? (t.center?.handle ?? null) : how.options?.center === false ? null : 'fit', rotation ?? null, async);
  const wrap = (raw: Raw): QuantizedTensor => {
    if (v !== vectors) v.dispose();
    // Tables given in are copied (dim floats), so that each corpus owns what its dispose() frees.
    const own = (h: NativeTensorHandle | null | undefined, given: Tensor<'f32'> | undefined): Tensor<'f32'> | undefined =>
      given ? Tensor.from(given.data.slice(), [dim], 'f32') : h == null ? undefined : (new Tensor(h) as Tensor<'f32'>);
    return new QuantizedTensor({
      kind,
      dim,
      codes: new Tensor(raw.codes) as Tensor<'u8'>,
      ...(kind === 'int8' ? { scale: own(raw.scale, t?.scale), offset: own(raw.offset, t?.offset) } : {}),
      ...(kind === 'binary' ? { center: own(raw.center, t?.center), ...(rotation !== undefined ? { rotation } : {}) } : {}),
    } as Parts);
  };
  if (!async) {
    try {
      return wrap(callNative(call) as Raw);
    } catch (e) {
      if (v !== vectors) v.dispose();
      throw e;
    }
  }
  return awaitNative(callNative(call) as Promise<Raw>).then(wrap, (e: unknown) => {
    if (v !== vectors) v.dispose();
    throw e;
  });
}

/**
 * Quantizes `vectors` (f32, bf16 or f16 `[rows, dim]`, or `{ data, shape }`) off the main thread. int8 fits each
 * dimension's range and codes it in 256 steps; binary keeps the sign of each dimension around the corpus mean and a
 * scale per row. ERR_NONFINITE for NaN or Infinity in the vectors, ERR_SHAPE for an empty input.
 *
 * @example
 * const q8 = await quantize(corpus, 'int8');
 * q8.bytes / (corpus.size * 4);   // ~0.25
 */
export async function quantize(vectors: TensorInput, kind: Quantization, options: QuantizeOptions = {}): Promise<QuantizedTensor> {
  checkKind(kind);
  checkQuantizeOptions(kind, options);
  return encodeWith(kind, Operands.copied, vectors, { options }, true);
}

/** {@link quantize} on the calling thread. */
export function quantizeSync(vectors: TensorInput, kind: Quantization, options: QuantizeOptions = {}): QuantizedTensor {
  checkKind(kind);
  checkQuantizeOptions(kind, options);
  return encodeWith(kind, Operands.borrowed, vectors, { options }, false) as QuantizedTensor;
}
