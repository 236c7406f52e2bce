// DPR-MUF search without libtorch (docs/methods/muf.md#serving, docs/guides/bring-your-own-model.md#serving-without-libtorch):
// a saved MUF directory's experts encode questions through ServingEncoder (0-layer experts in the process, others in
// ONNX Runtime), then one native call (mufSearch, native/kernels/muf_search.h) scans every expert's corpus for its
// top-L and, with familiarity, its training questions for the k nearest (all in one parallel region), computes each
// expert's confidence (P(own task), or its K heads' mutual information, native/kernels/muf_heads.h) and fuses the
// experts' lists (muf_fuse.h). The same hits and confidences as MufRetriever.search. mufConfidence, the heads and
// fusion alone over given candidates, stays exported for callers with their own retrieval.
import { taskIfKnown } from '../../models/model-dir.js';
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { readFileBytes } from '../../data/files.js';
import { AsyncLifetime } from '../../native-resource.js';
import { QuorumError, awaitNative, callNative } from '../../errors.js';
import { ServingEncoder } from '../../models/serving-encoder.js';
import { type NativeTensorHandle } from '../../native.js';
import { mufBindings } from '../../bindings/muf_bindings.js';
import type { Int32Input } from '../../operand.js';
import { filterRows } from '../../search-request.js';
import { QuantizedTensor, quantize } from '../../quantized.js';
import { Tensor } from '../../tensor.js';
import { checkOptions, mustBeArray, mustBeObject, mustBeString, optionKeys } from '../../validate.js';
import { FamiliarityBank, type FamiliarityCalibration } from './familiarity.js';
import { corpusTieRank, mufSearch, stageHeads, stageHits, stageMode } from './stage.js';
import {
  MUF_SERVER_FUSIONS,
  applyAbstention,
  checkMufRequest,
  readExpertPassages,
  readFamiliarity,
  readMufDir,
  type MufFusion,
  type MufHits,
} from './format.js';

/** One expert's part of {@link mufConfidence}. */
export interface MufConfidenceExpert {
  /** The expert's question vectors `[B, dim]` (f32). */
  queries: Tensor<'f32'>;
  /** Its passage vectors `[N, dim]` (f32, bf16 or f16). */
  passages: Tensor;
  /** Each question's candidates: rows of `passages`, `[B, L]` (i32). */
  candidates: Tensor<'i32'>;
  /**
   * The K heads, layer by layer, member-major with each weight matrix transposed (a row per output unit, so that a
   * question streams each row once): `[Wt_0, b_0, ..., Wt_n, b_n]` with `Wt_i [K, out, in]` (the heads file's
   * `W_i [K, in, out]` transposed) and `b_i [K, out]`, from `dim` back to `dim`; ReLU between layers. Weights f32
   * or bf16 (half the bytes to stream; bf16 always takes the streaming path), biases f32.
   */
  weights: ReadonlyArray<Tensor<'f32' | 'bf16'>>;
  /** K (1: confidence 1, since one member cannot disagree with itself). */
  members: number;
  /** The expert's calibrated temperature (divides the scores). */
  temperature: number;
  /** The expert's own scores of its candidates, `[B, L]` (f32, finite: ERR_RANGE otherwise): what {@link MufConfidenceFuse fuse} weighs. */
  scores?: Tensor<'f32'>;
}

/** {@link mufConfidence}'s fusion of the experts' lists, in the same call (docs/methods/fusion.md#muf-fusion). */
export interface MufConfidenceFuse {
  /** Fused passages per question. */
  k: number;
  /**
   * Each corpus row's rank among equal fused scores, `[N]` (i32): the fusion registry orders ties by corpus id, so
   * a server passes the rows' ranks in that order (default: the lower row first; rows of equal rank: the lower row).
   */
  tieRank?: Tensor<'i32'>;
  /** Every expert weight 1 (DPR-MUF's uniform baseline): the heads do not run, confidences are 1 and MI NaN. */
  uniform?: boolean;
  /**
   * The experts' weights per question, `[E, B]` (f32, finite, >= 0), e.g. familiarity's P(own task): the heads do not
   * run, the confidences are these weights and MI NaN. Not with `uniform`.
   */
  weights?: Tensor<'f32'>;
}

