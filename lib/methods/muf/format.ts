// DPR-MUF's saved formats and serving rules (docs/methods/muf.md#the-directory), written once for the lab class
// (MufRetriever) and the libtorch-free server (MufServer): the directory's card (muf.json) and its schema, the
// readers of an expert's folder (passage vectors, familiarity bank), the heads file (its configuration and tensors,
// without building the libtorch heads), the fusions a search may ask for, and abstention. Nothing here loads
// libtorch: a server that imports this module reaches no training code.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { readFileBytes } from '../../data/files.js';
import { QuorumError } from '../../errors.js';
import type { ScoredDoc } from '../../eval/ranking.js';
import { floatTensor, readSafetensors, safetensorsMetadata, type SafetensorsTensor } from '../../io/safetensors.js';
import { checkCard, readIdFile, readSavedCard, savedFile, writeSavedCard, type SavedFormat } from '../../io/saved-dir.js';
import { abstains, checkAbstain, checkFusion, checkK } from '../../search-request.js';
import { Tensor } from '../../tensor.js';
import { count, finite, parse, positiveInt, z } from '../../validate.js';
import { FamiliarityBank, type FamiliarityCalibration } from './familiarity.js';

/** The heads' shape: `layers` hidden ReLU layers of `hidden` units between `dim` and `dim`, K = `members`. */
export interface EnsembleConfig {
  /** The expert's embedding width. */
  dim: number;
  /** Hidden width (default 512, DPR-MUF's). */
  hidden?: number;
  /** Hidden layers (default 2: DPR-MUF's "two-layer MLP" is 3 linear layers). */
  layers?: number;
  /** K, the ensemble size (default 20). */
  members?: number;
}

const ensembleConfigSchema = z
  .object({
    dim: positiveInt,
    hidden: positiveInt.optional(),
    layers: z.number().int().min(0).max(16).optional(),
    members: positiveInt.optional(),
  })
  .strict();

/** The heads' defaults: DPR-MUF's K = 20 members of 2 hidden ReLU layers of 512. */
export const ENSEMBLE_DEFAULTS: Readonly<Required<Omit<EnsembleConfig, 'dim'>>> = Object.freeze({ hidden: 512, layers: 2, members: 20 });

/** A configuration checked (ERR_ARG naming the bad field) with the defaults filled in. */
export function ensembleConfig(config: EnsembleConfig): Required<EnsembleConfig> {
  parse(ensembleConfigSchema, config, 'ensemble config');
  return { ...ENSEMBLE_DEFAULTS, ...config };
}

/** One epoch's figures of {@link MlpEnsemble.train}. */
export interface EnsembleEpoch {
  /** 0-based epoch number. */
  epoch: number;
  /** Mean over steps of the members' mean NLL. */
  loss: number;
  /** Each member's mean NLL over the epoch. */
  memberLoss: number[];
  /** Share of sub-batch questions whose positive scored highest. */
  accuracy: number;
}

/** The heads file's format tag (its safetensors metadata's `format`). */
export const ENSEMBLE_FORMAT = 'quorum-muf-ensemble';

/**
 * The configuration and tensors of {@link MlpEnsemble.toBytes}' output, without building the heads (no libtorch: the
 * serving path hands them to mufConfidence), the configuration checked and its defaults filled in. ERR_FORMAT for
 * another format or a configuration that is not JSON or not valid.
 */
export function readEnsembleFile(
  bytes: Uint8Array,
  where = 'ensemble',
): { config: Required<EnsembleConfig>; tensors: Map<string, SafetensorsTensor> } {
  if (!(bytes instanceof Uint8Array)) throw new QuorumError('ERR_ARG', 'fromBytes needs a Uint8Array');
  let tensors: Map<string, SafetensorsTensor>;
  let header: Record<string, string>;
  try {
    tensors = readSafetensors(bytes);
    header = safetensorsMetadata(bytes);
  } catch (e) {
    if (e instanceof QuorumError) throw new QuorumError(e.code, `${where}: ${e.message}`, { cause: e });
    throw e;
  }
  if (header.format !== ENSEMBLE_FORMAT)
    throw new QuorumError('ERR_FORMAT', `${where}: not a MUF ensemble file (format '${header.format ?? ''}')`);
  let config: EnsembleConfig;
  try {
    config = JSON.parse(header.config ?? '') as EnsembleConfig;
  } catch {
    throw new QuorumError('ERR_FORMAT', `${where}: its configuration is not JSON`);
  }
  try {
    return { config: ensembleConfig(config), tensors };
  } catch (e) {
    throw new QuorumError('ERR_FORMAT', `${where}: bad configuration: ${(e as Error).message}`, { cause: e });
  }
}

