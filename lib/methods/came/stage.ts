// CAME's search stage as one native call (native/kernels/came_search.h, docs/methods/came.md#serving): the encoded
// questions' top-K from every expert (SparseIndex, the token index's centroids and MaxSim, the global vectors) and
// their fusion in one task off the event loop, instead of a call per expert and a fusion on the main thread.
// CameRetriever.search, CameServer.search and TokenIndex.search all go through it; fuseExperts (fusion.ts) is the
// fusion's reference.
import { QuorumError, awaitNative, callNative } from '../../errors.js';
import type { DenseIndex } from '../../dense-index.js';
import { type NativeTensorHandle } from '../../native.js';
import { cameSearchBindings, type CameSearchResultArg } from '../../bindings/came_search_bindings.js';
import { nativeSparseIndex, type SparseIndex } from '../../sparse-index.js';
import { sparseTensors } from '../../splade.js';
import { Operands } from '../../operand.js';
import { Tensor } from '../../tensor.js';
import type { CameEncoding } from './encode.js';
import type { CameFusion, Hit, LinearFusion } from './fusion.js';
import type { CameExpertName } from './format.js';

/** One expert's part of the plan, as native/napi/came_search_bindings.cc reads it. */
export type StagePart =
  | { kind: 'lexical'; index: unknown; offsets: NativeTensorHandle; indices: NativeTensorHandle; values: NativeTensorHandle }
  | {
      kind: 'local';
      index: unknown;
      tokens: NativeTensorHandle;
      lengths: NativeTensorHandle;
      queries: NativeTensorHandle;
      queryLengths: NativeTensorHandle;
      nprobe: number;
      keep: number;
    }
  | { kind: 'global'; corpus: NativeTensorHandle; queries: NativeTensorHandle };

/** The local expert's settings (TokenSearchOptions): candidates re-scored exactly, centroids probed. */
export interface LocalOptions {
  candidates?: number | 'all';
  nprobe?: number;
}

/** What the stage searches: a corpus's indexes by expert. */
interface StageIndexes {
  size: number;
  lexical?: SparseIndex;
  /** The local expert's index (a TokenIndex), by what the stage asks of it. */
  local?: { stagePart(questions: NonNullable<CameEncoding['local']>, k: number, options: LocalOptions): StagePart };
  global?: DenseIndex;
}

/** The stage's result: each question's fused list, each expert's lists, and each step's time in ms. */
interface StageResult {
  fused: Hit[][];
  experts: Partial<Record<CameExpertName, Hit[][]>>;
  ms: Partial<Record<CameExpertName | 'fuse', number>>;
}

/** The global expert's passage vectors as a core tensor, read once per DenseIndex (its rows are corpus rows 0..n-1). */
const globalCache = new WeakMap<DenseIndex, Tensor<'f32'>>();

async function globalVectors(index: DenseIndex): Promise<Tensor<'f32'>> {
  const held = globalCache.get(index);
  if (held && !held.disposed && held.shape[0] === index.size) return held;
  const n = index.size;
  // The global expert is searched exactly by inner product whatever the saved index's factory (Quorum builds Flat).
  const vectors = await index.reconstruct(BigInt64Array.from({ length: n }, (_, i) => BigInt(i)));
  const t = Tensor.wrap(vectors, [n, index.dim], 'f32');
  globalCache.set(index, t);
  return t;
}

/** The plan's part for one expert over the encoded questions. */
async function partFor(
  ix: StageIndexes,
  expert: CameExpertName,
  enc: CameEncoding,
  batch: number,
  local: LocalOptions,
  K: number,
): Promise<StagePart> {
  if (expert === 'lexical') {
    if (!ix.lexical || !enc.lexical) throw new QuorumError('ERR_STATE', 'no lexical index or encoding');
    const [o, i, v] = sparseTensors(Operands.borrowed, enc.lexical);
    return { kind: 'lexical', index: nativeSparseIndex(ix.lexical), offsets: o.handle, indices: i.handle, values: v.handle };
  }
  if (expert === 'local') {
    if (!ix.local || !enc.local) throw new QuorumError('ERR_STATE', 'no token index or local encoding');
    return ix.local.stagePart(enc.local, K, local);
  }
  if (!ix.global || !enc.global) throw new QuorumError('ERR_STATE', 'no global index or encoding');
  const corpus = await globalVectors(ix.global);
  const G = corpus.shape[1]!;
  if (enc.global.length !== batch * G)
    throw new QuorumError('ERR_SHAPE', `the global encoding holds ${enc.global.length} values for ${batch} questions of ${G}`);
  return { kind: 'global', corpus: corpus.handle, queries: Tensor.wrap(enc.global, [batch, G], 'f32').handle };
}

/**
 * Each asked-for expert's top `expertK` for `batch` encoded questions and their fusion's top `k`, in one native call.
 * `rows`: the only corpus rows that may be returned (distinct, ascending).
 */
export async function cameSearch(
  ix: StageIndexes,
  experts: readonly CameExpertName[],
  enc: CameEncoding,
  batch: number,
  o: { k: number; expertK: number; fusion: CameFusion; linear?: LinearFusion; rows?: Int32Array; local?: LocalOptions },
): Promise<StageResult> {
  const parts: StagePart[] = [];
  for (const e of experts) parts.push(await partFor(ix, e, enc, batch, o.local ?? {}, o.expertK));
  const plan = {
    batch,
    passages: ix.size,
    k: o.k,
    expertK: o.expertK,
    fusion: o.fusion,
    ...(o.linear ? { weights: o.linear.weights, bias: o.linear.bias } : {}),
    rows: o.rows ? Tensor.wrap(o.rows, [o.rows.length], 'i32').handle : null,
    experts: parts,
  };
  const r = await awaitNative(callNative(() => cameSearchBindings().cameSearch(plan, true)) as Promise<CameSearchResultArg>);
  const K = o.expertK;
  const ids = Tensor.fromHandle<'i32'>(r.expertIds).data;
  const scores = Tensor.fromHandle<'f32'>(r.expertScores).data;
  const counts = Tensor.fromHandle<'i32'>(r.expertCounts).data;
  const lists: Partial<Record<CameExpertName, Hit[][]>> = {};
  const ms: StageResult['ms'] = {};
  experts.forEach((e, x) => {
    lists[e] = Array.from({ length: batch }, (_, b) => {
      const at = (x * batch + b) * K;
      return Array.from({ length: counts[x * batch + b]! }, (_, j) => ({ id: ids[at + j]!, score: scores[at + j]! }));
    });
    ms[e] = r.ms[x]!;
  });
  ms.fuse = r.ms[experts.length]!;
  const fids = Tensor.fromHandle<'i32'>(r.ids).data;
  const fcounts = Tensor.fromHandle<'i32'>(r.counts).data;
  const fused = Array.from({ length: batch }, (_, b) =>
    Array.from({ length: fcounts[b]! }, (_, j) => ({ id: fids[b * o.k + j]!, score: r.scores[b * o.k + j]! })),
  );
  return { fused, experts: lists, ms };
}