/** What {@link mufConfidence} returns: `[E, B]` tensors, and with `fuse` the fused `[B, k]` rows and scores. */
export interface MufConfidenceResult {
  /** Each expert's mutual information per question. */
  mi: Tensor<'f32'>;
  /** Each expert's confidence per question. */
  confidence: Tensor<'f32'>;
  /** With `fuse`: each question's fused corpus rows, best first, padded with -1 when the lists hold fewer than k. */
  ids?: Tensor<'i32'>;
  /** With `fuse`: their fused scores (-Infinity where padded). */
  scores?: Tensor<'f32'>;
}

const fuseKeys = optionKeys<MufConfidenceFuse>()(['k', 'tieRank', 'uniform', 'weights']);

/**
 * DPR-MUF's confidence stage for every expert in one native call (docs/methods/muf.md#serving): each expert's K
 * heads map its question vector to K member vectors (every expert's and member's part of a layer in one parallel region),
 * the members score the question's candidates, and `confidence = clamp(1 - MI / ln K, 0, 1)` of those scores
 * (exact mode of `ensembleMI`); with `fuse`, the experts' lists fused by those confidences in the same call (every
 * expert's `scores` needed). Runs off the main thread. Returns tensors the caller disposes.
 *
 * @example
 * const { confidence } = await mufConfidence([{ queries, passages, candidates, weights, members: 20, temperature: 0.05 }]);
 * const r = await mufConfidence(experts, { fuse: { k: 10 } });   // r.ids [B, 10] corpus rows, r.scores
 */
export async function mufConfidence(
  experts: readonly MufConfidenceExpert[],
  options: { fuse?: MufConfidenceFuse } = {},
): Promise<MufConfidenceResult> {
  mustBeArray(experts, 'experts');
  if (experts.length === 0) throw new QuorumError('ERR_ARG', 'give at least one expert');
  mustBeObject(options, 'mufConfidence options');
  checkOptions(options, confidenceKeys, 'mufConfidence options');
  const fuse = options.fuse;
  if (fuse !== undefined) {
    mustBeObject(fuse, 'fuse');
    checkOptions(fuse, fuseKeys, 'fuse');
    if (fuse.tieRank !== undefined && !(fuse.tieRank instanceof Tensor))
      throw new QuorumError('ERR_ARG', 'fuse.tieRank must be an i32 Tensor');
    if (fuse.weights !== undefined && !(fuse.weights instanceof Tensor))
      throw new QuorumError('ERR_ARG', 'fuse.weights must be an f32 Tensor');
  }
  const args = experts.map((e, x) => {
    mustBeObject(e, `experts[${x}]`);
    for (const k of ['queries', 'passages', 'candidates'] as const)
      if (!(e[k] instanceof Tensor)) throw new QuorumError('ERR_ARG', `experts[${x}].${k} must be a Tensor`);
    if (fuse !== undefined && !(e.scores instanceof Tensor))
      throw new QuorumError('ERR_ARG', `experts[${x}].scores must be a Tensor to fuse`);
    mustBeArray(e.weights, `experts[${x}].weights`);
    e.weights.forEach((w, i) => {
      if (!(w instanceof Tensor)) throw new QuorumError('ERR_ARG', `experts[${x}].weights[${i}] must be a Tensor`);
    });
    return {
      queries: e.queries.handle,
      passages: e.passages.handle,
      ids: e.candidates.handle,
      weights: e.weights.map((w) => w.handle),
      members: e.members,
      temperature: e.temperature,
      ...(e.scores ? { scores: e.scores.handle } : {}),
    };
  });
  const f = fuse && {
    k: fuse.k,
    uniform: fuse.uniform === true,
    ...(fuse.tieRank ? { tieRank: fuse.tieRank.handle } : {}),
    ...(fuse.weights ? { weights: fuse.weights.handle } : {}),
  };
  type Raw = { mi: NativeTensorHandle; confidence: NativeTensorHandle; ids?: NativeTensorHandle; scores?: NativeTensorHandle };
  const r = await awaitNative(callNative(() => mufBindings().mufConfidence(args, false, true, f) as Promise<Raw>));
  const out: MufConfidenceResult = { mi: new Tensor<'f32'>(r.mi), confidence: new Tensor<'f32'>(r.confidence) };
  if (r.ids) out.ids = new Tensor<'i32'>(r.ids);
  if (r.scores) out.scores = new Tensor<'f32'>(r.scores);
  return out;
}

const confidenceKeys = optionKeys<{ fuse?: MufConfidenceFuse }>()(['fuse']);

