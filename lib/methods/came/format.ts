// CAME's saved formats (docs/methods/came.md#the-directory), written once for the lab class (CameRetriever) and the
// server (CameServer): the experts' names, a model's configuration as came.json stores it, the directory's card and
// the corpus index's card with their schemas, and the index reader. Nothing here loads libtorch.
import { join } from 'node:path';

import { QuorumError } from '../../errors.js';
import { checkCard, readIdFile, readSavedCard, writeSavedCard, type SavedFormat } from '../../io/saved-dir.js';
import { encoderConfigSchema, type EncoderConfig } from '../../models/config.js';
import { count, finite, positiveInt, z } from '../../validate.js';
import type { LinearFusion } from './fusion.js';

/** CAME's experts: lexical (SPLADE), local (ColBERT MaxSim) and global (one pooled vector, DPR). */
export type CameExpertName = 'lexical' | 'local' | 'global';
/** The three experts in their fixed order. */
export const CAME_EXPERTS: readonly CameExpertName[] = ['lexical', 'local', 'global'];

/** A CAME model's full configuration, as {@link cameConfig} fills it in and came.json stores it. */
export interface CameConfig {
  /**
   * Embeddings and the shared bottom (`layers` blocks). `pooling` and `normalize` shape the global head; token
   * weights, centring, projections and TASER routing are not part of CAME.
   */
  encoder: EncoderConfig;
  /** Private Transformer blocks per expert (paper: 2 above 10 shared). */
  expertLayers: number;
  /** Which experts the model holds (an independently trained expert is a one-expert model). */
  experts: CameExpertName[];
  /** Width of the local expert's token vectors (ColBERT's 128). */
  localDim: number;
  /** MaxSim and SPLADE pooling from libtorch's own ops instead of Quorum's kernels (a benchmark reference). */
  referenceOps?: boolean;
}
/** One side's representations ([rows, ...] row-major); only the experts asked for. */
export interface CameEncoded {
  /** SPLADE weights `[rows, vocabSize]` (>= 0, mostly 0). */
  lexical?: Float32Array;
  /** Unit token vectors `[rows, seqLen, localDim]`, zero past each row's length. */
  local?: Float32Array;
  /** `[rows, globalDim]`. */
  global?: Float32Array;
}

/** SPLADE weights kept per passage (the largest): what the lexical index holds. */
export const CAME_PASSAGE_TERMS = 256;
/** SPLADE weights kept per question (the largest). */
export const CAME_QUERY_TERMS = 64;

/** came.json's format (its tag also marks the weights files). */
export const cameFormat = { card: 'came.json', format: 'quorum-came', version: 1, what: 'a CAME directory' } as const satisfies SavedFormat;
/** A corpus index's card, index.json. */
export const cameIndexFormat = {
  card: 'index.json',
  format: 'quorum-came-index',
  version: 1,
  what: 'a CAME index',
} as const satisfies SavedFormat;

const expertList = z
  .array(z.enum(CAME_EXPERTS as [CameExpertName, ...CameExpertName[]]))
  .min(1)
  .refine((e) => new Set(e).size === e.length, 'an expert is listed twice');

// came.json and index.json, every field (issue 48: a string bias made the fused scores strings).
const cameCardSchema = z
  .object({
    format: z.literal(cameFormat.format),
    version: z.literal(cameFormat.version),
    independent: z.boolean(),
    models: z
      .array(
        z
          .object({
            config: z
              .object({
                encoder: encoderConfigSchema,
                expertLayers: count,
                experts: expertList,
                localDim: positiveInt,
                referenceOps: z.boolean().optional(),
              })
              .strict(),
            weights: z.string(),
          })
          .strict(),
      )
      .min(1)
      .refine(
        (m) => new Set(m.flatMap((x) => x.config.experts)).size === m.reduce((a, x) => a + x.config.experts.length, 0),
        'two models hold one expert',
      ),
    text: z.object({ maxQueryLength: positiveInt, maxPassageLength: positiveInt }).strict(),
    linear: z
      .object({ weights: z.array(finite), bias: finite })
      .strict()
      .optional(),
    training: z.record(z.unknown()).optional(),
  })
  .strict()
  // The linear layer weighs every expert the models hold, in order: a wrong count would misread them (issue 48).
  .refine((c) => !c.linear || c.linear.weights.length === c.models.reduce((a, m) => a + m.config.experts.length, 0), {
    message: 'the linear layer needs one weight per expert',
    path: ['linear', 'weights'],
  });
const cameIndexSchema = z
  .object({
    format: z.literal(cameIndexFormat.format),
    version: z.literal(cameIndexFormat.version),
    size: positiveInt,
    queryTerms: positiveInt,
    passageTerms: positiveInt.optional(),
    experts: expertList,
  })
  .strict();

/** How texts are cut before encoding (came.json stores them). */
export interface CameTextSettings {
  /** Tokens per question, framing included (default 32). */
  maxQueryLength: number;
  /** Tokens per passage, title and framing included (default 192). */
  maxPassageLength: number;
}

/** came.json. */
export interface CameCard {
  format: typeof cameFormat.format;
  version: typeof cameFormat.version;
  independent: boolean;
  models: Array<{ config: CameConfig; weights: string }>;
  text: CameTextSettings;
  linear?: LinearFusion;
  training?: Record<string, unknown>;
}

/** {@link CameRetriever.save}'s came.json, checked (CameRetriever.load and CameServer). ERR_IO / ERR_FORMAT. */
export function readCameCard(dir: string): { card: CameCard; path: string } {
  const { card: raw, path } = readSavedCard<CameCard>(dir, cameFormat);
  return { card: checkCard(cameCardSchema, raw, path) as CameCard, path };
}

/** Writes came.json into `dir` (CameRetriever.save; the format tag and version are added). */
export function writeCameCard(dir: string, card: Omit<CameCard, 'format' | 'version'>): void {
  writeSavedCard(dir, cameFormat, card);
}

/** Writes index.json into `dir` (CameRetriever.saveIndex). */
export function writeCameIndexCard(
  dir: string,
  card: { size: number; queryTerms: number; passageTerms: number; experts: readonly CameExpertName[] },
): void {
  writeSavedCard(dir, cameIndexFormat, card, 0);
}

/**
 * A corpus index's card (index.json, checked) and its corpus ids (ids.txt: one per row, CRLF accepted), for a
 * retriever with `experts`. ERR_IO when missing, ERR_FORMAT when damaged or made for other experts.
 */
export function readCameIndexCard(
  dir: string,
  experts: readonly CameExpertName[],
): { size: number; queryTerms: number; passageTerms: number; ids: string[] } {
  const { card: raw, path } = readSavedCard(dir, cameIndexFormat);
  const card = checkCard(cameIndexSchema, raw, path);
  // Indexes saved before passageTerms was recorded used the default.
  const passageTerms = card.passageTerms ?? CAME_PASSAGE_TERMS;
  if (JSON.stringify(card.experts) !== JSON.stringify(experts))
    throw new QuorumError('ERR_FORMAT', `${path} indexes experts ${String(card.experts)}, this retriever has ${experts.join(',')}`);
  // One id per corpus row: a short or long file would name the wrong passages (issue 48).
  const lines = readIdFile(join(dir, 'ids.txt'), card.size);
  return { size: card.size, queryTerms: card.queryTerms, passageTerms, ids: lines };
}
