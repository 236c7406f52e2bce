/**
 * `quorum-retrieval/methods/colbert`: late interaction for users' ColBERT models (docs/methods/colbert.md): the
 * compressed multi-vector index (ColBERTv2's residual compression, PLAID's search stages) and users' ColBERT checkpoints
 * (both published layouts) encoded without libtorch.
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
export { ColbertEncoder, type ColbertEncoderOptions } from '../../methods/colbert/encoder.js';
export { isColbertDir, readColbertCheckpoint, type ColbertCheckpoint, type ColbertSettings } from '../../methods/colbert/checkpoint.js';
export { colbertExportOnnx, type ColbertOnnxCard } from '../../methods/colbert/export.js';
