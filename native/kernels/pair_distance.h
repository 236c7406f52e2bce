// Contract of the pair-distance kernel family: one query against one stored vector per call, in f32. This is
// the inner step of graph search (HNSW visits neighbours one at a time, so there is no block to tile), where
// Debian's faiss runs its scalar reference loop: DenseIndex's HNSW storage computes distances through these.
//
// Results differ between variants only by the order of the f32 additions.
#pragma once
#include <cstddef>

namespace quorum::kernels {

struct PairDistanceOps {
  const char* isa;
  // sum_i a[i] * b[i]
  float (*dot)(const float* a, const float* b, size_t n);
  // sum_i (a[i] - b[i])^2
  float (*l2sq)(const float* a, const float* b, size_t n);
};

const PairDistanceOps& pair_distance_scalar();
const PairDistanceOps* pair_distance_avx2();
const PairDistanceOps* pair_distance_avx512();
const PairDistanceOps* pair_distance_neon();  // AArch64 builds only (else nullptr)
const PairDistanceOps& pair_distance();  // the active variant

}  // namespace quorum::kernels
