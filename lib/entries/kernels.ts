/**
 * `quorum-retrieval/kernels`: the kernels beyond dense scoring (MaxSim, SPLADE pooling and sparse vectors, InfoNCE,
 * ensemble mutual information and calibration), quantizing corpora (the root export has QuantizedTensor) and the CUDA
 * device's state.
 *
 * @packageDocumentation
 */
export { quantize, quantizeSync, quantizedRowBytes, type Quantization, type QuantizeOptions } from '../quantized.js';
export { type CorpusInput } from '../dense.js';
export { cudaEmptyCache, cudaInfo, cudaMemoryStats, type CudaDeviceInfo, type CudaMemoryStats } from '../cuda.js';
export {
  maxSim,
  maxSimSync,
  maxSimBackward,
  maxSimBackwardSync,
  type MaxSimGradients,
  type MaxSimOptions,
  type MaxSimResult,
  type TokenDocuments,
} from '../maxsim.js';
export {
  spladePool,
  spladePoolSync,
  spladePoolBackward,
  spladePoolBackwardSync,
  regularizer,
  regularizerSync,
  RegWeightScheduler,
  toSparse,
  toSparseSync,
  sparseVectors,
  sparseScores,
  sparseScoresSync,
  sparseDenseScores,
  sparseDenseScoresSync,
  type RegularizerResult,
  type SparseRegularizer,
  type SparseVectors,
  type SpladePoolOptions,
  type SpladePoolResult,
  type ToSparseOptions,
} from '../splade.js';
export { infoNce, infoNceSync, type InfoNceOptions, type InfoNceResult } from '../losses.js';
export {
  ensembleMI,
  ensembleMISync,
  auroc,
  ece,
  fitPlatt,
  plattProbability,
  precisionCoverage,
  type PlattScaling,
  calibrateTemperature,
  mufTemperatureGrid,
  widenedTemperatureGrid,
  type CalibrationSplit,
  type EnsembleMIOptions,
  type EnsembleMIResult,
  type TemperatureSearch,
} from '../uncertainty.js';
export { kmeans, type KmeansOptions } from '../dense-index.js';