/** What training an expert's heads recorded in muf.json. */
export interface ExpertTraining {
  /** Every epoch's figures. */
  epochs: EnsembleEpoch[];
  /** Wall time of the heads' training. */
  seconds: number;
  /** Training questions of the expert's task. */
  questions: number;
}

/** The MUF directory's card: muf.json, its format tag and version. */
export const mufFormat = { card: 'muf.json', format: 'quorum-muf', version: 1, what: 'a MUF directory' } as const satisfies SavedFormat;

/** One expert's calibration: the temperature ECE chose on the calibration split, and the ECE before and after. */
export interface ExpertCalibration {
  /** The temperature with the lowest ECE on the calibration split. */
  temperature: number;
  /** ECE at DPR-MUF's fixed temperature 1e-3. */
  eceBefore: number;
  /** ECE at the chosen temperature. */
  eceAfter: number;
  /** The split's size and the share of its questions whose top-`hitTopK` held a relevant passage. */
  questions: number;
  /** That share, in [0, 1]. */
  hitRate: number;
  /** Every grid temperature with its ECE (by default {@link widenedTemperatureGrid}). */
  tried: Array<{ temperature: number; ece: number }>;
  /**
   * The familiarity calibration (P(own task) from the familiarity margin), when the expert has a familiarity bank
   * (trained with other tasks' questions) and the split has questions of its task and of others.
   */
  familiarity?: FamiliarityCalibration;
}

/** muf.json. */
export interface MufCard {
  format: typeof mufFormat.format;
  version: typeof mufFormat.version;
  dim: number;
  topL: number;
  hitTopK: number;
  heads: Required<Omit<EnsembleConfig, 'dim'>>;
  experts: Array<{ name: string; task: string; training?: ExpertTraining; calibration?: ExpertCalibration }>;
}

// muf.json, every field (issue 48: a null expert, an expert listed twice, a string where a number belongs all loaded).
// Figures that only report (ECEs, hit rates, AUROC) may be null: JSON writes NaN so.
const reported = finite.nullable();
const mufCardSchema = z
  .object({
    format: z.literal(mufFormat.format),
    version: z.literal(mufFormat.version),
    dim: positiveInt,
    topL: positiveInt,
    hitTopK: positiveInt,
    heads: z.object({ hidden: positiveInt, layers: z.number().int().min(0).max(16), members: positiveInt }).strict(),
    experts: z
      .array(
        z
          .object({
            name: z.string().min(1),
            task: z.string().min(1),
            training: z.record(z.unknown()).optional(),
            calibration: z
              .object({
                temperature: z.number().positive().finite(),
                eceBefore: reported,
                eceAfter: reported,
                questions: count,
                hitRate: reported,
                tried: z.array(z.object({ temperature: z.number().positive().finite(), ece: reported }).strict()),
                familiarity: z
                  .object({
                    k: positiveInt,
                    platt: z.object({ weights: z.array(finite).min(1), bias: finite }).strict(),
                    auroc: reported,
                    ece: reported,
                    own: count,
                    other: count,
                  })
                  .strict()
                  .optional(),
              })
              .strict()
              .optional(),
          })
          .strict(),
      )
      .min(1)
      .refine((e) => new Set(e.map((x) => x.name)).size === e.length, 'an expert is listed twice'),
  })
  .strict()
  .refine((c) => c.hitTopK <= c.topL, { message: 'hitTopK must be at most topL', path: ['hitTopK'] });

