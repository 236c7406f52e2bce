// An encoder as one ONNX graph (opset 17): token ids in, the same vector out as Quorum's libtorch forward
// (native/torch/encoder.cc), pooling, head and normalization included, so that ONNX Runtime, transformers.js or any
// ONNX consumer serves a Quorum model. Inputs are named as Hugging Face's exports name them (input_ids,
// attention_mask, token_type_ids, int64, dynamic batch and sequence axes); outputs are `sentence_embedding`
// [batch, dim] and `last_hidden_state` [batch, sequence, hidden]. docs/guides/bring-your-own-model.md#export.
import { QuorumError } from '../errors.js';
import { encodeOnnxModel, OnnxType, type OnnxAttribute, type OnnxElementType, type OnnxNode, type OnnxTensor } from '../io/onnx-proto.js';
import { isSpecialized, type EncoderConfig } from './config.js';

/** Where an exported encoder reads its weights: a parameter by its full name. */
export interface ParameterSource {
  getParameter(name: string): Float32Array;
}

/** Options of {@link encoderOnnx}. */
export interface EncoderOnnxOptions {
  /** The encoder's parameter-name prefix (`encoder`, `query`, `passage`, `query.<task>`); '' for none. */
  prefix: string;
  /**
   * The side the graph encodes. A TASER Det-R block picks its expert by side (questions the first of the first half,
   * passages the first of the second half), so each side is its own graph; other encoders ignore it.
   */
  side: 'query' | 'passage';
  /** ModelProto.metadata_props (e.g. the pooling and the format). */
  metadata?: Record<string, string>;
}

// Builds nodes with fresh output names; constants and weights become initializers.
class Graph {
  readonly nodes: OnnxNode[] = [];
  readonly initializers: OnnxTensor[] = [];
  private count = 0;
  private readonly consts = new Map<string, string>();

  op(op: string, inputs: readonly string[], attributes?: Record<string, OnnxAttribute>, outputs = 1): string {
    const names = Array.from({ length: outputs }, () => `t${this.count++}`);
    this.nodes.push({ op, inputs, outputs: names, name: `${op}_${this.count}`, ...(attributes ? { attributes } : {}) });
    return names[0]!;
  }
  /** Renames the last node's first output (graph outputs keep the names callers ask for). */
  nameLast(name: string): string {
    const last = this.nodes[this.nodes.length - 1]!;
    this.nodes[this.nodes.length - 1] = { ...last, outputs: [name, ...last.outputs.slice(1)] };
    return name;
  }
  private readonly weights = new Set<string>();
  /** A parameter as an initializer, once however many nodes read it (TASER's shared gate serves every block). */
  weight(name: string, dims: number[], data: Float32Array | (() => Float32Array)): string {
    if (this.weights.has(name)) return name;
    this.weights.add(name);
    this.initializers.push({ name, dims, type: OnnxType.FLOAT, data: typeof data === 'function' ? data() : data });
    return name;
  }
  private constant(key: string, make: () => OnnxTensor): string {
    let name = this.consts.get(key);
    if (name === undefined) {
      name = `const_${this.consts.size}`;
      this.initializers.push({ ...make(), name });
      this.consts.set(key, name);
    }
    return name;
  }
  f32(values: number[], dims: number[] = []): string {
    return this.constant(`f:${dims}:${values}`, () => ({ name: '', dims, type: OnnxType.FLOAT, data: Float32Array.from(values) }));
  }
  i64(values: number[], dims: number[] = [values.length]): string {
    return this.constant(`i:${dims}:${values}`, () => ({ name: '', dims, type: OnnxType.INT64, data: BigInt64Array.from(values.map(BigInt)) }));
  }
}

// A linear map x W^T + b, with W stored transposed once so the graph runs a plain MatMul.
function linear(g: Graph, p: ParameterSource, name: string, x: string, out: number, inp: number): string {
  const wt = g.weight(`${name}.weight_t`, [inp, out], () => {
    const w = p.getParameter(`${name}.weight`);
    if (w.length !== out * inp) throw new QuorumError('ERR_SHAPE', `${name}.weight has ${w.length} values, expected ${out} x ${inp}`);
    const t = new Float32Array(w.length);
    for (let o = 0; o < out; o++) for (let i = 0; i < inp; i++) t[i * out + o] = w[o * inp + i]!;
    return t;
  });
  const b = g.weight(`${name}.bias`, [out], p.getParameter(`${name}.bias`));
  return g.op('Add', [g.op('MatMul', [x, wt]), b]);
}

function layerNorm(g: Graph, p: ParameterSource, name: string, x: string, hidden: number, eps: number): string {
  const w = g.weight(`${name}.weight`, [hidden], p.getParameter(`${name}.weight`));
  const b = g.weight(`${name}.bias`, [hidden], p.getParameter(`${name}.bias`));
  return g.op('LayerNormalization', [x, w, b], { axis: { int: -1 }, epsilon: { float: eps } });
}

