// DPR-MUF's search as separate steps in TypeScript (the path MufRetriever.search took before it ran through the native
// stage, lib/methods/muf/stage.ts): per expert its libtorch question vectors, scoreTopK's top-L, the libtorch heads'
// scores of those L, ensembleMI's confidence at the calibrated temperature (or FamiliarityBank.probability's P(own
// task)), then the fusion registry's MUF fusion (fuse with mufFusion: a passage missing from an expert's list takes
// that list's minimum; ties in corpus-id order; the oracle fuses the question's own task's experts alone).
// test/muf.test.ts checks MufRetriever.search against it.
import { scoreTopK } from '../../lib/dense.js';
import type { ScoredDoc } from '../../lib/eval/ranking.js';
import { fuse } from '../../lib/fusion/fuse.js';
import type { MufFusion, MufHits } from '../../lib/methods/muf/format.js';
import { mufFusion } from '../../lib/methods/muf/fusion.js';
import type { MufRetriever } from '../../lib/methods/muf/retriever.js';
import { ensembleMI } from '../../lib/uncertainty.js';

/** The reference's hits and confidences for `queries`, with the weights of `fusion` (`tasks` for 'oracle'). */
export async function referenceMufSearch(muf: MufRetriever, queries: readonly string[], k: number, fusion: MufFusion, tasks?: ReadonlyArray<string | undefined>): Promise<MufHits[]> {
  const B = queries.length;
  const L = Math.min(muf.topL, muf.corpusIds.length);
  const runs: Array<Map<string, ScoredDoc[]>> = [];
  const conf: Float32Array[] = [];
  for (let x = 0; x < muf.experts.length; x++) {
    const e = muf.expertParts(x);
    const q = await e.model.encodeQueries(queries, { task: e.task });
    try {
      const top = await scoreTopK(q, e.passages, L);
      const run = new Map<string, ScoredDoc[]>();
      for (let b = 0; b < B; b++) run.set(String(b), top.hits(b).map((h) => ({ id: muf.corpusIds[h.id]!, score: h.score })));
      runs.push(run);
      if (fusion === 'muf' && muf.familiarityCalibrated) conf.push(await e.familiarity!.probability(q.data.slice(), e.calibration!.familiarity!));
      else if (fusion === 'muf' || fusion === 'muf-mi') {
        if (e.heads!.members === 1) conf.push(new Float32Array(B).fill(1));
        else {
          const z = await e.heads!.score(q, e.passages, top.ids, L);
          const r = await ensembleMI(z, { temperature: e.calibration!.temperature });
          conf.push(r.confidence.data.slice());
          r.mi.dispose();
          r.confidence.dispose();
          z.dispose();
        }
      } else conf.push(new Float32Array(B).fill(1));
    } finally {
      q.dispose();
    }
  }
  const weights = new Map<string, number[]>();
  for (let b = 0; b < B; b++) {
    const w = muf.experts.map((e, x) => (fusion === 'oracle' ? (e.task === tasks![b] ? 1 : 0) : conf[x]![b]!));
    // A query whose task has no expert (oracle), or whom every expert gives confidence 0: weigh all equally.
    weights.set(String(b), w.some((v) => v > 0) ? w : w.map(() => 1));
  }
  if (fusion !== 'oracle') {
    const fused = fuse(runs, mufFusion, { confidence: weights, depth: k });
    return Array.from({ length: B }, (_, b) => ({ hits: fused.get(String(b)) ?? [], confidence: weights.get(String(b))! }));
  }
  // The oracle: the question's own task's experts alone, fused with equal weights (every expert where none has it).
  return Array.from({ length: B }, (_, b) => {
    const w = weights.get(String(b))!;
    const own = runs.filter((_, x) => w[x]! > 0).map((run) => new Map([['q', run.get(String(b)) ?? []]]));
    return { hits: fuse(own, mufFusion, { confidence: own.map(() => 1), depth: k }).get('q') ?? [], confidence: w };
  });
}
