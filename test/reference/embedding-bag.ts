// Plain reference of the 0-layer encoder's forward (native/kernels/embedding_bag.h, docs/methods/kernels.md#0-layer-encoder):
// embeddings, LayerNorm, pooling, centre, head, normalization in f64, as BertEncoder::forward (native/torch/encoder.cc)
// computes with layers = 0. test/embedding-bag.test.ts checks the kernel against it.
import { QuorumError } from '../../lib/errors.js';
import type { EncoderConfig } from '../../lib/models/config.js';
import type { TokenRows } from '../../lib/models/embedding-bag.js';
import { rng } from '../helpers.js';

// erf by Abramowitz and Stegun 7.1.26 (absolute error under 1.5e-7), for the exact GELU of an MLP head.
function erf(x: number): number {
  const s = Math.sign(x);
  const a = Math.abs(x);
  const t = 1 / (1 + 0.3275911 * a);
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-a * a);
  return s * y;
}
const gelu = (x: number) => 0.5 * x * (1 + erf(x / Math.SQRT2));

/** One 0-layer encoder over parameters by name (`<prefix>.embeddings...`, `<prefix>.projection...`). */
export class EmbeddingBagReference {
  /** Output width. */
  readonly dim: number;
  private readonly p: (name: string) => Float32Array;

  constructor(
    private readonly c: EncoderConfig,
    param: (name: string) => Float32Array,
    prefix: string,
  ) {
    if (c.layers !== 0) throw new QuorumError('ERR_ARG', `EmbeddingBagEncoder computes 0-layer encoders, not ${c.layers} layers`);
    const cache = new Map<string, Float32Array>();
    this.p = (name) => {
      let v = cache.get(name);
      if (!v) cache.set(name, (v = param(`${prefix}.${name}`)));
      return v;
    };
    this.dim = c.projectionDim > 0 ? c.projectionDim : c.hiddenSize;
  }

  /** [rows, dim] for a tokenized batch. */
  encode(b: TokenRows): Float32Array {
    const c = this.c;
    const H = c.hiddenSize, E = c.embeddingSize;
    const word = this.p('embeddings.word_embeddings.weight');
    const pos = this.p('embeddings.position_embeddings.weight');
    const type = this.p('embeddings.token_type_embeddings.weight');
    const lnW = this.p('embeddings.LayerNorm.weight');
    const lnB = this.p('embeddings.LayerNorm.bias');
    const proj = E !== H ? { w: this.p('embeddings.projection.weight'), b: this.p('embeddings.projection.bias') } : undefined;
    const tokenWeights = c.tokenWeights ? this.p('embeddings.token_weights.weight') : undefined;
    const out = new Float32Array(b.rows * this.dim);
    const x = new Float64Array(H);
    const state = new Float64Array(H);
    for (let r = 0; r < b.rows; r++) {
      const len = b.lengths[r]!;
      if (len > c.maxPositions) throw new QuorumError('ERR_RANGE', `sequence length ${len} exceeds maxPositions ${c.maxPositions}`);
      state.fill(c.pooling === 'max' ? -Infinity : 0);
      let weightSum = 0;
      for (let t = 0; t < len; t++) {
        const id = b.ids[r * b.seqLen + t]!;
        const ty = b.typeIds[r * b.seqLen + t]!;
        if (id < 0 || id >= c.vocabSize || ty < 0 || ty >= c.typeVocabSize) throw new QuorumError('ERR_RANGE', `token id ${id} or type ${ty} outside the model's tables`);
        // word (projected when factorized) + position + type
        if (proj) {
          for (let h = 0; h < H; h++) {
            let s = proj.b[h]!;
            for (let e = 0; e < E; e++) s += proj.w[h * E + e]! * word[id * E + e]!;
            x[h] = s;
          }
        } else for (let h = 0; h < H; h++) x[h] = word[id * H + h]!;
        let mean = 0;
        for (let h = 0; h < H; h++) {
          x[h] = x[h]! + pos[t * H + h]! + type[ty * H + h]!;
          mean += x[h]!;
        }
        mean /= H;
        let v = 0;
        for (let h = 0; h < H; h++) v += (x[h]! - mean) ** 2;
        const inv = 1 / Math.sqrt(v / H + c.layerNormEps);
        for (let h = 0; h < H; h++) x[h] = (x[h]! - mean) * inv * lnW[h]! + lnB[h]!;
        if (c.pooling === 'max') for (let h = 0; h < H; h++) state[h] = Math.max(state[h]!, x[h]!);
        else {
          const w = tokenWeights ? Math.exp(tokenWeights[id]!) : 1;
          weightSum += w;
          for (let h = 0; h < H; h++) state[h] = state[h]! + w * x[h]!;
        }
      }
      if (c.pooling !== 'max') for (let h = 0; h < H; h++) state[h] = state[h]! / weightSum;
      out.set(this.head(state), r * this.dim);
    }
    return out;
  }

  // Centre (on the unit direction), head, normalization: BertEncoder::forward after pooling.
  private head(state: Float64Array): Float64Array {
    const c = this.c;
    const H = c.hiddenSize;
    let y: Float64Array = state;
    if (c.center) {
      const centre = this.p('pooler.center');
      const n = Math.max(Math.hypot(...y), 1e-12);
      y = y.map((v, h) => v / n - centre[h]!);
    }
    const linear = (name: string, inp: Float64Array, outDim: number, inDim: number) => {
      const w = this.p(`${name}.weight`), bias = this.p(`${name}.bias`);
      const o = new Float64Array(outDim);
      for (let i = 0; i < outDim; i++) {
        let s = bias[i]!;
        for (let j = 0; j < inDim; j++) s += w[i * inDim + j]! * inp[j]!;
        o[i] = s;
      }
      return o;
    };
    if ((c.projectionHidden ?? 0) > 0) y = linear('projection', linear('projection.hidden', y, c.projectionHidden!, H).map(gelu), c.projectionDim, c.projectionHidden!);
    else if (c.projectionDim > 0) y = linear('projection', y, c.projectionDim, H);
    if (c.normalize) {
      const n = Math.max(Math.hypot(...y), 1e-12);
      y = y.map((v) => v / n);
    }
    return y;
  }
}

/** Random parameters for every name an encoder `enc` may read (tests of the kernel and of its callers). */
export function randomBagParameters(c: EncoderConfig, seed: number): (name: string) => Float32Array {
  const r = rng(seed);
  const H = c.hiddenSize, E = c.embeddingSize, h = c.projectionHidden ?? 0;
  const sizes: Record<string, number> = {
    'embeddings.word_embeddings.weight': c.vocabSize * E,
    'embeddings.position_embeddings.weight': c.maxPositions * H,
    'embeddings.token_type_embeddings.weight': c.typeVocabSize * H,
    'embeddings.LayerNorm.weight': H,
    'embeddings.LayerNorm.bias': H,
    'embeddings.projection.weight': H * E,
    'embeddings.projection.bias': H,
    'embeddings.token_weights.weight': c.vocabSize,
    'pooler.center': H,
    'projection.hidden.weight': h * H,
    'projection.hidden.bias': h,
    'projection.weight': c.projectionDim * (h > 0 ? h : H),
    'projection.bias': c.projectionDim,
  };
  const values = new Map(Object.entries(sizes).map(([n, size]) => [`enc.${n}`, Float32Array.from({ length: size }, r)]));
  return (name) => values.get(name)!;
}
