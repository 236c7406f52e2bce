// DPR-MUF end to end (docs/methods/kernels.md#ensemble-mutual-information-and-confidence,
// docs/methods/kernels.md#ece-and-temperature-calibration, docs/methods/fusion.md#muf-fusion,
// docs/methods/muf.md#ensemble-training): one trained retriever per task (the experts), each with its own
// corpus encoding and an ensemble of K MLP heads; at query time every expert retrieves its top-L, its heads score
// those L passages, their mutual information gives the expert's confidence, and the experts' raw scores are fused
// with confidence weights. One directory holds it all: muf.json, corpus-ids.txt and, per expert, its model
// directory, its passage vectors and its heads.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { makeDirs, replaceDirectorySync, writeFileAtomic } from '../../data/files.js';
import { scoreTopK } from '../../dense.js';
import { QuorumError } from '../../errors.js';
import type { ScoredDoc } from '../../eval/ranking.js';
import { writeSafetensors } from '../../io/safetensors.js';
import { Tensor } from '../../tensor.js';
import type { PassageText, TrainingExample } from '../../data/examples.js';
import { modelDir, taskIfKnown } from '../../models/model-dir.js';
import { Retriever } from '../../models/retriever.js';
import { auroc, ece, ensembleMI, fitPlatt, plattProbability, searchTemperature, widenedTemperatureGrid } from '../../uncertainty.js';
import { checkOptions, checkPassageIds, mustBeArray, mustBeObject, mustBeString, optionKeys } from '../../validate.js';
import { MlpEnsemble } from './ensemble.js';
import { corpusTieRank, mufSearch, stageHeads, stageHits, stageMode, type MufStageResult, type StageHeads } from './stage.js';
import { FAMILIARITY_K, FamiliarityBank, type FamiliarityCalibration } from './familiarity.js';
import {
  ENSEMBLE_DEFAULTS,
  applyAbstention,
  checkMufRequest,
  readExpertPassages,
  readFamiliarity,
  mufFormat,
  readMufDir,
  writeMufCard,
  type EnsembleConfig,
  type ExpertCalibration,
  type ExpertTraining,
  type MufCard,
  type MufFusion,
  type MufHits,
} from './format.js';

interface ExpertState {
  name: string;
  /** The task this expert was trained for (its model's only task, or the name given). */
  task: string;
  model: Retriever;
  modelPath: string;
  /** Its corpus encoding [N, dim], in the corpus order. */
  passages: Tensor<'f32'>;
  heads?: MlpEnsemble;
  /** Its heads in the search stage's layout (stageHeads), made at the first search. */
  stageHeads?: StageHeads;
  /** Its task's and the other tasks' training questions in its space (familiarity.ts). */
  familiarity?: FamiliarityBank;
  training?: ExpertTraining;
  calibration?: ExpertCalibration;
}

/** One expert of {@link MufRetriever.build}. */
export interface MufExpertSpec {
  /** A model directory (`quorum train --tasks <task>`) or a loaded Retriever (from `Retriever.load`). */
  model: string | Retriever;
  /** Default: the model's single task, else the directory's base name. */
  name?: string;
  /** The task whose questions this expert is for (default: the model's single task, else `name`). */
  task?: string;
}

/** Options of {@link MufRetriever.build}. */
export interface MufOptions {
  /** The ensemble heads (default K = 20 members, 2 hidden layers of 512). */
  heads?: Omit<EnsembleConfig, 'dim'>;
  /** Passages each expert retrieves and its heads score (default 100). */
  topL?: number;
  /** The calibration target: a relevant passage among the expert's first `hitTopK` (default 1, DPR-MUF's README). */
  hitTopK?: number;
  /** Called with a line of progress per stage (encoding, training, calibration). */
  onProgress?: (message: string) => void;
}

/** A corpus passage: id, title and text. */
export type MufPassage = PassageText & { id: string };

/** Training questions of one or more tasks, as `examplesFromQrels` (+ `addBm25Negatives`) gives them. */
export type MufTrainData = readonly TrainingExample[];

/** A calibration (dev) split: questions with their task and the ids of their relevant passages. */
export interface MufJudgedQuery {
  /** The question id. */
  id: string;
  /** The question. */
  text: string;
  /** Its task, where known (calibration itself counts every question for every expert). */
  task?: string;
  /** Ids of its relevant passages. */
  relevant: ReadonlySet<string>;
}

