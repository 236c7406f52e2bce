// ROM's saved formats (docs/methods/rom.md#the-directory), written once for the lab class (RomModel) and the server
// (RomServer): a network's configuration as rom.json stores it, the text settings, the directory's card and the
// corpus index (its card and vectors) with their schemas, and the reader's output. Nothing here loads libtorch.
import { join } from 'node:path';

import type { PassageText } from '../../data/examples.js';
import { readFileBytes, replaceDirectorySync, writeFileAtomic } from '../../data/files.js';
import { QuorumError } from '../../errors.js';
import { floatTensor, readSafetensors, writeSafetensors } from '../../io/safetensors.js';
import { checkCard, readSavedCard, writeSavedCard, type SavedFormat } from '../../io/saved-dir.js';
import { encoderConfigSchema, type EncoderConfig } from '../../models/config.js';
import { Tensor } from '../../tensor.js';
import { count, mustBeArray, positiveInt, z } from '../../validate.js';

/** A ROM network's full configuration, as {@link romConfig} fills it in and rom.json stores it. */
export interface RomConfig {
  /** The one encoder; `pooling` and `normalize` shape the heads. Token weights, centre, projections and routing are not part of ROM. */
  encoder: EncoderConfig;
  /** Width of the heads' vectors (0: the hidden width, each head starting as the identity). */
  headDim: number;
}

/** rom.json's format (its tag also marks the weights and vectors files). */
export const romFormat = { card: 'rom.json', format: 'quorum-rom', version: 1, what: 'a ROM directory' } as const satisfies SavedFormat;
/** A corpus index's card, index.json. */
export const romIndexFormat = {
  card: 'index.json',
  format: 'quorum-rom-index',
  version: 1,
  what: 'a ROM index',
} as const satisfies SavedFormat;

// rom.json and the index's card, every field (issue 48).
const romConfigSchema = z.object({ encoder: encoderConfigSchema, headDim: count }).strict();
const romCardSchema = z
  .object({
    format: z.literal(romFormat.format),
    version: z.literal(romFormat.version),
    config: romConfigSchema,
    text: z
      .object({ maxQueryLength: positiveInt, maxPassageLength: positiveInt, readerLength: positiveInt, maxAnswerLength: positiveInt })
      .strict(),
    weights: z.string(),
    retrieval: z
      .discriminatedUnion('kind', [
        z.object({ kind: z.literal('rom'), config: romConfigSchema, weights: z.string() }).strict(),
        z.object({ kind: z.literal('retriever'), dir: z.literal('retriever') }).strict(),
      ])
      .optional(),
    training: z.record(z.unknown()).optional(),
  })
  .strict();
const romIndexSchema = z
  .object({ format: z.literal(romIndexFormat.format), version: z.literal(romIndexFormat.version), ids: z.array(z.string().min(1)) })
  .strict();

/** How texts become the network's inputs. */
export interface RomTextSettings {
  /** Question pieces for retrieval (with framing) and, cut to this, in the reader's rows. */
  maxQueryLength: number;
  /** A passage row for retrieval ("[CLS] title [SEP] text [SEP]"). */
  maxPassageLength: number;
  /** A reader row ("[CLS] question [SEP] passage [SEP]"). */
  readerLength: number;
  /** Longest answer in pieces. */
  maxAnswerLength: number;
}

/** The text settings a ROM model gets unless `RomModel.create`'s `text` overrides them. */
export const defaultRomText: RomTextSettings = { maxQueryLength: 32, maxPassageLength: 128, readerLength: 192, maxAnswerLength: 10 };

/** rom.json. */
export interface RomCard {
  format: typeof romFormat.format;
  version: typeof romFormat.version;
  config: RomConfig;
  text: RomTextSettings;
  weights: string;
  retrieval?: { kind: 'rom'; config: RomConfig; weights: string } | { kind: 'retriever'; dir: string };
  training?: Record<string, unknown>;
}

/** {@link RomModel.save}'s rom.json, checked (RomModel.load and RomServer). ERR_IO / ERR_FORMAT. */
export function readRomCard(dir: string): { card: RomCard; path: string } {
  const { card: raw, path } = readSavedCard<RomCard>(dir, romFormat);
  return { card: checkCard(romCardSchema, raw, path) as RomCard, path };
}

/**
 * {@link RomModel.saveIndex}'s vectors for `passages` (the corpus they were built from, same ids in the same order)
 * of width `dim` (RomModel.loadIndex and RomServer). ERR_IO when missing, ERR_FORMAT when damaged or built from
 * another corpus.
 */
export function readRomIndex(dir: string, passages: readonly (PassageText & { id: string })[], dim: number): Tensor<'f32'> {
  mustBeArray(passages, 'passages');
  const { card: raw, path } = readSavedCard(dir, romIndexFormat);
  const card = checkCard(romIndexSchema, raw, path);
  if (card.ids.length !== passages.length || card.ids.some((id, i) => id !== passages[i]!.id))
    throw new QuorumError(
      'ERR_FORMAT',
      `${dir} indexes another corpus (${card.ids.length} passages; rebuild it with \`quorum rom index\`)`,
    );
  const bytes = readFileBytes(join(dir, 'vectors.safetensors'));
  let tensors;
  try {
    tensors = readSafetensors(bytes);
  } catch (e) {
    throw new QuorumError(e instanceof QuorumError ? 'ERR_FORMAT' : 'ERR_IO', `${dir}/vectors.safetensors: ${(e as Error).message}`, {
      cause: e,
    });
  }
  const v = floatTensor(tensors.get('vectors'), `${dir}/vectors.safetensors`, 'vectors');
  if (!v || v.shape.length !== 2 || v.shape[0] !== passages.length || v.shape[1] !== dim)
    throw new QuorumError('ERR_FORMAT', `${dir}/vectors.safetensors does not hold [${passages.length}, ${dim}] vectors`);
  return Tensor.from(v.data, [passages.length, dim], 'f32');
}

/**
 * Writes a ROM index directory: the passage vectors `[ids.length, dim]` (row i is ids[i]) and the card naming the ids,
 * swapped in whole (RomModel.saveIndex, updateRomIndex).
 */
export function writeRomIndex(dir: string, ids: readonly string[], vectors: Float32Array, dim: number): void {
  if (vectors.length !== ids.length * dim) throw new QuorumError('ERR_SHAPE', `${vectors.length / dim} vectors for ${ids.length} ids`);
  replaceDirectorySync(
    dir,
    (tmp) => {
      writeFileAtomic(
        join(tmp, 'vectors.safetensors'),
        writeSafetensors({ vectors: { shape: [ids.length, dim], data: vectors } }, { format: romFormat.format }),
      );
      writeSavedCard(tmp, romIndexFormat, { ids }, 0);
    },
    { keepOthers: true, kind: romIndexFormat },
  );
}

/** Whether a network's reader rows mark passage tokens the question contains (type 2): its encoder has three types. */
export function romMarksMatches(config: RomConfig): boolean {
  return config.encoder.typeVocabSize >= 3;
}

/** The reader's logits: start and end `[rows, seqLen]` (-Infinity outside the passage), relevance `[rows]`. */
export interface ReaderLogits {
  /** Start logits `[rows, seqLen]`. */
  start: Float32Array;
  /** End logits `[rows, seqLen]`. */
  end: Float32Array;
  /** Passage relevance logits `[rows]`. */
  relevance: Float32Array;
}

/** Writes rom.json into `dir` (RomModel.save; the format tag and version are added). */
export function writeRomCard(dir: string, card: Omit<RomCard, 'format' | 'version'>): void {
  writeSavedCard(dir, romFormat, card);
}