// The exact (erf) GELU BERT uses: x * 0.5 * (1 + erf(x / sqrt 2)).
function gelu(g: Graph, x: string): string {
  const e = g.op('Erf', [g.op('Div', [x, g.f32([Math.SQRT2])])]);
  return g.op('Mul', [g.op('Mul', [x, g.f32([0.5])]), g.op('Add', [e, g.f32([1])])]);
}

function ffn(g: Graph, p: ParameterSource, c: EncoderConfig, name: string, a: string): string {
  const h = gelu(g, linear(g, p, `${name}.intermediate.dense`, a, c.ffnSize, c.hiddenSize));
  return layerNorm(g, p, `${name}.output.LayerNorm`, g.op('Add', [a, linear(g, p, `${name}.output.dense`, h, c.hiddenSize, c.ffnSize)]), c.hiddenSize, c.layerNormEps);
}

function attention(g: Graph, p: ParameterSource, c: EncoderConfig, name: string, x: string, keyBias: string): string {
  const H = c.hiddenSize, nh = c.heads, d = H / nh;
  const split = g.i64([0, 0, nh, d]);
  const heads = (m: string, perm: number[]) => g.op('Transpose', [g.op('Reshape', [linear(g, p, `${name}.attention.self.${m}`, x, H, H), split])], { perm: { ints: perm } });
  const q = heads('query', [0, 2, 1, 3]); // [B, nh, T, d]
  const k = heads('key', [0, 2, 3, 1]); // [B, nh, d, T]
  const v = heads('value', [0, 2, 1, 3]);
  const scores = g.op('Add', [g.op('Div', [g.op('MatMul', [q, k]), g.f32([Math.sqrt(d)])]), keyBias]);
  const probs = g.op('Softmax', [scores], { axis: { int: -1 } });
  const ctx = g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [probs, v])], { perm: { ints: [0, 2, 1, 3] } }), g.i64([0, 0, H])]);
  const out = linear(g, p, `${name}.attention.output.dense`, ctx, H, H);
  return layerNorm(g, p, `${name}.attention.output.LayerNorm`, g.op('Add', [x, out]), H, c.layerNormEps);
}

// A specialized (TASER) block's FFN. Det-R: the side's expert. Seq-R / Tok-R: every expert runs on every row and
// the router's argmax selects one per sequence ([CLS] state at the block's input) or per token: E times the FFN's
// arithmetic of the libtorch path (which gathers each expert's rows), in exchange for a graph of standard operators.
function routedFfn(g: Graph, p: ParameterSource, c: EncoderConfig, layer: number, prefix: string, a: string, blockInput: string, side: 'query' | 'passage'): string {
  const t = c.taser!;
  const experts = `${prefix}encoder.layer.${layer}.experts.`;
  if (t.routing === 'det') return ffn(g, p, c, `${experts}${side === 'query' ? 0 : Math.floor(t.experts / 2)}`, a);
  const gate = t.perLayerGate ? `${prefix}encoder.layer.${layer}.gate` : `${prefix}encoder.gate`;
  // Seq-R reads the [CLS] state [B, 1, H]; Tok-R every token [B, T, H]; the choice broadcasts over the tokens.
  const routed = t.routing === 'seq' ? g.op('Gather', [blockInput, g.i64([0], [1])], { axis: { int: 1 } }) : a;
  const choice = g.op('ArgMax', [linear(g, p, gate, routed, t.experts, c.hiddenSize)], { axis: { int: -1 }, keepdims: { int: 1 } });
  let out = '';
  for (let e = 0; e < t.experts; e++) {
    const picked = g.op('Cast', [g.op('Equal', [choice, g.i64([e], [])])], { to: { int: OnnxType.FLOAT } });
    const y = g.op('Mul', [ffn(g, p, c, `${experts}${e}`, a), picked]);
    out = out ? g.op('Add', [out, y]) : y;
  }
  return out;
}

/**
 * One encoder of a model as an ONNX graph (serialized ModelProto bytes). ERR_ARG for what the graph does not
 * compute: windowed attention (`attentionWindow`) and encoders without embeddings.
 *
 * @example
 * writeFileSync('model.onnx', encoderOnnx(model, model.config.encoder, { prefix: 'encoder', side: 'query' }));
 */