/** Options of {@link MufRetriever.search}. */
export interface MufSearchOptions {
  /** 'muf' (default), 'muf-mi', 'uniform' or 'oracle': see {@link MufFusion}. */
  fusion?: MufFusion;
  /** Per query, its task: needed by 'oracle'. */
  tasks?: ReadonlyArray<string | undefined>;
  /**
   * Abstain below this confidence (in [0, 1]; 'muf' and 'muf-mi'): a question whom no expert's confidence reaches it
   * gets no hits and `abstained: true` (a server then answers from BM25, or not at all).
   */
  abstain?: number;
}

const mufKeys = optionKeys<MufOptions>()(['heads', 'topL', 'hitTopK', 'onProgress']);
const expertKeys = optionKeys<MufExpertSpec>()(['model', 'name', 'task']);
const searchKeys = optionKeys<MufSearchOptions>()(['fusion', 'tasks', 'abstain']);

const searchAllKeys = optionKeys<{ tasks?: unknown }>()(['tasks']);
const loadKeys = optionKeys<Pick<MufOptions, 'onProgress'>>()(['onProgress']);
const calibrateKeys = optionKeys<{ grid?: unknown }>()(['grid']);

/** {@link MufRetriever.searchAll}'s result: per query, each fusion's hits and each expert's own. */
export interface MufAllRuns {
  /** Confidence-weighted fusion ('muf': P(own task) where calibrated, else MI), per query. */
  muf: MufHits[];
  /** MI-weighted fusion (DPR-MUF as published), per query. */
  mufMi: MufHits[];
  /** Every expert weight 1, per query. */
  uniform: MufHits[];
  /** The query's own task's expert alone, per query (when tasks were given). */
  oracle?: MufHits[];
  /** experts[i][b]: expert i's own top-k for query b. */
  experts: ScoredDoc[][][];
  /** confidence[b][i]: expert i's MI confidence for query b (calibrated against its top-1 being right). */
  confidence: number[][];
  /** familiarity[b][i]: expert i's P(own task) for query b, when every expert has a familiarity calibration. */
  familiarity?: number[][];
}

/** Milliseconds per stage of one search call. */
export interface MufTimings {
  /** Encoding the questions with every expert. */
  encode: number;
  /** Each expert's top-L over the corpus. */
  retrieve: number;
  /** The ensemble heads scoring the top-L. */
  heads: number;
  /** Mutual information and confidence. */
  mi: number;
  /** Fusing the experts' lists. */
  fuse: number;
}

/**
 * DPR-MUF over trained experts: build from expert model directories and a corpus (trainMufHeads, in the training
 * layer, trains each expert's heads), calibrate each expert's temperature on a dev split, search with
 * uncertainty-weighted fusion, save / load.
 *
 * @example
 * const muf = await MufRetriever.build([{ model: 'models/covid' }, { model: 'models/selqa' }], corpus);
 * await trainMufHeads(muf, trainExamples);  // the training layer (methods/muf/train.ts): every task's questions
 * await muf.calibrate(devQueries);           // [{ id, text, task, relevant }]
 * const [first] = await muf.search(['what is covid-19?'], 10);
 * console.log(first.hits, first.confidence);
 * await muf.save('muf');
 */
export class MufRetriever {
  /** Every expert's embedding width (they must agree). */
  readonly dim: number;
  /** Passage ids, in corpus row order. */
  readonly corpusIds: readonly string[];
  /** Passages each expert retrieves and its heads score (L). */
  readonly topL: number;
  /** The calibration target: a relevant passage among an expert's first hitTopK. */
  readonly hitTopK: number;
  /** The heads' configuration, shared by every expert. */
  readonly headsConfig: Required<Omit<EnsembleConfig, 'dim'>>;
  private readonly state: ExpertState[];
  /** The `onProgress` of build / load: a line per stage (trainMufHeads writes its lines here too). */
  readonly log: (message: string) => void;
  /** Stage times of the last search call. */
  lastTimings?: MufTimings;
  /** The corpus rows' ranks in corpus-id order (the stage's tie order), made at the first search. */
  private tieRank?: Tensor<'i32'>;

