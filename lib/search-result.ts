// The top-k result every index returns: padded [rows, k] ids and scores, best first.
import { rowHits } from './operand.js';

/** Top-k of each query row, `[rows, k]`: ids (the ones given to `add`) by score descending, ties by id. */
export interface SearchResult {
  /** `rows * k` ids, row-major; -1 in empty slots. */
  readonly ids: BigInt64Array;
  /** `rows * k` scores (higher is better), row-major; -Infinity in empty slots. */
  readonly scores: Float32Array;
  /** Number of query rows. */
  readonly rows: number;
  /** Slots per row. */
  readonly k: number;
  /** The hits of query `row`, best first; empty slots (id -1, score -Infinity) left out. */
  hits(row: number): Array<{ id: bigint; score: number }>;
}

export function searchResult(ids: BigInt64Array, scores: Float32Array, rows: number, k: number): SearchResult {
  return { ids, scores, rows, k, hits: (row: number) => rowHits(ids, scores, rows, k, row) };
}
