// `quorum fuse`: fuses TREC run files with any named method of lib/fusion or CAME's (came-<fusion>), writes the fused
// run, and scores it when
// qrels are given. The supervised methods learn their tables from training runs of the same systems on other
// questions (--train-runs, --train-qrels), never from the runs being fused.
import { readQrels, readRun, writeRun } from '../data/trec-files.js';
import { QuorumError } from '../errors.js';
import { type Run, evaluate } from '../eval/ranking.js';
import { type FusionMethod, type FusionMethodDef, type MissingPolicy, fuse, fusionMethod } from '../fusion/fuse.js';
import { trainFusion } from '../fusion/train.js';
import { type Normalization } from '../fusion/normalize.js';
import { CAME_FUSION_METHODS } from '../methods/came/fusion.js';
import { checkCommandOutput } from './outputs.js';
import { table } from './table.js';

interface FuseCommandOptions {
  runs: string[];
  method: string;
  norm?: string;
  missing?: string;
  weights?: number[];
  k?: number;
  depth?: number;
  rrfK?: number;
  phi?: number;
  gamma?: number;
  alpha?: number;
  sigma?: number;
  window?: number;
  segments?: number;
  trainRuns?: string[];
  trainQrels?: string;
  out: string;
  qrels?: string;
  metrics: string[];
}

const SUPERVISED: readonly string[] = ['bayesfuse', 'mapfuse', 'posfuse', 'probfuse', 'segfuse', 'slidefuse'];

/** A --method name: lib/fusion's, or CAME's as came-<fusion>. */
function methodNamed(name: string): FusionMethodDef {
  const came = Object.values(CAME_FUSION_METHODS).find((m) => m.name === name);
  return came ?? fusionMethod(name as FusionMethod);
}

export async function fuseCommand(o: FuseCommandOptions): Promise<void> {
  if (o.runs.length < 1) throw new QuorumError('ERR_ARG', 'give at least one run file');
  checkCommandOutput(o.out, 'run');
  if (o.method === 'muf' || o.method === 'muf-sparse')
    throw new QuorumError(
      'ERR_ARG',
      `${o.method} weighs each run by a per-question confidence that run files do not carry: use \`quorum muf search\` or \`quorum eval --muf\``,
    );
  const method = methodNamed(o.method);
  const supervised = SUPERVISED.includes(o.method);
  if (supervised !== (o.trainRuns !== undefined) || (o.trainRuns !== undefined) !== (o.trainQrels !== undefined))
    throw new QuorumError(
      'ERR_ARG',
      supervised
        ? `${o.method} is supervised: give --train-runs (one run file per input run, on training questions) and --train-qrels`
        : `--train-runs and --train-qrels go together, with a supervised method (${SUPERVISED.join(', ')})`,
    );
  if (o.trainRuns && o.trainRuns.length !== o.runs.length)
    throw new QuorumError(
      'ERR_ARG',
      `--train-runs names ${o.trainRuns.length} files for ${o.runs.length} input runs: one per input run, in the same order`,
    );
  // Every file is read first: a bad qrels or run file fails before anything is written.
  const qrels = o.qrels ? await readQrels(o.qrels) : undefined;
  const runs: Run[] = [];
  for (const f of o.runs) runs.push(await readRun(f));
  let trained;
  if (o.trainRuns && o.trainQrels) {
    const trainQrels = await readQrels(o.trainQrels);
    const trainRuns: Run[] = [];
    for (const f of o.trainRuns) trainRuns.push(await readRun(f));
    trained = trainFusion(method, trainRuns, trainQrels, { segments: o.segments });
  }
  const fused = fuse(runs, method, {
    norm: o.norm as Normalization | undefined,
    missing: o.missing as MissingPolicy | undefined,
    weights: o.weights,
    k: o.k,
    depth: o.depth,
    rrfK: o.rrfK,
    phi: o.phi,
    gamma: o.gamma,
    alpha: o.alpha,
    sigma: o.sigma,
    window: o.window,
    segments: o.segments,
    trained,
  });
  writeRun(o.out, fused, o.method.replace(/\W/g, '_'));
  console.log(`fused ${o.runs.length} runs with ${o.method} into ${o.out} (${fused.size} queries)`);
  if (qrels) {
    const rows = [
      ...o.runs.map((f, i) => ({ run: f, ...evaluate(runs[i]!, qrels, o.metrics).mean })),
      { run: `fused (${o.method})`, ...evaluate(fused, qrels, o.metrics).mean },
    ];
    table(rows);
  }
}
