// `quorum encode`: a trained model's vectors of a BEIR corpus, as a raw float32 file with its ids (what `quorum index
// dense` reads) and an exact DenseIndex (what `quorum search` reads).
import { join } from 'node:path';

import { readBeirCorpus } from '../data/beir.js';
import { DenseIndex } from '../dense-index.js';
import { QuorumError } from '../errors.js';
import { POOLINGS, type Pooling } from '../models/config.js';
import type { PretrainedOptions } from '../models/hf.js';
import { Retriever } from '../models/retriever.js';
import { progress } from '../progress.js';
import { replaceDirectory, writeFileAtomic } from '../data/files.js';


/** --pooling / --normalize as options for a Hugging Face directory (a Quorum directory refuses them). */
export function hfModelOptions(o: { pooling?: string; normalize?: boolean }): PretrainedOptions {
  if (o.pooling !== undefined && !POOLINGS.includes(o.pooling as Pooling)) throw new QuorumError('ERR_ARG', `--pooling must be cls, mean or max, got '${o.pooling}'`);
  return { ...(o.pooling !== undefined ? { pooling: o.pooling as Pooling } : {}), ...(o.normalize !== undefined ? { normalize: o.normalize } : {}) };
}

export async function encodeCommand(o: { model: string; data: string; out: string; pooling?: string; normalize?: boolean }, log: (line: string) => void = console.log): Promise<void> {
  const model = await Retriever.load(o.model, hfModelOptions(o));
  const corpus = await readBeirCorpus(o.data);
  const bar = progress('encode', corpus.length);
  let done = 0;
  const t0 = performance.now();
  const vectors = await model.encodePassages(corpus, {
    onProgress: (n) => {
      bar.tick(n - done);
      done = n;
    },
  });
  bar.stop();
  const seconds = (performance.now() - t0) / 1000;
  const d = vectors.data;
  const ids = corpus.map((p) => p.id).join('\n') + '\n';
  // The index stores row numbers as its 64-bit ids; the string ids go beside it, as `quorum index dense` does.
  const index = DenseIndex.create({ dim: model.dim });
  await index.add(vectors, Array.from({ length: corpus.length }, (_, i) => i));
  // The four files go in together (a crash leaves the old output or the new one).
  await replaceDirectory(
    o.out,
    async (tmp) => {
      writeFileAtomic(join(tmp, 'vectors.f32'), new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
      writeFileAtomic(join(tmp, 'ids.txt'), Buffer.from(ids));
      await index.save(join(tmp, 'index.qdx'));
      writeFileAtomic(join(tmp, 'index.qdx.ids'), Buffer.from(ids));
    },
    { keepOthers: true },
  );
  log(`encoded ${corpus.length} passages (${model.dim}-d) in ${seconds.toFixed(1)} s into ${o.out}: vectors.f32, ids.txt, index.qdx`);
}
