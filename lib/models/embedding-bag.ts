// The forward pass of a 0-layer encoder (embeddings, LayerNorm, pooling, centre, head, normalization: no Transformer
// block) for serving without libtorch or ONNX Runtime: the core's embeddingBag kernel (native/kernels/embedding_bag.h,
// docs/methods/kernels.md#0-layer-encoder), off the main thread. Quorum's shipped model and the GloVe-started experts
// are such encoders; their work per question is a few hundred multiply-adds per token, where a runtime call costs
// more than the arithmetic. Checked against a plain reference (test/embedding-bag.test.ts) and the libtorch
// Retriever (test/serving-encoder.test.ts).
import { QuorumError, awaitNative, callNative } from '../errors.js';
import { type NativeTensorHandle } from '../native.js';
import { embeddingBagBindings, type NativeTextsToEmbed } from '../bindings/embedding_bag_bindings.js';
import { runAsync, type Operands } from '../operand.js';
import { Tensor } from '../tensor.js';
import type { EncodeOptions, WordPieceTokenizer } from '../text/tokenizer.js';
import type { EncoderConfig } from './config.js';

/** A tokenized batch, as the tokenizer gives it. */
export interface TokenRows {
  ids: Int32Array;
  typeIds: Int32Array;
  lengths: Int32Array;
  rows: number;
  seqLen: number;
}

/** Whether {@link EmbeddingBagEncoder} computes this encoder (0 layers, no windowed attention). */
export function isEmbeddingBag(c: EncoderConfig): boolean {
  return c.layers === 0;
}

/** The kernel's model argument: the encoder's tensors under the binding's names, and its settings. */
type BagModel = Record<string, NativeTensorHandle | number | boolean>;

/**
 * One 0-layer encoder over parameters by name (`<prefix>.embeddings...`, `<prefix>.projection...`), its weights
 * held as native tensors over the given arrays.
 *
 * @example
 * const bag = new EmbeddingBagEncoder(config.encoder, (n) => params.get(n)!, 'encoder');
 * const rows = await bag.encode(tokenizer.encode(['who wrote hamlet?']));   // Float32Array [1, dim]
 */
export class EmbeddingBagEncoder {
  /** Output width. */
  readonly dim: number;
  readonly #tensors: Tensor[] = [];
  readonly #model: BagModel;

  constructor(c: EncoderConfig, param: (name: string) => Float32Array, prefix: string) {
    if (!isEmbeddingBag(c)) throw new QuorumError('ERR_ARG', `EmbeddingBagEncoder computes 0-layer encoders, not ${c.layers} layers`);
    const H = c.hiddenSize,
      E = c.embeddingSize;
    const tensor = (name: string, shape: number[]) => {
      const t = Tensor.wrap(param(`${prefix}.${name}`), shape, 'f32');
      this.#tensors.push(t);
      return t.handle;
    };
    const model: BagModel = {
      word: tensor('embeddings.word_embeddings.weight', [c.vocabSize, E]),
      position: tensor('embeddings.position_embeddings.weight', [c.maxPositions, H]),
      type: tensor('embeddings.token_type_embeddings.weight', [c.typeVocabSize, H]),
      lnWeight: tensor('embeddings.LayerNorm.weight', [H]),
      lnBias: tensor('embeddings.LayerNorm.bias', [H]),
      lnEps: c.layerNormEps,
      maxPool: c.pooling === 'max',
      normalize: c.normalize === true,
    };
    if (E !== H) {
      model.factorWeight = tensor('embeddings.projection.weight', [H, E]);
      model.factorBias = tensor('embeddings.projection.bias', [H]);
    }
    if (c.tokenWeights) model.tokenWeights = tensor('embeddings.token_weights.weight', [c.vocabSize]);
    if (c.center) model.centre = tensor('pooler.center', [H]);
    const hidden = c.projectionHidden ?? 0;
    if (hidden > 0) {
      model.headHiddenWeight = tensor('projection.hidden.weight', [hidden, H]);
      model.headHiddenBias = tensor('projection.hidden.bias', [hidden]);
    }
    if (c.projectionDim > 0) {
      model.headWeight = tensor('projection.weight', [c.projectionDim, hidden > 0 ? hidden : H]);
      model.headBias = tensor('projection.bias', [c.projectionDim]);
    }
    this.#model = model;
    this.dim = c.projectionDim > 0 ? c.projectionDim : H;
  }

  /** [rows, dim] for a tokenized batch, computed on the native pool. */
  async encode(b: TokenRows): Promise<Float32Array> {
    const call = (ops: Operands) => {
      const ids = ops.typed(b.ids, [b.rows, b.seqLen], 'i32');
      const types = ops.typed(b.typeIds, [b.rows, b.seqLen], 'i32');
      const lengths = ops.typed(b.lengths, [b.rows], 'i32');
      return (async: boolean) => embeddingBagBindings().embeddingBag(this.#model, ids.handle, types.handle, lengths.handle, async);
    };
    return runAsync(call, (h: NativeTensorHandle) => Tensor.fromHandle<'f32'>(h).data);
  }

  /**
   * Texts tokenized by `tokenizer` (as its encode does) and embedded in one native call: [rows, dim]. The same vectors
   * as `encode(tokenizer.encode(texts, options))` with one trip off the event loop instead of two and no token tensors
   * (docs/results/serving.md#the-example-server-under-load).
   */
  async encodeTexts(
    tokenizer: WordPieceTokenizer,
    texts: readonly string[],
    options: Pick<EncodeOptions, 'maxLength' | 'pairs' | 'marker'> = {},
  ): Promise<Float32Array> {
    const a = tokenizer.nativeInputs(texts, options);
    return awaitNative(
      callNative(() =>
        embeddingBagBindings().embedTexts(this.#model, a.native, a.first, a.second, a.maxLength, a.marker, true),
      ) as Promise<Float32Array>,
    );
  }

  /**
   * @internal The same texts as {@link encodeTexts}, checked and normalized, for a native call that embeds them in its
   * own task (mufSearch: a question's encodings and search in one hop).
   */
  textsToEmbed(
    tokenizer: WordPieceTokenizer,
    texts: readonly string[],
    options: Pick<EncodeOptions, 'maxLength' | 'pairs' | 'marker'> = {},
  ): NativeTextsToEmbed {
    const a = tokenizer.nativeInputs(texts, options);
    return { model: this.#model, tokenizer: a.native, texts: a.first, pairs: a.second, maxLength: a.maxLength, marker: a.marker };
  }

  /** Releases the native views of the weights. */
  dispose(): void {
    for (const t of this.#tensors) t.dispose();
  }
}
