// DPR-MUF's ensemble heads (docs/methods/kernels.md#ensemble-mutual-information-and-confidence,
// docs/methods/muf.md#ensemble-training): the typed front of the native MlpEnsemble. K small MLPs over one
// expert's frozen question vectors, trained each on its own sub-batches with the DPR NLL against the expert's frozen
// passage vectors; at query time they score the expert's top-L passages, and their disagreement (ensembleMI) is
// the expert's confidence.

import { readFileBytes, writeFileAtomic } from '../../data/files.js';
import { QuorumError, awaitNative, callNative } from '../../errors.js';
import { writeSafetensors, type TensorToWrite } from '../../io/safetensors.js';
import { torchBindings, type NativeMlpEnsemble } from '../../bindings/torch_addon.js';
import { seededRandom, shuffle } from '../../random.js';
import { Tensor } from '../../tensor.js';
import { whilePinned, Operands } from '../../operand.js';
import { ParameterTable } from '../../models/parameter-table.js';
import { ProcessGroup, rankPart } from '../../models/process-group.js';
import { allFinite, checkRowNumbers, mustBeObject, mustBeString, parse, positiveInt, z } from '../../validate.js';
import { ENSEMBLE_FORMAT, ensembleConfig, readEnsembleFile, type EnsembleConfig, type EnsembleEpoch } from './format.js';

export { ENSEMBLE_DEFAULTS, type EnsembleConfig, type EnsembleEpoch } from './format.js';

/** What the heads train on: one expert's frozen vectors. */
export interface EnsembleTrainData {
  /** The expert's question vectors `[n, dim]` (train questions of its task). */
  questions: Float32Array;
  /** The expert's passage vectors `[N, dim]` (its corpus encoding). */
  passages: Float32Array;
  /** Per question, the passage row of its positive `[n]`. */
  positives: Int32Array;
  /** Per question, passage rows of hard negatives (e.g. BM25's); a question without one gets a random passage. */
  hardNegatives?: ReadonlyArray<readonly number[]>;
}

/** Options of {@link MlpEnsemble.train}. */
export interface EnsembleTrainOptions {
  /** Epochs over the questions (default 100, DPR-MUF's: it deliberately fits the training domain). */
  epochs?: number;
  /** Questions per step, split into K contiguous sub-batches, one per member (default 128, DPR-MUF's). */
  batchSize?: number;
  /** Adam's learning rate (default 1e-3; DPR-MUF's 2e-5 barely moves heads on a few thousand questions). */
  lr?: number;
  /** Gradient-norm clip (default 2, DPR's). */
  clip?: number;
  /** Hard negatives per question (default 1, DPR-MUF's). */
  hardNegatives?: number;
  /** Seeds the shuffling and the random negatives (the initialization follows `Retriever.seed`). */
  seed?: number;
  /** Called after every epoch with its figures. */
  onEpoch?: (e: EnsembleEpoch) => void;
  /**
   * Data-parallel training (docs/guides/distributed.md): every rank calls `train` with the same data and options;
   * each member's sub-batch is split across the ranks, its loss is the whole sub-batch's, gradients are summed, and
   * the heads start from rank 0's weights. `batchSize / members` must be at least the group's size.
   */
  group?: ProcessGroup;
}

const trainOptionsSchema = z
  .object({
    epochs: z.number().int().min(0).optional(),
    batchSize: positiveInt.optional(),
    lr: z.number().finite().nonnegative().optional(),
    clip: z.number().finite().nonnegative().optional(),
    hardNegatives: z.number().int().min(0).optional(),
    seed: z.number().int().nonnegative().optional(),
    onEpoch: z.function().optional(),
    group: z.custom<ProcessGroup>((v) => v instanceof ProcessGroup, 'must be a ProcessGroup').optional(),
  })
  .strict();

/** ERR_RANGE when `x` holds a NaN or an infinity. */
function checkFinite(x: Float32Array, what: string): void {
  if (!allFinite(x)) throw new QuorumError('ERR_RANGE', `${what} hold NaN or Infinity: vectors must be finite`);
}

