// CAME's training schedule (Cai et al.; docs/methods/came.md#references, docs/methods/came.md#competitive-learning), on
// the shared contrastive loop (lib/train/trainer.ts):
//   1. BM25 negatives: the standardized stage (sum of the experts' losses) for the first `standardizedShare` of the
//      steps, then the specialized stage (competitive weights) for the rest;
//   2. hard negatives mined from the union of the three experts' top results (minus the gold), then more
//      specialized training; the model keeps this stage's best checkpoint or the first stage's, the better by dev
//      MRR.
// mode 'standardized' keeps the standardized loss throughout (the paper's "w/o competitive" row); an independent
// retriever (one model per expert) trains each model alone on the same schedule, mining from its own results.
import { join } from 'node:path';
import { tmpdir } from 'node:os';

import { QuorumError } from '../../errors.js';
import type { ProcessGroup } from '../../models/process-group.js';
import { type StepStats } from '../../bindings/torch_addon.js';
import type { TrainingExample, PassageText } from '../../train/examples.js';
import { trainRetriever, type EpochStats, type TrainOptions } from '../../train/trainer.js';
import { rankAgainstPool, type ValidationInput } from '../../train/validate.js';
import { checkOptions, mustBeArray, mustBeObject, optionKeys } from '../../validate.js';
import { TokenTable } from '../../models/token-table.js';
import { encodeCame } from './encode.js';
import { initFromGlove } from '../../train/init.js';
import type { GloveVectors } from '../../models/glove.js';
import { mapPretrained, type PretrainedBert } from '../../models/hf.js';
import { CAME_PASSAGE_TERMS, CAME_QUERY_TERMS, type CameExpertName } from './format.js';
import { CameModel, type CameStepStats } from './model.js';
import { CameRetriever } from './retriever.js';
import { expertScores } from './scores.js';
import { fitLinearFusion, type LinearFusion } from './fusion.js';

/** Options of {@link trainCame}: the two stages, negatives, loss and schedule. */
export interface CameTrainOptions {
  /** 'competitive' (default): standardized, then specialized; 'standardized': the sum of losses throughout. */
  mode?: 'competitive' | 'standardized';
  /** Epochs on BM25 negatives (default 3). */
  epochs?: number;
  /** Share of those steps in the standardized stage (default 0.2; the paper found 13-27% fine). */
  standardizedShare?: number;
  /** Epochs on mined hard negatives (default 1; 0 skips mining). */
  hardNegativeEpochs?: number;
  /** Top results per expert that hard negatives are drawn from (default 30; the paper 100-200). */
  mineDepth?: number;
  /** Negatives per positive (default 7, the paper's). */
  negatives?: number;
  /** Questions per batch (default 16). */
  batchSize?: number;
  /** Peak learning rate, linear warmup (10%) and decay per stage (default 1e-3: small models from GloVe). */
  lr?: number;
  /** The competition's temperature (default 0.5, the paper's MS MARCO value). */
  tau?: number;
  /** FLOPS weight of both sides (default 0.01, the paper's) and its ramp in steps (default a third of stage 1). */
  flops?: number;
  /** Steps over which the FLOPS weight ramps up quadratically (default a third of stage 1). */
  flopsRamp?: number;
  /** Score temperatures per expert (default 1, 1, and 0.05 for a normalized global expert). */
  temperatures?: Partial<Record<CameExpertName, number>>;
  /** Gradient-norm clip (default 2). */
  clip?: number;
  /** Seed of the batch order and the negative draws (default 12345). */
  seed?: number;
  /** Checkpoints of each stage go under it (default a temporary directory). */
  checkpointDir?: string;
  /** Stop a stage after the first epoch past this many seconds. */
  timeBudgetSeconds?: number;
  /** Show a progress bar per epoch (on a terminal). */
  progress?: boolean;
  /** Receives a line per epoch and stage. */
  log?: (line: string) => void;
  /**
   * Data-parallel training (docs/guides/distributed.md): every rank calls trainCame with the same retriever, data and
   * options; each batch is split across the ranks and scored whole. Needs `checkpointDir` on a file system every rank
   * reads (each stage's kept checkpoint is loaded on every rank).
   */
  group?: ProcessGroup;
}

