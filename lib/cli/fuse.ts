// `quorum fuse`: fuses TREC run files with any method of lib/fusion, writes the fused run, and scores it when
// qrels are given.
import { readQrels, readRun, writeRun } from '../data/trec-files.js';
import { QuorumError } from '../errors.js';
import { type Run, evaluate } from '../eval/ranking.js';
import { type FusionMethod, type MissingPolicy, fuse } from '../fusion/fuse.js';
import { type Normalization } from '../fusion/normalize.js';
import { table } from './table.js';

export interface FuseCommandOptions {
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
  out: string;
  qrels?: string;
  metrics: string[];
}

export async function fuseCommand(o: FuseCommandOptions): Promise<void> {
  if (o.runs.length < 1) throw new QuorumError('ERR_ARG', 'give at least one run file');
  // The qrels are read first: a bad qrels file fails before anything is written.
  const qrels = o.qrels ? await readQrels(o.qrels) : undefined;
  const runs: Run[] = [];
  for (const f of o.runs) runs.push(await readRun(f));
  const fused = fuse(runs, o.method as FusionMethod, {
    norm: o.norm as Normalization | undefined,
    missing: o.missing as MissingPolicy | undefined,
    weights: o.weights,
    k: o.k,
    depth: o.depth,
    rrfK: o.rrfK,
    phi: o.phi,
    gamma: o.gamma,
    alpha: o.alpha,
  });
  writeRun(o.out, fused, o.method.replace(/\W/g, '_'));
  console.log(`fused ${o.runs.length} runs with ${o.method} into ${o.out} (${fused.size} queries)`);
  if (qrels) {
    const rows = [...o.runs.map((f, i) => ({ run: f, ...evaluate(runs[i]!, qrels, o.metrics).mean })), { run: `fused (${o.method})`, ...evaluate(fused, qrels, o.metrics).mean }];
    table(rows);
  }
}
