// `quorum encode`: a trained model's vectors of a BEIR corpus, as a raw float32 file with its ids (what `quorum index
// dense` reads) and an exact DenseIndex (what `quorum search` reads).
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { readBeirCorpus } from '../data/beir.js';
import { DenseIndex } from '../dense-index.js';
import { QuorumError } from '../errors.js';
import { POOLINGS, type Pooling } from '../models/config.js';
import type { PretrainedOptions } from '../models/hf.js';
import { Retriever } from '../models/retriever.js';
import { progress } from '../progress.js';
import { type OutputKind, jsonCardIn, replaceDirectory, writeFileAtomic } from '../data/files.js';
import { type Quantization, quantize } from '../quantized.js';
import { asRanks } from './launch.js';
import { rankPart, type ProcessGroup } from '../models/process-group.js';
import { Tensor } from '../tensor.js';

/** --pooling / --normalize as options for a Hugging Face directory (a Quorum directory refuses them). */
export function hfModelOptions(o: { pooling?: string; normalize?: boolean }): PretrainedOptions {
  if (o.pooling !== undefined && !POOLINGS.includes(o.pooling as Pooling))
    throw new QuorumError('ERR_ARG', `--pooling must be cls, mean or max, got '${o.pooling}'`);
  return {
    ...(o.pooling !== undefined ? { pooling: o.pooling as Pooling } : {}),
    ...(o.normalize !== undefined ? { normalize: o.normalize } : {}),
  };
}

/**
 * `quorum encode`: with `nproc` (or as a rank of a group started on several machines) each rank encodes its
 * contiguous part of the corpus and rank 0 writes the vectors and the index of the whole corpus, in corpus order.
 */
/** An earlier `quorum encode --out` directory: its four files, which a new run replaces together. */
const encodeOutput: OutputKind = {
  card: 'index.qdx.ids',
  owns: (dir) => ['vectors.f32', 'ids.txt', 'index.qdx'].every((f) => statSync(join(dir, f), { throwIfNoEntry: false })?.isFile()),
};

export async function encodeCommand(
  o: { model: string; data: string; out: string; pooling?: string; normalize?: boolean; nproc?: number; quantize?: string },
  log: (line: string) => void = console.log,
): Promise<void> {
  if (o.quantize !== undefined && o.quantize !== 'int8' && o.quantize !== 'binary')
    throw new QuorumError('ERR_ARG', `--quantize must be int8 or binary, got '${o.quantize}'`);
  await asRanks(o.nproc, log, (group, rankLog) => encode(o, rankLog, group));
}

async function encode(
  o: { model: string; data: string; out: string; pooling?: string; normalize?: boolean; quantize?: string },
  log: (line: string) => void,
  group: ProcessGroup | undefined,
): Promise<void> {
  const model = await Retriever.load(o.model, hfModelOptions(o));
  const corpus = await readBeirCorpus(o.data);
  if (group && corpus.length < group.size)
    throw new QuorumError('ERR_ARG', `${corpus.length} passages cannot be split across ${group.size} ranks`);
  const mine = group ? rankPart(corpus, group.rank, group.size) : corpus;
  const bar = group && group.rank !== 0 ? undefined : progress('encode', mine.length);
  let done = 0;
  const t0 = performance.now();
  const own = await model.encodePassages(mine, {
    onProgress: (n) => {
      bar?.tick(n - done);
      done = n;
    },
  });
  bar?.stop();
  // The ranks' parts in rank order are the corpus in its order.
  const vectors = group ? Tensor.wrap(await group.gatherRows(own.data, model.dim), [corpus.length, model.dim], 'f32') : own;
  if (group && group.rank !== 0) return;
  const seconds = (performance.now() - t0) / 1000;
  const d = vectors.data;
  const ids = corpus.map((p) => p.id).join('\n') + '\n';
  // The index stores row numbers as its 64-bit ids; the string ids go beside it, as `quorum index dense` does.
  const index = DenseIndex.create({ dim: model.dim });
  await index.add(
    vectors,
    Array.from({ length: corpus.length }, (_, i) => i),
  );
  const quantized = o.quantize ? await quantize(vectors, o.quantize as Quantization) : undefined;
  // The files go in together (a crash leaves the old output or the new one).
  await replaceDirectory(
    o.out,
    async (tmp) => {
      writeFileAtomic(join(tmp, 'vectors.f32'), new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
      writeFileAtomic(join(tmp, 'ids.txt'), Buffer.from(ids));
      await index.save(join(tmp, 'index.qdx'));
      writeFileAtomic(join(tmp, 'index.qdx.ids'), Buffer.from(ids));
      if (quantized) {
        await quantized.save(join(tmp, 'quantized'));
        await vectors.save(join(tmp, 'vectors.qtns'));
      }
    },
    { keepOthers: true, kind: encodeOutput },
  );
  // An earlier run's quantized vectors would not match these ones: a run without --quantize removes them.
  if (!quantized) removeStaleQuantized(o.out);
  log(
    `encoded ${corpus.length} passages (${model.dim}-d) in ${seconds.toFixed(1)} s into ${o.out}: vectors.f32, ids.txt, index.qdx` +
      (quantized ? `, quantized/ (${o.quantize}, ${(quantized.bytes / 2 ** 20).toFixed(1)} MiB) and vectors.qtns` : ''),
  );
  quantized?.dispose();
}

/** Removes `quantized/` (when its card says it is ours) and `vectors.qtns` from an encode output. */
function removeStaleQuantized(out: string): void {
  const card = jsonCardIn(join(out, 'quantized'), 'quantized.json');
  if (card?.format === 'quorum-quantized') rmSync(join(out, 'quantized'), { recursive: true, force: true });
  if (statSync(join(out, 'vectors.qtns'), { throwIfNoEntry: false })?.isFile()) rmSync(join(out, 'vectors.qtns'), { force: true });
}