const trainKeys = optionKeys<CameTrainOptions>()([
  'mode',
  'epochs',
  'standardizedShare',
  'hardNegativeEpochs',
  'mineDepth',
  'negatives',
  'batchSize',
  'lr',
  'tau',
  'flops',
  'flopsRamp',
  'temperatures',
  'clip',
  'seed',
  'checkpointDir',
  'timeBudgetSeconds',
  'progress',
  'log',
  'group',
]);
const fitKeys = optionKeys<{ expertK?: number }>()(['expertK']);
const initKeys = optionKeys<{ glove?: unknown; pretrained?: unknown; seed?: number; lexicalTerms?: number }>()([
  'glove',
  'pretrained',
  'seed',
  'lexicalTerms',
]);

/** Per stage and model: the loop's epochs plus each expert's mean loss and weight per epoch. */
export interface CameStageRecord {
  /** Which negatives the stage trained on. */
  stage: 'bm25' | 'hard-negatives';
  /** The experts of the model this record is for. */
  experts: CameExpertName[];
  /** The loop's figures per epoch, with each expert's mean loss, weight and accuracy. */
  epochs: Array<EpochStats & { experts: Partial<Record<CameExpertName, { loss: number; weight: number; accuracy: number }>> }>;
  /** The stage's best epoch by dev MRR (`value` is -MRR), when there was a dev split. */
  best?: { epoch: number; value: number };
  /** The hard-negative stage: which stage's best checkpoint the model kept (the better by dev MRR). */
  kept?: 'bm25' | 'hard-negatives';
  /** Training time of the stage. */
  seconds: number;
  /** Training throughput of the stage. */
  tokensPerSecond: number;
}

/** What {@link trainCame} returns (and came.json keeps as `training`). */
export interface CameTrainRecord {
  /** The training mode (see {@link CameTrainOptions.mode}). */
  mode: 'competitive' | 'standardized';
  /** Whether each expert was its own model. */
  independent: boolean;
  /** Every stage of every model, in training order. */
  stages: CameStageRecord[];
  /** Training time of all stages. */
  seconds: number;
  /** The options the run used, defaults filled in. */
  options: Record<string, unknown>;
}

/** The dev pool ranked by the sum of the model's experts' scores, each divided by its training temperature. */
function cameValidator(model: CameModel) {
  return async (input: ValidationInput) => {
    const temps = model.training.temperatures;
    const experts = model.config.experts;
    const P = await encodeFor(model, input.passages, 'passage', input.pool);
    return rankAgainstPool(input, async (_task, table, rows) => {
      const Q = await encodeFor(model, table, 'query', rows);
      const s = await expertScores(Q, P, experts);
      const out = new Float32Array(rows.length * input.pool.length);
      for (const e of experts) {
        const x = s[e]!;
        const t = temps[e];
        for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) + (x[i] as number) / t;
      }
      return out;
    });
  };
}

function encodeFor(model: CameModel, table: TokenTable, side: 'query' | 'passage', rows: readonly number[]) {
  return encodeCame(model, table, { side, rows, maxTerms: side === 'passage' ? CAME_PASSAGE_TERMS : CAME_QUERY_TERMS });
}

/** Adds each batch's per-expert figures to an epoch's running sums. */
class ExpertTally {
  private sums = new Map<CameExpertName, { loss: number; weight: number; correct: number }>();
  private questions = 0;

  add(s: StepStats): void {
    const c = s as CameStepStats;
    this.questions += c.questions;
    for (const [e, v] of Object.entries(c.experts ?? {}) as Array<[CameExpertName, { loss: number; weight: number; correct: number }]>) {
      const t = this.sums.get(e) ?? { loss: 0, weight: 0, correct: 0 };
      t.loss += v.loss * c.questions;
      t.weight += v.weight * c.questions;
      t.correct += v.correct;
      this.sums.set(e, t);
    }
  }

  take(): Partial<Record<CameExpertName, { loss: number; weight: number; accuracy: number }>> {
    const out: Partial<Record<CameExpertName, { loss: number; weight: number; accuracy: number }>> = {};
    const n = Math.max(this.questions, 1);
    for (const [e, t] of this.sums) out[e] = { loss: t.loss / n, weight: t.weight / n, accuracy: t.correct / n };
    this.sums = new Map();
    this.questions = 0;
    return out;
  }
}

