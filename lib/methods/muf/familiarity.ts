// Familiarity: does a question look like the ones an expert was trained for? (docs/methods/muf.md#does-the-confidence-know-the-domain)
// In the expert's own space, the mean cosine of the question's k nearest training questions of the expert's task
// minus the same over the other tasks' training questions (k-nearest neighbours on the core's scoreTopK), turned into
// P(the question is of the expert's task) by a Platt scaling fitted on dev. On the full benchmark's dev split this
// separates own-task questions with AUROC 0.79-0.995 where DPR-MUF's MI confidence scores 0.19-0.39, and weighting
// the fusion by it comes within 0.002 MRR@10 of the oracle indicator (docs/results/muf.md#familiarity).
import { readFileBytes, writeFileAtomic } from '../../data/files.js';
import { scoreTopK } from '../../dense.js';
import { QuorumError } from '../../errors.js';
import { floatTensor, readSafetensors, writeSafetensors } from '../../io/safetensors.js';
import { seededRandom, shuffle } from '../../random.js';
import type { NativeFamiliarityPart } from '../../bindings/muf_bindings.js';
import { QuantizedTensor, quantizeSync } from '../../quantized.js';
import { Tensor } from '../../tensor.js';
import { plattProbability, type PlattScaling } from '../../uncertainty.js';

/** Nearest training questions averaged per side (chosen on the full benchmark's dev split: 10 and 30 tie, 1 is worse). */
export const FAMILIARITY_K = 30;
/** Training questions kept per side: a seeded sample when a task has more. */
const FAMILIARITY_BANK = 4000;

/** An expert's familiarity calibration, fitted on dev (muf.json, beside the temperature). */
export interface FamiliarityCalibration {
  /** Neighbours averaged per side. */
  k: number;
  /** P(own task) = sigmoid(bias + weights[0] * margin). */
  platt: PlattScaling;
  /** On the calibration split: AUROC of the margin as a test of own-task membership. */
  auroc: number;
  /** On the calibration split: ECE of P(own task) against own-task membership. */
  ece: number;
  /** Calibration questions of the expert's task, and of the others. */
  own: number;
  /** Calibration questions of the other tasks. */
  other: number;
}

/** How a bank's tables are held. */
export type BankDtype = 'f32' | 'bf16' | 'int8';
type BankTable = Tensor<'f32' | 'bf16'> | QuantizedTensor;

function rowsOf(t: BankTable): number {
  return t instanceof QuantizedTensor ? t.rows : t.shape[0]!;
}

/** Unit rows (a copy). */
function unitRows(v: Float32Array, dim: number): Float32Array {
  const out = new Float32Array(v.length);
  for (let r = 0; r < v.length / dim; r++) {
    let s = 0;
    for (let j = 0; j < dim; j++) s += v[r * dim + j]! ** 2;
    const inv = 1 / Math.max(Math.sqrt(s), 1e-12);
    for (let j = 0; j < dim; j++) out[r * dim + j] = v[r * dim + j]! * inv;
  }
  return out;
}

/** At most `cap` of the texts: all of them, or a sample seeded by `seed` (the same on every run). */
export function sampleTexts(texts: readonly string[], cap = FAMILIARITY_BANK, seed = 45): string[] {
  return texts.length <= cap ? [...texts] : shuffle([...texts], seededRandom(seed)).slice(0, cap);
}

/**
 * One expert's training questions in its own space, its task's and the other tasks', as unit rows: the question's
 * familiarity margin against them, on the core's scoreTopK. Saved as `familiarity.safetensors` in the expert's folder.
 *
 * @example
 * const bank = FamiliarityBank.fromVectors(ownVectors, otherVectors, 100);
 * const margin = await bank.margin(questionVectors);   // Float32Array, one per question
 */
export class FamiliarityBank {
  private constructor(
    private readonly own: BankTable,
    private readonly other: BankTable,
    /** The vectors' width. */
    readonly dim: number,
  ) {}

  /** From row-major question vectors of the expert's task and of the others (normalized here). ERR_ARG when a side is empty. */
  static fromVectors(own: Float32Array, other: Float32Array, dim: number): FamiliarityBank {
    if (!Number.isInteger(dim) || dim < 1) throw new QuorumError('ERR_RANGE', `dim must be a positive integer, got ${dim}`);
    for (const [name, v] of [
      ['own', own],
      ['other', other],
    ] as const) {
      if (!(v instanceof Float32Array)) throw new QuorumError('ERR_ARG', `${name} vectors must be a Float32Array`);
      if (v.length === 0 || v.length % dim !== 0)
        throw new QuorumError('ERR_SHAPE', `${name} vectors must be a non-empty [n, ${dim}] array, got ${v.length} values`);
    }
    return new FamiliarityBank(
      Tensor.from(unitRows(own, dim), [own.length / dim, dim]),
      Tensor.from(unitRows(other, dim), [other.length / dim, dim]),
      dim,
    );
  }

