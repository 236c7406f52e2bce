// CAME's search over a corpus's indexes (docs/methods/came.md#search), written once for CameRetriever (libtorch
// models) and CameServer (ONNX Runtime graphs): the corpus indexes and their reader, the search-request rules, each
// expert's top-expertK from its index in one native stage, and the fusion. The encoders come in through
// CameSearchBackend, so nothing here loads libtorch.
import { join } from 'node:path';

import { DenseIndex } from '../../dense-index.js';
import { Tensor } from '../../tensor.js';
import { QuorumError } from '../../errors.js';
import type { TokenTable } from '../../models/token-table.js';
import { SparseIndex } from '../../sparse-index.js';
import { checkFusion, checkK, filterRows } from '../../search-request.js';
import { checkOptions, mustBeArray, optionKeys } from '../../validate.js';
import { encodeCame, type CameEncoderModel, type CameEncoding } from './encode.js';
import { CAME_EXPERTS, readCameIndexCard, type CameExpertName } from './format.js';
import { CAME_FUSIONS, type CameFusion, type Hit, type LinearFusion } from './fusion.js';
import { cameSearch } from './stage.js';
import { TokenIndex, type TokenSearchOptions } from './token-index.js';

/** Options of {@link CameRetriever.search}. */
export interface CameSearchOptions {
  /** Fused results per question (default 100). */
  k?: number;
  /** Results each expert retrieves, K in the paper's filling rule (default 100). */
  expertK?: number;
  /** How the experts' lists are fused (default `'sum'`; see {@link CAME_FUSIONS}). */
  fusion?: CameFusion;
  /** The experts to fuse (default all the retriever has): for ablations. */
  experts?: readonly CameExpertName[];
  /**
   * The local expert: passages re-scored exactly by MaxSim after the centroid approximation (default 256), or 'all'
   * (exact MaxSim over every passage). {@link TokenSearchOptions.candidates}.
   */
  localCandidates?: number | 'all';
  /** The local expert: centroids per question token whose passages are approximated (default 4; 0: every passage). */
  localProbe?: number;
  /**
   * A filter inside the search: only these corpus rows (as compileFilter gives them) can be returned, by every
   * expert (SparseIndex / DenseIndex allowed ids, the token index's candidates), so the fusion sees them only.
   */
  rows?: ArrayLike<number>;
}

/** What {@link CameRetriever.search} returns. */
export interface CameSearchResult {
  /** Per question, the fused top-k (ids are corpus rows). */
  fused: Hit[][];
  /** Per expert, per question, its own top-expertK. */
  experts: Partial<Record<CameExpertName, Hit[][]>>;
  /** Milliseconds per stage: encode (all experts), each expert's search, fuse. */
  timings: Record<string, number>;
}

const searchKeys = optionKeys<CameSearchOptions>()(['k', 'expertK', 'fusion', 'experts', 'localCandidates', 'localProbe', 'rows']);

/** How {@link searchCame} encodes questions and fuses linearly: the retriever's models or the serving graphs. */
interface CameSearchBackend {
  /** The questions' encodings by `experts`, SPLADE rows cut to `maxTerms` terms. */
  encode(questions: readonly string[], experts: readonly CameExpertName[], maxTerms: number): Promise<CameEncoding>;
  /** The fitted linear fusion over every expert, if any. */
  linear?: LinearFusion;
}

/**
 * CAME's search over a corpus's indexes (CameRetriever.search and CameServer.search): each expert's top-expertK,
 * fused per question.
 */
export async function searchCame(
  ix: CameIndexes | undefined,
  all: readonly CameExpertName[],
  questions: readonly string[],
  options: CameSearchOptions,
  backend: CameSearchBackend,
): Promise<CameSearchResult> {
  mustBeArray(questions, 'questions');
  checkOptions(options, searchKeys, 'CAME search options');
  if (!ix) throw new QuorumError('ERR_STATE', 'index a corpus first (CameRetriever.index)');
  const k = checkK(options.k ?? 100);
  const K = checkK(options.expertK ?? 100, 'expertK');
  const fusion = checkFusion(options.fusion ?? 'sum', CAME_FUSIONS);
  const experts = options.experts ?? all;
  for (const e of experts) if (!all.includes(e)) throw new QuorumError('ERR_ARG', `this CAME retriever has no ${e} expert`);
  const rows = options.rows === undefined ? undefined : filterRows(options.rows, ix.size);
  let linear: LinearFusion | undefined;
  if (fusion === 'linear') {
    // The layer is fitted over every expert: restricted to the ones searched.
    if (!backend.linear) throw new QuorumError('ERR_STATE', 'linear fusion needs fitted weights (fitCameLinear on dev)');
    const fitted = backend.linear;
    linear = { weights: experts.map((e) => fitted.weights[all.indexOf(e)]!), bias: fitted.bias };
  }
  const t0 = performance.now();
  const enc = await backend.encode(questions, experts, ix.queryTerms);
  const encode = performance.now() - t0;
  const local = {
    ...(options.localCandidates !== undefined ? { candidates: options.localCandidates } : {}),
    ...(options.localProbe !== undefined ? { nprobe: options.localProbe } : {}),
  };
  const r = await cameSearch(ix, experts, enc, questions.length, {
    k,
    expertK: K,
    fusion,
    local,
    ...(linear ? { linear } : {}),
    ...(rows ? { rows } : {}),
  });
  // The stage's own clock splits its time among the experts and the fusion.
  return { fused: r.fused, experts: r.experts, timings: { encode, ...r.ms } };
}