/**
 * Trains a CAME retriever's model(s) on the schedule above; the best epoch of each stage by dev MRR (fused experts)
 * is kept. Writes the record to `came.training` and returns it. Any index is dropped: call `index` again.
 *
 * @example
 * const came = CameRetriever.create({ tokenizer });
 * await initFromGlove(came.models[0]!, tokenizer.vocabulary);
 * const record = await trainCame(came, { passages, train, dev }, { epochs: 3, negatives: 3 });
 */
export async function trainCame(
  came: CameRetriever,
  data: { passages: readonly PassageText[]; train: readonly TrainingExample[]; dev?: readonly TrainingExample[] },
  options: CameTrainOptions = {},
): Promise<CameTrainRecord> {
  if (!(came instanceof CameRetriever)) throw new QuorumError('ERR_ARG', 'trainCame needs a CameRetriever');
  mustBeObject(data, 'training data');
  mustBeArray(data.passages, 'passages');
  mustBeArray(data.train, 'training examples');
  if (data.dev !== undefined) mustBeArray(data.dev, 'dev examples');
  checkOptions(options, trainKeys, 'CAME training options');
  const o = {
    mode: 'competitive' as const,
    epochs: 3,
    standardizedShare: 0.2,
    hardNegativeEpochs: 1,
    mineDepth: 30,
    negatives: 7,
    batchSize: 16,
    lr: 1e-3,
    tau: 0.5,
    flops: 0.01,
    clip: 2,
    seed: 12345,
    ...options,
  };
  if (o.mode !== 'competitive' && o.mode !== 'standardized')
    throw new QuorumError('ERR_ARG', `mode must be 'competitive' or 'standardized', got '${String(o.mode)}'`);
  if (!(o.standardizedShare >= 0 && o.standardizedShare <= 1))
    throw new QuorumError('ERR_RANGE', `standardizedShare must be in [0, 1], got ${o.standardizedShare}`);
  for (const [k, v] of Object.entries({
    epochs: o.epochs,
    hardNegativeEpochs: o.hardNegativeEpochs,
    mineDepth: o.mineDepth,
    negatives: o.negatives,
  }))
    if (!Number.isInteger(v) || v < 0) throw new QuorumError('ERR_RANGE', `${k} must be a non-negative integer, got ${v}`);
  if (!data.train.length) throw new QuorumError('ERR_ARG', 'no training examples');
  if (o.group !== undefined && o.checkpointDir === undefined)
    throw new QuorumError('ERR_ARG', 'data-parallel CAME training needs checkpointDir, on a file system every rank reads');
  const log = o.log ?? (() => {});
  const base = o.checkpointDir ?? join(tmpdir(), `quorum-came-${process.pid}-${Date.now()}`);
  const t0 = performance.now();
  const stages: CameStageRecord[] = [];
  const batchesPerEpoch = Math.ceil(data.train.length / o.batchSize);
  const competitive = o.mode === 'competitive' && !came.independent;

  // The loop's options for one stage of one model, and where its per-epoch records land.
  const loop = (
    model: CameModel,
    epochs: number,
    dir: string,
    switchAt: number,
  ): { options: TrainOptions; records: CameStageRecord['epochs'] } => {
    let batches = 0;
    const tally = new ExpertTally();
    const records: CameStageRecord['epochs'] = [];
    const options: TrainOptions = {
      epochs,
      batchSize: o.batchSize,
      hardNegatives: o.negatives,
      lr: o.lr,
      clip: o.clip,
      seed: o.seed,
      taskMarkers: false,
      maxQueryLength: came.text.maxQueryLength,
      maxPassageLength: came.text.maxPassageLength,
      checkpointDir: dir,
      ...(o.timeBudgetSeconds !== undefined ? { timeBudgetSeconds: o.timeBudgetSeconds } : {}),
      ...(o.progress ? { progress: true } : {}),
      ...(o.group ? { group: o.group } : {}),
      log: (l) => log(`  [${model.config.experts.join('+')}] ${l}`),
      validator: cameValidator(model),
      onBatch: (s) => {
        tally.add(s);
        if (++batches === switchAt) {
          model.setTraining({ competitive: true });
          log(`  [${model.config.experts.join('+')}] specialized stage from batch ${batches}`);
        }
      },
      onEpoch: (e) => void records.push({ ...e, experts: tally.take() }),
    };
    return { options, records };
  };

  for (const [i, model] of came.models.entries()) {
    const temps = { ...model.training.temperatures, ...o.temperatures };
    const stage1Steps = o.epochs * batchesPerEpoch;
    model.setTraining({
      competitive: false,
      tau: o.tau,
      flopsQuery: o.flops,
      flopsPassage: o.flops,
      flopsRamp: o.flopsRamp ?? Math.max(1, Math.round(stage1Steps / 3)),
      temperatures: temps,
    });
    if (o.epochs > 0) {
      const switchAt = competitive ? Math.max(1, Math.round(o.standardizedShare * stage1Steps)) : -1;
      const dir = join(base, `model-${i}`, 'bm25');
      const { options: opts, records } = loop(model, o.epochs, dir, switchAt);
      log(`model ${i + 1}/${came.models.length} (${model.config.experts.join(', ')}): ${o.epochs} epochs on BM25 negatives`);
      const r = await trainRetriever(
        model,
        came.tokenizer,
        { passages: data.passages, train: data.train, ...(data.dev ? { dev: data.dev } : {}) },
        opts,
      );
      if (r.best) await model.load(join(dir, 'best.pt'));
      stages.push({
        stage: 'bm25',
        experts: [...model.config.experts],
        epochs: records,
        ...(r.best ? { best: r.best } : {}),
        seconds: r.seconds,
        tokensPerSecond: r.tokensPerSecond,
      });
    }
  }

  if (o.hardNegativeEpochs > 0) {
    log(`mining hard negatives: top ${o.mineDepth} of each expert over ${data.passages.length} passages`);
    await came.index(data.passages);
    const lists = await came.search(
      data.train.map((e) => e.query),
      { k: 1, expertK: o.mineDepth },
    );
    for (const [i, model] of came.models.entries()) {
      // Independent experts mine from their own results; a joint model from the union of its three experts'.
      const experts = model.config.experts;
      const mined = data.train.map((e, q) => {
        const gold = new Set(e.positives);
        const union = new Set<number>();
        for (let r = 0; r < o.mineDepth; r++)
          for (const x of experts) {
            const h = lists.experts[x]![q]![r];
            if (h && !gold.has(h.id)) union.add(h.id);
          }
        return { ...e, hardNegatives: [...union] };
      });
      if (competitive) model.setTraining({ competitive: true });
      const dir = join(base, `model-${i}`, 'hard-negatives');
      const { options: opts, records } = loop(model, o.hardNegativeEpochs, dir, -1);
      log(`model ${i + 1}/${came.models.length}: ${o.hardNegativeEpochs} epochs on mined negatives`);
      const r = await trainRetriever(
        model,
        came.tokenizer,
        { passages: data.passages, train: mined, ...(data.dev ? { dev: data.dev } : {}) },
        opts,
      );
      // Keep the better of the two stages by dev MRR (values are -MRR): mined negatives can overfit a small set.
      const before = stages.find((s) => s.stage === 'bm25' && s.experts.join() === experts.join())?.best;
      const kept = r.best && before && before.value <= r.best.value ? 'bm25' : 'hard-negatives';
      if (kept === 'bm25') await model.load(join(base, `model-${i}`, 'bm25', 'best.pt'));
      else if (r.best) await model.load(join(dir, 'best.pt'));
      if (kept === 'bm25')
        log(
          `  [${experts.join('+')}] kept the BM25 stage's checkpoint (dev MRR ${(-before!.value).toFixed(4)} against ${(-r.best!.value).toFixed(4)})`,
        );
      stages.push({
        stage: 'hard-negatives',
        experts: [...experts],
        epochs: records,
        ...(r.best ? { best: r.best } : {}),
        kept,
        seconds: r.seconds,
        tokensPerSecond: r.tokensPerSecond,
      });
    }
  }
  // An index built before or during training (the mining one) holds old encodings: search must re-index.
  came.dropIndex();
  const record: CameTrainRecord = {
    mode: o.mode,
    independent: came.independent,
    stages,
    seconds: (performance.now() - t0) / 1000,
    options: { ...o, log: undefined, checkpointDir: undefined, group: undefined },
  };
  came.training = record as unknown as Record<string, unknown>;
  return record;
}