interface ServedExpert {
  name: string;
  task: string;
  encoder: ServingEncoder;
  /** The corpus vectors: f32, bf16, int8 or binary codes (the `passages` option). */
  passages: Tensor<'f32' | 'bf16'> | QuantizedTensor;
  /** Binary passages: the f32 vectors, mapped from a file that was unlinked once mapped (the page cache holds them). */
  full?: Tensor;
  /** The heads' layers, [Wt_0, b_0, ..., Wt_n, b_n] (mufConfidence's layout: weights transposed). */
  weights: Array<Tensor<'f32' | 'bf16'>>;
  members: number;
  temperature?: number;
  /** The familiarity bank and its calibration, when the directory has both. */
  familiarity?: { bank: FamiliarityBank; calibration: FamiliarityCalibration };
}

/**
 * `vectors` in a file mapped (Tensor.map) and unlinked at once: the mapping keeps the pages, the page cache holds them
 * as it holds any file (evictable, shared), and nothing is left on disk when the process ends.
 */
async function mappedCopy(vectors: Tensor): Promise<Tensor> {
  const path = join(tmpdir(), `quorum-passages-${process.pid}-${randomBytes(6).toString('hex')}.qtns`);
  try {
    await vectors.save(path);
    return await Tensor.map(path);
  } finally {
    rmSync(path, { force: true });
  }
}

/** Options of {@link MufServer.search}. */
export interface MufServerSearchOptions {
  /** 'muf' (default: P(own task) from familiarity where calibrated, else MI), 'muf-mi' or 'uniform' (MufRetriever's). */
  fusion?: 'muf' | 'muf-mi' | 'uniform';
  /** No hits and `abstained: true` for a question whom no expert's confidence reaches this (in [0, 1]). */
  abstain?: number;
  /**
   * A filter inside the search: only these corpus rows (strictly ascending, as compileFilter gives them) are
   * retrieved by every expert, so the fused hits are among them (docs/methods/kernels.md#filtered-search).
   */
  rows?: Int32Input;
}

/** Options of {@link MufServer.load}. */
export interface MufServerOptions {
  /** ONNX Runtime's intra-op threads for Transformer experts. */
  threads?: number;
  /**
   * How the heads' weights are held: 'f32' (default: MufRetriever's numbers) or 'bf16' (half the memory and half the
   * bytes each question streams; confidences move by rounding, docs/results/serving.md#dpr-muf).
   */
  heads?: 'f32' | 'bf16';
  /**
   * How each expert's corpus vectors are held: 'f32' (default), 'bf16' (half the memory, and half the bytes each
   * question's scan reads), 'int8' (a quarter: docs/methods/quantization.md) or 'binary' (3.4 % in RAM: 1-bit codes
   * scanned for 4 x topL candidates, rescored exactly with the f32 vectors mapped from a temporary file, unlinked once
   * mapped, so the page cache holds them); scores move by rounding (docs/results/serving.md#dpr-muf,
   * docs/results/quantization.md).
   */
  passages?: 'f32' | 'bf16' | 'int8' | 'binary';
  /**
   * How each expert's familiarity bank (its training questions, what P(own task) is computed from) is held: 'f32'
   * (default), 'bf16' (half the bytes each question's k-NN reads) or 'int8' (a quarter, searched with int8 questions);
   * P(own task) moves by rounding (docs/results/serving.md#dpr-muf, docs/results/quantization.md#dpr-muf-with-int8-passages).
   */
  familiarity?: 'f32' | 'bf16' | 'int8';
}

const loadKeys = optionKeys<MufServerOptions>()(['threads', 'heads', 'passages', 'familiarity']);
/** The forms each of MufServerOptions' held parts can take. */
const heldAs = {
  heads: ['f32', 'bf16'],
  passages: ['f32', 'bf16', 'int8', 'binary'],
  familiarity: ['f32', 'bf16', 'int8'],
} as const satisfies { [K in 'heads' | 'passages' | 'familiarity']: ReadonlyArray<NonNullable<MufServerOptions[K]>> };
const searchKeys = optionKeys<MufServerSearchOptions>()(['fusion', 'abstain', 'rows']);

/**
 * A saved MUF directory served without libtorch: the prebuilt core is all it needs, and onnxruntime-node (an optional
 * peer dependency) for experts with Transformer layers.
 *
 * @example
 * const muf = await MufServer.load('muf/');
 * const [r] = await muf.search(['what is the incubation period of covid-19?'], 10);
 * r.hits;         // fused top-10
 * r.confidence;   // per expert
 */
export class MufServer {
  // Calls in flight hold the sessions; dispose waits for them, and later calls are ERR_DISPOSED (native-resource.ts).
  readonly #life = new AsyncLifetime('this MufServer', () => this.releaseAll());

