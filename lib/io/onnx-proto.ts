// Writes ONNX models: the protobuf wire format (varints, length-delimited fields, fixed 32-bit floats) for the part
// of onnx.proto an exported inference graph uses (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
// ValueInfoProto). Field numbers are onnx.proto's (https://github.com/onnx/onnx/blob/main/onnx/onnx.proto). Written
// here rather than through protobufjs because a general runtime would still need the ONNX schema restated, for about
// as many lines as this encoder; ONNX Runtime parsing every graph Quorum writes is the independent check
// (test/onnx-export.test.ts).
import { QuorumError } from '../errors.js';

/** ONNX element types (TensorProto.DataType) Quorum's graphs use. */
export const OnnxType = { FLOAT: 1, INT32: 6, INT64: 7, BOOL: 9 } as const;
type OnnxElementType = (typeof OnnxType)[keyof typeof OnnxType];

/** A constant tensor (an initializer): float32 or int64 values. */
export interface OnnxTensor {
  name: string;
  dims: readonly number[];
  type: OnnxElementType;
  data: Float32Array | BigInt64Array | Int32Array | Uint8Array;
}

/** An attribute value: number (int unless `float`), float, string, int list, float list or tensor. */
export type OnnxAttribute =
  | { int: number }
  | { float: number }
  | { string: string }
  | { ints: readonly number[] }
  | { floats: readonly number[] }
  | { tensor: OnnxTensor };

export interface OnnxNode {
  op: string;
  inputs: readonly string[];
  outputs: readonly string[];
  name?: string;
  attributes?: Readonly<Record<string, OnnxAttribute>>;
}

/** A graph input or output: element type and dims (a string dim is symbolic, e.g. 'batch'). */
export interface OnnxValueInfo {
  name: string;
  type: OnnxElementType;
  dims: ReadonlyArray<number | string>;
}

interface OnnxModel {
  graphName: string;
  nodes: readonly OnnxNode[];
  initializers: readonly OnnxTensor[];
  inputs: readonly OnnxValueInfo[];
  outputs: readonly OnnxValueInfo[];
  /** Default-domain opset. */
  opset: number;
  producer: string;
  /** ModelProto.metadata_props. */
  metadata?: Readonly<Record<string, string>>;
}

// Chunks are collected and joined once, so that a BERT-base graph (440 MB of weights) is copied only at the end.
class Writer {
  readonly chunks: Uint8Array[] = [];
  length = 0;
  private push(b: Uint8Array): void {
    this.chunks.push(b);
    this.length += b.length;
  }
  varint(v: number | bigint): void {
    let x = BigInt.asUintN(64, BigInt(v));
    const out: number[] = [];
    while (x >= 0x80n) {
      out.push(Number(x & 0x7fn) | 0x80);
      x >>= 7n;
    }
    out.push(Number(x));
    this.push(Uint8Array.from(out));
  }
  key(field: number, wire: 0 | 1 | 2 | 5): void {
    this.varint((field << 3) | wire);
  }
  int(field: number, v: number | bigint): void {
    this.key(field, 0);
    this.varint(v);
  }
  float(field: number, v: number): void {
    this.key(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.push(b);
  }
  bytes(field: number, b: Uint8Array): void {
    this.key(field, 2);
    this.varint(b.length);
    this.push(b);
  }
  string(field: number, s: string): void {
    this.bytes(field, new TextEncoder().encode(s));
  }
  message(field: number, build: (w: Writer) => void): void {
    const inner = new Writer();
    build(inner);
    this.key(field, 2);
    this.varint(inner.length);
    for (const c of inner.chunks) this.push(c);
  }
  finish(): Uint8Array {
    const out = new Uint8Array(this.length);
    let o = 0;
    for (const c of this.chunks) {
      out.set(c, o);
      o += c.length;
    }
    return out;
  }
}

function tensor(w: Writer, t: OnnxTensor): void {
  for (const d of t.dims) w.int(1, d);
  w.int(2, t.type);
  w.string(8, t.name);
  // Little-endian raw bytes, as TensorProto.raw_data requires (every supported platform is little-endian).
  w.bytes(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
}

function attribute(w: Writer, name: string, a: OnnxAttribute): void {
  w.string(1, name);
  if ('int' in a) {
    w.int(20, 2);
    w.int(3, a.int);
  } else if ('float' in a) {
    w.int(20, 1);
    w.float(2, a.float);
  } else if ('string' in a) {
    w.int(20, 3);
    w.string(4, a.string);
  } else if ('ints' in a) {
    w.int(20, 7);
    for (const v of a.ints) w.int(8, v);
  } else if ('floats' in a) {
    w.int(20, 6);
    for (const v of a.floats) w.float(7, v);
  } else {
    w.int(20, 4);
    w.message(5, (t) => tensor(t, a.tensor));
  }
}

function valueInfo(w: Writer, v: OnnxValueInfo): void {
  w.string(1, v.name);
  w.message(2, (type) =>
    type.message(1, (tt) => {
      tt.int(1, v.type);
      tt.message(2, (shape) => {
        for (const d of v.dims) shape.message(1, (dim) => (typeof d === 'number' ? dim.int(1, d) : dim.string(2, d)));
      });
    }),
  );
}

/**
 * Serializes a model (IR version 8, which opset 17 needs; ONNX Runtime 1.14 and later read it). ERR_ARG for an
 * initializer whose values do not fill its dims.
 */
export function encodeOnnxModel(m: OnnxModel): Uint8Array {
  for (const t of m.initializers) {
    const n = t.dims.reduce((a, b) => a * b, 1);
    if (t.data.length !== n)
      throw new QuorumError('ERR_ARG', `ONNX initializer ${t.name}: ${t.data.length} values for dims [${t.dims.join(', ')}]`);
  }
  const w = new Writer();
  w.int(1, 8);
  w.string(2, m.producer);
  w.message(7, (g) => {
    for (const n of m.nodes)
      g.message(1, (nw) => {
        for (const i of n.inputs) nw.string(1, i);
        for (const o of n.outputs) nw.string(2, o);
        if (n.name) nw.string(3, n.name);
        nw.string(4, n.op);
        for (const [k, a] of Object.entries(n.attributes ?? {})) nw.message(5, (aw) => attribute(aw, k, a));
      });
    g.string(2, m.graphName);
    for (const t of m.initializers) g.message(5, (tw) => tensor(tw, t));
    for (const v of m.inputs) g.message(11, (vw) => valueInfo(vw, v));
    for (const v of m.outputs) g.message(12, (vw) => valueInfo(vw, v));
  });
  w.message(8, (o) => {
    o.string(1, '');
    o.int(2, m.opset);
  });
  for (const [k, v] of Object.entries(m.metadata ?? {}))
    w.message(14, (e) => {
      e.string(1, k);
      e.string(2, v);
    });
  return w.finish();
}