  private constructor(state: ExpertState[], corpusIds: string[], o: MufOptions) {
    this.state = state;
    this.corpusIds = corpusIds;
    this.dim = state[0]!.model.dim;
    this.topL = o.topL ?? 100;
    this.hitTopK = o.hitTopK ?? 1;
    this.headsConfig = { ...ENSEMBLE_DEFAULTS, ...o.heads };
    this.log = o.onProgress ?? (() => {});
    if (!Number.isInteger(this.topL) || this.topL < 2) throw new QuorumError('ERR_RANGE', `topL must be an integer >= 2, got ${this.topL}`);
    if (!Number.isInteger(this.hitTopK) || this.hitTopK < 1)
      throw new QuorumError('ERR_RANGE', `hitTopK must be a positive integer, got ${this.hitTopK}`);
    // The calibration target looks at an expert's first hitTopK of its topL: more would read past the list.
    if (this.hitTopK > this.topL) throw new QuorumError('ERR_RANGE', `hitTopK (${this.hitTopK}) must be at most topL (${this.topL})`);
  }

  /** Expert names and tasks, in fusion order. */
  get experts(): Array<{ name: string; task: string; calibration?: ExpertCalibration }> {
    return this.state.map((e) => ({ name: e.name, task: e.task, ...(e.calibration ? { calibration: e.calibration } : {}) }));
  }

  /**
   * Expert `i`'s model, corpus vectors and trained heads (undefined before trainMufHeads), for exports and training:
   * the objects themselves, still owned by this retriever (dispose it, not them).
   */
  expertParts(i: number): {
    name: string;
    task: string;
    model: Retriever;
    passages: Tensor<'f32'>;
    heads?: MlpEnsemble;
    familiarity?: FamiliarityBank;
    calibration?: ExpertCalibration;
  } {
    const e = this.state[i];
    if (!Number.isInteger(i) || e === undefined) throw new QuorumError('ERR_RANGE', `expert ${i} is outside 0..${this.state.length - 1}`);
    return {
      name: e.name,
      task: e.task,
      model: e.model,
      passages: e.passages,
      ...(e.heads ? { heads: e.heads } : {}),
      ...(e.familiarity ? { familiarity: e.familiarity } : {}),
      ...(e.calibration ? { calibration: e.calibration } : {}),
    };
  }

  /**
   * Loads the experts and encodes the corpus with each. ERR_ARG without experts or with two of one name; ERR_SHAPE
   * for experts of different widths.
   */
  static async build(experts: readonly MufExpertSpec[], corpus: readonly MufPassage[], options: MufOptions = {}): Promise<MufRetriever> {
    mustBeArray(experts, 'experts');
    mustBeArray(corpus, 'corpus');
    checkOptions(options, mufKeys, 'MUF options');
    experts.forEach((spec, i) => checkOptions(spec, expertKeys, `experts[${i}]`));
    if (experts.length === 0) throw new QuorumError('ERR_ARG', 'MUF needs at least one expert');
    if (corpus.length === 0) throw new QuorumError('ERR_ARG', 'the corpus is empty');
    checkPassageIds(corpus);
    const log = options.onProgress ?? (() => {});
    const state: ExpertState[] = [];
    try {
      for (const spec of experts) await MufRetriever.addExpert(state, spec, corpus, log);
      return new MufRetriever(
        state,
        corpus.map((p) => p.id),
        options,
      );
    } catch (e) {
      // The experts encoded so far hold native memory: free it now rather than at garbage collection.
      for (const x of state) x.passages.dispose();
      throw e;
    }
  }

  /** Loads one expert, checks it against those before, and encodes the corpus with it. */
  private static async addExpert(
    state: ExpertState[],
    spec: MufExpertSpec,
    corpus: readonly MufPassage[],
    log: (message: string) => void,
  ): Promise<void> {
    mustBeObject(spec, 'expert');
    const model = typeof spec.model === 'string' ? await Retriever.load(spec.model) : spec.model;
    if (!(model instanceof Retriever) || !model.loaded)
      throw new QuorumError('ERR_ARG', 'an expert model must be a model directory or a Retriever from Retriever.load');
    const path = typeof spec.model === 'string' ? modelDir(spec.model) : '';
    const tasks = model.config.tasks;
    const name = spec.name ?? (tasks.length === 1 ? tasks[0]! : (path.split('/').filter(Boolean).pop() ?? `expert${state.length}`));
    // The name becomes a directory of the saved MUF directory.
    if (!/^[\w.-]+$/.test(name) || name === '.' || name === '..')
      throw new QuorumError('ERR_ARG', `expert name '${name}' must be letters, digits, '.', '_' or '-'`);
    if (state.some((e) => e.name === name)) throw new QuorumError('ERR_ARG', `two experts are named '${name}' (give each a name)`);
    if (state.length && model.dim !== state[0]!.model.dim)
      throw new QuorumError(
        'ERR_SHAPE',
        `expert '${name}' embeds in ${model.dim} dimensions, '${state[0]!.name}' in ${state[0]!.model.dim}: MUF fuses raw scores of one width`,
      );
    log(`${name}: encoding ${corpus.length.toLocaleString()} passages`);
    const passages = await model.encodePassages(corpus);
    state.push({ name, task: spec.task ?? (tasks.length === 1 ? tasks[0]! : name), model, modelPath: path, passages });
  }

