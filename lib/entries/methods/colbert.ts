/**
 * `quorum-retrieval/methods/colbert`: late interaction for users' ColBERT models (docs/methods/colbert.md): the
 * compressed multi-vector index (ColBERTv2's residual compression, PLAID's search stages).
 *
 * @packageDocumentation
 */
export {
  ColbertIndex,
  colbertSearchDefaults,
  type ColbertHit,
  type ColbertIndexInfo,
  type ColbertIndexOptions,
  type ColbertSearchOptions,
  type TokenVectors,
} from '../../methods/colbert/index.js';
