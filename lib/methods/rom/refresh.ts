// ROM's joint optimization (the paper's Algorithm 1): after each round of joint training the retrieval validation
// (DPR's average rank, docs/methods/evaluation.md#average-rank: lower is better) is read; only a strict improvement
// re-encodes the corpus and
// rebuilds the index, and the reader's training passages are replaced only when the new retrieval is better too.
import { QuorumError } from '../../errors.js';
import { checkOptions, optionKeys } from '../../validate.js';

const startKeys = optionKeys<{ averageRank?: number; retrieval?: number }>()(['averageRank', 'retrieval']);

/** One decision of {@link IndexRefresh}: a refresh made, with the figures that led to it. */
export interface RefreshEvent {
  /** The joint round (epoch) that triggered it. */
  round: number;
  /** The dev average rank that triggered it (lower is better). */
  averageRank: number;
  /** Seconds spent re-encoding and re-indexing. */
  seconds: number;
  /** The new index's retrieval figure (higher is better). */
  retrieval: number;
  /** Whether the reader's training passages were replaced. */
  updatedReader: boolean;
  /** A refresh made whatever the figures (the joint phase's first index, the pipeline's switch of retrieval side). */
  forced: boolean;
}

/** What {@link IndexRefresh} calls when it decides to refresh. */
export interface RefreshHooks {
  /** Re-encodes the corpus and rebuilds the index; returns the new retrieval's figure (e.g. dev Recall@k). */
  refresh(): Promise<number>;
  /** Replaces the reader's training passages with the new retrieval's. */
  updateReader(): Promise<void>;
  /** Receives a line per decision. */
  log?: (line: string) => void;
}

/**
 * Decides when to refresh the index.
 *
 * @example
 * const r = new IndexRefresh(hooks, { averageRank: v0, retrieval: recall0 });
 * for (let round = 0; round < rounds; round++) {
 *   await trainRound();
 *   const { averageRank } = await validate(network.head('retrieval'), devInput);
 *   await r.observe(round, averageRank);
 * }
 */
export class IndexRefresh {
  /** Every refresh made so far, in order. */
  readonly events: RefreshEvent[] = [];
  private bestRank: number;
  private bestRetrieval: number;

  constructor(
    private readonly hooks: RefreshHooks,
    start: { averageRank?: number; retrieval?: number } = {},
  ) {
    if (typeof hooks?.refresh !== 'function' || typeof hooks.updateReader !== 'function')
      throw new QuorumError('ERR_ARG', 'IndexRefresh needs refresh() and updateReader() hooks');
    checkOptions(start, startKeys, 'IndexRefresh start');
    this.bestRank = start.averageRank ?? Infinity;
    this.bestRetrieval = start.retrieval ?? -Infinity;
  }

  /** The best (lowest) average rank seen so far. */
  get best(): number {
    return this.bestRank;
  }

  /**
   * Refreshes the index and the reader's passages whatever the figures say (the index the joint phase starts from,
   * or the pipeline's switch to the reader); later rounds must beat `averageRank`.
   */
  async force(round: number, averageRank: number): Promise<void> {
    this.bestRank = Math.min(this.bestRank, averageRank);
    await this.apply(round, averageRank, true);
  }

  /** Reads one round's validation; refreshes on a strict improvement. Returns whether it refreshed. */
  async observe(round: number, averageRank: number): Promise<boolean> {
    if (typeof averageRank !== 'number' || Number.isNaN(averageRank)) throw new QuorumError('ERR_ARG', 'averageRank must be a number');
    if (!(averageRank < this.bestRank)) {
      this.hooks.log?.(`round ${round}: average rank ${averageRank.toFixed(3)}, not below ${this.bestRank.toFixed(3)}: index kept`);
      return false;
    }
    const previous = this.bestRank;
    this.bestRank = averageRank;
    await this.apply(round, averageRank, false, previous);
    return true;
  }

  private async apply(round: number, averageRank: number, always = false, previous = Infinity): Promise<void> {
    const t0 = performance.now();
    const retrieval = await this.hooks.refresh();
    const seconds = (performance.now() - t0) / 1000;
    const updatedReader = always || retrieval > this.bestRetrieval;
    if (updatedReader) {
      this.bestRetrieval = retrieval;
      await this.hooks.updateReader();
    }
    this.events.push({ round, averageRank, seconds, retrieval, updatedReader, forced: always });
    this.hooks.log?.(
      `round ${round}: average rank ${averageRank.toFixed(3)}${Number.isFinite(previous) ? ` < ${previous.toFixed(3)}` : ''}: index refreshed${always ? ' (forced)' : ''} in ${seconds.toFixed(1)} s, retrieval ${retrieval.toFixed(4)}` +
        (updatedReader ? ', reader passages updated' : ', reader passages kept (retrieval not better)'),
    );
  }
}
