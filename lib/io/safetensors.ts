// Reads and writes the safetensors format (Hugging Face): an 8-byte little-endian header length N, N bytes of
// JSON naming every tensor's dtype, shape and byte range, then the raw little-endian data. Reading is strict because
// a checkpoint that half-loads would train silently from garbage.
import { readFile } from 'node:fs/promises';

import { QuorumError } from '../errors.js';
import { elementCount } from '../shape.js';

/** The dtypes {@link readSafetensors} decodes. Integers come back converted to float as well. */
type SafetensorsDtype = 'F32' | 'F16' | 'BF16' | 'F64' | 'I32' | 'I64' | 'I8';

/** One decoded tensor: the file's dtype and shape, the values as float32 (row-major). */
export interface SafetensorsTensor {
  /** The dtype the file stores it in. */
  dtype: SafetensorsDtype;
  /** Its dimensions. */
  shape: number[];
  /** The values, decoded to float32, row-major. */
  data: Float32Array;
}

/** What {@link writeSafetensors} takes per tensor. */
export interface TensorToWrite {
  /** Its dimensions. */
  shape: number[];
  /** The values, row-major (`shape`'s product of them). */
  data: Float32Array;
  /**
   * Stored as float32 (default), bfloat16 (rounded to nearest even; half the bytes) or int8 (the values must
   * already be integers in [-128, 127]: ERR_RANGE otherwise).
   */
  dtype?: 'F32' | 'BF16' | 'I8';
}

/** Bytes per element of each dtype. */
export const elementBytes: Readonly<Record<SafetensorsDtype, number>> = { F32: 4, F16: 2, BF16: 2, F64: 8, I32: 4, I64: 8, I8: 1 };

// The reference implementation refuses larger headers; a bigger value means a corrupt or hostile length field.
const maxHeaderBytes = 100 * 1024 * 1024;

interface Entry {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  begin: number;
  end: number;
}

interface Parsed {
  entries: Entry[];
  metadata: Record<string, string>;
  dataStart: number;
}

const bad = (message: string) => new QuorumError('ERR_FORMAT', `safetensors: ${message}`);

/**
 * `t` (a tensor read from `path`) when it is stored as floats: F32, BF16 or F16. Quorum writes its vectors and tables
 * so; an F32 tensor relabelled I32 in the header decodes to other numbers and would change every score (issue 65), so
 * any other dtype is ERR_FORMAT naming the file and the tensor. Undefined stays undefined (the caller's "missing").
 */
export function floatTensor(t: SafetensorsTensor | undefined, path: string, name: string): SafetensorsTensor | undefined {
  if (t && t.dtype !== 'F32' && t.dtype !== 'BF16' && t.dtype !== 'F16')
    throw new QuorumError('ERR_FORMAT', `${path}: '${name}' is stored as ${t.dtype}; Quorum writes it as floats (F32, BF16 or F16)`);
  return t;
}

/**
 * Decodes every tensor of a safetensors file. ERR_FORMAT for anything malformed: a header length past the end, a
 * header that is not a JSON object, an unknown dtype, a byte range outside the data, out of order, overlapping or
 * leaving a gap, or a size that disagrees with the shape. F32 data whose offset is 4-byte aligned is returned as a
 * view sharing `bytes`' memory (on little-endian machines); everything else is a fresh array.
 *
 * @example
 * const tensors = readSafetensors(readFileSync('model.safetensors'));   // node:fs
 * tensors.get('embeddings.word_embeddings.weight')?.shape; // [30522, 768]
 */
export function readSafetensors(bytes: Uint8Array): Map<string, SafetensorsTensor> {
  if (!(bytes instanceof Uint8Array)) throw new QuorumError('ERR_ARG', 'readSafetensors needs a Buffer or Uint8Array');
  const { entries, dataStart } = parseHeader(bytes);
  const out = new Map<string, SafetensorsTensor>();
  for (const e of entries) {
    out.set(e.name, { dtype: e.dtype, shape: e.shape, data: decode(bytes, dataStart + e.begin, e) });
  }
  return out;
}

/**
 * The `__metadata__` string map of a safetensors file ({} when it has none). Validates the whole header.
 *
 * @example
 * safetensorsMetadata(writeSafetensors({}, { format: 'pt' })); // { format: 'pt' }
 */
export function safetensorsMetadata(bytes: Uint8Array): Record<string, string> {
  return parseHeader(bytes).metadata;
}

/**
 * Reads and decodes a safetensors file: ERR_IO when it cannot be read, ERR_FORMAT when it is malformed.
 *
 * @example
 * const tensors = await loadSafetensors('bert-base-uncased/model.safetensors');
 */
