// The plain TypeScript BERT forward (test/reference/bert.ts), checked on models small enough to follow by hand.
//
// Hand models use hidden size 2 and LayerNorm eps = 1, where LayerNorm has a closed form: for x = (a, b) with
// d = (a - b) / 2, the mean is (a + b) / 2, the biased variance d^2, and LN(x) = (n(d), -n(d)) * weight + bias with
// n(d) = d / sqrt(d^2 + 1).
import { describe, expect, it } from 'vitest';

import { type ReferenceInput, erf, gelu, referenceEncode } from './reference/bert.js';
import type { EncoderConfig } from '../lib/models/config.js';
import { parameterShapes } from '../lib/models/parameters.js';
import { code, rng } from './basics.js';



function zeros(config: EncoderConfig): Map<string, Float32Array> {
  return new Map([...parameterShapes(config)].map(([name, shape]) => [name, new Float32Array(shape.reduce((a, b) => a * b, 1))]));
}

function randomParams(config: EncoderConfig, seed: number): Map<string, Float32Array> {
  const r = rng(seed);
  const params = zeros(config);
  for (const [name, data] of params) {
    // LayerNorm weights near 1 keep activations in a sensible range; everything else small and random.
    const center = /LayerNorm\.weight$/.test(name) ? 1 : 0;
    for (let i = 0; i < data.length; i++) data[i] = center + 0.5 * r();
  }
  return params;
}

function set(params: Map<string, Float32Array>, values: Record<string, number[]>): void {
  for (const [name, v] of Object.entries(values)) {
    const target = params.get(name);
    if (target === undefined || target.length !== v.length) throw new Error(`test setup: ${name}`);
    target.set(v);
  }
}

function input(ids: number[][], lengths: number[], side: 'query' | 'passage' = 'query', typeIds?: number[][]): ReferenceInput {
  const seqLen = ids[0]!.length;
  return {
    ids: Int32Array.from(ids.flat()),
    typeIds: Int32Array.from(typeIds?.flat() ?? ids.flat().map(() => 0)),
    lengths: Int32Array.from(lengths),
    batch: ids.length,
    seqLen,
    side,
  };
}

const tiny: EncoderConfig = {
  vocabSize: 3,
  hiddenSize: 2,
  layers: 1,
  heads: 1,
  ffnSize: 1,
  maxPositions: 4,
  typeVocabSize: 2,
  embeddingSize: 2,
  dropout: 0.1,
  layerNormEps: 1,
  pooling: 'cls',
  projectionDim: 0,
};

const s = Math.SQRT1_2;
const n = (d: number) => d / Math.sqrt(d * d + 1);

/**
 * The shared tail of the hand models, from d of the residual x + attention (before the attention LayerNorm, whose
 * weight is 1 and bias 0): a = (dA, -dA) with dA = n(d); the FFN's intermediate row (1, -1) gives z = 2 dA,
 * h = gelu(z); output.dense column (1, -1) adds (h, -h), so the output LayerNorm (weight (2, 1), bias (0, 1)) sees
 * d' = dA + h and gives (2 n(d'), 1 - n(d')).
 */
function tail(d: number): [number, number] {
  const dA = n(d);
  const h = gelu(2 * dA);
  return [2 * n(dA + h), 1 - n(dA + h)];
}

/**
 * Embeddings: token 0 = (0.5, -0.5) plus position 0 = (0.5, -0.5) gives (1, -1), d = 1, x0 = (s, -s) with
 * s = 1/sqrt 2. Token 1 = (-1, 0.5) plus type 1 = (0, 0.5) gives (-1, 1), x1 = (-s, s). Token 2 is never used.
 * Attention: Q = K = V = I, attention output dense 2I with bias (0.1, -0.1).
 */
function handParams(config: EncoderConfig): Map<string, Float32Array> {
  const p = zeros(config);
  set(p, {
    'embeddings.position_embeddings.weight': [0.5, -0.5, 0, 0, 0, 0, 0, 0],
    'embeddings.token_type_embeddings.weight': [0, 0, 0, 0.5],
    'embeddings.LayerNorm.weight': [1, 1],
    'encoder.layer.0.attention.self.key.weight': [1, 0, 0, 1],
    'encoder.layer.0.attention.self.value.weight': [1, 0, 0, 1],
    'encoder.layer.0.attention.output.dense.weight': [2, 0, 0, 2],
    'encoder.layer.0.attention.output.dense.bias': [0.1, -0.1],
    'encoder.layer.0.attention.output.LayerNorm.weight': [1, 1],
    'encoder.layer.0.intermediate.dense.weight': [1, -1],
    'encoder.layer.0.output.dense.weight': [1, -1],
    'encoder.layer.0.output.LayerNorm.weight': [2, 1],
    'encoder.layer.0.output.LayerNorm.bias': [0, 1],
  });
  if (config.embeddingSize === 2) set(p, { 'embeddings.word_embeddings.weight': [0.5, -0.5, -1, 0.5, 9, 9] });
  if (config.heads === 1) set(p, { 'encoder.layer.0.attention.self.query.weight': [1, 0, 0, 1] });
  return p;
}

