// An encoder as one ONNX graph (opset 17): token ids in, the same vector out as Quorum's libtorch forward
// (native/torch/encoder.cc), pooling, head and normalization included, so that ONNX Runtime, transformers.js or any
// ONNX consumer serves a Quorum model. Inputs are named as Hugging Face's exports name them (input_ids,
// attention_mask, token_type_ids, int64, dynamic batch and sequence axes); outputs are `sentence_embedding`
// [batch, dim] and `last_hidden_state` [batch, sequence, hidden]. docs/guides/bring-your-own-model.md#export.
import { QuorumError } from '../errors.js';
import { encodeOnnxModel, OnnxType, type OnnxAttribute, type OnnxNode, type OnnxTensor, type OnnxValueInfo } from '../io/onnx-proto.js';
import { isSpecialized, type EncoderConfig } from './config.js';
import { mustBeObject } from '../validate.js';

// What every graph builder reads, checked before any weight is: parameters by name, and a configuration object.
function checkGraphArgs(params: unknown, config: unknown, field?: string): void {
  mustBeObject(params, 'parameters');
  if (typeof (params as ParameterSource).getParameter !== 'function')
    throw new QuorumError('ERR_ARG', 'parameters must have a getParameter(name) method (a model)');
  mustBeObject(config, 'config');
  if (field !== undefined) mustBeObject((config as Record<string, unknown>)[field], `config.${field}`);
}

function checkSide(side: unknown): void {
  if (side !== 'query' && side !== 'passage')
    throw new QuorumError('ERR_ARG', `side must be 'query' or 'passage', got ${JSON.stringify(side)}`);
}

/** Where an exported encoder reads its weights: a parameter by its full name. */
export interface ParameterSource {
  /** One parameter's values (row-major, torch layout) by its full name. */
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
    return this.constant(`i:${dims}:${values}`, () => ({
      name: '',
      dims,
      type: OnnxType.INT64,
      data: BigInt64Array.from(values.map(BigInt)),
    }));
  }
}

// A linear map x W^T + b, with W stored transposed once so the graph runs a plain MatMul.
function linear(g: Graph, p: ParameterSource, name: string, x: string, out: number, inp: number, bias = true): string {
  const wt = g.weight(`${name}.weight_t`, [inp, out], () => {
    const w = p.getParameter(`${name}.weight`);
    if (w.length !== out * inp) throw new QuorumError('ERR_SHAPE', `${name}.weight has ${w.length} values, expected ${out} x ${inp}`);
    const t = new Float32Array(w.length);
    for (let o = 0; o < out; o++) for (let i = 0; i < inp; i++) t[i * out + o] = w[o * inp + i]!;
    return t;
  });
  const y = g.op('MatMul', [x, wt]);
  if (!bias) return y;
  const b = g.weight(`${name}.bias`, [out], p.getParameter(`${name}.bias`));
  return g.op('Add', [y, b]);
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
  return layerNorm(
    g,
    p,
    `${name}.output.LayerNorm`,
    g.op('Add', [a, linear(g, p, `${name}.output.dense`, h, c.hiddenSize, c.ffnSize)]),
    c.hiddenSize,
    c.layerNormEps,
  );
}

