// safetensors reading and writing (hand-made files for every dtype and every malformed case) and the mapping of a
// Hugging Face BERT checkpoint onto encoder parameter names.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadSafetensors, readSafetensors, safetensorsMetadata, writeSafetensors } from '../lib/io/safetensors.js';
import { mapBertCheckpoint } from '../lib/models/checkpoint-map.js';
import { type EncoderConfig, parameterNames } from '../lib/models/config.js';
import { parameterShapes } from '../lib/models/parameters.js';
import { code } from './basics.js';


function message(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return (e as Error).message;
  }
  return '';
}

/** A safetensors file from a header object (serialized as is, unpadded) and the raw data bytes. */
function file(header: unknown, data: ArrayLike<number> = []): Uint8Array {
  const json = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

const le16 = (...v: number[]) => v.flatMap((x) => [x & 0xff, x >> 8]);

describe('writeSafetensors / readSafetensors', () => {
  it('round trip with metadata, in order, 8-byte aligned data', () => {
    const tensors = new Map([
      ['b', { shape: [3], data: new Float32Array([1.5, -2, 3.25]) }],
      ['a.weight', { shape: [2, 2], data: new Float32Array([0.1, 0.2, 0.3, 0.4]) }],
      ['empty', { shape: [0, 4], data: new Float32Array(0) }],
      ['scalar', { shape: [], data: new Float32Array([7]) }],
    ]);
    const bytes = writeSafetensors(tensors, { format: 'pt', note: 'ünïcode' });
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect((8 + n) % 8).toBe(0);
    // Padding is spaces after the JSON.
    expect(bytes[8 + n - 1] === 0x20 || bytes[8 + n - 1] === 0x7d).toBe(true);
    const back = readSafetensors(bytes);
    expect([...back.keys()]).toEqual(['b', 'a.weight', 'empty', 'scalar']);
    for (const [name, t] of tensors) {
      expect(back.get(name)?.dtype).toBe('F32');
      expect(back.get(name)?.shape).toEqual(t.shape);
      expect(back.get(name)?.data).toEqual(t.data);
    }
    expect(safetensorsMetadata(bytes)).toEqual({ format: 'pt', note: 'ünïcode' });
    expect(safetensorsMetadata(writeSafetensors({}))).toEqual({});
    expect(readSafetensors(writeSafetensors({})).size).toBe(0);
  });

  it('accepts a Record and keeps its order', () => {
    const bytes = writeSafetensors({ z: { shape: [1], data: new Float32Array([1]) }, y: { shape: [1], data: new Float32Array([2]) } });
    expect([...readSafetensors(bytes).entries()].map(([k, t]) => [k, t.data[0]])).toEqual([
      ['z', 1],
      ['y', 2],
    ]);
  });

  it('writes BF16 rounded to nearest even (ties to even, NaN stays NaN, overflow to infinity)', () => {
    // 1 + 2^-8 is a tie between bf16 1 and 1 + 2^-7: even mantissa wins (1); 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
    const values = Float32Array.of(1, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5, 3.4e38, NaN, 0, 1 + 2 ** -9);
    const bytes = writeSafetensors({ w: { shape: [8], data: values, dtype: 'BF16' }, f: { shape: [1], data: Float32Array.of(0.1) } });
    const back = readSafetensors(bytes);
    expect(back.get('w')!.dtype).toBe('BF16');
    expect(Array.from(back.get('w')!.data)).toEqual([1, 1, 1 + 2 ** -6, -2.5, Infinity, NaN, 0, 1]);
    expect(back.get('f')!.data[0]).toBe(Math.fround(0.1));
    expect(() => writeSafetensors({ w: { shape: [1], data: Float32Array.of(1), dtype: 'F16' as never } })).toThrow(expect.objectContaining({ code: 'ERR_ARG' }));
  });

  it('writes and reads I8 (integers in [-128, 127] only), also between unaligned F32 tensors', () => {
    const bytes = writeSafetensors({
      q: { shape: [5], data: Float32Array.of(-128, -1, 0, 7, 127), dtype: 'I8' },
      f: { shape: [2], data: Float32Array.of(0.5, -2) },
    });
    const back = readSafetensors(bytes);
    expect(back.get('q')!.dtype).toBe('I8');
    expect(Array.from(back.get('q')!.data)).toEqual([-128, -1, 0, 7, 127]);
    expect(Array.from(back.get('f')!.data)).toEqual([0.5, -2]);
    for (const v of [128, -129, 1.5, NaN])
      expect(() => writeSafetensors({ q: { shape: [1], data: Float32Array.of(v), dtype: 'I8' } }), String(v)).toThrow(expect.objectContaining({ code: 'ERR_RANGE' }));
    // Hand-made bytes: 0xff is -1, 0x80 is -128.
    expect(Array.from(readSafetensors(file({ q: { dtype: 'I8', shape: [3], data_offsets: [0, 3] } }, [0xff, 0x80, 0x05])).get('q')!.data)).toEqual([-1, -128, 5]);
  });

  it('decodes F16, BF16, F64, I32 and I64 from hand-made bytes', () => {
    const f64 = new Uint8Array(new Float64Array([0.1, -1e300]).buffer);
    const i32 = new Uint8Array(new Int32Array([-7, 123456]).buffer);
    const i64 = new Uint8Array(new BigInt64Array([2n ** 40n, -3n]).buffer);
    // F16: 1, -2, 1/3 rounded (0x3555 = 0.333251953125), the smallest subnormal 2^-24, +Inf.
    // BF16: 1, -3, 3.140625 (0x4049).
    const data = [...le16(0x3c00, 0xc000, 0x3555, 0x0001, 0x7c00), ...le16(0x3f80, 0xc040, 0x4049), ...f64, ...i32, ...i64];
    const header = {
      h: { dtype: 'F16', shape: [5], data_offsets: [0, 10] },
      bf: { dtype: 'BF16', shape: [3, 1], data_offsets: [10, 16] },
      d: { dtype: 'F64', shape: [2], data_offsets: [16, 32] },
      i: { dtype: 'I32', shape: [2], data_offsets: [32, 40] },
      l: { dtype: 'I64', shape: [1, 2], data_offsets: [40, 56] },
    };
    const t = readSafetensors(file(header, data));
    expect(Array.from(t.get('h')!.data)).toEqual([1, -2, 0.333251953125, 2 ** -24, Infinity]);
    expect(t.get('h')!.dtype).toBe('F16');
    expect(Array.from(t.get('bf')!.data)).toEqual([1, -3, 3.140625]);
    expect(t.get('bf')!.shape).toEqual([3, 1]);
    expect(Array.from(t.get('d')!.data)).toEqual([Math.fround(0.1), -Infinity]);
    expect(Array.from(t.get('i')!.data)).toEqual([-7, 123456]);
    expect(Array.from(t.get('l')!.data)).toEqual([2 ** 40, -3]);
  });

  it('unaligned F32 data (in the file and in the caller buffer) is copied correctly', () => {
    const f32 = new Uint8Array(new Float32Array([1.25, -0.5]).buffer);
    const header = {
      h: { dtype: 'F16', shape: [1], data_offsets: [0, 2] },
      w: { dtype: 'F32', shape: [2], data_offsets: [2, 10] },
    };
    const bytes = file(header, [...le16(0x3c00), ...f32]);
    for (let shift = 0; shift < 4; shift++) {
      const holder = new Uint8Array(bytes.length + shift);
      holder.set(bytes, shift);
      const t = readSafetensors(holder.subarray(shift));
      expect(Array.from(t.get('w')!.data)).toEqual([1.25, -0.5]);
      expect(Array.from(t.get('h')!.data)).toEqual([1]);
    }
  });

  it('entries may be listed out of offset order', () => {
    const header = {
      second: { dtype: 'BF16', shape: [1], data_offsets: [2, 4] },
      first: { dtype: 'BF16', shape: [1], data_offsets: [0, 2] },
    };
    const t = readSafetensors(file(header, le16(0x3f80, 0x4000)));
    expect(t.get('first')!.data[0]).toBe(1);
    expect(t.get('second')!.data[0]).toBe(2);
  });

  it('ERR_FORMAT for every malformed file, with a message saying what is wrong', () => {
    const ok = { w: { dtype: 'BF16', shape: [2], data_offsets: [0, 4] } };
    const data = le16(0x3f80, 0x3f80);
    const cases: [string, Uint8Array, RegExp][] = [
      ['too short', new Uint8Array(5), /shorter than/],
      ['header length past the end', (() => {
        const b = file(ok, data);
        new DataView(b.buffer).setBigUint64(0, BigInt(b.length), true);
        return b;
      })(), /past the end/],
      ['huge header length', (() => {
        const b = file(ok, data);
        new DataView(b.buffer).setBigUint64(0, 2n ** 63n, true);
        return b;
      })(), /past the end/],
      ['not JSON', file('{"w": ', data), /not valid UTF-8 JSON/],
      ['not UTF-8', (() => {
        const b = file('{"\u00e9":1}');
        b[10] = 0xff;
        return b;
      })(), /UTF-8/],
      ['array header', file([1, 2]), /not a JSON object/],
      ['entry not an object', file({ w: 3 }), /not an object/],
      ['unknown dtype', file({ w: { dtype: 'U8', shape: [4], data_offsets: [0, 4] } }, data), /unsupported dtype "U8"/],
      ['missing dtype', file({ w: { shape: [2], data_offsets: [0, 4] } }, data), /unsupported dtype/],
      ['fractional shape', file({ w: { dtype: 'BF16', shape: [1.5], data_offsets: [0, 4] } }, data), /shape/],
      ['negative shape', file({ w: { dtype: 'BF16', shape: [-2], data_offsets: [0, 4] } }, data), /shape/],
      ['shape not a list', file({ w: { dtype: 'BF16', shape: 2, data_offsets: [0, 4] } }, data), /shape/],
      ['offsets not a pair', file({ w: { dtype: 'BF16', shape: [2], data_offsets: [0] } }, data), /data_offsets/],
      ['negative offset', file({ w: { dtype: 'BF16', shape: [2], data_offsets: [-1, 4] } }, data), /data_offsets/],
      ['begin after end', file({ w: { dtype: 'BF16', shape: [2], data_offsets: [4, 0] } }, data), /outside/],
      ['end past the data', file({ w: { dtype: 'BF16', shape: [3], data_offsets: [0, 6] } }, data), /outside/],
      ['size disagrees with shape', file({ w: { dtype: 'F32', shape: [2], data_offsets: [0, 4] } }, data), /needs 8/],
      ['overlap', file({
        a: { dtype: 'BF16', shape: [2], data_offsets: [0, 4] },
        b: { dtype: 'BF16', shape: [1], data_offsets: [2, 4] },
      }, data), /overlap/],
      ['gap', file({ w: { dtype: 'BF16', shape: [1], data_offsets: [2, 4] } }, data), /gap/],
      ['trailing bytes', file({ w: { dtype: 'BF16', shape: [1], data_offsets: [0, 2] } }, data), /trailing/],
      ['metadata not an object', file({ __metadata__: 'x' }), /__metadata__/],
      ['metadata value not a string', file({ __metadata__: { n: 1 } }), /__metadata__\.n/],
    ];
    for (const [what, bytes, pattern] of cases) {
      expect(code(() => readSafetensors(bytes)), what).toBe('ERR_FORMAT');
      expect(message(() => readSafetensors(bytes)), what).toMatch(pattern);
    }
    expect(code(() => readSafetensors(file(ok, data)))).toBeUndefined();
  });

  it('writer argument errors', () => {
    expect(code(() => writeSafetensors({ w: { shape: [3], data: new Float32Array(2) } }))).toBe('ERR_SHAPE');
    expect(code(() => writeSafetensors({ __metadata__: { shape: [1], data: new Float32Array(1) } }))).toBe('ERR_ARG');
    expect(code(() => writeSafetensors({ w: { shape: [-1], data: new Float32Array(0) } }))).toBe('ERR_ARG');
    expect(code(() => writeSafetensors({ w: { shape: [1], data: [1] as unknown as Float32Array } }))).toBe('ERR_ARG');
    expect(code(() => writeSafetensors({}, { n: 1 as unknown as string }))).toBe('ERR_ARG');
  });

  it('loadSafetensors reads a file; ERR_IO when missing, ERR_FORMAT naming the path when malformed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quorum-st-'));
    try {
      const path = join(dir, 'm.safetensors');
      writeFileSync(path, writeSafetensors({ w: { shape: [2], data: new Float32Array([3, 4]) } }));
      expect(Array.from((await loadSafetensors(path)).get('w')!.data)).toEqual([3, 4]);
      await expect(loadSafetensors(join(dir, 'nope'))).rejects.toMatchObject({ code: 'ERR_IO' });
      writeFileSync(path, new Uint8Array(3));
      await expect(loadSafetensors(path)).rejects.toMatchObject({ code: 'ERR_FORMAT', message: expect.stringContaining(path) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('mapBertCheckpoint', () => {
  const base: EncoderConfig = {
    vocabSize: 6,
    hiddenSize: 4,
    layers: 2,
    heads: 2,
    ffnSize: 8,
    maxPositions: 5,
    typeVocabSize: 2,
    embeddingSize: 4,
    dropout: 0,
    layerNormEps: 1e-12,
    pooling: 'cls',
    projectionDim: 0,
  };

  /** A Hugging Face style checkpoint for `config`: every tensor filled with a distinct value. */
  function checkpoint(config: EncoderConfig, rename: (name: string) => string = (n) => `bert.${n}`) {
    const source = new Map<string, { shape: number[]; data: Float32Array }>();
    let k = 1;
    for (const [name, shape] of parameterShapes(config)) {
      const n = shape.reduce((a, b) => a * b, 1);
      source.set(rename(name), { shape, data: new Float32Array(n).fill(k++) });
    }
    return source;
  }

  it('a plain BERT: strips bert., reports pooler and heads as unused', () => {
    const source = checkpoint(base);
    source.set('bert.pooler.dense.weight', { shape: [4, 4], data: new Float32Array(16) });
    source.set('cls.predictions.bias', { shape: [6], data: new Float32Array(6) });
    source.set('bert.embeddings.position_ids', { shape: [1, 5], data: new Float32Array(5) });
    const { tensors, missing, unused } = mapBertCheckpoint(source, base);
    expect([...tensors.keys()]).toEqual(parameterNames(base));
    expect(missing).toEqual([]);
    expect(unused).toEqual(['bert.pooler.dense.weight', 'cls.predictions.bias', 'bert.embeddings.position_ids']);
    expect(tensors.get('encoder.layer.1.output.dense.bias')).toBe(source.get('bert.encoder.layer.1.output.dense.bias')!.data);
  });

  it('TF-style LayerNorm.gamma / beta and unprefixed names', () => {
    const source = checkpoint(base, (n) => n.replace(/LayerNorm\.weight$/, 'LayerNorm.gamma').replace(/LayerNorm\.bias$/, 'LayerNorm.beta'));
    const { tensors, missing, unused } = mapBertCheckpoint(source, base);
    expect(missing).toEqual([]);
    expect(unused).toEqual([]);
    expect(tensors.get('embeddings.LayerNorm.weight')).toBe(source.get('embeddings.LayerNorm.gamma')!.data);
    expect(tensors.get('encoder.layer.0.attention.output.LayerNorm.bias')).toBe(
      source.get('encoder.layer.0.attention.output.LayerNorm.beta')!.data,
    );
  });

  it('TASER: experts are copies of the pretrained FFN; gate and projection are missing; extra layers unused', () => {
    const taser: EncoderConfig = { ...base, layers: 2, projectionDim: 3, taser: { every: 2, experts: 2, routing: 'seq' } };
    const source = checkpoint({ ...base, layers: 3 });
    const { tensors, missing, unused } = mapBertCheckpoint(source, taser);
    expect(missing).toEqual(['encoder.gate.weight', 'encoder.gate.bias', 'projection.weight', 'projection.bias']);
    expect(unused).toEqual([...source.keys()].filter((n) => n.startsWith('bert.encoder.layer.2.')));
    for (const rest of ['intermediate.dense.weight', 'intermediate.dense.bias', 'output.dense.weight', 'output.dense.bias', 'output.LayerNorm.weight', 'output.LayerNorm.bias']) {
      const pretrained = source.get(`bert.encoder.layer.1.${rest}`)!.data;
      const e0 = tensors.get(`encoder.layer.1.experts.0.${rest}`)!;
      const e1 = tensors.get(`encoder.layer.1.experts.1.${rest}`)!;
      expect(e0).toEqual(pretrained);
      expect(e1).toEqual(pretrained);
      // Separate arrays, so training one expert leaves the other alone.
      expect(e1).not.toBe(e0);
    }
    expect(tensors.has('encoder.layer.1.intermediate.dense.weight')).toBe(false);
    expect(tensors.size).toBe(parameterNames(taser).length - missing.length);
  });

  it('a checkpoint that already has expert (and gate) tensors loads them by name', () => {
    const taser: EncoderConfig = { ...base, taser: { every: 2, experts: 2, routing: 'tok', perLayerGate: true } };
    const source = checkpoint(taser, (n) => n);
    const { tensors, missing, unused } = mapBertCheckpoint(source, taser);
    expect(missing).toEqual([]);
    expect(unused).toEqual([]);
    for (const name of parameterNames(taser)) expect(tensors.get(name)).toBe(source.get(name)!.data);
  });

  it('ERR_SHAPE naming the parameter and both shapes', () => {
    const source = checkpoint({ ...base, maxPositions: 512 });
    expect(code(() => mapBertCheckpoint(source, base))).toBe('ERR_SHAPE');
    expect(message(() => mapBertCheckpoint(source, base))).toMatch(
      /embeddings\.position_embeddings\.weight.*\[512, 4\].*\[5, 4\]/,
    );
    const wrongLength = checkpoint(base);
    wrongLength.set('bert.embeddings.LayerNorm.bias', { shape: [4], data: new Float32Array(3) });
    expect(code(() => mapBertCheckpoint(wrongLength, base))).toBe('ERR_SHAPE');
  });

  it('ERR_FORMAT when two checkpoint names mean the same parameter', () => {
    const source = checkpoint(base);
    source.set('embeddings.LayerNorm.gamma', { shape: [4], data: new Float32Array(4) });
    expect(code(() => mapBertCheckpoint(source, base))).toBe('ERR_FORMAT');
  });

  it('a written checkpoint read back maps onto the encoder', () => {
    const bytes = writeSafetensors(checkpoint(base));
    const { missing, unused, tensors } = mapBertCheckpoint(readSafetensors(bytes), base);
    expect(missing).toEqual([]);
    expect(unused).toEqual([]);
    expect(tensors.get('embeddings.word_embeddings.weight')![0]).toBe(1);
  });
});
