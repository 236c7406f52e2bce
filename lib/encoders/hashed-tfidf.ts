import { QuorumError } from '../errors.js';
import { Tensor } from '../tensor.js';

/** Lowercased Unicode word tokens (letters and digits). */
export function wordTokens(text: string): string[] {
  return (
    text
      .toLowerCase()
      .normalize('NFKC')
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * A lexical dense encoder with no training: TF-IDF weights of words and word bigrams, signed feature hashing
 * into `dim` dimensions, L2 normalized. It gives the dense kernels real retrieval data before the trained
 * encoders exist, and is a reproducible lexical baseline.
 *
 * @example
 * const enc = HashedTfidfEncoder.fit(passages, { dim: 768 });
 * const corpus = enc.encode(passages);     // Tensor f32 [n, 768]
 * const top = await scoreTopK(enc.encode([question]), corpus, 10);
 */
export class HashedTfidfEncoder {
  readonly dim: number;
  readonly #idf: Map<string, number>;
  readonly #defaultIdf: number;

  private constructor(dim: number, idf: Map<string, number>, defaultIdf: number) {
    this.dim = dim;
    this.#idf = idf;
    this.#defaultIdf = defaultIdf;
  }

  /** Learns IDF from `texts`. */
  static fit(texts: readonly string[], options: { dim?: number } = {}): HashedTfidfEncoder {
    const dim = options.dim ?? 768;
    if (!Number.isInteger(dim) || dim < 1) throw new QuorumError('ERR_RANGE', `dim must be a positive integer, got ${dim}`);
    const df = new Map<string, number>();
    for (const t of texts) for (const f of new Set(HashedTfidfEncoder.features(t))) df.set(f, (df.get(f) ?? 0) + 1);
    const n = texts.length;
    const idf = new Map<string, number>();
    for (const [f, c] of df) idf.set(f, Math.log(1 + n / c));
    return new HashedTfidfEncoder(dim, idf, Math.log(1 + n));
  }

  static features(text: string): string[] {
    const w = wordTokens(text);
    const out = w.slice();
    for (let i = 0; i + 1 < w.length; i++) out.push(`${w[i]} ${w[i + 1]}`);
    return out;
  }

  /** Encodes texts into an f32 Tensor [texts.length, dim]. */
  encode(texts: readonly string[]): Tensor<'f32'> {
    const t = Tensor.zeros([texts.length, this.dim]);
    const out = t.data;
    texts.forEach((text, row) => {
      const tf = new Map<string, number>();
      for (const f of HashedTfidfEncoder.features(text)) tf.set(f, (tf.get(f) ?? 0) + 1);
      const base = row * this.dim;
      for (const [f, c] of tf) {
        const h = fnv1a(f);
        const sign = h & 0x80000000 ? -1 : 1;
        const slot = base + (h % this.dim);
        out[slot] = (out[slot] as number) + sign * (1 + Math.log(c)) * (this.#idf.get(f) ?? this.#defaultIdf);
      }
      let norm = 0;
      for (let d = 0; d < this.dim; d++) norm += (out[base + d] as number) ** 2;
      const inv = norm > 0 ? 1 / Math.sqrt(norm) : 0;
      for (let d = 0; d < this.dim; d++) out[base + d] = (out[base + d] as number) * inv;
    });
    return t;
  }
}