/** The experts a set of models holds, in lexical, local, global order (CameRetriever and CameServer). */
export function cameExperts(models: ReadonlyArray<{ readonly config: { readonly experts: readonly CameExpertName[] } }>): CameExpertName[] {
  const have = new Set(models.flatMap((m) => m.config.experts));
  return CAME_EXPERTS.filter((e) => have.has(e));
}

/** Options of {@link encodeCameModels} (and CameRetriever.encode). */
export interface CameModelsEncodeOptions {
  /** Rows of the table to encode (default all). */
  rows?: readonly number[];
  /** SPLADE weights kept per row (the largest). */
  maxTerms?: number;
  /** The experts to encode (default every expert the models hold). */
  experts?: readonly CameExpertName[];
  /** Called after each encoded batch with the rows done so far. */
  onProgress?: (d: number, t: number) => void;
}

/**
 * Every model's part of the asked-for experts (default all) over rows of a table, merged into one encoding: one pass
 * per model (CameRetriever.encode and CameServer).
 */
export async function encodeCameModels(
  models: readonly CameEncoderModel[],
  table: TokenTable,
  side: 'query' | 'passage',
  options: CameModelsEncodeOptions = {},
): Promise<CameEncoding> {
  const want = options.experts ?? cameExperts(models);
  let out: CameEncoding = { rows: options.rows?.length ?? table.size };
  for (const m of models) {
    const experts = m.config.experts.filter((e) => want.includes(e));
    if (!experts.length) continue;
    const enc = await encodeCame(m, table, {
      side,
      experts,
      ...(options.rows ? { rows: options.rows } : {}),
      ...(options.maxTerms ? { maxTerms: options.maxTerms } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    out = { ...out, ...enc };
  }
  return out;
}

/** The indexes of a corpus, one per expert. */
export interface CameIndexes {
  size: number;
  /** Terms kept per passage by the lexical expert (what an added passage is encoded with). */
  passageTerms: number;
  lexical?: SparseIndex;
  local?: TokenIndex;
  global?: DenseIndex;
  queryTerms: number;
}

/**
 * Reads {@link CameRetriever.saveIndex}'s directory for a retriever with `experts` (CameRetriever.loadIndex and
 * CameServer): each expert's index and the corpus ids. ERR_IO when missing, ERR_FORMAT when damaged or made for
 * other experts.
 */
/** The widths of the local (token) and global vectors the models make: what their corpus index must hold. */
export function cameIndexDims(
  models: ReadonlyArray<{
    readonly config: {
      readonly experts: readonly CameExpertName[];
      readonly localDim: number;
      readonly encoder: { readonly hiddenSize: number };
    };
  }>,
): { local?: number; global?: number } {
  const local = models.find((m) => m.config.experts.includes('local'))?.config.localDim;
  const global = models.find((m) => m.config.experts.includes('global'))?.config.encoder.hiddenSize;
  return { ...(local !== undefined ? { local } : {}), ...(global !== undefined ? { global } : {}) };
}

export async function readCameIndex(
  dir: string,
  experts: readonly CameExpertName[],
  dims: { local?: number; global?: number } = {},
): Promise<{ ids: string[]; indexes: CameIndexes }> {
  const { size, queryTerms, passageTerms, ids } = readCameIndexCard(dir, experts);
  const ix: CameIndexes = { size, queryTerms, passageTerms };
  try {
    if (experts.includes('lexical')) ix.lexical = await SparseIndex.load(join(dir, 'lexical.sparse'));
    if (experts.includes('global')) ix.global = await DenseIndex.load(join(dir, 'global.faiss'));
    if (experts.includes('local')) ix.local = await TokenIndex.load(join(dir, 'local'));
    for (const [name, n] of [
      ['lexical', ix.lexical?.size],
      ['global', ix.global?.size],
      ['local', ix.local?.size],
    ] as const)
      if (n !== undefined && n !== ix.size)
        throw new QuorumError('ERR_FORMAT', `${dir}: the ${name} index holds ${n} passages, index.json ${ix.size}`);
    // An index of another model's width would search (the kernels see only their own shapes) and answer nonsense.
    for (const [name, have, want] of [
      ['local', ix.local?.dim, dims.local],
      ['global', ix.global?.dim, dims.global],
    ] as const)
      if (have !== undefined && want !== undefined && have !== want)
        throw new QuorumError('ERR_FORMAT', `${dir}: the ${name} index holds ${have}-wide vectors, the model makes ${want}`);
  } catch (e) {
    disposeCameIndexes(ix);
    throw e;
  }
  return { ids, indexes: ix };
}

/**
 * The global expert's index as int8 codes (DenseIndex `quantization: 'int8'`, a quarter of the bytes;
 * docs/methods/quantization.md): its vectors (rows 0..size-1, as CAME indexes them) fitted and coded into a new index,
 * which replaces the old one (freed).
 */
export async function int8GlobalIndex(ix: CameIndexes): Promise<void> {
  const old = ix.global;
  if (!old || old.info.factory === 'SQ8') return;
  const rows = Array.from({ length: old.size }, (_, i) => i);
  const all = Tensor.wrap(await old.reconstruct(BigInt64Array.from(rows, BigInt)), [old.size, old.dim], 'f32');
  const next = DenseIndex.create({ dim: old.dim, quantization: 'int8' });
  try {
    await next.train(all);
    await next.add(all, rows);
  } catch (e) {
    next.dispose();
    throw e;
  }
  ix.global = next;
  old.dispose();
}

/** Frees every index of a corpus (each when its call in flight ends). */
export function disposeCameIndexes(ix: CameIndexes): void {
  ix.lexical?.dispose();
  ix.local?.dispose();
  ix.global?.dispose();
}
