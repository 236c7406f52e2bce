// A user's ColBERT checkpoint served without libtorch (docs/methods/colbert.md#checkpoints): the checkpoint read in
// either layout, its BERT and projection built as one ONNX graph in memory (tokenVectorsOnnx) and run by
// onnxruntime-node, questions and passages framed as the reference implementations frame them (checkpoint.ts).
import { fnv1a32 } from '../../data/files.js';
import { QuorumError } from '../../errors.js';
import { mapPretrained } from '../../models/hf.js';
import { tokenVectorsOnnx } from '../../models/onnx-export.js';
import { onnxRuntime, runTokenGraph, servingSessionOptions, type OrtSession } from '../../models/serving-encoder.js';
import { checkOptions, mustBeArray, optionKeys } from '../../validate.js';
import {
  colbertDocuments,
  colbertQueries,
  readColbertCheckpoint,
  type ColbertBatch,
  type ColbertCheckpoint,
  type ColbertSettings,
} from './checkpoint.js';
import type { TokenVectors } from './index.js';

/** Options of {@link ColbertEncoder.load}. */
export interface ColbertEncoderOptions {
  /** ONNX Runtime's intra-op threads (default: its own choice). */
  threads?: number;
}

const loadKeys = optionKeys<ColbertEncoderOptions>()(['threads']);

// Rows per session.run (as ServingEncoder's).
const CHUNK = 64;
const PROJECTION = 'colbert.linear';

/**
 * A ColBERT model's token vectors without libtorch: questions (every position of the [MASK]-expanded row) and
 * passages (every token but punctuation), unit rows, packed as the ColBERT index takes them.
 *
 * @example
 * const enc = await ColbertEncoder.load('models/colbertv2.0');
 * const index = await ColbertIndex.build(await enc.encodePassages(texts), { model: enc.model });
 * const hits = await index.search(await enc.encodeQueries(['who wrote hamlet']), 10, { model: enc.model });
 */
export class ColbertEncoder {
  private constructor(
    private readonly session: OrtSession,
    private readonly ckpt: ColbertCheckpoint,
    /** The token-vector graph (ModelProto bytes), what `quorum export` writes. */
    readonly graph: Uint8Array,
    /** Identifies the model (layout and a checksum of its projection): what a ColBERT index checks. */
    readonly model: string,
  ) {}

  /** Reads a checkpoint directory in either layout (see readColbertCheckpoint's errors) and starts its session. */
  static async load(dir: string, options: ColbertEncoderOptions = {}): Promise<ColbertEncoder> {
    checkOptions(options, loadKeys, 'ColbertEncoder.load options');
    const ckpt = readColbertCheckpoint(dir);
    const graph = colbertGraph(ckpt);
    const ort = onnxRuntime();
    let session: OrtSession;
    try {
      session = await ort.InferenceSession.create(graph, servingSessionOptions(options.threads));
    } catch (e) {
      throw new QuorumError('ERR_NATIVE', `ONNX Runtime refused the ColBERT graph of ${dir}: ${(e as Error).message.split('\n')[0]}`, {
        cause: e,
      });
    }
    const p = ckpt.projection;
    const sum = fnv1a32(new Uint8Array(p.buffer, p.byteOffset, p.byteLength))
      .toString(16)
      .padStart(8, '0');
    return new ColbertEncoder(session, ckpt, graph, `colbert:${ckpt.settings.layout}:${ckpt.settings.dim}:${sum}`);
  }

  /** How the checkpoint frames its texts. */
  get settings(): Readonly<ColbertSettings> {
    return this.ckpt.settings;
  }

  /** Width of the token vectors. */
  get dim(): number {
    return this.ckpt.settings.dim;
  }

  /** Questions' token vectors: `queryLength` a question with query expansion (the [MASK] positions included). */
  async encodeQueries(texts: readonly string[]): Promise<TokenVectors> {
    return this.#encode(texts, colbertQueries);
  }

  /** Passages' token vectors: every token of the framed row but punctuation (the checkpoint's skiplist). */
  async encodePassages(texts: readonly string[]): Promise<TokenVectors> {
    return this.#encode(texts, colbertDocuments);
  }

  /** Ends the ONNX Runtime session. */
  async release(): Promise<void> {
    await this.session.release();
  }

  async #encode(texts: readonly string[], frame: (c: ColbertCheckpoint, t: readonly string[]) => ColbertBatch): Promise<TokenVectors> {
    mustBeArray(texts, 'texts');
    if (!texts.length) throw new QuorumError('ERR_ARG', 'no texts to encode');
    texts.forEach((t, i) => {
      if (typeof t !== 'string') throw new QuorumError('ERR_ARG', `texts[${i}] must be a string`);
    });
    const dim = this.dim;
    const parts: Float32Array[] = [];
    const lengths = new Int32Array(texts.length);
    for (let s = 0; s < texts.length; s += CHUNK) {
      const b = frame(this.ckpt, texts.slice(s, s + CHUNK));
      const out = (await runTokenGraph(this.session, b, ['token_vectors'])).token_vectors!;
      for (let r = 0; r < b.rows; r++) {
        let n = 0;
        for (let t = 0; t < b.seqLen; t++) {
          if (!b.keep[r * b.seqLen + t]) continue;
          const at = (r * b.seqLen + t) * dim;
          parts.push(out.subarray(at, at + dim));
          n++;
        }
        lengths[s + r] = n;
      }
    }
    const vectors = new Float32Array(parts.length * dim);
    parts.forEach((v, i) => vectors.set(v, i * dim));
    return { vectors, lengths, dim };
  }
}

/** The checkpoint's token-vector graph: its BERT under Quorum's parameter names and the projection. */
function colbertGraph(ckpt: ColbertCheckpoint): Uint8Array {
  const mapped = mapPretrained(ckpt.bert, ckpt.bert.encoder, { strict: true });
  const params = {
    getParameter(name: string): Float32Array {
      if (name === `${PROJECTION}.weight`) return ckpt.projection;
      const v = mapped.tensors.get(name);
      if (!v) throw new QuorumError('ERR_FORMAT', `${ckpt.dir}: the weights have no ${name}`);
      return v;
    },
  };
  return tokenVectorsOnnx(params, ckpt.bert.encoder, {
    prefix: '',
    projection: PROJECTION,
    dim: ckpt.settings.dim,
    metadata: { producer: 'quorum', method: 'colbert', layout: ckpt.settings.layout },
  });
}