  /**
   * Installs expert `i`'s trained heads, their training record and (when given) its familiarity bank: what
   * trainMufHeads (lib/methods/muf/train.ts, the training layer) produces. The retriever owns them from then on and
   * frees the heads and bank they replace.
   */
  setTrainedHeads(i: number, parts: { heads: MlpEnsemble; training: ExpertTraining; familiarity?: FamiliarityBank }): void {
    const e = this.state[i];
    if (!Number.isInteger(i) || e === undefined) throw new QuorumError('ERR_RANGE', `expert ${i} is outside 0..${this.state.length - 1}`);
    if (!(parts.heads instanceof MlpEnsemble) || parts.heads.config.dim !== this.dim)
      throw new QuorumError('ERR_ARG', `expert '${e.name}' needs MlpEnsemble heads of width ${this.dim}`);
    if (e.heads !== parts.heads) e.heads?.dispose();
    e.heads = parts.heads;
    for (const w of e.stageHeads?.weights ?? []) w.dispose();
    delete e.stageHeads;
    e.training = parts.training;
    if (parts.familiarity) {
      if (e.familiarity !== parts.familiarity) e.familiarity?.dispose();
      e.familiarity = parts.familiarity;
    }
  }

  private requireHeads(): void {
    const missing = this.state.find((e) => !e.heads);
    if (missing) throw new QuorumError('ERR_STATE', `expert '${missing.name}' has no trained heads (call train first)`);
  }

  /** Each expert's top-L for the queries and its heads' scores of them: what confidence and fusion read. */
  private async expertPass(texts: readonly string[], e: ExpertState, t: MufTimings) {
    let t0 = performance.now();
    const q = await e.model.encodeQueries(texts, { task: taskIfKnown(e.model.config.tasks, e.task) });
    t.encode += performance.now() - t0;
    try {
      t0 = performance.now();
      const L = Math.min(this.topL, this.corpusIds.length);
      const top = await scoreTopK(q, e.passages, L);
      t.retrieve += performance.now() - t0;
      t0 = performance.now();
      const z = await e.heads!.score(q, e.passages, top.ids, L);
      t.heads += performance.now() - t0;
      return { top, z, vectors: q.data.slice() };
    } finally {
      q.dispose();
    }
  }

  /** The expert's confidence per query from its heads' scores `z [B, K, L]` at `temperature`. */
  private async confidence(e: ExpertState, z: Tensor<'f32'>, temperature: number): Promise<Float32Array> {
    const B = z.shape[0] ?? 0;
    // One member cannot disagree with itself: MI is 0 and the confidence 1 (the kernel needs K >= 2).
    if (e.heads!.members === 1) return new Float32Array(B).fill(1);
    const r = await ensembleMI(z, { temperature });
    const c = r.confidence.data.slice();
    r.mi.dispose();
    r.confidence.dispose();
    return c;
  }