describe('erf and GELU', () => {
  it('erf against tabulated values', () => {
    expect(erf(0)).toBe(0);
    expect(erf(0.5)).toBeCloseTo(0.5204998778, 10);
    expect(erf(1)).toBeCloseTo(0.8427007929, 10);
    expect(erf(-2)).toBeCloseTo(-0.995322265, 10);
    expect(Math.abs(erf(0.1) - 0.1124629160182849)).toBeLessThan(1e-15);
    expect(Math.abs(erf(3) - 0.9999779095030014)).toBeLessThan(1e-14);
    expect(Math.abs(erf(5) - 0.9999999999984626)).toBeLessThan(1e-14);
    expect(erf(7)).toBe(1);
    expect(erf(-Infinity)).toBe(-1);
    expect(Number.isNaN(erf(NaN))).toBe(true);
    for (const x of [0.3, 1.7, 4.2]) expect(erf(-x)).toBe(-erf(x));
  });

  it('GELU is 0.5 z (1 + erf(z / sqrt 2))', () => {
    expect(gelu(0)).toBe(0);
    // Phi(1) = 0.8413447460685429, so gelu(1) = Phi(1) and gelu(-1) = -(1 - Phi(1)).
    expect(Math.abs(gelu(1) - 0.8413447460685429)).toBeLessThan(1e-15);
    expect(Math.abs(gelu(-1) + 0.15865525393145707)).toBeLessThan(1e-15);
    expect(gelu(10)).toBe(10);
    expect(gelu(-10)).toBeCloseTo(0, 15);
  });
});

describe('referenceEncode by hand (hidden 2, LayerNorm eps 1)', () => {
  it('one head: attention between two tokens', () => {
    // Scores x0.x0 / sqrt 2 = 1/sqrt 2 and x0.x1 / sqrt 2 = -1/sqrt 2, so p0 - p1 = tanh(1/sqrt 2) = tanh(s) and
    // ctx0 = tanh(s) (s, -s). Residual x0 + 2 ctx0 + (0.1, -0.1) has d = s + 2 s tanh(s) + 0.1.
    const out = referenceEncode(tiny, handParams(tiny), input([[0, 1]], [2], 'query', [[0, 1]]));
    const want = tail(s + 2 * s * Math.tanh(s) + 0.1);
    expect(out[0]).toBeCloseTo(want[0], 6);
    expect(out[1]).toBeCloseTo(want[1], 6);
  });

  it('one token attends only to itself: ctx0 = x0, d = 3 s + 0.1', () => {
    const out = referenceEncode(tiny, handParams(tiny), input([[0, 2, 2, 2]], [1]));
    const want = tail(3 * s + 0.1);
    expect(out[0]).toBeCloseTo(want[0], 6);
    expect(out[1]).toBeCloseTo(want[1], 6);
  });

  it('two heads of width 1', () => {
    // Q = [[0, 0], [0, 3]]: head 0 has q = 0, so it averages v over both tokens: (s - s) / 2 = 0. Head 1 scores
    // 3 (-s)(-s) = 1.5 and 3 (-s)(s) = -1.5, so p0 - p1 = tanh(1.5) and ctx0[1] = -s tanh(1.5). The residual
    // (s + 0.1, -s - 2 s tanh(1.5) - 0.1) has d = s + s tanh(1.5) + 0.1.
    const config = { ...tiny, heads: 2 };
    const p = handParams(config);
    set(p, { 'encoder.layer.0.attention.self.query.weight': [0, 0, 0, 3] });
    const out = referenceEncode(config, p, input([[0, 1]], [2], 'query', [[0, 1]]));
    const want = tail(s + s * Math.tanh(1.5) + 0.1);
    expect(out[0]).toBeCloseTo(want[0], 6);
    expect(out[1]).toBeCloseTo(want[1], 6);
  });

  it('factorized embeddings and an output projection', () => {
    // Width-1 token table (0.5, -0.75, 0) through projection column (1, -1): token 0 becomes (0.5, -0.5), plus
    // position 0 gives (1, -1) as before; token 1 becomes (-0.75, 0.75), plus type 1 gives (-0.75, 1.25), again
    // d = -1. So the encoder output is that of the first case, and the projection row (1, 0) with bias 0.5 adds 0.5
    // to its first component.
    const config = { ...tiny, embeddingSize: 1, projectionDim: 1 };
    const p = handParams(config);
    set(p, {
      'embeddings.word_embeddings.weight': [0.5, -0.75, 0],
      'embeddings.projection.weight': [1, -1],
      'projection.weight': [1, 0],
      'projection.bias': [0.5],
    });
    const out = referenceEncode(config, p, input([[0, 1]], [2], 'query', [[0, 1]]));
    expect(out.length).toBe(1);
    expect(out[0]).toBeCloseTo(tail(s + 2 * s * Math.tanh(s) + 0.1)[0] + 0.5, 6);
  });
});