/**
 * K independent MLP heads over one expert's question vectors (DPR-MUF). Train with {@link train}, then
 * {@link score} the expert's top-L passages: `z [B, K, L]`, the input of `ensembleMI`.
 *
 * @example
 * const heads = MlpEnsemble.create({ dim: expert.dim, members: 20 });
 * await heads.train({ questions, passages, positives, hardNegatives }, { epochs: 100 });
 * const z = await heads.score(queryVectors, passages, topIds, 100);   // Tensor [B, 20, 100]
 * const { confidence } = await ensembleMI(z, { temperature });
 */
export class MlpEnsemble extends ParameterTable {
  /** The full configuration (defaults filled in). */
  readonly config: Required<EnsembleConfig>;
  protected readonly native: NativeMlpEnsemble;

  private constructor(config: Required<EnsembleConfig>) {
    super();
    this.config = config;
    const addon = torchBindings();
    this.native = callNative(() => new addon.MlpEnsemble(config));
  }

  /**
   * New heads with random weights (defaults: 20 members, 2 hidden layers of 512). ERR_ARG for a bad configuration.
   */
  static create(config: EnsembleConfig): MlpEnsemble {
    return new MlpEnsemble(ensembleConfig(config));
  }

  /** K, the number of heads. */
  get members(): number {
    return this.config.members;
  }