/**
 * Fits the linear fusion layer on dev questions: each expert's top-100 from the indexed corpus, relevance from the
 * questions' gold passages (corpus rows). The retriever must be indexed over the corpus the rows refer to.
 *
 * @example
 * await came.index(passages);
 * came.linear = await fitCameLinear(came, dev);
 */
export async function fitCameLinear(
  came: CameRetriever,
  dev: readonly TrainingExample[],
  options: { expertK?: number } = {},
): Promise<LinearFusion> {
  if (!(came instanceof CameRetriever)) throw new QuorumError('ERR_ARG', 'fitCameLinear needs a CameRetriever');
  mustBeArray(dev, 'dev examples');
  checkOptions(options, fitKeys, 'fitCameLinear options');
  if (!dev.length) throw new QuorumError('ERR_ARG', 'fitting the linear fusion needs dev questions');
  const r = await came.search(
    dev.map((e) => e.query),
    { k: 1, expertK: options.expertK ?? 100 },
  );
  const experts = came.experts;
  return fitLinearFusion(dev.map((e, q) => ({ lists: experts.map((x) => r.experts[x]![q]!), relevant: new Set(e.positives) })));
}

// BERT's masked-LM head (BertForMaskedLM / BertForPreTraining), which CAME's lexical expert is (docs/methods/came.md).
const MLM_HEAD: ReadonlyArray<[string[], string]> = [
  [['cls.predictions.transform.dense.weight'], 'lexical.head.transform.dense.weight'],
  [['cls.predictions.transform.dense.bias'], 'lexical.head.transform.dense.bias'],
  [['cls.predictions.transform.LayerNorm.weight', 'cls.predictions.transform.LayerNorm.gamma'], 'lexical.head.transform.LayerNorm.weight'],
  [['cls.predictions.transform.LayerNorm.bias', 'cls.predictions.transform.LayerNorm.beta'], 'lexical.head.transform.LayerNorm.bias'],
];