function attention(g: Graph, p: ParameterSource, c: EncoderConfig, name: string, x: string, keyBias: string): string {
  const H = c.hiddenSize,
    nh = c.heads,
    d = H / nh;
  const split = g.i64([0, 0, nh, d]);
  const heads = (m: string, perm: number[]) =>
    g.op('Transpose', [g.op('Reshape', [linear(g, p, `${name}.attention.self.${m}`, x, H, H), split])], { perm: { ints: perm } });
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
function routedFfn(
  g: Graph,
  p: ParameterSource,
  c: EncoderConfig,
  layer: number,
  prefix: string,
  a: string,
  blockInput: string,
  side: 'query' | 'passage',
): string {
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

/** A graph's token inputs and the states an encoder computes from them. */
interface TokenStateNodes {
  /** The attention mask as float [B, T]. */
  mask: string;
  /** The final token states [B, T, hidden]. */
  states: string;
}

const noWindows = (c: EncoderConfig) => {
  if ((c.attentionWindow ?? 0) > 0)
    throw new QuorumError('ERR_ARG', 'an encoder with windowed attention (attentionWindow) has no ONNX export yet');
};

/**
 * Embeddings (word, factorized projection, position, type; LayerNorm) and blocks [from, to) of the encoder whose
 * parameters start with `prefix` (`'encoder.'`, `'bottom.'`, ...), reading the graph inputs input_ids,
 * attention_mask and token_type_ids. `x` (with its mask) continues from given states instead of the embeddings:
 * CAME's experts' own blocks run on the shared bottom's states.
 */
function tokenStateNodes(
  g: Graph,
  p: ParameterSource,
  c: EncoderConfig,
  prefix: string,
  side: 'query' | 'passage',
  x?: TokenStateNodes,
  layers: readonly [number, number] = [0, c.layers],
): TokenStateNodes {
  noWindows(c);
  const H = c.hiddenSize;
  let mask: string;
  let h: string;
  if (x) {
    mask = x.mask;
    h = x.states;
  } else {
    let word = g.op('Gather', [
      g.weight(`${prefix}embeddings.word_embeddings.weight`, [c.vocabSize, c.embeddingSize], () =>
        p.getParameter(`${prefix}embeddings.word_embeddings.weight`),
      ),
      'input_ids',
    ]);
    if (c.embeddingSize !== H) word = linear(g, p, `${prefix}embeddings.projection`, word, H, c.embeddingSize);
    const seqLen = g.op('Gather', [g.op('Shape', ['input_ids']), g.i64([1], [])]);
    const positions = g.op('Range', [g.i64([0], []), seqLen, g.i64([1], [])]);
    const pos = g.op('Gather', [
      g.weight(`${prefix}embeddings.position_embeddings.weight`, [c.maxPositions, H], () =>
        p.getParameter(`${prefix}embeddings.position_embeddings.weight`),
      ),
      positions,
    ]);
    const type = g.op('Gather', [
      g.weight(`${prefix}embeddings.token_type_embeddings.weight`, [c.typeVocabSize, H], () =>
        p.getParameter(`${prefix}embeddings.token_type_embeddings.weight`),
      ),
      'token_type_ids',
    ]);
    h = layerNorm(g, p, `${prefix}embeddings.LayerNorm`, g.op('Add', [g.op('Add', [word, pos]), type]), H, c.layerNormEps);
    mask = g.op('Cast', ['attention_mask'], { to: { int: OnnxType.FLOAT } }); // [B, T]
  }
  // Padded keys get -1e9 before the softmax, as the libtorch path: exp underflows to exactly 0, never NaN.
  const keyBias = g.op('Unsqueeze', [g.op('Mul', [g.op('Sub', [g.f32([1]), mask]), g.f32([-1e9])]), g.i64([1, 2])]);
  for (let l = layers[0]; l < layers[1]; l++) {
    const name = `${prefix}encoder.layer.${l}`;
    const a = attention(g, p, c, name, h, keyBias);
    h = isSpecialized(c, l) ? routedFfn(g, p, c, l, prefix, a, h, side) : ffn(g, p, c, name, a);
  }
  return { mask, states: h };
}

function unitRows(g: Graph, v: string): string {
  return g.op('Div', [v, g.op('Max', [g.op('ReduceL2', [v], { axes: { ints: [-1] }, keepdims: { int: 1 } }), g.f32([1e-12])])]);
}

/** Pooling over real tokens ([CLS] and [SEP] included, padding never), as BertEncoder::pool. */
function poolNodes(g: Graph, p: ParameterSource, c: EncoderConfig, prefix: string, t: TokenStateNodes): string {
  if (c.pooling === 'cls') return g.op('Gather', [t.states, g.i64([0], [])], { axis: { int: 1 } });
  if (c.pooling === 'max') {
    const keep = g.op('Unsqueeze', [g.op('Cast', [t.mask], { to: { int: OnnxType.BOOL } }), g.i64([2])]);
    return g.op('ReduceMax', [g.op('Where', [keep, t.states, g.f32([-Infinity])])], { axes: { ints: [1] }, keepdims: { int: 0 } });
  }
  let w = t.mask;
  if (c.tokenWeights) {
    const u = g.weight(`${prefix}embeddings.token_weights.weight`, [c.vocabSize], () =>
      p.getParameter(`${prefix}embeddings.token_weights.weight`),
    );
    w = g.op('Mul', [w, g.op('Exp', [g.op('Gather', [u, 'input_ids'])])]);
  }
  const w3 = g.op('Unsqueeze', [w, g.i64([2])]);
  const sum = g.op('ReduceSum', [g.op('Mul', [t.states, w3]), g.i64([1])], { keepdims: { int: 0 } });
  return g.op('Div', [sum, g.op('ReduceSum', [w3, g.i64([1])], { keepdims: { int: 0 } })]);
}

/** Centre, head and normalization after pooling, as BertEncoder::forward; returns the output and its width. */
function outputNodes(g: Graph, p: ParameterSource, c: EncoderConfig, prefix: string, state: string): [string, number] {
  const H = c.hiddenSize;
  let y = state;
  if (c.center) y = g.op('Sub', [unitRows(g, y), g.weight(`${prefix}pooler.center`, [H], () => p.getParameter(`${prefix}pooler.center`))]);
  let dim = H;
  if ((c.projectionHidden ?? 0) > 0) {
    y = linear(
      g,
      p,
      `${prefix}projection`,
      gelu(g, linear(g, p, `${prefix}projection.hidden`, y, c.projectionHidden!, H)),
      c.projectionDim,
      c.projectionHidden!,
    );
    dim = c.projectionDim;
  } else if (c.projectionDim > 0) {
    y = linear(g, p, `${prefix}projection`, y, c.projectionDim, H);
    dim = c.projectionDim;
  }
  if (c.normalize) y = unitRows(g, y);
  return [y, dim];
}

/** Names the node computing `value` as the graph output `name`. */
function output(g: Graph, value: string, name: string): string {
  g.op('Identity', [value]);
  return g.nameLast(name);
}

const TOKEN_INPUTS: OnnxValueInfo[] = ['input_ids', 'attention_mask', 'token_type_ids'].map((name) => ({
  name,
  type: OnnxType.INT64,
  dims: ['batch', 'sequence'],
}));

function serialize(
  g: Graph,
  name: string,
  outputs: Array<{ name: string; dims: Array<number | string> }>,
  metadata: Record<string, string> = {},
  inputs = TOKEN_INPUTS,
): Uint8Array {
  return encodeOnnxModel({
    graphName: name,
    producer: 'quorum',
    opset: 17,
    nodes: g.nodes,
    initializers: g.initializers,
    inputs,
    outputs: outputs.map((o) => ({ name: o.name, type: OnnxType.FLOAT, dims: o.dims })),
    metadata,
  });
}

/**
 * One encoder of a model as an ONNX graph (serialized ModelProto bytes). ERR_ARG for what the graph does not
 * compute: windowed attention (`attentionWindow`).
 *
 * @example
 * writeFileSync('model.onnx', encoderOnnx(model, model.config.encoder, { prefix: 'encoder', side: 'query' }));
 */
export function encoderOnnx(params: ParameterSource, c: EncoderConfig, o: EncoderOnnxOptions): Uint8Array {
  checkGraphArgs(params, c);
  mustBeObject(o, 'options');
  if (typeof o.prefix !== 'string') throw new QuorumError('ERR_ARG', 'options.prefix must be a string');
  checkSide(o.side);
  const g = new Graph();
  const prefix = o.prefix ? `${o.prefix}.` : '';
  const t = tokenStateNodes(g, params, c, prefix, o.side);
  const hidden = output(g, t.states, 'last_hidden_state');
  const [y, dim] = outputNodes(g, params, c, prefix, poolNodes(g, params, c, prefix, { mask: t.mask, states: hidden }));
  output(g, y, 'sentence_embedding');
  return serialize(
    g,
    'quorum_encoder',
    [
      { name: 'sentence_embedding', dims: ['batch', dim] },
      { name: 'last_hidden_state', dims: ['batch', 'sequence', c.hiddenSize] },
    ],
    o.metadata,
  );
}

/**
 * A ColBERT model's token-vector graph (docs/methods/colbert.md#checkpoints): the encoder's last states, the
 * projection `<projection>.weight` [dim, hidden] without bias, each row L2-normalized (ColBERT's F.normalize, eps
 * 1e-12). Output `token_vectors` [batch, sequence, dim] at every position, padding included: which positions a
 * caller keeps (a question's [MASK] expansion, a passage's non-punctuation tokens) is the framing's business.
 */
export function tokenVectorsOnnx(
  params: ParameterSource,
  c: EncoderConfig,
  o: { prefix: string; projection: string; dim: number; metadata?: Record<string, string> },
): Uint8Array {
  checkGraphArgs(params, c);
  mustBeObject(o, 'options');
  if (!Number.isInteger(o.dim) || o.dim < 1) throw new QuorumError('ERR_ARG', `dim must be a positive integer, got ${String(o.dim)}`);
  const g = new Graph();
  const t = tokenStateNodes(g, params, c, o.prefix ? `${o.prefix}.` : '', 'passage');
  const y = unitRows(g, linear(g, params, o.projection, t.states, o.dim, c.hiddenSize, false));
  output(g, y, 'token_vectors');
  return serialize(g, 'quorum_colbert', [{ name: 'token_vectors', dims: ['batch', 'sequence', o.dim] }], o.metadata);
}

/** CAME's configuration as {@link cameOnnx} reads it (lib/methods/came/model.ts's CameConfig). */
export interface CameGraphConfig {
  /** The shared bottom (and, with expertLayers blocks, each expert's tower). */
  encoder: EncoderConfig;
  /** Each expert's own blocks above the bottom. */
  expertLayers: number;
  /** The experts the model has. */
  experts: ReadonlyArray<'lexical' | 'local' | 'global'>;
  /** Width of the local expert's token vectors. */
  localDim: number;
}

/**
 * CAME's three experts as one graph (docs/methods/came.md): the shared bottom, each expert's own blocks and its
 * head. Outputs: `lexical` [batch, vocab] (SPLADE: max over real tokens of log(1 + relu(logits)), the decoder tied
 * to the word embeddings), `local` [batch, sequence, localDim] (unit token vectors, zero on padding, for MaxSim),
 * `global` [batch, hidden] (the pooled vector, unit length when the encoder normalizes), each present when the model
 * has that expert.
 */
export function cameOnnx(params: ParameterSource, c: CameGraphConfig, side: 'query' | 'passage' = 'query'): Uint8Array {
  checkGraphArgs(params, c, 'encoder');
  checkSide(side);
  if (!Array.isArray(c.experts)) throw new QuorumError('ERR_ARG', 'config.experts must be an array');
  const g = new Graph();
  const bottom = tokenStateNodes(g, params, c.encoder, 'bottom.', side);
  const tower = (e: string): TokenStateNodes =>
    c.expertLayers > 0
      ? tokenStateNodes(g, params, { ...c.encoder, layers: c.expertLayers }, `${e}.`, side, bottom, [0, c.expertLayers])
      : bottom;
  const outputs: Array<{ name: string; dims: Array<number | string> }> = [];
  const E = c.encoder.embeddingSize,
    H = c.encoder.hiddenSize,
    V = c.encoder.vocabSize;
  if (c.experts.includes('lexical')) {
    const top = tower('lexical');
    let h = gelu(g, linear(g, params, 'lexical.head.transform.dense', top.states, E, H));
    h = layerNorm(g, params, 'lexical.head.transform.LayerNorm', h, E, c.encoder.layerNormEps);
    // SPLADE's max over tokens of relu(logit + b), logits = h E^T over the tied word embeddings [V, E], is
    // relu(max over tokens of h E^T, + b): adding b and relu are monotone (in f32 too), so the max runs first, and
    // the bias, relu and log touch [batch, V] instead of [batch, sequence, V]. Padded tokens are masked inside the
    // product: h gets one more column, 0 for a token and -1e30 for padding, against a row of ones under E^T, so no
    // pass over the logits is spent on the mask.
    const maskColumn = g.op('Unsqueeze', [g.op('Mul', [g.op('Sub', [top.mask, g.f32([1])]), g.f32([1e30])]), g.i64([2])]); // [B, T, 1]
    const embMasked = g.weight('bottom.embeddings.word_embeddings.weight_t_masked', [E + 1, V], () => {
      const w = params.getParameter('bottom.embeddings.word_embeddings.weight');
      const t = new Float32Array((E + 1) * V).fill(1);
      for (let v = 0; v < V; v++) for (let e = 0; e < E; e++) t[e * V + v] = w[v * E + e]!;
      return t;
    });
    const logits = g.op('MatMul', [g.op('Concat', [h, maskColumn], { axis: { int: -1 } }), embMasked]);
    const best = g.op('ReduceMax', [logits], { axes: { ints: [1] }, keepdims: { int: 0 } });
    const pooled = g.op('Relu', [
      g.op('Add', [best, g.weight('lexical.head.decoder.bias', [V], () => params.getParameter('lexical.head.decoder.bias'))]),
    ]);
    outputs.push({ name: output(g, g.op('Log', [g.op('Add', [pooled, g.f32([1])])]), 'lexical'), dims: ['batch', V] });
  }
  if (c.experts.includes('local')) {
    const top = tower('local');
    const t = unitRows(g, linear(g, params, 'local.head', top.states, c.localDim, H));
    outputs.push({
      name: output(g, g.op('Mul', [t, g.op('Unsqueeze', [top.mask, g.i64([2])])]), 'local'),
      dims: ['batch', 'sequence', c.localDim],
    });
  }
  if (c.experts.includes('global')) {
    const top = tower('global');
    const prefix = c.expertLayers > 0 ? 'global.' : 'bottom.';
    const pooled = poolNodes(g, params, c.encoder, prefix, top);
    outputs.push({ name: output(g, c.encoder.normalize ? unitRows(g, pooled) : pooled, 'global'), dims: ['batch', H] });
  }
  return serialize(g, 'quorum_came', outputs, { producer: 'quorum', method: 'came', side });
}

/** ROM's configuration as {@link romOnnx} reads it (lib/methods/rom/network.ts's RomConfig). */
export interface RomGraphConfig {
  /** The one encoder. */
  encoder: EncoderConfig;
  /** Width of the retrieval head (0: the hidden size). */
  headDim: number;
}

/**
 * ROM's one encoder (docs/methods/rom.md) as two graphs. `retrieval`: the pooled state through the retrieval head
 * (unit length when the encoder normalizes), output `embedding` [batch, dim]. `reader`: rows "[CLS] question [SEP]
 * passage [SEP]" (type 1 for passage tokens, 2 for passage tokens the question contains) give `start_logits` and
 * `end_logits` [batch, sequence], -inf outside the passage, and `relevance` [batch] from the [CLS] state.
 */
export function romOnnx(params: ParameterSource, c: RomGraphConfig, graph: 'retrieval' | 'reader'): Uint8Array {
  checkGraphArgs(params, c, 'encoder');
  if (graph !== 'retrieval' && graph !== 'reader')
    throw new QuorumError('ERR_ARG', `graph must be 'retrieval' or 'reader', got ${JSON.stringify(graph)}`);
  const g = new Graph();
  const H = c.encoder.hiddenSize;
  const t = tokenStateNodes(g, params, c.encoder, 'encoder.', 'passage');
  if (graph === 'retrieval') {
    const D = c.headDim > 0 ? c.headDim : H;
    const v = linear(g, params, 'retrieval', poolNodes(g, params, c.encoder, 'encoder.', t), D, H);
    output(g, c.encoder.normalize ? unitRows(g, v) : v, 'embedding');
    return serialize(g, 'quorum_rom_retrieval', [{ name: 'embedding', dims: ['batch', D] }], { producer: 'quorum', method: 'rom', graph });
  }
  const span = linear(g, params, 'reader.span', t.states, 2, H); // [B, T, 2]
  // Answer positions: passage tokens (type >= 1), real, before the final [SEP] (as RomModel::answer_positions).
  const length = g.op('ReduceSum', [g.op('Cast', ['attention_mask'], { to: { int: OnnxType.INT64 } }), g.i64([1])], {
    keepdims: { int: 1 },
  }); // [B, 1]
  const seqLen = g.op('Gather', [g.op('Shape', ['input_ids']), g.i64([1], [])]);
  const positions = g.op('Unsqueeze', [g.op('Range', [g.i64([0], []), seqLen, g.i64([1], [])]), g.i64([0])]); // [1, T]
  const allowed = g.op('And', [
    g.op('GreaterOrEqual', ['token_type_ids', g.i64([1], [])]),
    g.op('Less', [positions, g.op('Sub', [length, g.i64([1], [])])]),
  ]);
  const logit = (i: number, name: string) =>
    output(
      g,
      g.op('Where', [
        allowed,
        g.op('Squeeze', [g.op('Gather', [span, g.i64([i], [1])], { axis: { int: 2 } }), g.i64([2])]),
        g.f32([-Infinity]),
      ]),
      name,
    );
  logit(0, 'start_logits');
  logit(1, 'end_logits');
  const cls = g.op('Gather', [t.states, g.i64([0], [])], { axis: { int: 1 } });
  output(g, g.op('Squeeze', [linear(g, params, 'reader.relevance', cls, 1, H), g.i64([1])]), 'relevance');
  return serialize(
    g,
    'quorum_rom_reader',
    [
      { name: 'start_logits', dims: ['batch', 'sequence'] },
      { name: 'end_logits', dims: ['batch', 'sequence'] },
      { name: 'relevance', dims: ['batch'] },
    ],
    { producer: 'quorum', method: 'rom', graph },
  );
}

/** The heads' configuration as {@link mufHeadsOnnx} reads it (lib/methods/muf/ensemble.ts's EnsembleConfig). */
export interface MufHeadsGraphConfig {
  /** The expert's vector width (input and output). */
  dim: number;
  /** Hidden units per layer. */
  hidden: number;
  /** Hidden ReLU layers. */
  layers: number;
  /** K, the heads. */
  members: number;
}

/**
 * DPR-MUF's K ensemble heads of one expert (docs/methods/muf.md) as one graph, the K MLPs as batched MatMuls over
 * member-major weights ([K, in, out], as the heads store them): input `query_embedding` [batch, dim] (the expert's
 * question vector), output `member_embeddings` [batch, K, dim]. A passage's K scores are these rows' dot products
 * with its vector; their mutual information is the expert's confidence (the core's `ensembleMI` kernel).
 */
export function mufHeadsOnnx(params: ParameterSource, c: MufHeadsGraphConfig): Uint8Array {
  checkGraphArgs(params, c);
  for (const k of ['dim', 'hidden', 'members'] as const)
    if (!Number.isInteger(c[k]) || c[k] < 1) throw new QuorumError('ERR_ARG', `config.${k} must be a positive integer`);
  if (!Number.isInteger(c.layers) || c.layers < 0) throw new QuorumError('ERR_ARG', 'config.layers must be an integer >= 0');
  const g = new Graph();
  const K = c.members;
  // Layer 0: every member reads the same question vector, so the K first layers are one [dim, K * out] matrix (one
  // GEMM; ONNX Runtime runs a broadcast [1, B, dim] x [K, dim, out] MatMul about ten times slower).
  const out0 = c.layers === 0 ? c.dim : c.hidden;
  const w0 = g.weight('layer.0.weight_cat', [c.dim, K * out0], () => {
    const w = params.getParameter('layer.0.weight'); // [K, dim, out0]
    const t = new Float32Array(w.length);
    for (let k = 0; k < K; k++)
      for (let d = 0; d < c.dim; d++) for (let o = 0; o < out0; o++) t[d * K * out0 + k * out0 + o] = w[(k * c.dim + d) * out0 + o]!;
    return t;
  });
  const b0 = g.weight('layer.0.bias', [K * out0], () => params.getParameter('layer.0.bias'));
  let x = g.op('Reshape', [g.op('Add', [g.op('MatMul', ['query_embedding', w0]), b0]), g.i64([0, K, out0])]); // [B, K, out0]
  if (c.layers > 0) {
    x = g.op('Transpose', [g.op('Relu', [x])], { perm: { ints: [1, 0, 2] } }); // [K, B, hidden]
    for (let i = 1; i <= c.layers; i++) {
      const out = i === c.layers ? c.dim : c.hidden;
      const w = g.weight(`layer.${i}.weight`, [K, c.hidden, out], () => params.getParameter(`layer.${i}.weight`));
      const b = g.weight(`layer.${i}.bias`, [K, 1, out], () => params.getParameter(`layer.${i}.bias`));
      x = g.op('Add', [g.op('MatMul', [x, w]), b]); // [K, B, out]
      if (i < c.layers) x = g.op('Relu', [x]);
    }
    x = g.op('Transpose', [x], { perm: { ints: [1, 0, 2] } });
  }
  output(g, x, 'member_embeddings');
  return serialize(
    g,
    'quorum_muf_heads',
    [{ name: 'member_embeddings', dims: ['batch', K, c.dim] }],
    { producer: 'quorum', method: 'muf' },
    [{ name: 'query_embedding', type: OnnxType.FLOAT, dims: ['batch', c.dim] }],
  );
}
