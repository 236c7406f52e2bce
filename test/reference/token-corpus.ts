// A synthetic corpus of ColBERT-like token vectors, for the ColBERT index's tests and benchmark (no ColBERT model can
// be fetched here). A ColBERT token vector is mostly its word's, shifted by its context, and a passage's topic shows in
// the words it uses: here half of a passage's tokens are words of a Zipfian general vocabulary and half words of its
// topic's own vocabulary (`topicWords` of them), each token the word's unit vector plus its passage's topic vector
// (weight 0.15) and a little noise, normalized. Questions are noisy copies of some of one passage's tokens.

/** xorshift32 in [0, 1). */
export function tokenRng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

export interface TokenCorpusOptions {
  passages: number;
  dim: number;
  seed: number;
  /** Words in the vocabulary (default 2000). */
  vocab?: number;
  /** Topics (default 50). */
  topics?: number;
  /** Tokens a passage: uniform in [min, max] (default [20, 59]). */
  length?: readonly [number, number];
  /** Words of each topic's own vocabulary (default 200). */
  topicWords?: number;
}

export interface TokenCorpus {
  vectors: Float32Array;
  lengths: Int32Array;
  dim: number;
  /** Passage p's first token. */
  starts: Float64Array;
}

function unitRows(n: number, dim: number, gauss: () => number): Float32Array {
  const v = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let d = 0; d < dim; d++) s += (v[i * dim + d] = gauss()) ** 2;
    s = Math.sqrt(s);
    for (let d = 0; d < dim; d++) v[i * dim + d]! /= s;
  }
  return v;
}

export function tokenCorpus(o: TokenCorpusOptions): TokenCorpus {
  const { passages, dim } = o;
  const vocab = o.vocab ?? 2000;
  const topics = o.topics ?? 50;
  const [lo, hi] = o.length ?? [20, 59];
  const r = tokenRng(o.seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  const tw = o.topicWords ?? 200;
  const words = unitRows(vocab + topics * tw, dim, gauss);
  const tv = unitRows(topics, dim, gauss);
  const zipf = (n: number) => Math.min(n - 1, Math.floor(Math.exp(r() * Math.log(n + 1))) - 1);
  const lengths = Int32Array.from({ length: passages }, () => lo + Math.floor(r() * (hi - lo + 1)));
  const starts = new Float64Array(passages + 1);
  for (let p = 0; p < passages; p++) starts[p + 1] = starts[p]! + lengths[p]!;
  const vectors = new Float32Array(starts[passages]! * dim);
  const noise = 0.25 / Math.sqrt(dim);
  let t = 0;
  for (let p = 0; p < passages; p++) {
    const topic = Math.floor(r() * topics);
    for (let i = 0; i < lengths[p]!; i++, t++) {
      const w = r() < 0.5 ? zipf(vocab) : vocab + topic * tw + zipf(tw);
      let s = 0;
      for (let d = 0; d < dim; d++) {
        const v = words[w * dim + d]! + 0.15 * tv[topic * dim + d]! + noise * gauss();
        vectors[t * dim + d] = v;
        s += v * v;
      }
      s = Math.sqrt(s);
      for (let d = 0; d < dim; d++) vectors[t * dim + d]! /= s;
    }
  }
  return { vectors, lengths, dim, starts };
}

/** `lq` unit question tokens: noisy copies of tokens of passage `p` drawn at random. */
export function tokenQuestion(c: TokenCorpus, p: number, lq: number, seed: number): Float32Array {
  const r = tokenRng(seed);
  const { dim } = c;
  const q = new Float32Array(lq * dim);
  const noise = 0.9 / Math.sqrt(dim);
  for (let j = 0; j < lq; j++) {
    const t = c.starts[p]! + Math.floor(r() * c.lengths[p]!);
    let s = 0;
    for (let d = 0; d < dim; d++) {
      const v = c.vectors[t * dim + d]! + noise * (r() - 0.5);
      q[j * dim + d] = v;
      s += v * v;
    }
    s = Math.sqrt(s);
    for (let d = 0; d < dim; d++) q[j * dim + d]! /= s;
  }
  return q;
}