  /**
   * The same bank with its tables held as `dtype` (a new bank; this one stays as it is), from an f32 or bf16 bank:
   * 'bf16' halves the bytes a question's k-NN reads, 'int8' quarters them (docs/methods/quantization.md); both move the
   * margins by rounding (docs/results/serving.md#dpr-muf, docs/results/quantization.md#dpr-muf-with-int8-passages).
   * ERR_UNSUPPORTED from an int8 bank (its f32 values are gone).
   */
  to(dtype: BankDtype): FamiliarityBank {
    if (!['f32', 'bf16', 'int8'].includes(dtype as string))
      throw new QuorumError('ERR_ARG', `a familiarity bank is held as 'f32', 'bf16' or 'int8', got '${String(dtype)}'`);
    const own = this.own,
      other = this.other;
    if (own instanceof QuantizedTensor || other instanceof QuantizedTensor)
      throw new QuorumError('ERR_UNSUPPORTED', 'an int8 familiarity bank cannot be converted: load the f32 bank again');
    const as = (t: Tensor<'f32' | 'bf16'>) => (dtype === 'int8' ? quantizeSync(t, 'int8') : t.to(dtype));
    return new FamiliarityBank(as(own), as(other), this.dim);
  }

  /** How the tables are held. */
  get dtype(): BankDtype {
    return this.own instanceof QuantizedTensor ? 'int8' : this.own.dtype;
  }

  /** Training questions held: [own task, other tasks]. */
  get sizes(): [number, number] {
    return [rowsOf(this.own), rowsOf(this.other)];
  }

  /**
   * Per question: the mean cosine of its `k` nearest own-task training questions minus that of its `k` nearest
   * other-task ones (`questions` row-major [B, dim]).
   */
  async margin(questions: Float32Array, k = FAMILIARITY_K): Promise<Float32Array> {
    if (!(questions instanceof Float32Array) || questions.length === 0 || questions.length % this.dim !== 0)
      throw new QuorumError('ERR_SHAPE', `questions must be a non-empty [B, ${this.dim}] Float32Array`);
    if (!Number.isInteger(k) || k < 1) throw new QuorumError('ERR_RANGE', `k must be a positive integer, got ${k}`);
    const B = questions.length / this.dim;
    const q = Tensor.from(unitRows(questions, this.dim), [B, this.dim]);
    try {
      const meanTop = async (bank: BankTable) => {
        const top = await scoreTopK(q, bank, Math.min(k, rowsOf(bank)));
        return Float64Array.from({ length: B }, (_, b) => {
          let s = 0;
          for (let j = 0; j < top.k; j++) s += top.scores[b * top.k + j]!;
          return s / top.k;
        });
      };
      const a = await meanTop(this.own);
      const o = await meanTop(this.other);
      return Float32Array.from(a, (v, b) => v - o[b]!);
    } finally {
      q.dispose();
    }
  }

  /** P(own task) per question under a fitted calibration. */
  async probability(questions: Float32Array, c: FamiliarityCalibration): Promise<Float32Array> {
    const m = await this.margin(questions, c.k);
    return Float32Array.from(m, (v) => plattProbability(c.platt, [v]));
  }

  /**
   * @internal The stage's view of the bank under a calibration (lib/methods/muf/stage.ts, native/kernels/muf_search.h
   * computes {@link probability} from it). One feature: the margin.
   */
  stagePart(c: FamiliarityCalibration): NativeFamiliarityPart {
    if (c.platt.weights.length !== 1)
      throw new QuorumError('ERR_SHAPE', `familiarity's Platt scaling takes one feature, got ${c.platt.weights.length}`);
    const native = (t: BankTable) => (t instanceof QuantizedTensor ? t.operand() : t.handle);
    return { own: native(this.own), other: native(this.other), k: c.k, bias: c.platt.bias, weight: c.platt.weights[0]! };
  }

  /** Writes the two tables to `path` (safetensors). */
  save(path: string): void {
    if (this.dtype !== 'f32') throw new QuorumError('ERR_UNSUPPORTED', 'save a familiarity bank held as f32 (the file holds f32 tables)');
    writeFileAtomic(
      path,
      writeSafetensors(
        {
          own: { shape: [...(this.own as Tensor).shape], data: (this.own as Tensor).data as Float32Array },
          other: { shape: [...(this.other as Tensor).shape], data: (this.other as Tensor).data as Float32Array },
        },
        { format: 'quorum-muf-familiarity' },
      ),
    );
  }

  /** {@link save}'s file for a `dim`-wide expert; ERR_IO when missing, ERR_FORMAT when damaged or of another width. */
  static load(path: string, dim: number): FamiliarityBank {
    const t = readSafetensors(readFileBytes(path));
    const own = floatTensor(t.get('own'), path, 'own');
    const other = floatTensor(t.get('other'), path, 'other');
    for (const [name, v] of [
      ['own', own],
      ['other', other],
    ] as const)
      if (!v || v.shape.length !== 2 || v.shape[1] !== dim || v.shape[0]! < 1)
        throw new QuorumError('ERR_FORMAT', `${path}: '${name}' must be [n >= 1, ${dim}] question vectors`);
    return new FamiliarityBank(Tensor.from(own!.data, [own!.shape[0]!, dim]), Tensor.from(other!.data, [other!.shape[0]!, dim]), dim);
  }

  /** Frees the native tables. */
  dispose(): void {
    this.own.dispose();
    this.other.dispose();
  }
}
