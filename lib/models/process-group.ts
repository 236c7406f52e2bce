// One rank's membership in a data-parallel training group (docs/guides/distributed.md): c10d's TCPStore for the
// rendezvous and Gloo's collectives, from Debian's libtorch. The training steps take it (Retriever.accumulate and
// step with `{ group }`); its own collectives serve the numbers TypeScript sums across ranks.
import { QuorumError, awaitNative, callNative } from '../errors.js';
import { torchBindings } from '../bindings/torch_addon.js';
import type { MaybeAsync } from '../native.js';
import { checkOptions, mustBeArray, mustBeObject, optionKeys } from '../validate.js';

/** Where and how a rank meets the others: the torchrun variables by default. */
export interface GroupOptions {
  /** This process's rank, 0 .. size - 1 (default: `RANK`). */
  rank?: number;
  /** Ranks in the group (default: `WORLD_SIZE`). */
  size?: number;
  /** Rank 0's address, where its store listens (default: `MASTER_ADDR`, else 127.0.0.1). */
  host?: string;
  /** The store's port (default: `MASTER_PORT`, else 29500). */
  port?: number;
  /**
   * How long joining and each collective may wait for the other ranks, in ms (default 60,000): a rank that died or
   * stalled makes the others' calls fail with ERR_DISTRIBUTED after at most this long (at once when its connections
   * close, as a killed process's do).
   */
  timeoutMs?: number;
}

/** The native ProcessGroup of quorum_torch.node (native/napi/process_group_object.cc). */
export interface NativeProcessGroup {
  join(o: Required<GroupOptions>, async: boolean): MaybeAsync<void>;
  info(): { rank: number; size: number };
  allReduce(values: Float32Array, async: boolean): MaybeAsync<Float32Array>;
  broadcast(values: Float32Array, root: number, async: boolean): MaybeAsync<Float32Array>;
  barrier(async: boolean): MaybeAsync<void>;
  gatherRows(values: Float32Array, width: number, async: boolean): MaybeAsync<{ values: Float32Array }>;
  dispose(): void;
}

const groupKeys = optionKeys<GroupOptions>()(['rank', 'size', 'host', 'port', 'timeoutMs']);

function integerIn(v: unknown, lo: number, hi: number, what: string): number {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < lo || n > hi)
    throw new QuorumError(
      typeof n === 'number' && Number.isFinite(n) ? 'ERR_RANGE' : 'ERR_ARG',
      `${what} must be an integer in [${lo}, ${hi}], got ${JSON.stringify(v)}`,
    );
  return n;
}

/** Rank `rank`'s contiguous part of `items` split over `size` ranks (the first `length % size` parts one longer). */
export function rankPart<T>(items: readonly T[], rank: number, size: number): T[] {
  mustBeArray(items, 'items');
  if (!Number.isInteger(size) || size < 1) throw new QuorumError('ERR_RANGE', `size must be a positive integer, got ${String(size)}`);
  if (!Number.isInteger(rank) || rank < 0 || rank >= size)
    throw new QuorumError('ERR_RANGE', `rank must be an integer in [0, ${size}), got ${String(rank)}`);
  const base = Math.floor(items.length / size),
    extra = items.length % size;
  const start = rank * base + Math.min(rank, extra);
  return items.slice(start, start + base + (rank < extra ? 1 : 0));
}

/**
 * The group's settings from `options`, else the environment's torchrun variables (RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT), checked: ERR_ARG naming what is missing or malformed.
 */
export function groupOptions(options: GroupOptions = {}, env: NodeJS.ProcessEnv = process.env): Required<GroupOptions> {
  mustBeObject(options, 'group options');
  checkOptions(options, groupKeys, 'group options');
  const size = integerIn(options.size ?? env.WORLD_SIZE, 1, 4096, 'size (WORLD_SIZE)');
  const rank = integerIn(options.rank ?? env.RANK, 0, size - 1, 'rank (RANK)');
  const host = options.host ?? env.MASTER_ADDR ?? '127.0.0.1';
  if (typeof host !== 'string' || !host || /\s/.test(host))
    throw new QuorumError('ERR_ARG', `host (MASTER_ADDR) must be a host name or address, got ${JSON.stringify(host)}`);
  const port = integerIn(options.port ?? env.MASTER_PORT ?? 29500, 1, 65535, 'port (MASTER_PORT)');
  const timeoutMs = integerIn(options.timeoutMs ?? 60_000, 1, 86_400_000, 'timeoutMs');
  return { rank, size, host, port, timeoutMs };
}

/**
 * A rank of a data-parallel group. Every rank calls the same collectives in the same order (the training steps do);
 * one call at a time.
 *
 * @example
 * const group = await ProcessGroup.join();                 // RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
 * await model.broadcastParameters(group);                  // everyone starts from rank 0's weights
 * await model.accumulate(myPartOfTheBatch, { group });     // scored against every rank's passages
 * await model.step(lr, clip, { group });                   // gradients summed across ranks, then AdamW
 */
export class ProcessGroup {
  private constructor(
    /** @internal */ readonly native: NativeProcessGroup,
    /** This process's rank. */ readonly rank: number,
    /** Ranks in the group. */ readonly size: number,
  ) {}

  /** Whether this build of quorum_torch has Gloo (libgloo-dev at build time). */
  static get available(): boolean {
    return torchBindings().ProcessGroup.available();
  }

  /**
   * Meets the other ranks (off the event loop: it waits until every rank has joined). ERR_DISTRIBUTED when they do
   * not all join within the timeout or rank 0's store cannot be reached; ERR_BACKEND_UNAVAILABLE without Gloo.
   */
  static async join(options: GroupOptions = {}): Promise<ProcessGroup> {
    const o = groupOptions(options);
    const Ctor = torchBindings().ProcessGroup as new () => NativeProcessGroup;
    const native = new Ctor();
    await awaitNative(callNative(() => native.join(o, true)) as Promise<void>);
    return new ProcessGroup(native, o.rank, o.size);
  }

  /** Sums `values` across the ranks, in place; resolves to it. */
  async allReduce(values: Float32Array): Promise<Float32Array> {
    return awaitNative(callNative(() => this.native.allReduce(values, true)) as Promise<Float32Array>);
  }

  /** Overwrites `values` with rank `root`'s (default 0), in place; resolves to it. */
  async broadcast(values: Float32Array, root = 0): Promise<Float32Array> {
    return awaitNative(callNative(() => this.native.broadcast(values, root, true)) as Promise<Float32Array>);
  }

  /**
   * Every rank's rows of `width` values (`values.length / width` of them; the ranks' counts may differ), in rank
   * order: what sharded work puts back together (`quorum encode --nproc`).
   */
  async gatherRows(values: Float32Array, width: number): Promise<Float32Array> {
    return (await awaitNative(callNative(() => this.native.gatherRows(values, width, true)) as Promise<{ values: Float32Array }>)).values;
  }

  /** Resolves once every rank has called it. */
  async barrier(): Promise<void> {
    await awaitNative(callNative(() => this.native.barrier(true)) as Promise<void>);
  }

  /** Leaves the group (its connections close when the last call using them ends); later calls are ERR_STATE. */
  dispose(): void {
    this.native.dispose();
  }
}

/** A `group` option as a ProcessGroup, or undefined without one; ERR_ARG for anything else. */
export function optionalGroup(group: unknown): ProcessGroup | undefined {
  if (group !== undefined && !(group instanceof ProcessGroup)) throw new QuorumError('ERR_ARG', 'group must be a ProcessGroup');
  return group;
}
