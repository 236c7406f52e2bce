// `quorum index` (BM25 over a BEIR corpus; a faiss DenseIndex over a vectors file) and `quorum search` (either
// index, into a TREC run file).
import { join } from 'node:path';

import { Bm25Index } from '../bm25/bm25.js';
import { readBeirCorpus, readBeirQueries } from '../data/beir.js';
import { readFileBytes, writeFileAtomic } from '../data/files.js';
import { checkCommandOutput } from './outputs.js';
import { readQrels, writeRun } from '../data/trec-files.js';
import { DenseIndex, type Mips } from '../dense-index.js';
import { QuorumError } from '../errors.js';
import { MetadataTable, compileFilter, type Filter } from '../filter.js';
import { type ScoredDoc } from '../eval/ranking.js';
import { inBatches } from '../progress.js';

/** Queries per native search call in the CLI. */
export const BATCH = 256;

/** BM25 top-k of every query, searched in batches behind a progress bar. */
export async function bm25Search(
  index: Bm25Index,
  queries: ReadonlyArray<{ id: string; text: string }>,
  k: number,
  label: string,
  rows?: Int32Array,
): Promise<Map<string, ScoredDoc[]>> {
  const run = new Map<string, ScoredDoc[]>();
  await inBatches(label, queries.length, BATCH, async (start, end) => {
    const batch = queries.slice(start, end);
    const hits = await index.search(
      batch.map((q) => q.text),
      k,
      rows ? { rows } : {},
    );
    batch.forEach((q, j) => run.set(q.id, hits[j] ?? []));
  });
  return run;
}

/** A raw little-endian float32 file of rows x dim, with its ids (one per line). */
function readVectors(path: string, idsPath: string, dim: number): { vectors: Float32Array; ids: string[] } {
  const bytes = readFileBytes(path);
  if (bytes.length % (4 * dim) !== 0)
    throw new QuorumError('ERR_FORMAT', `${path}: ${bytes.length} bytes is not a whole number of ${dim}-float rows`);
  const vectors = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  const ids = new TextDecoder()
    .decode(readFileBytes(idsPath))
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (ids.length !== vectors.length / dim)
    throw new QuorumError('ERR_FORMAT', `${idsPath}: ${ids.length} ids for ${vectors.length / dim} vectors`);
  return { vectors, ids };
}

export async function indexBm25(o: { data: string; out: string; k1: number; b: number }): Promise<void> {
  checkCommandOutput(o.out, 'bm25');
  const corpus = await readBeirCorpus(o.data);
  const index = await Bm25Index.build(
    corpus.map((p) => ({ id: p.id, text: p.title ? `${p.title}. ${p.text}` : p.text })),
    { k1: o.k1, b: o.b },
  );
  index.save(o.out);
  console.log(`indexed ${index.documents} passages with BM25 (k1 ${o.k1}, b ${o.b}) into ${o.out}`);
}

export async function indexDense(o: {
  vectors: string;
  ids: string;
  dim: number;
  factory: string;
  mips: string;
  out: string;
  train?: number;
}): Promise<void> {
  checkCommandOutput(o.out, 'dense');
  const { vectors, ids } = readVectors(o.vectors, o.ids, o.dim);
  const index = DenseIndex.create({ dim: o.dim, factory: o.factory, mips: o.mips as Mips });
  if (!index.info.trained) await index.train(o.train ? vectors.subarray(0, Math.min(o.train, ids.length) * o.dim) : vectors);
  // Dense ids are 64-bit integers: the row numbers; the string ids go into a sidecar `<out>.ids`.
  await inBatches('add   ', ids.length, 10_000, (start, end) =>
    index.add(
      vectors.subarray(start * o.dim, end * o.dim),
      BigInt64Array.from({ length: end - start }, (_, j) => BigInt(start + j)),
    ),
  );
  await index.save(o.out);
  writeFileAtomic(`${o.out}.ids`, Buffer.from(ids.join('\n') + '\n'));
  console.log(`indexed ${ids.length} vectors (${o.factory}, ${o.mips}) into ${o.out} (+ ${o.out}.ids)`);
}