export async function loadSafetensors(path: string): Promise<Map<string, SafetensorsTensor>> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (e) {
    throw new QuorumError('ERR_IO', `cannot read ${path}: ${(e as Error).message}`);
  }
  try {
    return readSafetensors(bytes);
  } catch (e) {
    if (e instanceof QuorumError) throw new QuorumError(e.code, `${path}: ${e.message}`, { cause: e });
    throw e;
  }
}

/**
 * Encodes tensors (float32 values, stored as F32, BF16 or I8) as a safetensors file, in the given order, with
 * optional string metadata. The header is padded with spaces so the data starts 8-byte aligned. ERR_ARG for a bad
 * name, shape or metadata value; ERR_SHAPE when a tensor's length is not the product of its shape.
 *
 * @example
 * const bytes = writeSafetensors({ w: { shape: [2, 2], data: new Float32Array([1, 2, 3, 4]) } }, { format: 'pt' });
 */
export function writeSafetensors(
  tensors: Map<string, TensorToWrite> | Record<string, TensorToWrite>,
  metadata?: Record<string, string>,
): Uint8Array {
  if (tensors === null || typeof tensors !== 'object')
    throw new QuorumError('ERR_ARG', 'writeSafetensors needs a Map or an object of tensors');
  const list = tensors instanceof Map ? [...tensors] : Object.entries(tensors);
  const header: Record<string, unknown> = {};
  if (metadata !== undefined) {
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string') throw new QuorumError('ERR_ARG', `safetensors metadata ${k}: values must be strings`);
    }
    header.__metadata__ = metadata;
  }
  let offset = 0;
  for (const [name, t] of list) {
    if (name === '__metadata__' || name.length === 0) throw new QuorumError('ERR_ARG', `bad tensor name '${name}'`);
    if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new QuorumError('ERR_ARG', `${name}: shape must be non-negative integers, got ${JSON.stringify(t.shape)}`);
    }
    if (!(t.data instanceof Float32Array)) throw new QuorumError('ERR_ARG', `${name}: data must be a Float32Array`);
    const count = elementCount(t.shape);
    if (t.data.length !== count) {
      throw new QuorumError('ERR_SHAPE', `${name}: shape [${t.shape.join(', ')}] needs ${count} values, got ${t.data.length}`);
    }
    const dtype = t.dtype ?? 'F32';
    if (dtype !== 'F32' && dtype !== 'BF16' && dtype !== 'I8')
      throw new QuorumError('ERR_ARG', `${name}: can write F32, BF16 or I8, not ${String(dtype)}`);
    if (dtype === 'I8') {
      const i = t.data.findIndex((v) => !(Number.isInteger(v) && v >= -128 && v <= 127));
      if (i >= 0) throw new QuorumError('ERR_RANGE', `${name}: value ${i} (${t.data[i]}) is not an integer in [-128, 127] for I8`);
    }
    const bytes = elementBytes[dtype] * count;
    header[name] = { dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerLength = Math.ceil((8 + json.length) / 8) * 8 - 8;
  const out = new Uint8Array(8 + headerLength + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(headerLength), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + headerLength);
  let at = 8 + headerLength;
  const bits = new Uint32Array(1);
  const asFloat = new Float32Array(bits.buffer);
  for (const [, t] of list) {
    if (t.dtype === 'BF16') {
      for (let i = 0; i < t.data.length; i++, at += 2) {
        asFloat[0] = t.data[i] as number;
        const b = bits[0] as number;
        // NaN keeps a quiet NaN (rounding could carry it into infinity); others round to nearest even.
        const half = (b & 0x7fffffff) > 0x7f800000 ? (b >>> 16) | 0x40 : (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
        view.setUint16(at, half & 0xffff, true);
      }
    } else if (t.dtype === 'I8') {
      for (let i = 0; i < t.data.length; i++, at += 1) view.setInt8(at, t.data[i] as number);
    } else {
      for (let i = 0; i < t.data.length; i++, at += 4) view.setFloat32(at, t.data[i] as number, true);
    }
  }
  return out;
}

function parseHeader(bytes: Uint8Array): Parsed {
  if (bytes.length < 8) throw bad(`file is ${bytes.length} bytes, shorter than the 8-byte header length`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = view.getBigUint64(0, true);
  if (n > BigInt(bytes.length - 8)) throw bad(`header length ${n} runs past the end of the ${bytes.length}-byte file`);
  if (n > BigInt(maxHeaderBytes)) throw bad(`header length ${n} exceeds ${maxHeaderBytes} bytes`);
  const headerLength = Number(n);
  const dataStart = 8 + headerLength;
  const dataLength = bytes.length - dataStart;
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, dataStart)));
  } catch (e) {
    throw bad(`header is not valid UTF-8 JSON (${(e as Error).message})`);
  }
  if (!isObject(json)) throw bad('header is not a JSON object');
  let metadata: Record<string, string> = {};
  const entries: Entry[] = [];
  for (const [name, value] of Object.entries(json)) {
    if (name === '__metadata__') {
      metadata = parseMetadata(value);
      continue;
    }
    entries.push(parseEntry(name, value, dataLength));
  }
  checkLayout(entries, dataLength);
  return { entries, metadata, dataStart };
}