/**
 * How {@link MufRetriever.search} weighs the experts' lists: 'muf' by each expert's calibrated confidence (P(own task)
 * from familiarity where the directory has it, else the MI confidence), 'muf-mi' by the MI confidence always
 * (DPR-MUF as published), 'uniform' equally, 'oracle' the query's own task's expert alone.
 */
export type MufFusion = 'muf' | 'muf-mi' | 'uniform' | 'oracle';

export const MUF_FUSIONS: readonly MufFusion[] = ['muf', 'muf-mi', 'uniform', 'oracle'];

/** One query's fused result. */
export interface MufHits {
  /** The fused top-k, best first (empty when abstained). */
  hits: ScoredDoc[];
  /** Per expert (in {@link MufRetriever.experts} order): the confidence its list was weighed by (1 for 'uniform'). */
  confidence: number[];
  /** Present and true when no expert's confidence reached the `abstain` threshold. */
  abstained?: boolean;
}

/** The fusions MufServer (and the CLI's `muf search`) offers: all of {@link MUF_FUSIONS} but 'oracle'. */
export const MUF_SERVER_FUSIONS: readonly MufFusion[] = ['muf', 'muf-mi', 'uniform'];

/**
 * A MUF search's request checked (the contract of lib/search-request.ts): `k`, the fusion among `fusions`, and an
 * abstention threshold, which needs a fusion with confidences ('muf' or 'muf-mi'; ERR_ARG otherwise).
 */
export function checkMufRequest(k: unknown, fusion: unknown, abstain: unknown, fusions: readonly MufFusion[] = MUF_FUSIONS): MufFusion {
  checkK(k);
  const f = checkFusion(fusion, fusions);
  if (abstain !== undefined) {
    checkAbstain(abstain);
    if (f !== 'muf' && f !== 'muf-mi') throw new QuorumError('ERR_ARG', `abstain needs the 'muf' or 'muf-mi' fusion, not '${f}'`);
  }
  return f;
}

/** Applies a checked abstention threshold to fused results ({@link abstains}: no expert's confidence reaches it). */
export function applyAbstention(hits: MufHits[], abstain: number | undefined): MufHits[] {
  if (abstain === undefined) return hits;
  return hits.map((h) => (abstains(h.confidence, abstain) ? { hits: [], confidence: h.confidence, abstained: true } : h));
}

/**
 * A MUF directory's card (checked to name experts), corpus ids and each expert's folder, as {@link MufRetriever.load}
 * and the libtorch-free MufServer read them.
 */
export function readMufDir(dir: string): {
  card: MufCard;
  cardPath: string;
  ids: string[];
  experts: Array<{ expert: MufCard['experts'][number]; base: string }>;
} {
  const { card: raw, path: cardPath } = readSavedCard<MufCard>(dir, mufFormat);
  const card = checkCard(mufCardSchema, raw, cardPath) as MufCard;
  const ids = readIdFile(join(dir, 'corpus-ids.txt'));
  const experts = card.experts.map((expert) => ({ expert, base: savedFile(join(dir, 'experts'), expert.name, cardPath, 'expert name') }));
  return { card, cardPath, ids, experts };
}

/** An expert folder's familiarity bank, when it has one (directories trained before familiarity have none). */
export function readFamiliarity(base: string, dim: number): FamiliarityBank | undefined {
  const path = join(base, 'familiarity.safetensors');
  return existsSync(path) ? FamiliarityBank.load(path, dim) : undefined;
}

/** An expert folder's corpus vectors, checked to be [n, dim]. */
export function readExpertPassages(base: string, n: number, dim: number): Tensor<'f32'> {
  const path = join(base, 'passages.safetensors');
  const p = floatTensor(readSafetensors(readFileBytes(path)).get('passages'), path, 'passages');
  if (!p || p.shape.length !== 2 || p.shape[0] !== n || p.shape[1] !== dim)
    throw new QuorumError('ERR_FORMAT', `${base}/passages.safetensors: expected [${n}, ${dim}] passage vectors`);
  return Tensor.from(p.data, [n, dim]);
}

/** Writes muf.json into `dir` (MufRetriever.save; the format tag and version are added). */
export function writeMufCard(dir: string, card: Omit<MufCard, 'format' | 'version'>): void {
  writeSavedCard(dir, mufFormat, card);
}
