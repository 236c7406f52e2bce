// Pre-tokenized texts, so that assembling a training batch is a few typed-array copies: every passage and question
// is tokenized once, stored unpadded, and padded per batch to that batch's longest row.
import { QuorumError } from '../errors.js';
import { type TokenBatchArg } from '../bindings/torch_addon.js';
import type { EncodeOptions, WordPieceTokenizer } from '../text/tokenizer.js';
import type { PassageText } from '../data/examples.js';

/**
 * Rows of token ids and type ids stored back to back.
 *
 * @example
 * const table = await TokenTable.passages(tokenizer, passages, 128);   // title and text as pairs
 * table.size;                       // passages.length
 * const batch = table.batch([0, 5]);   // two rows, padded to the longer
 */
export class TokenTable {
  private constructor(
    private readonly ids: Int32Array,
    private readonly types: Int32Array,
    private readonly offsets: Int32Array,
    readonly padId: number,
  ) {}

  /**
   * Tokenizes `texts` (with `pairs` as second segments) in chunks off the main thread.
   *
   * @example
   * const passages = await TokenTable.build(tok, titles, { pairs: texts, maxLength: 128 });
   * const batch = passages.batch([3, 1, 4]);
   */
  static async build(tokenizer: WordPieceTokenizer, texts: readonly string[], options: EncodeOptions = {}): Promise<TokenTable> {
    const chunk = 512;
    const offsets = new Int32Array(texts.length + 1);
    const parts: Array<{ ids: Int32Array; typeIds: Int32Array; lengths: Int32Array; seqLen: number }> = [];
    for (let s = 0; s < texts.length; s += chunk) {
      const e = Math.min(texts.length, s + chunk);
      const enc = await tokenizer.encodeAsync(texts.slice(s, e), { ...options, pairs: options.pairs?.slice(s, e) });
      parts.push(enc);
      for (let r = 0; r < e - s; r++) offsets[s + r + 1] = (offsets[s + r] as number) + (enc.lengths[r] as number);
    }
    const total = offsets[texts.length] as number;
    const ids = new Int32Array(total);
    const types = new Int32Array(total);
    let row = 0;
    for (const p of parts) {
      for (let r = 0; r < p.lengths.length; r++, row++) {
        const len = p.lengths[r] as number;
        ids.set(p.ids.subarray(r * p.seqLen, r * p.seqLen + len), offsets[row] as number);
        types.set(p.typeIds.subarray(r * p.seqLen, r * p.seqLen + len), offsets[row] as number);
      }
    }
    return new TokenTable(ids, types, offsets, tokenizer.padId);
  }

  /**
   * Passages as "[CLS] title [SEP] text [SEP]" rows (how every retriever here encodes a passage).
   *
   * @example
   * const table = await TokenTable.passages(tok, corpus, 128);
   */
  static async passages(tokenizer: WordPieceTokenizer, passages: readonly PassageText[], maxLength: number): Promise<TokenTable> {
    return TokenTable.build(
      tokenizer,
      passages.map((p) => p.title),
      { pairs: passages.map((p) => p.text), maxLength },
    );
  }

  /** Number of rows. */
  get size(): number {
    return this.offsets.length - 1;
  }

  /** Tokens in row i, framing included. */
  length(i: number): number {
    return (this.offsets[i + 1] as number) - (this.offsets[i] as number);
  }

  /** The token ids of row i, framing included (a view, not a copy). */
  tokens(i: number): Int32Array {
    return this.ids.subarray(this.offsets[i] as number, this.offsets[i + 1] as number);
  }

  /** Rows `rows` padded to their longest. */
  batch(rows: readonly number[]): TokenBatchArg {
    let seqLen = 1;
    for (const r of rows) {
      if (!(r >= 0 && r < this.size)) throw new QuorumError('ERR_RANGE', `row ${r} outside a table of ${this.size}`);
      seqLen = Math.max(seqLen, this.length(r));
    }
    const ids = new Int32Array(rows.length * seqLen).fill(this.padId);
    const typeIds = new Int32Array(rows.length * seqLen);
    const lengths = new Int32Array(rows.length);
    rows.forEach((r, i) => {
      const a = this.offsets[r] as number;
      const b = this.offsets[r + 1] as number;
      ids.set(this.ids.subarray(a, b), i * seqLen);
      typeIds.set(this.types.subarray(a, b), i * seqLen);
      lengths[i] = b - a;
    });
    return { ids, typeIds, lengths, rows: rows.length, seqLen };
  }
}