  /**
   * Picks each expert's temperature by ECE on a calibration split (never the evaluation set): per question, the
   * outcome is whether the expert's first `hitTopK` passages hold a relevant one. Every question counts for every
   * expert: a good confidence is low for the questions an expert gets wrong, whatever their task.
   */
  async calibrate(dev: readonly MufJudgedQuery[], options: { grid?: readonly number[] } = {}): Promise<ExpertCalibration[]> {
    mustBeArray(dev, 'calibration queries');
    checkOptions(options, calibrateKeys, 'calibrate options');
    if (dev.length === 0) throw new QuorumError('ERR_ARG', 'the calibration split is empty');
    dev.forEach((q, i) => {
      mustBeObject(q, `calibration queries[${i}]`);
      if (typeof q.text !== 'string') throw new QuorumError('ERR_ARG', `calibration queries[${i}].text must be a string`);
      if (!(q.relevant instanceof Set))
        throw new QuorumError(
          'ERR_ARG',
          `calibration queries[${i}].relevant must be a Set of passage ids, got ${Array.isArray(q.relevant) ? 'an array' : typeof q.relevant}`,
        );
    });
    this.requireHeads();
    const grid = options.grid ?? widenedTemperatureGrid;
    const t: MufTimings = { encode: 0, retrieve: 0, heads: 0, mi: 0, fuse: 0 };
    const out: ExpertCalibration[] = [];
    for (const e of this.state) {
      const { top, z, vectors } = await this.expertPass(
        dev.map((q) => q.text),
        e,
        t,
      );
      const hit = dev.map((q, b) => {
        // A corpus smaller than hitTopK gives shorter lists: never read into the next question's row.
        for (let j = 0; j < Math.min(this.hitTopK, top.k); j++) if (q.relevant.has(this.corpusIds[top.ids[b * top.k + j]!] ?? '')) return 1;
        return 0;
      });
      const confidenceAt = (temperature: number) => this.confidence(e, z, temperature);
      const { temperature, ece: eceAfter, tried } = await searchTemperature(grid, confidenceAt, hit);
      e.calibration = {
        temperature,
        eceBefore: tried.find((x) => x.temperature === 1e-3)?.ece ?? ece(await confidenceAt(1e-3), hit),
        eceAfter,
        questions: dev.length,
        hitRate: hit.reduce((a: number, v) => a + v, 0) / dev.length,
        tried,
      };
      this.log(`${e.name}: temperature ${temperature} (ECE ${e.calibration.eceBefore.toFixed(3)} at 1e-3 -> ${eceAfter.toFixed(3)})`);
      const familiarity = await this.calibrateFamiliarity(e, dev, vectors);
      if (familiarity) {
        e.calibration.familiarity = familiarity;
        this.log(
          `${e.name}: familiarity AUROC ${familiarity.auroc.toFixed(3)} on ${familiarity.own} own / ${familiarity.other} other questions, ECE of P(own) ${familiarity.ece.toFixed(3)}`,
        );
      }
      out.push(e.calibration);
    }
    return out;
  }

  /**
   * The Platt scaling of P(own task) from the familiarity margin on the calibration split: undefined without a bank,
   * or when the split lacks questions of the expert's task or of others.
   */
  private async calibrateFamiliarity(
    e: ExpertState,
    dev: readonly MufJudgedQuery[],
    vectors: Float32Array,
  ): Promise<FamiliarityCalibration | undefined> {
    if (!e.familiarity) return undefined;
    const keep = dev.map((q, b) => (q.task === undefined ? -1 : b)).filter((b) => b >= 0);
    const label = keep.map((b) => (dev[b]!.task === e.task ? 1 : 0));
    const own = label.filter(Boolean).length;
    if (own === 0 || own === keep.length) {
      this.log(`${e.name}: no familiarity calibration (the split needs questions of task '${e.task}' and of others)`);
      return undefined;
    }
    const all = await e.familiarity.margin(vectors, FAMILIARITY_K);
    const margin = keep.map((b) => all[b]!);
    const platt = fitPlatt(
      margin.map((v) => [v]),
      label,
    );
    const p = margin.map((v) => plattProbability(platt, [v]));
    return { k: FAMILIARITY_K, platt, auroc: auroc(margin, label), ece: ece(p, label), own, other: keep.length - own };
  }

  /** Whether every expert has a familiarity bank and its calibration (then 'muf' weighs by P(own task)). */
  get familiarityCalibrated(): boolean {
    return this.state.every((e) => e.familiarity && e.calibration?.familiarity);
  }

  /** The request checked (checkMufRequest), and 'oracle' given each query's task. */
  private checkSearch(k: number, fusion: unknown, abstain: unknown, n: number, tasks?: ReadonlyArray<string | undefined>): MufFusion {
    const f = checkMufRequest(k, fusion, abstain);
    if (f === 'oracle' && (!tasks || tasks.length !== n))
      throw new QuorumError('ERR_ARG', "'oracle' fusion needs each query's task (options.tasks, one per query)");
    return f;
  }

