// A value a live server swaps with no downtime (docs/api.md#swapping-a-live-index): an index, a model, a method's
// directory, or a server's whole state. Requests take the current value for as long as they run (use); a swap puts
// the new value in place at once, so requests that start later see it, while requests in flight finish on the old
// one, which is disposed when the last of them ends. JavaScript runs one callback at a time, so putting the new
// value in place is atomic without a lock; what needs care is when the old value may be freed.
import { QuorumError } from './errors.js';
import { checkOptions, optionKeys } from './validate.js';

/** How {@link Live} frees a value it no longer serves. */
export interface LiveOptions<T> {
  /** Frees a retired value; default: its `dispose()` method, when it has one. */
  dispose?: (value: T) => void | Promise<void>;
}

/** What {@link Live.stats} reports. */
export interface LiveStats {
  /** 1 for the first value, one more at each swap. */
  version: number;
  /** Calls of {@link Live.use} running now, on any version. */
  inFlight: number;
  /** Retired versions that still serve calls begun before their swap. */
  retiring: number;
  /** Whether a {@link Live.refresh} is building a new value. */
  refreshing: boolean;
}

const liveKeys = optionKeys<LiveOptions<unknown>>()(['dispose']);

interface Generation<T> {
  value: T;
  version: number;
  inFlight: number;
  retired: boolean;
  freed?: Promise<void>;
  resolveDrained?: () => void;
}

function defaultDispose(value: unknown): void | Promise<void> {
  const d = (value as { dispose?: unknown } | null)?.dispose;
  if (typeof d === 'function') return (d as () => void | Promise<void>).call(value);
}

/**
 * A value swapped atomically while requests use it.
 *
 * @example
 * const live = new Live(await DenseIndex.load('index.faiss'));
 * // each request:
 * const hits = await live.use((index) => index.search(q, 10));
 * // an admin task: build the next index in the background, then swap; requests in flight finish on the old one
 * await live.refresh(() => DenseIndex.load('index-new.faiss'));
 */
export class Live<T> {
  private head: Generation<T>;
  private readonly retiring = new Set<Generation<T>>();
  private readonly disposeValue: (value: T) => void | Promise<void>;
  private building = false;
  private closed = false;

  constructor(value: T, options: LiveOptions<T> = {}) {
    checkOptions(options, liveKeys, 'Live options');
    if (options.dispose !== undefined && typeof options.dispose !== 'function')
      throw new QuorumError('ERR_ARG', 'dispose must be a function');
    this.disposeValue = options.dispose ?? defaultDispose;
    this.head = { value, version: 1, inFlight: 0, retired: false };
  }

  /** The version now served: 1, then one more at each swap. */
  get version(): number {
    return this.head.version;
  }

  /**
   * The value served now, without holding it: for counters and descriptions, never for work that awaits (a swap
   * may free it meanwhile; use {@link use}).
   */
  peek(): T {
    return this.head.value;
  }

  /**
   * Runs `fn` on the current value and keeps that value alive until `fn`'s promise settles, whatever is swapped in
   * meanwhile. ERR_DISPOSED after {@link close}.
   */
  async use<R>(fn: (value: T, version: number) => R | Promise<R>): Promise<R> {
    if (typeof fn !== 'function') throw new QuorumError('ERR_ARG', 'use needs a function');
    if (this.closed) throw new QuorumError('ERR_DISPOSED', 'this Live value is closed');
    const g = this.head;
    g.inFlight++;
    try {
      return await fn(g.value, g.version);
    } finally {
      g.inFlight--;
      if (g.retired && g.inFlight === 0) g.resolveDrained?.();
    }
  }

  /**
   * Serves `next` from now on; resolves once the previous value has been freed, after the calls that were using it
   * ended (rejects with the error of its dispose, if any: `next` is in place all the same). ERR_DISPOSED after
   * {@link close} (then `next` stays the caller's).
   */
  async swap(next: T): Promise<void> {
    if (this.closed) throw new QuorumError('ERR_DISPOSED', 'this Live value is closed');
    // Swapping the served value for itself would retire, and so dispose, what keeps serving (issue 65).
    if (next === this.head.value) throw new QuorumError('ERR_ARG', 'swap needs a new value: this one is already served');
    const old = this.head;
    this.head = { value: next, version: old.version + 1, inFlight: 0, retired: false };
    return this.retire(old);
  }

  /**
   * Builds the next value in the background with `build` and swaps it in; the current value serves meanwhile. One
   * refresh at a time: another while one runs is ERR_STATE. When `build` fails, nothing changes and its error is
   * thrown. Resolves with the new version once the old value has been freed.
   */
  async refresh(build: () => T | Promise<T>): Promise<number> {
    if (typeof build !== 'function') throw new QuorumError('ERR_ARG', 'refresh needs a function that builds the next value');
    if (this.closed) throw new QuorumError('ERR_DISPOSED', 'this Live value is closed');
    if (this.building) throw new QuorumError('ERR_STATE', 'a refresh is already running');
    this.building = true;
    let next: T;
    try {
      next = await build();
    } finally {
      this.building = false;
    }
    if (this.closed) {
      await this.disposeValue(next);
      throw new QuorumError('ERR_DISPOSED', 'this Live value was closed while the refresh built its value');
    }
    await this.swap(next);
    return this.head.version;
  }

  /** Counters for a health route. */
  stats(): LiveStats {
    let inFlight = this.head.inFlight;
    for (const g of this.retiring) inFlight += g.inFlight;
    return { version: this.head.version, inFlight, retiring: this.retiring.size, refreshing: this.building };
  }

  /**
   * Stops serving: later {@link use} calls are ERR_DISPOSED; resolves once every value has been freed, after the
   * calls in flight ended. Calling it again waits for the same.
   */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      void this.retire(this.head).catch(() => undefined);
    }
    await Promise.all([...this.retiring].map((g) => g.freed));
    await this.head.freed;
  }

  private retire(g: Generation<T>): Promise<void> {
    g.retired = true;
    this.retiring.add(g);
    const drained = g.inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (g.resolveDrained = resolve));
    g.freed = drained.then(() => this.disposeValue(g.value)).finally(() => this.retiring.delete(g));
    return g.freed;
  }
}