/**
 * CAME from a pretrained BERT: the shared bottom takes the checkpoint's embeddings and its first `encoder.layers`
 * blocks; every expert's own blocks take the `expertLayers` blocks after them (the same copies for each expert, as
 * CAME starts its experts from one checkpoint); the lexical head takes BERT's masked-LM transform when the checkpoint
 * has one (`cls.predictions.*`). ERR_FORMAT (naming the tensor) for a shape that does not fit. Returns, per model,
 * the parameters the checkpoint had nothing for (they keep their initialization).
 *
 * @example
 * const bert = readPretrained('bert-base-uncased');
 * initCameFromPretrained(came, bert);   // came built with encoder.layers + expertLayers = 12
 */
export function initCameFromPretrained(came: CameRetriever, bert: Pick<PretrainedBert, 'dir' | 'weights'>): { missing: string[][] } {
  if (!(came instanceof CameRetriever)) throw new QuorumError('ERR_ARG', 'initCameFromPretrained needs a CameRetriever');
  const missing: string[][] = [];
  for (const m of came.models) {
    const shared = m.config.encoder.layers;
    const mapped = mapPretrained(bert, { ...m.config.encoder, layers: shared + m.config.expertLayers }, { strict: false });
    const left = new Set(m.parameters().map((p) => p.name));
    const set = (name: string, values: Float32Array) => {
      if (!left.delete(name)) return;
      m.setParameter(name, values);
    };
    for (const [name, values] of mapped.tensors) {
      const block = /^encoder\.layer\.(\d+)\.(.*)$/.exec(name);
      if (block && Number(block[1]) >= shared)
        for (const e of m.experts) set(`${e}.encoder.layer.${Number(block[1]) - shared}.${block[2]}`, values);
      else set(`bottom.${name}`, values);
    }
    const shapes = new Map(m.parameters().map((p) => [p.name, p.shape.reduce((a, b) => a * b, 1)]));
    for (const [from, to] of MLM_HEAD) {
      const t = from.map((n) => bert.weights.get(n) ?? bert.weights.get(`bert.${n}`)).find((x) => x !== undefined);
      if (t && shapes.has(to) && t.data.length === shapes.get(to)) set(to, t.data);
    }
    missing.push([...left]);
  }
  return { missing };
}

