// Plain TypeScript reference of the encoder forward pass in evaluation mode (no dropout), written for reading, not
// speed: loops and float64 sums. Tests check the native libtorch encoder against it. Padding is handled by computing
// each sequence over its first lengths[b] tokens only, which is what masking padded keys out of the softmax means for
// the [CLS] output of a post-LN BERT.
import { QuorumError } from '../../lib/errors.js';
import { type EncoderConfig, type Pooling, isSpecialized } from '../../lib/models/config.js';
import { parameterShapes } from '../../lib/models/parameters.js';
import { elementCount } from '../../lib/shape.js';

/** A batch of token ids for {@link referenceEncode}. */
export interface ReferenceInput {
  /** [batch, seqLen] row-major token ids; positions t >= lengths[b] are padding and never read. */
  ids: Int32Array;
  /** [batch, seqLen] row-major token type (segment) ids. */
  typeIds: Int32Array;
  /** Real tokens per sequence, 1..seqLen. */
  lengths: Int32Array;
  batch: number;
  seqLen: number;
  /** Which side the batch is, for TASER's deterministic routing. */
  side: 'query' | 'passage';
}

/** What {@link referenceEncode} records when asked: what the tests of TASER's routers and ROM's reader compare with. */
export interface ReferenceTrace {
  /** One entry per router call, in order: the sequence (batch row), the layer, and softmax(gate logits) per row it routed. */
  calls: Array<{ sequence: number; layer: number; probabilities: Float64Array[] }>;
  /** Per sequence, the last layer's state of each real token (what pooling and ROM's reader read). */
  tokenStates: Float64Array[][];
}

/**
 * Encodes a batch: [batch, outDim] row-major where outDim = projectionDim || hiddenSize. `params` holds every name of
 * parameterNames(config) with the length of its shape (torch layout, Linear weight [out, in]). ERR_ARG for a missing
 * parameter or bad input, ERR_SHAPE for a parameter of the wrong size, ERR_RANGE for an id outside its table. With
 * `trace`, Seq-R and Tok-R routers record their probabilities (Seq-R: one row per sequence, Tok-R: one per token),
 * and each sequence its final token states.
 *
 * @example
 * const v = referenceEncode(config, params, { ids, typeIds, lengths, batch: 2, seqLen: 8, side: 'query' });
 */
export function referenceEncode(config: EncoderConfig, params: Map<string, Float32Array>, input: ReferenceInput, trace?: ReferenceTrace): Float32Array {
  checkParams(config, params);
  checkInput(config, input);
  const p = (name: string) => params.get(name) as Float32Array;
  const outDim = config.projectionDim > 0 ? config.projectionDim : config.hiddenSize;
  const out = new Float32Array(input.batch * outDim);
  for (let b = 0; b < input.batch; b++) {
    const n = input.lengths[b] as number;
    const ids = Array.from(input.ids.subarray(b * input.seqLen, b * input.seqLen + n));
    const types = Array.from(input.typeIds.subarray(b * input.seqLen, b * input.seqLen + n));
    let x = embed(config, p, ids, types);
    // With an attention window, each run of `window` consecutive tokens goes through the layers on its own.
    const window = config.attentionWindow || x.length;
    const windows: Float64Array[][] = [];
    for (let s = 0; s < x.length; s += window) windows.push(x.slice(s, s + window));
    x = windows.flatMap((w) => {
      for (let l = 0; l < config.layers; l++) w = layer(config, p, l, w, input.side, trace && ((probabilities) => trace.calls.push({ sequence: b, layer: l, probabilities })));
      return w;
    });
    trace?.tokenStates.push(x);
    const weights = config.tokenWeights ? ids.map((id) => Math.exp(p('embeddings.token_weights.weight')[id] as number)) : undefined;
    const pooled = pool(config.pooling ?? 'cls', x, weights);
    if (config.center) {
      // The centre is subtracted from the state's unit direction (lengths differ between questions and passages).
      const norm = Math.max(Math.sqrt(pooled.reduce((a, v) => a + v * v, 0)), 1e-12);
      pooled.forEach((v, i) => (pooled[i] = v / norm - (p('pooler.center')[i] as number)));
    }
    const vector = project(config, p, pooled);
    for (let i = 0; i < outDim; i++) out[b * outDim + i] = vector[i] as number;
  }
  return out;
}

type Get = (name: string) => Float32Array;

// x holds only the real tokens of one sequence (padding was never computed), so every pooling reads all of it.
// With `weights` (one per token), mean pooling is the weighted mean.
function pool(pooling: Pooling, x: Float64Array[], weights?: number[]): Float64Array {
  if (pooling === 'cls') return Float64Array.from(x[0] as Float64Array);
  const H = (x[0] as Float64Array).length;
  const out = new Float64Array(H).fill(pooling === 'max' ? -Infinity : 0);
  let total = 0;
  x.forEach((xt, t) => {
    const w = weights?.[t] ?? 1;
    total += w;
    for (let i = 0; i < H; i++) out[i] = pooling === 'max' ? Math.max(out[i] as number, xt[i] as number) : (out[i] as number) + w * (xt[i] as number);
  });
  if (pooling === 'mean') for (let i = 0; i < H; i++) out[i] = (out[i] as number) / total;
  return out;
}