  /**
   * Trains every member off the main thread: each step shuffles `batchSize` questions into K contiguous
   * sub-batches, member k sees only sub-batch k (its positives, hard negatives and the sub-batch's other passages).
   */
  async train(data: EnsembleTrainData, options: EnsembleTrainOptions = {}): Promise<{ epochs: EnsembleEpoch[]; seconds: number }> {
    mustBeObject(data, 'ensemble training data');
    parse(trainOptionsSchema, options, 'ensemble training options');
    const { dim, members: K } = this.config;
    const { questions, passages, positives } = data;
    if (!(questions instanceof Float32Array) || !(passages instanceof Float32Array))
      throw new QuorumError('ERR_DTYPE', 'questions and passages must be Float32Arrays');
    if (!(positives instanceof Int32Array)) throw new QuorumError('ERR_DTYPE', 'positives must be an Int32Array');
    const n = questions.length / dim;
    const nPassages = passages.length / dim;
    if (!Number.isInteger(n) || n < 1 || !Number.isInteger(nPassages) || nPassages < 1)
      throw new QuorumError('ERR_SHAPE', `questions and passages must be [rows, ${dim}] with rows >= 1`);
    if (positives.length !== n) throw new QuorumError('ERR_SHAPE', `${positives.length} positives for ${n} questions`);
    if (data.hardNegatives !== undefined && (!Array.isArray(data.hardNegatives) || data.hardNegatives.length !== n))
      throw new QuorumError('ERR_SHAPE', `hardNegatives needs one list per question (${n})`);
    // A NaN or infinite vector makes every loss NaN without an error; a row number that is a fraction, a string or
    // out of range would be read as another row (issue 65). Checked here, once, before any step.
    checkFinite(questions, 'questions');
    checkFinite(passages, 'passages');
    checkRowNumbers(positives, nPassages, 'positives');
    data.hardNegatives?.forEach((list, i) => checkRowNumbers(list, nPassages, `hardNegatives[${i}]`));
    // Every step reads the vectors off the main thread: copies, which no transfer of the caller's buffers can free.
    const questionRows = questions.slice();
    const passageRows = passages.slice();
    const batchSize = options.batchSize ?? 128;
    const perMember = Math.floor(Math.min(batchSize, n) / K);
    if (perMember < 1)
      throw new QuorumError('ERR_RANGE', `${K} members need at least ${K} questions per step (batchSize ${batchSize}, ${n} questions)`);
    const ranks = options.group;
    const size = ranks?.size ?? 1;
    if (perMember < size)
      throw new QuorumError(
        'ERR_RANGE',
        `${perMember} questions per member and step cannot be split across ${size} ranks: raise batchSize to at least ${K * size}`,
      );
    if (ranks) await awaitNative(callNative(() => this.native.broadcastParameters(ranks.native, 0, true)) as Promise<object>);
    // Each rank's part of every member's sub-batch (every rank builds the whole step alike, then takes its rows).
    const part = rankPart(
      Array.from({ length: perMember }, (_, i) => i),
      ranks?.rank ?? 0,
      size,
    );
    const h = options.hardNegatives ?? 1;
    const group = 1 + h;
    const myQ = new Int32Array(K * part.length);
    const myP = new Int32Array(K * part.length * group);
    const rand = seededRandom(options.seed ?? 0);
    const order = Int32Array.from({ length: n }, (_, i) => i);
    const qRows = new Int32Array(K * perMember);
    const pRows = new Int32Array(K * perMember * group);
    const epochs: EnsembleEpoch[] = [];
    const t0 = performance.now();
    for (let epoch = 0; epoch < (options.epochs ?? 100); epoch++) {
      shuffle(order, rand);
      const memberLoss = new Float64Array(K);
      let loss = 0;
      let correct = 0;
      let seen = 0;
      let steps = 0;
      // Whole steps only: the last partial batch would give its members fewer in-batch negatives.
      for (let start = 0; start + K * perMember <= n; start += K * perMember) {
        for (let r = 0; r < K * perMember; r++) {
          const q = order[start + r]!;
          qRows[r] = q;
          pRows[r * group] = positives[q]!;
          const negs = data.hardNegatives?.[q] ?? [];
          for (let j = 0; j < h; j++) pRows[r * group + 1 + j] = negs[j] ?? Math.floor(rand() * nPassages);
        }
        const s = await awaitNative(
          callNative(() => {
            if (!ranks)
              return this.native.step(questionRows, passageRows, qRows, pRows, group, options.lr ?? 1e-3, options.clip ?? 2, true);
            for (let k = 0; k < K; k++)
              part.forEach((i, j) => {
                const r = k * perMember + i,
                  m = k * part.length + j;
                myQ[m] = qRows[r]!;
                myP.set(pRows.subarray(r * group, (r + 1) * group), m * group);
              });
            return this.native.step(questionRows, passageRows, myQ, myP, group, options.lr ?? 1e-3, options.clip ?? 2, true, ranks.native);
          }) as Promise<{
            loss: number;
            memberLoss: Float64Array;
            correct: number;
            questions: number;
          }>,
        );
        loss += s.loss;
        for (let k = 0; k < K; k++) memberLoss[k] = (memberLoss[k] as number) + (s.memberLoss[k] as number);
        correct += s.correct;
        seen += s.questions;
        steps++;
      }
      const e: EnsembleEpoch = {
        epoch,
        loss: loss / Math.max(steps, 1),
        memberLoss: Array.from(memberLoss, (v) => v / Math.max(steps, 1)),
        accuracy: correct / Math.max(seen, 1),
      };
      epochs.push(e);
      options.onEpoch?.(e);
    }
    return { epochs, seconds: (performance.now() - t0) / 1000 };
  }

  private scoreCall(
    ops: Operands,
    queries: Float32Array | Tensor<'f32'>,
    corpus: Float32Array | Tensor<'f32'>,
    idArray: Int32Array,
    L: number,
  ) {
    const { dim, members: K } = this.config;
    const floats = (x: Float32Array | Tensor<'f32'>) =>
      x instanceof Tensor && x.dtype === 'f32' ? (x.data as Float32Array) : x instanceof Float32Array ? ops.plain(x) : undefined;
    const q = floats(queries);
    const passages = floats(corpus);
    if (!q || !passages) throw new QuorumError('ERR_DTYPE', 'queries and passages must be Float32Arrays or f32 Tensors');
    if (!(idArray instanceof Int32Array)) throw new QuorumError('ERR_DTYPE', 'ids must be an Int32Array');
    const ids = ops.plain(idArray);
    // A Tensor is read in place and pinned while the call runs (a dispose() meanwhile waits); a plain array is copied.
    const pinned = [queries, corpus].filter((x): x is Tensor<'f32'> => x instanceof Tensor);
    const B = q.length / dim;
    if (!Number.isInteger(B)) throw new QuorumError('ERR_SHAPE', `queries must be [rows, ${dim}]`);
    if (!Number.isInteger(L) || L < 1) throw new QuorumError('ERR_RANGE', `L must be a positive integer, got ${L}`);
    if (ids.length !== B * L) throw new QuorumError('ERR_SHAPE', `ids must be [${B}, ${L}] (${B * L} rows), got ${ids.length}`);
    checkFinite(q, 'queries');
    const out = new Float32Array(B * K * L);
    return { out, shape: [B, K, L], pinned, call: (async: boolean) => this.native.score(q, passages, ids, L, out, async) };
  }