  /** The queries checked, the heads (and for confidences, the calibration) required, each expert's encoding of them. */
  private async encodeAll(queries: readonly string[], needsCalibration: boolean, t: MufTimings): Promise<Array<Tensor<'f32'>>> {
    mustBeArray(queries, 'queries');
    queries.forEach((q, i) => mustBeString(q, `queries[${i}]`));
    if (queries.length === 0) throw new QuorumError('ERR_ARG', 'give at least one query');
    this.requireHeads();
    if (needsCalibration) {
      const uncalibrated = this.state.find((e) => !e.calibration);
      if (uncalibrated)
        throw new QuorumError('ERR_STATE', `expert '${uncalibrated.name}' is not calibrated (call calibrate on a dev split first)`);
    }
    const t0 = performance.now();
    const out: Array<Tensor<'f32'>> = [];
    try {
      for (const e of this.state) out.push(await e.model.encodeQueries(queries, { task: taskIfKnown(e.model.config.tasks, e.task) }));
    } catch (err) {
      for (const v of out) v.dispose();
      throw err;
    }
    t.encode += performance.now() - t0;
    return out;
  }

  /**
   * One call of DPR-MUF's native search stage (lib/methods/muf/stage.ts, MufServer's engine too) over the experts
   * `xs` (default all) with the questions' libtorch vectors: the experts' top-L, their confidences by `mode`, the
   * fusion. `rows` picks questions (default all).
   */
  private async stageCall(
    vectors: ReadonlyArray<Tensor<'f32'>>,
    mode: 'uniform' | 'familiarity' | 'heads',
    k: number,
    t: MufTimings,
    xs: readonly number[] = this.state.map((_, x) => x),
    rows?: readonly number[],
  ): Promise<{ hits: MufHits[]; raw: MufStageResult }> {
    // Some of the questions: their rows of each expert's vectors, copied (the stage copies a Float32Array anyway).
    const pick = (q: Tensor<'f32'>, picked: readonly number[]) => {
      const D = q.shape[1]!;
      const out = new Float32Array(picked.length * D);
      picked.forEach((b, i) => out.set(q.data.subarray(b * D, (b + 1) * D), i * D));
      return out;
    };
    const raw = await mufSearch(
      xs.map((x) => {
        const e = this.state[x]!;
        return {
          queries: rows ? pick(vectors[x]!, rows) : vectors[x]!,
          passages: e.passages,
          ...(mode === 'familiarity' ? { familiarity: e.familiarity!.stagePart(e.calibration!.familiarity!) } : {}),
          ...(mode === 'heads' ? { heads: { ...this.stageHeadsOf(e), temperature: e.calibration?.temperature ?? 1 } } : {}),
        };
      }),
      { mode, topL: Math.min(this.topL, this.corpusIds.length), k, tieRank: this.tieRankTensor() },
    );
    t.retrieve += raw.ms.scan;
    t.heads += raw.ms.confidence;
    t.fuse += raw.ms.fuse;
    return { hits: stageHits(raw, this.corpusIds, xs.length, k), raw };
  }

  /**
   * DPR-MUF's oracle: each question's own task's experts alone, fused with equal weights (one expert: its own list),
   * or every expert with equal weights where no expert has the question's task. Its confidences are those weights
   * (1 for the task's experts, 0 for the others). One stage call per group of questions with the same experts.
   */
  private async oracle(
    vectors: ReadonlyArray<Tensor<'f32'>>,
    tasks: ReadonlyArray<string | undefined>,
    k: number,
    t: MufTimings,
  ): Promise<MufHits[]> {
    const groups = new Map<string, number[]>();
    tasks.forEach((task, b) => {
      const own = this.state.flatMap((e, x) => (e.task === task ? [x] : []));
      const key = own.join(',');
      (groups.get(key) ?? groups.set(key, []).get(key)!).push(b);
    });
    const out: MufHits[] = new Array(tasks.length);
    for (const [key, rows] of groups) {
      const own = key === '' ? [] : key.split(',').map(Number);
      const xs = own.length ? own : this.state.map((_, x) => x);
      const { hits } = await this.stageCall(vectors, 'uniform', k, t, xs, rows.length === tasks.length ? undefined : rows);
      const confidence = this.state.map((_, x) => (own.length === 0 || own.includes(x) ? 1 : 0));
      rows.forEach((b, i) => (out[b] = { hits: hits[i]!.hits, confidence }));
    }
    return out;
  }