function parseMetadata(value: unknown): Record<string, string> {
  if (!isObject(value)) throw bad('__metadata__ is not an object');
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw bad(`__metadata__.${k} is not a string`);
  }
  return value as Record<string, string>;
}

function parseEntry(name: string, value: unknown, dataLength: number): Entry {
  if (!isObject(value)) throw bad(`${name}: entry is not an object`);
  const { dtype, shape, data_offsets: offsets } = value;
  if (typeof dtype !== 'string' || !Object.hasOwn(elementBytes, dtype)) {
    throw bad(`${name}: unsupported dtype ${JSON.stringify(dtype)} (expected one of ${Object.keys(elementBytes).join(', ')})`);
  }
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw bad(`${name}: shape ${JSON.stringify(shape)} is not a list of non-negative integers`);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0)) {
    throw bad(`${name}: data_offsets ${JSON.stringify(offsets)} is not [begin, end]`);
  }
  const [begin, end] = offsets as [number, number];
  if (begin > end || end > dataLength) {
    throw bad(`${name}: data_offsets [${begin}, ${end}] lie outside the ${dataLength}-byte data section`);
  }
  const size = elementBytes[dtype as SafetensorsDtype];
  const count = elementCount(shape as number[]);
  if (end - begin !== count * size) {
    throw bad(`${name}: ${end - begin} bytes, but ${dtype} shape [${shape.join(', ')}] needs ${count * size}`);
  }
  return { name, dtype: dtype as SafetensorsDtype, shape: shape as number[], begin, end };
}

// Like the reference reader, the byte ranges must tile the data section exactly: an overlap or a gap means the
// header does not describe this data.
function checkLayout(entries: Entry[], dataLength: number): void {
  const sorted = [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let at = 0;
  let previous = '';
  for (const e of sorted) {
    if (e.begin < at) throw bad(`${e.name}: bytes [${e.begin}, ${e.end}) overlap ${previous}`);
    if (e.begin > at) throw bad(`${e.name}: gap of ${e.begin - at} unused bytes before it in the data section`);
    at = e.end;
    previous = e.name;
  }
  if (at !== dataLength) throw bad(`${dataLength - at} trailing bytes after the last tensor`);
}

const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function decode(bytes: Uint8Array, start: number, e: Entry): Float32Array {
  const count = (e.end - e.begin) / elementBytes[e.dtype];
  const absolute = bytes.byteOffset + start;
  if (e.dtype === 'F32' && littleEndian && absolute % 4 === 0) return new Float32Array(bytes.buffer, absolute, count);
  const view = new DataView(bytes.buffer, absolute, e.end - e.begin);
  const out = new Float32Array(count);
  switch (e.dtype) {
    case 'F32':
      for (let i = 0; i < count; i++) out[i] = view.getFloat32(4 * i, true);
      break;
    case 'F64':
      for (let i = 0; i < count; i++) out[i] = view.getFloat64(8 * i, true);
      break;
    case 'F16':
      for (let i = 0; i < count; i++) out[i] = halfToFloat(view.getUint16(2 * i, true));
      break;
    case 'BF16':
      // bf16 is the top half of a float32, so widening is a shift.
      for (let i = 0; i < count; i++) out[i] = bitsToFloat(view.getUint16(2 * i, true) << 16);
      break;
    case 'I32':
      for (let i = 0; i < count; i++) out[i] = view.getInt32(4 * i, true);
      break;
    case 'I64':
      for (let i = 0; i < count; i++) out[i] = Number(view.getBigInt64(8 * i, true));
      break;
    case 'I8':
      // One native widening copy (a getInt8 per element made decoding a q8 model's 3.9M codes 23 ms).
      out.set(new Int8Array(bytes.buffer, absolute, count));
      break;
  }
  return out;
}

const bitsScratch = new DataView(new ArrayBuffer(4));

function bitsToFloat(bits: number): number {
  bitsScratch.setUint32(0, bits >>> 0);
  return bitsScratch.getFloat32(0);
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 31) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