  private constructor(
    private readonly experts: ServedExpert[],
    private readonly corpusIds: string[],
    /** Passages each expert retrieves and its heads score. */
    readonly topL: number,
    /** Each corpus row's rank in corpus-id order: the fusion's tie order. */
    private readonly tieRank: Tensor<'i32'>,
  ) {}

  /** The corpus id of a row (what `rows` filters and hits name). */
  corpusId(row: number): string {
    const id = this.corpusIds[row];
    if (id === undefined) throw new QuorumError('ERR_RANGE', `row ${row} is outside the corpus (${this.corpusIds.length} passages)`);
    return id;
  }

  /** Whether every expert has a calibrated familiarity bank (then 'muf' weighs by P(own task)). */
  get familiarityCalibrated(): boolean {
    return this.experts.every((e) => e.familiarity);
  }

  /** Expert names and tasks, in fusion order. */
  get names(): Array<{ name: string; task: string }> {
    return this.experts.map((e) => ({ name: e.name, task: e.task }));
  }

  /**
   * Loads the directory: per expert its model (ServingEncoder), corpus vectors and heads (checked: shapes, finite
   * values). ERR_IO / ERR_FORMAT for a missing or damaged file, ERR_STATE for an expert without trained heads,
   * ERR_BACKEND_UNAVAILABLE for a Transformer expert without onnxruntime-node.
   */
  static async load(dir: string, options: MufServerOptions = {}): Promise<MufServer> {
    mustBeString(dir, 'MUF directory');
    checkOptions(options, loadKeys, 'MufServer options');
    const { heads: headsDtype = 'f32', passages: passagesDtype = 'f32', familiarity: bankDtype = 'f32', ...encoderOptions } = options;
    for (const [name, v] of [
      ['heads', headsDtype],
      ['passages', passagesDtype],
      ['familiarity', bankDtype],
    ] as const) {
      const allowed: readonly string[] = heldAs[name];
      if (!allowed.includes(v as string))
        throw new QuorumError(
          'ERR_ARG',
          `${name} must be ${allowed
            .slice(0, -1)
            .map((a) => `'${a}'`)
            .join(', ')} or '${allowed.at(-1)}', got '${String(v)}'`,
        );
    }
    const { card, cardPath, ids, experts: folders } = readMufDir(dir);
    if (!Number.isInteger(card.topL) || card.topL < 2) throw new QuorumError('ERR_FORMAT', `${cardPath}: topL must be an integer >= 2`);
    const experts: ServedExpert[] = [];
    const release = async (x: Partial<ServedExpert>) => {
      x.passages?.dispose();
      x.full?.dispose();
      x.familiarity?.bank.dispose();
      for (const w of x.weights ?? []) w.dispose();
      await x.encoder?.dispose();
    };
    for (const { expert: x, base } of folders) {
      const part: Partial<ServedExpert> = {};
      try {
        part.encoder = await ServingEncoder.load(join(base, 'model'), encoderOptions);
        part.passages = readExpertPassages(base, ids.length, part.encoder.dim);
        if (passagesDtype !== 'f32') {
          const f32 = part.passages as Tensor<'f32'>;
          if (passagesDtype === 'binary') part.full = await mappedCopy(f32);
          part.passages = passagesDtype === 'bf16' ? f32.to('bf16') : await quantize(f32, passagesDtype);
          f32.dispose();
        }
        const headsPath = join(base, 'heads.safetensors');
        if (!existsSync(headsPath)) throw new QuorumError('ERR_STATE', `expert '${x.name}' has no trained heads (${headsPath})`);
        const heads = stageHeads(readFileBytes(headsPath), headsPath, part.encoder.dim, headsDtype);
        let bank = readFamiliarity(base, part.encoder.dim);
        if (bank && bankDtype !== 'f32') {
          const f32 = bank;
          bank = f32.to(bankDtype);
          f32.dispose();
        }
        if (bank) {
          if (x.calibration?.familiarity) part.familiarity = { bank, calibration: x.calibration.familiarity };
          else bank.dispose();
        }
        experts.push({
          name: x.name,
          task: x.task,
          encoder: part.encoder,
          passages: part.passages,
          ...(part.full ? { full: part.full } : {}),
          ...heads,
          ...(x.calibration ? { temperature: x.calibration.temperature } : {}),
          ...(part.familiarity ? { familiarity: part.familiarity } : {}),
        });
      } catch (e) {
        await release(part);
        for (const done of experts) await release(done);
        throw e;
      }
    }
    return new MufServer(experts, ids, card.topL, corpusTieRank(ids));
  }