  /** Each expert's heads in the stage's layout, made once from its trained heads (stageHeads, as MufServer reads them). */
  private stageHeadsOf(e: ExpertState): StageHeads {
    e.stageHeads ??= stageHeads(e.heads!.toBytes(), `expert '${e.name}' heads`, this.dim, 'f32');
    return e.stageHeads;
  }

  /** The corpus rows' tie ranks in corpus-id order, made once. */
  private tieRankTensor(): Tensor<'i32'> {
    this.tieRank ??= corpusTieRank(this.corpusIds);
    return this.tieRank;
  }

  /**
   * Searches every expert and fuses their raw scores (docs/methods/fusion.md#muf-fusion: a passage missing from an
   * expert's list takes that list's minimum), weighted by each expert's confidence per query ('muf': P(own task) from
   * familiarity where calibrated, else MI; 'muf-mi': MI) or uniformly ('uniform'), or by 1 for the experts of the
   * query's own task and 0 for the others ('oracle', the indicator baseline, needing `tasks`). One native call does
   * it all, MufServer's (lib/methods/muf/stage.ts), fed this retriever's libtorch vectors. With `abstain`, a question
   * whom no expert's confidence reaches the threshold gets no hits and `abstained: true`. Stage times of the call are
   * in {@link lastTimings}.
   */
  async search(queries: readonly string[], k: number, options: MufSearchOptions = {}): Promise<MufHits[]> {
    checkOptions(options, searchKeys, 'MUF search options');
    const fusion = this.checkSearch(
      k,
      options.fusion ?? 'muf',
      options.abstain,
      Array.isArray(queries) ? queries.length : 0,
      options.tasks,
    );
    const t: MufTimings = { encode: 0, retrieve: 0, heads: 0, mi: 0, fuse: 0 };
    const vectors = await this.encodeAll(queries, fusion === 'muf' || fusion === 'muf-mi', t);
    try {
      const out =
        fusion === 'oracle'
          ? await this.oracle(vectors, options.tasks!, k, t)
          : (await this.stageCall(vectors, stageMode(fusion, this.familiarityCalibrated), k, t)).hits;
      this.lastTimings = t;
      return applyAbstention(out, options.abstain);
    } finally {
      for (const v of vectors) v.dispose();
    }
  }

  /**
   * One encoding of the queries giving every fusion and each single expert's list (for evaluation): `muf`, `mufMi`,
   * `uniform`, `oracle` (when `tasks` is given), `experts[i]` per expert (its own scoreTopK), each expert's MI
   * confidence per query and, where calibrated, its P(own task). Each fusion is one call of the native stage.
   */
  async searchAll(queries: readonly string[], k: number, options: { tasks?: ReadonlyArray<string | undefined> } = {}): Promise<MufAllRuns> {
    checkOptions(options, searchAllKeys, 'MUF searchAll options');
    this.checkSearch(k, options.tasks ? 'oracle' : 'muf', undefined, Array.isArray(queries) ? queries.length : 0, options.tasks);
    const t: MufTimings = { encode: 0, retrieve: 0, heads: 0, mi: 0, fuse: 0 };
    const vectors = await this.encodeAll(queries, true, t);
    try {
      const mi = await this.stageCall(vectors, 'heads', k, t);
      const mufMi = mi.hits;
      const familiar = this.familiarityCalibrated;
      const muf = familiar ? (await this.stageCall(vectors, 'familiarity', k, t)).hits : mufMi;
      const experts: ScoredDoc[][][] = [];
      const t0 = performance.now();
      for (const [x, e] of this.state.entries()) {
        const top = await scoreTopK(vectors[x]!, e.passages, Math.min(k, this.corpusIds.length));
        experts.push(queries.map((_, b) => top.hits(b).map((h) => ({ id: this.corpusIds[h.id]!, score: h.score }))));
      }
      t.retrieve += performance.now() - t0;
      const out: MufAllRuns = {
        muf,
        mufMi,
        uniform: (await this.stageCall(vectors, 'uniform', k, t)).hits,
        experts,
        // The experts' own MI confidences (stageHits turns a question's all-zero weights into 1s; these stay as computed).
        confidence: queries.map((_, b) => this.state.map((_e, x) => mi.raw.confidence[x * queries.length + b]!)),
        ...(familiar ? { familiarity: muf.map((h) => h.confidence) } : {}),
      };
      if (options.tasks) out.oracle = await this.oracle(vectors, options.tasks, k, t);
      this.lastTimings = t;
      return out;
    } finally {
      for (const v of vectors) v.dispose();
    }
  }

