// `--nproc N`: the command started again as N local ranks of one data-parallel group, as torchrun does
// (docs/guides/distributed.md): each child gets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (a free
// loopback port), joins the group and trains its part of every batch. The first rank to fail stops the others, and
// the launcher's one-line error names it.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';

import { QuorumError } from '../errors.js';
import { ProcessGroup } from '../models/process-group.js';

/** A TCP port free on loopback now (for rank 0's store). */
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** `argv` without its `--nproc N` / `--nproc=N`. */
function withoutNproc(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--nproc') i++;
    else if (!argv[i]!.startsWith('--nproc=')) out.push(argv[i]!);
  }
  return out;
}

/** Whether this process is a rank of a group (started by {@link launchRanks}, or by hand with WORLD_SIZE on each machine). */
function inGroup(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.WORLD_SIZE !== undefined && env.WORLD_SIZE !== '1';
}

/**
 * Runs this CLI's `args` as `n` ranks on this machine and waits for them; resolves when all exit 0. When one exits
 * otherwise, the others are stopped (SIGTERM, then SIGKILL after 10 s) and the call rejects with ERR_DISTRIBUTED
 * naming that rank.
 */
async function launchRanks(n: number, args: readonly string[], log: (line: string) => void): Promise<void> {
  const port = await freeLoopbackPort();
  log(`starting ${n} ranks on this machine (store at 127.0.0.1:${port})`);
  const children: ChildProcess[] = [];
  let failed: string | undefined;
  const stopAll = () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    setTimeout(() => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL')), 10_000).unref();
  };
  const exits = Array.from({ length: n }, (_, rank) => {
    // The cores shared out (each rank's libtorch would otherwise take them all: n times oversubscribed).
    const threads = process.env.QUORUM_THREADS ?? String(Math.max(1, Math.floor(availableParallelism() / n)));
    const env = {
      ...process.env,
      RANK: String(rank),
      LOCAL_RANK: String(rank),
      WORLD_SIZE: String(n),
      MASTER_ADDR: '127.0.0.1',
      MASTER_PORT: String(port),
      QUORUM_THREADS: threads,
    };
    const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, ...args], { env, stdio: 'inherit' });
    children.push(child);
    return new Promise<void>((resolve) =>
      child.on('exit', (code, signal) => {
        if ((code !== 0 || signal) && failed === undefined) {
          failed = `rank ${rank} of ${n} ${signal ? `was killed by ${signal}` : `exited with code ${code}`}`;
          stopAll();
        }
        resolve();
      }),
    );
  });
  // The launcher stopped (Ctrl-C, a supervisor's SIGTERM): its ranks stop with it.
  const forward = () => stopAll();
  process.once('SIGINT', forward).once('SIGTERM', forward);
  try {
    await Promise.all(exits);
  } finally {
    process.off('SIGINT', forward).off('SIGTERM', forward);
  }
  if (failed) throw new QuorumError('ERR_DISTRIBUTED', `${failed}; the other ranks were stopped`);
}

/**
 * A command's body run as data-parallel ranks: with `nproc` above 1 (and not already a rank) this process launches
 * them and resolves to undefined; in a rank (WORLD_SIZE set) it joins the group and runs `body` with it, logging
 * through rank 0 only; otherwise it runs `body` alone.
 */
export async function asRanks<T>(
  nproc: number | undefined,
  log: (line: string) => void,
  body: (group: ProcessGroup | undefined, log: (line: string) => void) => Promise<T>,
): Promise<T | undefined> {
  if (nproc !== undefined && (!Number.isInteger(nproc) || nproc < 1))
    throw new QuorumError('ERR_RANGE', `--nproc must be at least 1, got ${nproc}`);
  if (nproc !== undefined && nproc > 1 && !inGroup()) {
    await launchRanks(nproc, withoutNproc(process.argv.slice(2)), log);
    return undefined;
  }
  const group = inGroup() ? await ProcessGroup.join() : undefined;
  try {
    return await body(group, (group?.rank ?? 0) === 0 ? log : () => {});
  } finally {
    group?.dispose();
  }
}