  /**
   * Every expert's top-L, its heads' scores of them, its confidence (mutual information at its calibrated
   * temperature), fused by confidence ('muf') or uniformly: as MufRetriever.search.
   */
  search(queries: readonly string[], k: number, options: MufServerSearchOptions = {}): Promise<MufHits[]> {
    return this.#life.use(() => this.searchNow(queries, k, options));
  }

  private async searchNow(queries: readonly string[], k: number, options: MufServerSearchOptions = {}): Promise<MufHits[]> {
    checkOptions(options, searchKeys, 'MUF search options');
    mustBeArray(queries, 'queries');
    queries.forEach((q, i) => mustBeString(q, `queries[${i}]`));
    if (queries.length === 0) throw new QuorumError('ERR_ARG', 'give at least one query');
    const fusion = checkMufRequest(k, options.fusion ?? 'muf', options.abstain, MUF_SERVER_FUSIONS);
    if (fusion !== 'uniform') {
      const uncalibrated = this.experts.find((e) => e.temperature === undefined);
      if (uncalibrated) throw new QuorumError('ERR_STATE', `expert '${uncalibrated.name}' is not calibrated`);
    }
    const given = options.rows;
    // A list of rows follows the search-request contract (any order, repeats ignored); an i32 Tensor goes to the stage
    // as the kernels take it (ascending).
    let rows: Tensor<'i32'> | undefined;
    if (given instanceof Tensor) rows = given as Tensor<'i32'>;
    else if (given !== undefined) {
      const list = filterRows(given, this.corpusIds.length);
      rows = Tensor.from(list, [list.length]);
    }
    // A filter: at most its rows reach the lists (the MUF rule needs at least one candidate per expert).
    const L = Math.min(this.topL, rows ? Math.max(1, rows.shape[0]!) : this.corpusIds.length);
    if (rows && rows.shape[0] === 0) return queries.map(() => ({ hits: [], confidence: this.experts.map(() => 0) }));
    const owned: Tensor[] = [];
    if (rows && rows !== given) owned.push(rows);
    // 'muf' weighs by familiarity's P(own task) when every expert has it (then the heads need not run).
    const mode = stageMode(fusion as Exclude<MufFusion, 'oracle'>, this.familiarityCalibrated);
    try {
      // The encodings are independent: in flight together, so that one's native call runs while another's questions
      // are tokenized. All of them end before anything is freed (allSettled): a failure in one cannot free what
      // another still uses.
      // 0-layer encoders embed the questions inside the stage's own native call (one hop for the whole question).
      const toEmbed = this.experts.map((e) => e.encoder.queriesToEmbed(queries, { task: taskIfKnown(e.encoder.config.tasks, e.task) }));
      const settled = await Promise.allSettled(
        this.experts.map((e, x) => toEmbed[x] ?? e.encoder.encodeQueries(queries, { task: taskIfKnown(e.encoder.config.tasks, e.task) })),
      );
      const vectors = settled.map((r) => {
        if (r.status === 'rejected') throw r.reason;
        return r.value;
      });
      // The scans, the confidences and the fusion in one native call; ties in corpus-id order, as MufRetriever's
      // fusion orders them.
      const r = await mufSearch(
        this.experts.map((e, x) => ({
          queries: vectors[x]!,
          passages: e.passages,
          ...(e.full ? { rescore: { vectors: e.full, candidates: 4 * L } } : {}),
          ...(mode === 'familiarity' ? { familiarity: e.familiarity!.bank.stagePart(e.familiarity!.calibration) } : {}),
          ...(mode === 'heads' ? { heads: { weights: e.weights, members: e.members, temperature: e.temperature ?? 1 } } : {}),
        })),
        { mode, topL: L, k, tieRank: this.tieRank, ...(rows ? { rows } : {}) },
      );
      const out = stageHits(r, this.corpusIds, this.experts.length, k);
      return applyAbstention(out, options.abstain);
    } finally {
      for (const t of owned) t.dispose();
    }
  }

  /** Releases the encoders, the heads and the corpus vectors. */
  dispose(): Promise<void> {
    return this.#life.dispose();
  }

  private async releaseAll(): Promise<void> {
    this.tieRank.dispose();
    for (const e of this.experts) {
      e.familiarity?.bank.dispose();
      e.passages.dispose();
      e.full?.dispose();
      for (const w of e.weights) w.dispose();
      await e.encoder.dispose();
    }
  }
}