  /**
   * Writes everything to one directory (created if needed), swapped in whole (a crash leaves the old directory or the
   * new one): muf.json, corpus-ids.txt, experts/<name>/{model, vectors, heads}.
   */
  save(dir: string): void {
    mustBeString(dir, 'MUF directory');
    replaceDirectorySync(dir, (tmp) => this.writeFiles(tmp), { keepOthers: true, kind: mufFormat });
  }

  private writeFiles(dir: string): void {
    makeDirs(join(dir, 'experts'));
    writeFileAtomic(join(dir, 'corpus-ids.txt'), Buffer.from(this.corpusIds.join('\n') + '\n'));
    for (const e of this.state) {
      const base = join(dir, 'experts', e.name);
      const { card, tokenizer } = e.model.loaded!;
      e.model.saveModel(join(base, 'model'), {
        tokenizer,
        dtype: card.weights.dtype,
        ...card.text,
        ...(card.training ? { training: card.training } : {}),
      });
      writeFileAtomic(
        join(base, 'passages.safetensors'),
        writeSafetensors({ passages: { shape: [...e.passages.shape], data: e.passages.data } }),
      );
      if (e.heads) e.heads.save(join(base, 'heads.safetensors'));
      if (e.familiarity) e.familiarity.save(join(base, 'familiarity.safetensors'));
    }
    const card: Omit<MufCard, 'format' | 'version'> = {
      dim: this.dim,
      topL: this.topL,
      hitTopK: this.hitTopK,
      heads: this.headsConfig,
      experts: this.state.map((e) => ({
        name: e.name,
        task: e.task,
        ...(e.training ? { training: e.training } : {}),
        ...(e.calibration ? { calibration: e.calibration } : {}),
      })),
    };
    writeMufCard(dir, card);
  }

  /** Loads {@link save}'s directory. ERR_IO for a missing file, ERR_FORMAT for another version or a damaged file. */
  static async load(dir: string, options: Pick<MufOptions, 'onProgress'> = {}): Promise<MufRetriever> {
    mustBeString(dir, 'MUF directory');
    checkOptions(options, loadKeys, 'MUF load options');
    const { card, cardPath, ids, experts } = readMufDir(dir);
    const state: ExpertState[] = [];
    for (const { expert: x, base } of experts) {
      const model = await Retriever.load(join(base, 'model'));
      const p = readExpertPassages(base, ids.length, model.dim);
      const headsPath = join(base, 'heads.safetensors');
      const heads = existsSync(headsPath) ? MlpEnsemble.load(headsPath) : undefined;
      if (heads && heads.config.dim !== model.dim)
        throw new QuorumError('ERR_FORMAT', `${headsPath}: heads of width ${heads.config.dim} for a ${model.dim}-d expert`);
      const familiarity = readFamiliarity(base, model.dim);
      state.push({
        name: x.name,
        task: x.task,
        model,
        modelPath: join(base, 'model'),
        passages: p,
        ...(heads ? { heads } : {}),
        ...(familiarity ? { familiarity } : {}),
        ...(x.training ? { training: x.training } : {}),
        ...(x.calibration ? { calibration: x.calibration } : {}),
      });
    }
    const muf = new MufRetriever(state, ids, { topL: card.topL, hitTopK: card.hitTopK, heads: card.heads, ...options });
    if (muf.dim !== card.dim) throw new QuorumError('ERR_FORMAT', `${cardPath}: dim ${card.dim}, experts ${muf.dim}`);
    return muf;
  }

  /** Frees the experts' passage vectors, their models and their heads; any later search is ERR_DISPOSED. */
  dispose(): void {
    for (const e of this.state) {
      e.passages.dispose();
      e.model.dispose();
      e.heads?.dispose();
      e.familiarity?.dispose();
      for (const w of e.stageHeads?.weights ?? []) w.dispose();
    }
    this.tieRank?.dispose();
  }
}