function project(c: EncoderConfig, p: Get, pooled: Float64Array): Float64Array {
  let y = pooled;
  if ((c.projectionHidden ?? 0) > 0) y = linear(p, 'projection', linear(p, 'projection.hidden', y).map(gelu));
  else if (c.projectionDim > 0) y = linear(p, 'projection', y);
  if (c.normalize) {
    const norm = Math.sqrt(y.reduce((s, v) => s + v * v, 0));
    y = y.map((v) => v / Math.max(norm, 1e-12));
  }
  return y;
}

function embed(c: EncoderConfig, p: Get, ids: number[], types: number[]): Float64Array[] {
  const H = c.hiddenSize;
  const E = c.embeddingSize;
  const words = p('embeddings.word_embeddings.weight');
  const positions = p('embeddings.position_embeddings.weight');
  const typeTable = p('embeddings.token_type_embeddings.weight');
  return ids.map((id, t) => {
    let x: Float64Array = Float64Array.from(words.subarray(id * E, (id + 1) * E));
    if (E !== H) x = linear(p, 'embeddings.projection', x);
    const type = types[t] as number;
    for (let i = 0; i < H; i++) x[i] = (x[i] as number) + (positions[t * H + i] as number) + (typeTable[type * H + i] as number);
    return layerNorm(p, 'embeddings.LayerNorm', x, c.layerNormEps);
  });
}

function layer(c: EncoderConfig, p: Get, l: number, x: Float64Array[], side: 'query' | 'passage', record?: (probabilities: Float64Array[]) => void): Float64Array[] {
  const prefix = `encoder.layer.${l}`;
  const ctx = selfAttention(c, p, prefix, x);
  const a = x.map((xt, t) => {
    const o = linear(p, `${prefix}.attention.output.dense`, ctx[t] as Float64Array);
    return layerNorm(p, `${prefix}.attention.output.LayerNorm`, add(xt, o), c.layerNormEps);
  });
  if (!isSpecialized(c, l)) return a.map((at) => ffn(c, p, prefix, at));
  const taser = c.taser!;
  const gate = taser.perLayerGate ? `${prefix}.gate` : 'encoder.gate';
  if (taser.routing === 'det') {
    const e = side === 'query' ? 0 : Math.floor(taser.experts / 2);
    return a.map((at) => ffn(c, p, `${prefix}.experts.${e}`, at));
  }
  if (taser.routing === 'seq') {
    // One expert for the whole sequence, chosen from [CLS] as it enters the block (before attention).
    const logits = linear(p, gate, x[0] as Float64Array);
    record?.([softmax(logits)]);
    const e = argmax(logits);
    return a.map((at) => ffn(c, p, `${prefix}.experts.${e}`, at));
  }
  const logits = a.map((at) => linear(p, gate, at));
  record?.(logits.map(softmax));
  return a.map((at, t) => ffn(c, p, `${prefix}.experts.${argmax(logits[t] as Float64Array)}`, at));
}

function selfAttention(c: EncoderConfig, p: Get, prefix: string, x: Float64Array[]): Float64Array[] {
  const H = c.hiddenSize;
  const d = H / c.heads;
  const q = x.map((xt) => linear(p, `${prefix}.attention.self.query`, xt));
  const k = x.map((xt) => linear(p, `${prefix}.attention.self.key`, xt));
  const v = x.map((xt) => linear(p, `${prefix}.attention.self.value`, xt));
  return q.map((qt) => {
    const ctx = new Float64Array(H);
    // Head h owns the contiguous slice [h*d, (h+1)*d) of the projected vectors.
    for (let h = 0; h < c.heads; h++) {
      const scores = k.map((ks) => {
        let dot = 0;
        for (let i = h * d; i < (h + 1) * d; i++) dot += (qt[i] as number) * (ks[i] as number);
        return dot / Math.sqrt(d);
      });
      const prob = softmax(Float64Array.from(scores));
      v.forEach((vs, s) => {
        for (let i = h * d; i < (h + 1) * d; i++) ctx[i] = (ctx[i] as number) + (prob[s] as number) * (vs[i] as number);
      });
    }
    return ctx;
  });
}

// The FFN of a plain block (prefix encoder.layer.L) or of one expert (prefix encoder.layer.L.experts.E).
function ffn(c: EncoderConfig, p: Get, prefix: string, a: Float64Array): Float64Array {
  const h = linear(p, `${prefix}.intermediate.dense`, a).map(gelu);
  const o = linear(p, `${prefix}.output.dense`, h);
  return layerNorm(p, `${prefix}.output.LayerNorm`, add(a, o), c.layerNormEps);
}