  /**
   * Every member's score of each query's L candidates, off the main thread: `z[b, k, l] = f_k(q_b) . passages[ids[b, l]]`,
   * an f32 Tensor `[B, K, L]`. `q` is `[B, dim]`, `passages` `[N, dim]`, `ids` `[B, L]` rows of `passages`. Tensors
   * are read in place; plain Float32Arrays are copied first, since the work runs off the main thread.
   */
  async score(q: Float32Array | Tensor<'f32'>, passages: Float32Array | Tensor<'f32'>, ids: Int32Array, L: number): Promise<Tensor<'f32'>> {
    const c = this.scoreCall(Operands.copied, q, passages, ids, L);
    await whilePinned(c.pinned, () => awaitNative(callNative(() => c.call(true)) as Promise<Float32Array>));
    return Tensor.wrap(c.out, c.shape);
  }

  /** {@link score} on the calling thread. */
  scoreSync(q: Float32Array | Tensor<'f32'>, passages: Float32Array | Tensor<'f32'>, ids: Int32Array, L: number): Tensor<'f32'> {
    const c = this.scoreCall(Operands.borrowed, q, passages, ids, L);
    callNative(() => c.call(false));
    return Tensor.wrap(c.out, c.shape);
  }

  /** Every member's vector for each query: `[B, K, dim]` row-major (for tests and analysis). */
  membersSync(q: Float32Array): Float32Array {
    return callNative(() => this.native.members(q, false) as Float32Array);
  }

  /** The heads as safetensors bytes (configuration in the metadata). */
  toBytes(): Uint8Array {
    const tensors = new Map<string, TensorToWrite>();
    for (const { name, shape } of this.parameters()) tensors.set(name, { shape, data: this.getParameter(name), dtype: 'F32' });
    return writeSafetensors(tensors, { format: ENSEMBLE_FORMAT, config: JSON.stringify(this.config) });
  }

  /** Writes {@link toBytes} atomically. */
  save(path: string): void {
    mustBeString(path, 'path');
    writeFileAtomic(path, this.toBytes());
  }

  /** Heads from {@link toBytes}' output: ERR_FORMAT for another format, a bad configuration or missing tensors. */
  static fromBytes(bytes: Uint8Array, where = 'ensemble'): MlpEnsemble {
    const { config, tensors } = readEnsembleFile(bytes, where);
    let heads: MlpEnsemble;
    try {
      heads = MlpEnsemble.create(config);
    } catch (e) {
      throw new QuorumError('ERR_FORMAT', `${where}: bad configuration: ${(e as Error).message}`, { cause: e });
    }
    for (const { name, shape } of heads.parameters()) {
      const t = tensors.get(name);
      if (!t || t.dtype !== 'F32' || t.shape.join(',') !== shape.join(','))
        throw new QuorumError('ERR_FORMAT', `${where}: tensor ${name} is missing or has another shape`);
      heads.setParameter(name, t.data);
    }
    return heads;
  }

  /** Reads heads written by {@link MlpEnsemble.save}. ERR_IO if unreadable, ERR_FORMAT if not a valid file. */
  static load(path: string): MlpEnsemble {
    mustBeString(path, 'path');
    return MlpEnsemble.fromBytes(readFileBytes(path), path);
  }
}