export function encoderOnnx(params: ParameterSource, c: EncoderConfig, o: EncoderOnnxOptions): Uint8Array {
  if ((c.attentionWindow ?? 0) > 0) throw new QuorumError('ERR_ARG', 'an encoder with windowed attention (attentionWindow) has no ONNX export yet');
  const g = new Graph();
  const prefix = o.prefix ? `${o.prefix}.` : '';
  const H = c.hiddenSize;
  // Embeddings: word (+ factorized projection) + position + type, then LayerNorm.
  let word = g.op('Gather', [g.weight(`${prefix}embeddings.word_embeddings.weight`, [c.vocabSize, c.embeddingSize], params.getParameter(`${prefix}embeddings.word_embeddings.weight`)), 'input_ids']);
  if (c.embeddingSize !== H) word = linear(g, params, `${prefix}embeddings.projection`, word, H, c.embeddingSize);
  const seqLen = g.op('Gather', [g.op('Shape', ['input_ids']), g.i64([1], [])]);
  const positions = g.op('Range', [g.i64([0], []), seqLen, g.i64([1], [])]);
  const pos = g.op('Gather', [g.weight(`${prefix}embeddings.position_embeddings.weight`, [c.maxPositions, H], params.getParameter(`${prefix}embeddings.position_embeddings.weight`)), positions]);
  const type = g.op('Gather', [g.weight(`${prefix}embeddings.token_type_embeddings.weight`, [c.typeVocabSize, H], params.getParameter(`${prefix}embeddings.token_type_embeddings.weight`)), 'token_type_ids']);
  let x = layerNorm(g, params, `${prefix}embeddings.LayerNorm`, g.op('Add', [g.op('Add', [word, pos]), type]), H, c.layerNormEps);
  // Padded keys get -1e9 before the softmax, as the libtorch path: exp underflows to exactly 0, never NaN.
  const mask = g.op('Cast', ['attention_mask'], { to: { int: OnnxType.FLOAT } }); // [B, T]
  const keyBias = g.op('Unsqueeze', [g.op('Mul', [g.op('Sub', [g.f32([1]), mask]), g.f32([-1e9])]), g.i64([1, 2])]);
  for (let l = 0; l < c.layers; l++) {
    const name = `${prefix}encoder.layer.${l}`;
    const a = attention(g, params, c, name, x, keyBias);
    x = isSpecialized(c, l) ? routedFfn(g, params, c, l, prefix, a, x, o.side) : ffn(g, params, c, name, a);
  }
  g.op('Identity', [x]);
  const hidden = g.nameLast('last_hidden_state');
  // Pooling over real tokens ([CLS] and [SEP] included, padding never).
  let state: string;
  if (c.pooling === 'cls') state = g.op('Gather', [hidden, g.i64([0], [])], { axis: { int: 1 } });
  else if (c.pooling === 'max') {
    const keep = g.op('Unsqueeze', [g.op('Cast', ['attention_mask'], { to: { int: OnnxType.BOOL } }), g.i64([2])]);
    state = g.op('ReduceMax', [g.op('Where', [keep, hidden, g.f32([-Infinity])])], { axes: { ints: [1] }, keepdims: { int: 0 } });
  } else {
    let w = mask;
    if (c.tokenWeights) {
      const u = g.weight(`${prefix}embeddings.token_weights.weight`, [c.vocabSize], params.getParameter(`${prefix}embeddings.token_weights.weight`));
      w = g.op('Mul', [w, g.op('Exp', [g.op('Gather', [u, 'input_ids'])])]);
    }
    const w3 = g.op('Unsqueeze', [w, g.i64([2])]);
    const sum = g.op('ReduceSum', [g.op('Mul', [hidden, w3]), g.i64([1])], { keepdims: { int: 0 } });
    state = g.op('Div', [sum, g.op('ReduceSum', [w3, g.i64([1])], { keepdims: { int: 0 } })]);
  }
  const unit = (v: string) => g.op('Div', [v, g.op('Max', [g.op('ReduceL2', [v], { axes: { ints: [-1] }, keepdims: { int: 1 } }), g.f32([1e-12])])]);
  let y = state;
  if (c.center) y = g.op('Sub', [unit(y), g.weight(`${prefix}pooler.center`, [H], params.getParameter(`${prefix}pooler.center`))]);
  let dim = H;
  if ((c.projectionHidden ?? 0) > 0) {
    y = linear(g, params, `${prefix}projection`, gelu(g, linear(g, params, `${prefix}projection.hidden`, y, c.projectionHidden!, H)), c.projectionDim, c.projectionHidden!);
    dim = c.projectionDim;
  } else if (c.projectionDim > 0) {
    y = linear(g, params, `${prefix}projection`, y, c.projectionDim, H);
    dim = c.projectionDim;
  }
  if (c.normalize) y = unit(y);
  g.op('Identity', [y]);
  g.nameLast('sentence_embedding');
  const ids = (name: string) => ({ name, type: OnnxType.INT64 as OnnxElementType, dims: ['batch', 'sequence'] });
  return encodeOnnxModel({
    graphName: 'quorum_encoder',
    producer: 'quorum',
    opset: 17,
    nodes: g.nodes,
    initializers: g.initializers,
    inputs: [ids('input_ids'), ids('attention_mask'), ids('token_type_ids')],
    outputs: [
      { name: 'sentence_embedding', type: OnnxType.FLOAT, dims: ['batch', dim] },
      { name: 'last_hidden_state', type: OnnxType.FLOAT, dims: ['batch', 'sequence', H] },
    ],
    metadata: o.metadata ?? {},
  });
}