/** y = W x + b with W [out, in] row-major (torch's Linear). */
function linear(p: Get, module: string, x: Float64Array): Float64Array {
  const W = p(`${module}.weight`);
  const bias = p(`${module}.bias`);
  const y = new Float64Array(bias.length);
  for (let o = 0; o < bias.length; o++) {
    let s = bias[o] as number;
    for (let i = 0; i < x.length; i++) s += (W[o * x.length + i] as number) * (x[i] as number);
    y[o] = s;
  }
  return y;
}

/** (x - mean) / sqrt(var + eps) * weight + bias, with the biased (1/n) variance. */
function layerNorm(p: Get, module: string, x: Float64Array, eps: number): Float64Array {
  const w = p(`${module}.weight`);
  const b = p(`${module}.bias`);
  let mean = 0;
  for (const v of x) mean += v;
  mean /= x.length;
  let variance = 0;
  for (const v of x) variance += (v - mean) ** 2;
  variance /= x.length;
  const scale = 1 / Math.sqrt(variance + eps);
  return x.map((v, i) => (v - mean) * scale * (w[i] as number) + (b[i] as number));
}

function softmax(s: Float64Array): Float64Array {
  const max = Math.max(...s);
  const e = s.map((v) => Math.exp(v - max));
  const sum = e.reduce((a, v) => a + v, 0);
  return e.map((v) => v / sum);
}

function add(a: Float64Array, b: Float64Array): Float64Array {
  return a.map((v, i) => v + (b[i] as number));
}

/** First index of the largest value, so ties go to the lowest expert. */
function argmax(v: Float64Array): number {
  let best = 0;
  for (let i = 1; i < v.length; i++) if ((v[i] as number) > (v[best] as number)) best = i;
  return best;
}

/**
 * The exact (erf) GELU: 0.5 z (1 + erf(z / sqrt 2)), as torch's default `gelu`.
 *
 * @example
 * gelu(1); // 0.8413447460685429
 */
export function gelu(z: number): number {
  return 0.5 * z * (1 + erf(z / Math.SQRT2));
}

/**
 * The error function to about double precision, from the all-positive series
 * erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1*3*...*(2n+1)), which has no cancellation (unlike the Taylor
 * series). Beyond |x| = 6, 1 - |erf(x)| < 3e-17, below double resolution at 1.
 *
 * @example
 * erf(1); // 0.8427007929497149
 */
export function erf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const ax = Math.abs(x);
  if (ax >= 6) return Math.sign(x);
  let term = ax;
  let sum = ax;
  for (let n = 1; term > 1e-17 * sum; n++) {
    term *= (2 * ax * ax) / (2 * n + 1);
    sum += term;
  }
  return Math.sign(x) * Math.min(1, (2 / Math.sqrt(Math.PI)) * Math.exp(-ax * ax) * sum);
}

function checkParams(config: EncoderConfig, params: Map<string, Float32Array>): void {
  if (config.layers > 0 && config.hiddenSize % config.heads !== 0) {
    throw new QuorumError('ERR_ARG', `hiddenSize ${config.hiddenSize} is not a multiple of heads ${config.heads}`);
  }
  for (const [name, shape] of parameterShapes(config)) {
    const data = params.get(name);
    if (data === undefined) throw new QuorumError('ERR_ARG', `missing parameter ${name}`);
    const count = elementCount(shape);
    if (data.length !== count) {
      throw new QuorumError('ERR_SHAPE', `${name}: ${data.length} values, shape [${shape.join(', ')}] needs ${count}`);
    }
  }
}

function checkInput(c: EncoderConfig, input: ReferenceInput): void {
  const { batch, seqLen, ids, typeIds, lengths } = input;
  if (!Number.isInteger(batch) || batch < 0 || !Number.isInteger(seqLen) || seqLen < 1) {
    throw new QuorumError('ERR_ARG', `bad batch ${batch} / seqLen ${seqLen}`);
  }
  if (seqLen > c.maxPositions) throw new QuorumError('ERR_ARG', `seqLen ${seqLen} exceeds maxPositions ${c.maxPositions}`);
  if (ids.length !== batch * seqLen || typeIds.length !== batch * seqLen || lengths.length !== batch) {
    throw new QuorumError('ERR_SHAPE', `ids and typeIds need ${batch * seqLen} values and lengths ${batch}`);
  }
  if (input.side !== 'query' && input.side !== 'passage') throw new QuorumError('ERR_ARG', `bad side ${String(input.side)}`);
  for (let b = 0; b < batch; b++) {
    const n = lengths[b] as number;
    // [CLS] at t = 0 is the pooled output, so every sequence needs it.
    if (n < 1 || n > seqLen) throw new QuorumError('ERR_ARG', `lengths[${b}] = ${n} is outside [1, ${seqLen}]`);
    for (let t = 0; t < n; t++) {
      const id = ids[b * seqLen + t] as number;
      const type = typeIds[b * seqLen + t] as number;
      if (id < 0 || id >= c.vocabSize) throw new QuorumError('ERR_RANGE', `token id ${id} outside [0, ${c.vocabSize})`);
      if (type < 0 || type >= c.typeVocabSize) throw new QuorumError('ERR_RANGE', `type id ${type} outside [0, ${c.typeVocabSize})`);
    }
  }
}