/**
 * CAME's start: every model's token embeddings from GloVe ({@link initFromGlove}) or every weight a checkpoint has
 * from it (`pretrained`, {@link initCameFromPretrained}), then the lexical expert's decoder bias fitted to start sparse
 * ({@link fitLexicalBias}, about `lexicalTerms` terms per passage).
 *
 * @example
 * await initCame(came, passages, { glove });
 */
export async function initCame(
  came: CameRetriever,
  passages: readonly PassageText[],
  options: { glove?: GloveVectors; pretrained?: PretrainedBert; seed?: number; lexicalTerms?: number } = {},
): Promise<{ coverage: number; lexicalBias?: number }> {
  if (!(came instanceof CameRetriever)) throw new QuorumError('ERR_ARG', 'initCame needs a CameRetriever');
  mustBeArray(passages, 'passages');
  checkOptions(options, initKeys, 'initCame options');
  if (options.glove && options.pretrained)
    throw new QuorumError('ERR_ARG', 'initCame takes GloVe vectors or a pretrained checkpoint, not both');
  let coverage = 0;
  if (options.glove)
    for (const m of came.models)
      coverage = (await initFromGlove(m, came.tokenizer.vocabulary, { glove: options.glove, seed: options.seed ?? 12345 })).coverage;
  if (options.pretrained) initCameFromPretrained(came, options.pretrained);
  const lexical = came.models.find((m) => m.experts.includes('lexical'));
  if (!lexical) return { coverage };
  const lexicalBias = await fitLexicalBias(lexical, await came.passageTable(passages), { terms: options.lexicalTerms ?? 128 });
  return { coverage, lexicalBias };
}

const biasKeys = optionKeys<{ terms?: number; sample?: number }>()(['terms', 'sample']);

/**
 * Starts the lexical expert sparse: an MLM head over GloVe-initialised embeddings gives every vocabulary entry a
 * positive logit at step 0 (each passage's SPLADE vector is dense, its dot products in the thousands). The decoder
 * bias is set to minus the median, over a sample of passages, of each passage's `terms`-th largest max logit, so
 * that a typical passage starts with about `terms` non-zero weights. Returns that bias.
 *
 * @example
 * await fitLexicalBias(model, await TokenTable.passages(tokenizer, corpus, 192), { terms: 128 });
 */
export async function fitLexicalBias(
  model: CameModel,
  table: TokenTable,
  options: { terms?: number; sample?: number } = {},
): Promise<number> {
  if (!(model instanceof CameModel)) throw new QuorumError('ERR_ARG', 'fitLexicalBias needs a CameModel');
  if (!(table instanceof TokenTable)) throw new QuorumError('ERR_ARG', 'fitLexicalBias needs a TokenTable of passages');
  checkOptions(options, biasKeys, 'fitLexicalBias options');
  if (!model.experts.includes('lexical')) throw new QuorumError('ERR_ARG', 'the model has no lexical expert');
  const terms = options.terms ?? 128;
  const n = Math.min(table.size, options.sample ?? 256);
  if (n === 0) throw new QuorumError('ERR_ARG', 'fitting the lexical bias needs passages');
  const V = model.vocabSize;
  const bias = model.getParameter('lexical.head.decoder.bias');
  model.setParameter('lexical.head.decoder.bias', new Float32Array(V));
  const rows = Array.from({ length: n }, (_, i) => Math.floor((i * table.size) / n));
  const cut: number[] = [];
  try {
    for (let s = 0; s < n; s += 32) {
      const batch = rows.slice(s, s + 32);
      const w = (await model.encode(table.batch(batch), 'passage', ['lexical'])).lexical!;
      for (let r = 0; r < batch.length; r++) {
        // w = log(1 + max logit) where the max is positive: the max logit is e^w - 1.
        const top = Array.from(w.subarray(r * V, (r + 1) * V)).sort((a, b) => b - a);
        cut.push(Math.expm1(top[Math.min(terms, V) - 1] ?? 0));
      }
    }
  } catch (e) {
    model.setParameter('lexical.head.decoder.bias', bias);
    throw e;
  }
  cut.sort((a, b) => a - b);
  const c = cut[cut.length >> 1]!;
  model.setParameter('lexical.head.decoder.bias', new Float32Array(V).fill(-c));
  return -c;
}