describe('referenceEncode: padding, batching and validation', () => {
  const config: EncoderConfig = { ...tiny, vocabSize: 20, hiddenSize: 8, heads: 2, ffnSize: 16, layers: 2, maxPositions: 8, layerNormEps: 1e-12 };
  const params = randomParams(config, 7);

  it('padding (even with out-of-range ids) changes nothing; rows of a batch are independent', () => {
    const alone = referenceEncode(config, params, input([[1, 5, 9]], [3]));
    const padded = referenceEncode(config, params, input([[1, 5, 9, 999, -4, 3]], [3]));
    expect(padded).toEqual(alone);
    const other = referenceEncode(config, params, input([[2, 4, 6, 8, 10, 12]], [6]));
    const batch = referenceEncode(config, params, input([[2, 4, 6, 8, 10, 12], [1, 5, 9, 0, 0, 0]], [6, 3]));
    expect(Array.from(batch)).toEqual([...other, ...alone]);
    // But the tokens inside the length do matter.
    expect(referenceEncode(config, params, input([[1, 5, 8]], [3]))).not.toEqual(alone);
    expect(alone.every(Number.isFinite)).toBe(true);
  });

  it('errors', () => {
    const good = input([[1, 2]], [2]);
    const missing = new Map(params);
    missing.delete('encoder.layer.1.output.dense.bias');
    expect(code(() => referenceEncode(config, missing, good))).toBe('ERR_ARG');
    const short = new Map(params);
    short.set('embeddings.LayerNorm.bias', new Float32Array(3));
    expect(code(() => referenceEncode(config, short, good))).toBe('ERR_SHAPE');
    expect(code(() => referenceEncode(config, params, input([[1, 20]], [2])))).toBe('ERR_RANGE');
    expect(code(() => referenceEncode(config, params, input([[1, 2]], [2], 'query', [[0, 2]])))).toBe('ERR_RANGE');
    expect(code(() => referenceEncode(config, params, input([[1, 2]], [0])))).toBe('ERR_ARG');
    expect(code(() => referenceEncode(config, params, input([[1, 2]], [3])))).toBe('ERR_ARG');
    expect(code(() => referenceEncode(config, params, { ...good, lengths: new Int32Array(2) }))).toBe('ERR_SHAPE');
    expect(code(() => referenceEncode(config, params, input([[1, 2, 3, 4, 5, 6, 7, 8, 9]], [9])))).toBe('ERR_ARG');
  });
});

