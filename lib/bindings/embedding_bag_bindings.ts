// The TypeScript side of native/napi/embedding_bag_bindings.cc: a 0-layer encoder's forward pass, from token rows or from
// texts it segments itself (lib/models/embedding-bag.ts).
import { coreAddon, type MaybeAsync, type NativeTensorHandle } from '../native.js';
import type { NativeWordPiece } from './tokenizer_object.js';

/**
 * Texts for a native call to embed with a 0-layer encoder in its own task (mufSearch's questions): the model's tensors
 * (as embedTexts takes them), the native WordPiece, the normalized texts (and pairs) and the encode options
 * (native/napi/embedding_bag_args.h).
 */
export interface NativeTextsToEmbed {
  readonly model: Record<string, NativeTensorHandle | number | boolean>;
  readonly tokenizer: NativeWordPiece;
  readonly texts: string[];
  readonly pairs: string[] | null;
  readonly maxLength: number;
  readonly marker: number;
}

/** embedding_bag_bindings.cc's functions. */
export interface EmbeddingBagBindings {
  /** The forward pass of a 0-layer encoder (native/kernels/embedding_bag.h): named weight tensors and settings. */
  embeddingBag(
    model: Record<string, NativeTensorHandle | number | boolean>,
    ids: NativeTensorHandle,
    typeIds: NativeTensorHandle,
    lengths: NativeTensorHandle,
    async: boolean,
  ): MaybeAsync<NativeTensorHandle>;
  /**
   * Normalized texts segmented (as NativeWordPiece.encode) and embedded by a 0-layer encoder in one call
   * (native/napi/embedding_bag_bindings.cc): [rows * dim].
   */
  embedTexts(
    model: Record<string, NativeTensorHandle | number | boolean>,
    tokenizer: NativeWordPiece,
    first: string[],
    second: string[] | null,
    maxLength: number,
    marker: number,
    async: boolean,
  ): MaybeAsync<Float32Array>;
}

/** embedding_bag_bindings.cc's functions in quorum_core.node. */
export function embeddingBagBindings(): EmbeddingBagBindings {
  return coreAddon() as EmbeddingBagBindings;
}