/**
 * `--filter JSON`'s allowed rows of an index whose rows hold `ids`: each row's metadata (its passage's title and
 * corpus.jsonl `metadata`) from the `--data` corpus, by passage id (docs/methods/kernels.md#filtered-search).
 */
async function filterRows(o: { filter?: string; data?: string }, ids: readonly string[]): Promise<Int32Array | undefined> {
  if (o.filter === undefined) return undefined;
  if (!o.data) throw new QuorumError('ERR_ARG', '--filter needs --data DIR: the corpus whose metadata it reads');
  let filter: Filter;
  try {
    filter = JSON.parse(o.filter) as Filter;
  } catch {
    throw new QuorumError('ERR_ARG', `--filter must be JSON, e.g. '{"field":"title","eq":"Paris"}'`);
  }
  const byId = new Map((await readBeirCorpus(o.data)).map((p) => [p.id, { title: p.title, ...p.metadata }]));
  const rows = compileFilter(filter, MetadataTable.from(ids.map((id) => byId.get(id) ?? {})));
  console.log(`filter: ${rows.length.toLocaleString()} of ${ids.length.toLocaleString()} passages`);
  return rows;
}

/** The queries to search: a queries.jsonl, or a BEIR dataset's (those of one qrels split with `split`). */
async function queriesFrom(o: { data?: string; queries?: string; split?: string }): Promise<Array<{ id: string; text: string }>> {
  const path = o.queries ?? (o.data ? `${o.data}/queries.jsonl` : undefined);
  if (!path) throw new QuorumError('ERR_ARG', 'give --queries FILE.jsonl or --data DIR');
  if (o.split !== undefined && !o.data) throw new QuorumError('ERR_ARG', '--split needs --data DIR (it reads DIR/qrels/<split>.tsv)');
  const keep = o.split !== undefined ? await readQrels(join(o.data!, 'qrels', `${o.split}.tsv`)) : undefined;
  const out = (await readBeirQueries(path)).filter((q) => !keep || keep.has(q.id));
  if (keep && out.length === 0) throw new QuorumError('ERR_FORMAT', `no query of ${path} is in the ${o.split} split`);
  return out;
}

export async function searchCommand(o: {
  index: string;
  data?: string;
  queries?: string;
  split?: string;
  queryVectors?: string;
  queryIds?: string;
  k: number;
  out: string;
  efSearch?: number;
  nprobe?: number;
  filter?: string;
}): Promise<void> {
  checkCommandOutput(o.out, 'run');
  const head = new TextDecoder().decode(readFileBytes(o.index).subarray(0, 8));
  let run = new Map<string, ScoredDoc[]>();
  if (head === 'QBM25V01') {
    const index = Bm25Index.load(o.index);
    run = await bm25Search(index, await queriesFrom(o), o.k, 'search', await filterRows(o, index.documentIds));
  } else if (head === 'QDNIDX01') {
    if (!o.queryVectors || !o.queryIds)
      throw new QuorumError('ERR_ARG', 'a dense index searches --query-vectors FILE.f32 with --query-ids FILE');
    const index = await DenseIndex.load(o.index);
    const docIds = new TextDecoder()
      .decode(readFileBytes(`${o.index}.ids`))
      .split('\n')
      .filter(Boolean);
    const rows = await filterRows(o, docIds);
    const allowedIds = rows ? BigInt64Array.from(rows, (r) => BigInt(r)) : undefined;
    const { vectors, ids } = readVectors(o.queryVectors, o.queryIds, index.dim);
    await inBatches('search', ids.length, BATCH, async (start, end) => {
      const top = await index.search(vectors.subarray(start * index.dim, end * index.dim), o.k, {
        efSearch: o.efSearch,
        nprobe: o.nprobe,
        ...(allowedIds ? { allowedIds } : {}),
      });
      for (let j = 0; j < end - start; j++)
        run.set(
          ids[start + j] as string,
          top.hits(j).map((h) => ({ id: docIds[Number(h.id)] ?? String(h.id), score: h.score })),
        );
    });
  } else {
    throw new QuorumError('ERR_FORMAT', `${o.index} is not a Quorum BM25 or dense index`);
  }
  writeRun(o.out, run, 'quorum', o.k);
  console.log(`searched ${run.size} queries (top ${o.k}) into ${o.out}`);
}