describe('referenceEncode: TASER specialized blocks', () => {
  const det: EncoderConfig = {
    ...tiny,
    vocabSize: 20,
    hiddenSize: 8,
    heads: 2,
    ffnSize: 16,
    layers: 2,
    maxPositions: 8,
    layerNormEps: 1e-12,
    taser: { every: 2, experts: 2, routing: 'det' },
  };
  const ids = [[3, 7, 11, 2]];

  it('Det-R: query and passage differ when the experts differ, agree when the experts are equal', () => {
    const p = randomParams(det, 11);
    const q = referenceEncode(det, p, input(ids, [4], 'query'));
    const d = referenceEncode(det, p, input(ids, [4], 'passage'));
    expect(q).not.toEqual(d);
    for (const rest of ['intermediate.dense', 'output.dense', 'output.LayerNorm']) {
      for (const w of ['weight', 'bias']) {
        p.set(`encoder.layer.1.experts.1.${rest}.${w}`, p.get(`encoder.layer.1.experts.0.${rest}.${w}`)!.slice());
      }
    }
    expect(referenceEncode(det, p, input(ids, [4], 'passage'))).toEqual(referenceEncode(det, p, input(ids, [4], 'query')));
    expect(referenceEncode(det, p, input(ids, [4], 'query'))).toEqual(q);
  });

  it('Det-R with 3 experts: queries use expert 0, passages expert 1, expert 2 is unused', () => {
    const three = { ...det, taser: { every: 2, experts: 3, routing: 'det' as const } };
    const p = randomParams(three, 5);
    const q = referenceEncode(three, p, input(ids, [4], 'query'));
    const d = referenceEncode(three, p, input(ids, [4], 'passage'));
    const bump = (e: number) => {
      const changed = new Map(p);
      changed.set(`encoder.layer.1.experts.${e}.output.dense.bias`, p.get(`encoder.layer.1.experts.${e}.output.dense.bias`)!.map((v) => v + 1));
      return changed;
    };
    expect(referenceEncode(three, bump(2), input(ids, [4], 'query'))).toEqual(q);
    expect(referenceEncode(three, bump(2), input(ids, [4], 'passage'))).toEqual(d);
    expect(referenceEncode(three, bump(1), input(ids, [4], 'query'))).toEqual(q);
    expect(referenceEncode(three, bump(1), input(ids, [4], 'passage'))).not.toEqual(d);
    expect(referenceEncode(three, bump(0), input(ids, [4], 'query'))).not.toEqual(q);
  });

  // The hand model with layer 0 specialized: x0 = (s, -s) enters the block, and an attention LayerNorm bias of
  // (-5, 5) makes the FFN input a0 = (n(d) - 5, 5 - n(d)) with n(d) < 1. An identity gate then prefers expert 0 on
  // x0 (logits (s, -s)) and expert 1 on a0 (logits (n - 5, 5 - n)).
  function routed(routing: 'det' | 'seq' | 'tok', perLayerGate = false): { config: EncoderConfig; p: Map<string, Float32Array> } {
    const config: EncoderConfig = { ...tiny, taser: { every: 1, experts: 2, routing, perLayerGate } };
    // Experts drawn from the gate-less config, so that every routing gets the same experts.
    const p = randomParams({ ...tiny, taser: { every: 1, experts: 2, routing: 'det' } }, 3);
    const hand = handParams(tiny);
    // Hand embeddings and attention; the experts' FFNs stay random (the plain FFN names do not exist here).
    for (const [name, v] of hand) if (p.has(name)) p.set(name, v);
    set(p, { 'encoder.layer.0.attention.output.LayerNorm.bias': [-5, 5] });
    const gate = perLayerGate ? 'encoder.layer.0.gate' : 'encoder.gate';
    if (routing !== 'det') {
      p.set(`${gate}.weight`, Float32Array.of(1, 0, 0, 1));
      p.set(`${gate}.bias`, Float32Array.of(0, 0));
    }
    return { config, p };
  }

  it('Seq-R routes on [CLS] at the block input, Tok-R on each FFN input', () => {
    const { config: detConfig, p } = routed('det');
    const expert0 = referenceEncode(detConfig, p, input([[0, 1]], [2], 'query', [[0, 1]]));
    const expert1 = referenceEncode(detConfig, p, input([[0, 1]], [2], 'passage', [[0, 1]]));
    expect(expert0).not.toEqual(expert1);
    for (const perLayerGate of [false, true]) {
      const seq = routed('seq', perLayerGate);
      const tok = routed('tok', perLayerGate);
      for (const side of ['query', 'passage'] as const) {
        expect(referenceEncode(seq.config, seq.p, input([[0, 1]], [2], side, [[0, 1]]))).toEqual(expert0);
        expect(referenceEncode(tok.config, tok.p, input([[0, 1]], [2], side, [[0, 1]]))).toEqual(expert1);
      }
    }
  });

  it('gate ties go to the lowest expert; a gate bias can force either expert', () => {
    const seq = routed('seq');
    const { config: detConfig, p } = routed('det');
    const expert0 = referenceEncode(detConfig, p, input([[0, 1]], [2], 'query', [[0, 1]]));
    const expert1 = referenceEncode(detConfig, p, input([[0, 1]], [2], 'passage', [[0, 1]]));
    set(seq.p, { 'encoder.gate.weight': [0, 0, 0, 0], 'encoder.gate.bias': [0.5, 0.5] });
    expect(referenceEncode(seq.config, seq.p, input([[0, 1]], [2], 'passage', [[0, 1]]))).toEqual(expert0);
    set(seq.p, { 'encoder.gate.bias': [0, 1] });
    expect(referenceEncode(seq.config, seq.p, input([[0, 1]], [2], 'query', [[0, 1]]))).toEqual(expert1);
  });
});
