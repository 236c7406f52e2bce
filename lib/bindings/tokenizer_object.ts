// The TypeScript side of native/napi/tokenizer_object.cc: the native WordPiece segmenter (lib/text/tokenizer.ts's
// WordPieceTokenizer is the typed class in front of it).
import { coreAddon, type MaybeAsync } from '../native.js';

/** One native WordPiece segmenter. */
export interface NativeWordPiece {
  readonly size: number;
  encode(
    first: string[],
    second: string[] | null,
    maxLength: number,
    marker: number,
    padToMax: boolean,
    async: boolean,
  ): MaybeAsync<{ ids: Int32Array; typeIds: Int32Array; lengths: Int32Array; rows: number; seqLen: number }>;
  pieces(normalized: string): Int32Array;
  idOf(token: string): number;
  tokenOf(id: number): string;
}

/** tokenizer_object.cc's constructor: the vocabulary in id order, the longest word segmented. */
export interface TokenizerObjectBindings {
  WordPiece: new (vocabulary: string[], maxWordChars?: number) => NativeWordPiece;
}

/** tokenizer_object.cc's exports in quorum_core.node. */
export function tokenizerObject(): TokenizerObjectBindings {
  return coreAddon() as TokenizerObjectBindings;
}
