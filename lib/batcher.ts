// Turns concurrent single requests into batches for a server: one call of a batched function serves every request
// that arrived within a short window (up to maxBatch), because one B = 64 call of the dense kernel or an encoder
// costs far less than 64 B = 1 calls (docs/results/kernels.md). The queue is bounded, every request has a deadline,
// and an error belongs to the request it came from. docs/api.md#batching-requests.
import { QuorumError } from './errors.js';
import { checkOptions, optionKeys } from './validate.js';

/** Options of {@link RequestBatcher}. */
export interface BatcherOptions {
  /** Requests per batch at most (default 64). */
  maxBatch?: number;
  /** How long the first request of a batch waits for others, in ms (default 2; 0: only those already queued). */
  maxWaitMs?: number;
  /** Requests waiting at most (default 1024); beyond it `submit` rejects at once with ERR_BUSY. */
  maxQueue?: number;
  /** A request not answered within this many ms of its submission rejects with ERR_TIMEOUT (default 10000; 0: none). */
  timeoutMs?: number;
}

/** What {@link RequestBatcher.stats} counts. */
export interface BatcherStats {
  /** Batches run. */
  batches: number;
  /** Requests answered (resolved or rejected by the batch function). */
  requests: number;
  /** Requests refused because the queue was full. */
  refused: number;
  /** Requests that reached their deadline first. */
  timedOut: number;
  /** The largest batch run. */
  largestBatch: number;
}

const batcherKeys = optionKeys<BatcherOptions>()(['maxBatch', 'maxWaitMs', 'maxQueue', 'timeoutMs']);

interface Pending<Req, Res> {
  request: Req;
  resolve: (r: Res) => void;
  reject: (e: unknown) => void;
  timer?: ReturnType<typeof setTimeout>;
  done: boolean;
}

/**
 * Coalesces requests into batches. `run` gets the batch's requests in arrival order and returns one result per
 * request, where an `Error` in the array rejects that request alone; if `run` throws, every request of the batch
 * rejects with that error. One batch runs at a time; requests arriving meanwhile form the next.
 *
 * @example
 * const batcher = new RequestBatcher(async (questions: string[]) => {
 *   const q = await model.encodeQueries(questions);            // one encoder call for the batch
 *   const r = await index.search(q.data, 10);                  // one kernel call
 *   return questions.map((_, i) => r.hits(i));
 * }, { maxBatch: 64, maxWaitMs: 2 });
 * const hits = await batcher.submit('who wrote hamlet?');
 */
export class RequestBatcher<Req, Res> {
  private readonly queue: Array<Pending<Req, Res>> = [];
  private readonly o: Required<BatcherOptions>;
  private timer?: ReturnType<typeof setTimeout>;
  private running = false;
  private closed = false;
  private readonly counts: BatcherStats = { batches: 0, requests: 0, refused: 0, timedOut: 0, largestBatch: 0 };

  constructor(
    private readonly run: (batch: Req[]) => Promise<ReadonlyArray<Res | Error>>,
    options: BatcherOptions = {},
  ) {
    if (typeof run !== 'function') throw new QuorumError('ERR_ARG', 'RequestBatcher needs a batch function');
    if (options === null || typeof options !== 'object') throw new QuorumError('ERR_ARG', 'batcher options must be an object');
    checkOptions(options, batcherKeys, 'batcher options');
    this.o = { maxBatch: 64, maxWaitMs: 2, maxQueue: 1024, timeoutMs: 10_000, ...options };
    const { maxBatch, maxWaitMs, maxQueue, timeoutMs } = this.o;
    if (!Number.isInteger(maxBatch) || maxBatch < 1)
      throw new QuorumError('ERR_RANGE', `maxBatch must be a positive integer, got ${maxBatch}`);
    if (!Number.isInteger(maxQueue) || maxQueue < 1)
      throw new QuorumError('ERR_RANGE', `maxQueue must be a positive integer, got ${maxQueue}`);
    for (const [k, v] of [
      ['maxWaitMs', maxWaitMs],
      ['timeoutMs', timeoutMs],
    ] as const)
      // setTimeout takes at most 2^31 - 1 ms: a longer delay fires at once (every request would time out).
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 0x7fffffff)
        throw new QuorumError('ERR_RANGE', `${k} must be a number of milliseconds from 0 to 2147483647, got ${v}`);
  }

  /** Requests waiting for a batch. */
  get pending(): number {
    return this.queue.length;
  }

  /** Counters since construction. */
  stats(): BatcherStats {
    return { ...this.counts };
  }

  /**
   * Queues one request; resolves with its result. Rejects with ERR_BUSY when the queue is full, ERR_TIMEOUT at the
   * deadline, ERR_STATE after {@link close}, or with the batch function's error for this request.
   */
  submit(request: Req): Promise<Res> {
    if (this.closed) return Promise.reject(new QuorumError('ERR_STATE', 'the batcher is closed'));
    if (this.queue.length >= this.o.maxQueue) {
      this.counts.refused++;
      return Promise.reject(
        new QuorumError('ERR_BUSY', `${this.queue.length} requests are waiting already (maxQueue ${this.o.maxQueue}): try again later`),
      );
    }
    return new Promise<Res>((resolve, reject) => {
      const p: Pending<Req, Res> = { request, resolve, reject, done: false };
      if (this.o.timeoutMs > 0)
        p.timer = setTimeout(() => {
          if (p.done) return;
          p.done = true;
          this.counts.timedOut++;
          const at = this.queue.indexOf(p);
          if (at >= 0) this.queue.splice(at, 1);
          reject(new QuorumError('ERR_TIMEOUT', `no answer within ${this.o.timeoutMs} ms`));
        }, this.o.timeoutMs);
      this.queue.push(p);
      this.schedule();
    });
  }

  /** Rejects every waiting request with ERR_STATE and refuses new ones; a running batch still answers its own. */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const p of this.queue.splice(0))
      this.settle(p, { error: new QuorumError('ERR_STATE', 'the batcher was closed before this request ran') });
  }

  private schedule(): void {
    if (this.running || this.timer) return;
    if (this.queue.length >= this.o.maxBatch || this.o.maxWaitMs === 0) {
      void this.flush();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.o.maxWaitMs);
  }

  private settle(p: Pending<Req, Res>, outcome: { value: Res } | { error: unknown }): void {
    if (p.done) return;
    p.done = true;
    if (p.timer) clearTimeout(p.timer);
    if ('error' in outcome) p.reject(outcome.error);
    else p.resolve(outcome.value);
  }

  private async flush(): Promise<void> {
    if (this.running || this.queue.length === 0) return;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.running = true;
    const batch = this.queue.splice(0, this.o.maxBatch);
    this.counts.batches++;
    this.counts.largestBatch = Math.max(this.counts.largestBatch, batch.length);
    try {
      let results: ReadonlyArray<Res | Error>;
      try {
        results = await this.run(batch.map((p) => p.request));
        if (!Array.isArray(results) || results.length !== batch.length)
          throw new QuorumError(
            'ERR_SHAPE',
            `the batch function returned ${Array.isArray(results) ? results.length : typeof results} results for ${batch.length} requests`,
          );
      } catch (e) {
        for (const p of batch) this.settle(p, { error: e });
        return;
      }
      batch.forEach((p, i) => {
        const r = results[i] as Res | Error;
        this.settle(p, r instanceof Error ? { error: r } : { value: r });
      });
    } finally {
      this.counts.requests += batch.length;
      this.running = false;
      if (this.queue.length) this.schedule();
    }
  }
}
