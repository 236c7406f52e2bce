// Parameter shapes and counts, checked against counts worked out by hand for tiny configs.
import { describe, expect, it } from 'vitest';

import { type EncoderConfig, parameterNames } from '../lib/models/config.js';
import { parameterCount, parameterShapes } from '../lib/models/parameters.js';

// vocab 10, hidden 4, 2 layers, ffn 8, 6 positions, 2 types, no factorization, no projection.
const plain: EncoderConfig = {
  vocabSize: 10,
  hiddenSize: 4,
  layers: 2,
  heads: 2,
  ffnSize: 8,
  maxPositions: 6,
  typeVocabSize: 2,
  embeddingSize: 4,
  dropout: 0,
  layerNormEps: 1e-12,
  pooling: 'cls',
  projectionDim: 0,
};

// The same with 3-wide factorized embeddings, a 5-wide output projection and layer 1 specialized (2 experts).
const taser: EncoderConfig = {
  ...plain,
  embeddingSize: 3,
  projectionDim: 5,
  taser: { every: 2, experts: 2, routing: 'seq' },
};

describe('parameterShapes', () => {
  it('covers every name, in order, in torch layout', () => {
    for (const c of [plain, taser]) expect([...parameterShapes(c).keys()]).toEqual(parameterNames(c));
    const s = parameterShapes(plain);
    expect(s.get('embeddings.word_embeddings.weight')).toEqual([10, 4]);
    expect(s.get('embeddings.position_embeddings.weight')).toEqual([6, 4]);
    expect(s.get('embeddings.token_type_embeddings.weight')).toEqual([2, 4]);
    expect(s.get('embeddings.LayerNorm.weight')).toEqual([4]);
    expect(s.get('encoder.layer.1.attention.self.key.weight')).toEqual([4, 4]);
    expect(s.get('encoder.layer.1.attention.self.key.bias')).toEqual([4]);
    expect(s.get('encoder.layer.0.attention.output.dense.weight')).toEqual([4, 4]);
    expect(s.get('encoder.layer.0.intermediate.dense.weight')).toEqual([8, 4]);
    expect(s.get('encoder.layer.0.intermediate.dense.bias')).toEqual([8]);
    expect(s.get('encoder.layer.0.output.dense.weight')).toEqual([4, 8]);
    expect(s.get('encoder.layer.0.output.dense.bias')).toEqual([4]);
    expect(s.get('encoder.layer.0.output.LayerNorm.bias')).toEqual([4]);
    expect(s.has('embeddings.projection.weight')).toBe(false);
  });

  it('factorized embeddings, experts, gates and the output projection', () => {
    const s = parameterShapes(taser);
    expect(s.get('embeddings.word_embeddings.weight')).toEqual([10, 3]);
    expect(s.get('embeddings.projection.weight')).toEqual([4, 3]);
    expect(s.get('embeddings.projection.bias')).toEqual([4]);
    expect(s.get('encoder.gate.weight')).toEqual([2, 4]);
    expect(s.get('encoder.gate.bias')).toEqual([2]);
    expect(s.get('encoder.layer.1.experts.1.intermediate.dense.weight')).toEqual([8, 4]);
    expect(s.get('encoder.layer.1.experts.0.output.dense.weight')).toEqual([4, 8]);
    expect(s.get('encoder.layer.1.experts.1.output.LayerNorm.weight')).toEqual([4]);
    expect(s.get('projection.weight')).toEqual([5, 4]);
    expect(s.get('projection.bias')).toEqual([5]);
    const perLayer = parameterShapes({ ...taser, taser: { every: 2, experts: 3, routing: 'tok', perLayerGate: true } });
    expect(perLayer.get('encoder.layer.1.gate.weight')).toEqual([3, 4]);
    expect(perLayer.has('encoder.gate.weight')).toBe(false);
  });
});

describe('parameterCount', () => {
  it('a plain 2-layer model, counted by hand', () => {
    // embeddings: word 10*4 + positions 6*4 + types 2*4 + LayerNorm 2*4 = 80
    // per layer: q, k, v 3*(16+4) + attention output 16+4 + LN 8 + intermediate 32+8 + output 32+4 + LN 8 = 172
    expect(parameterCount(plain)).toBe(80 + 2 * 172);
  });

  it('a TASER model (seq routing, shared gate), counted by hand', () => {
    // embeddings: word 10*3 + projection 4*3+4 + positions 24 + types 8 + LN 8 = 86; shared gate 2*4+2 = 10
    // layer 0: 172; layer 1: attention 60+20+8 = 88 plus two expert FFNs of 40+36+8 = 84 each; projection 5*4+5 = 25
    expect(parameterCount(taser)).toBe(86 + 10 + 172 + 88 + 2 * 84 + 25);
    // Deterministic routing has no gate.
    expect(parameterCount({ ...taser, taser: { every: 2, experts: 2, routing: 'det' } })).toBe(86 + 172 + 88 + 2 * 84 + 25);
  });

  it('BERT-base has its well-known 109,482,240 parameters (without the pooler)', () => {
    const base: EncoderConfig = {
      ...plain,
      vocabSize: 30522,
      hiddenSize: 768,
      layers: 12,
      heads: 12,
      ffnSize: 3072,
      maxPositions: 512,
      embeddingSize: 768,
    };
    // 109,482,240 with the 768*768+768 pooler that BertModel adds and we do not have.
    expect(parameterCount(base)).toBe(109_482_240 - (768 * 768 + 768));
  });
});
