// C += A * B for f32 matrices (B and C row-major): the backward products of the contrastive loss
// (dQ = G P, dP = Gᵀ Q).
// The variant computes a register tile by broadcasting one element of A against vectors of a row of B, so no
// operand is packed or transposed.
#pragma once
#include <cstddef>

namespace quorum::kernels {

// A(i, p) = a[i * a_row + p * a_depth]: row-major A has (lda, 1); a transposed one, (1, lda). Only
// broadcasts read A, so its layout costs nothing and Gᵀ Q needs no transposed copy of G.
struct StridedA {
  const float* a;
  size_t row, depth;
};

struct GemmOps {
  const char* isa;
  // C[i, j] (+)= sum_p A(i, p) * B[p, j] for i < m, j < n, 0 < k: accumulates into C, or overwrites it
  // when `accumulate` is false (so outputs need no zero fill first).
  void (*gemm)(size_t m, size_t n, size_t k, StridedA a, const float* b, size_t ldb, float* c, size_t ldc,
               bool accumulate);
};

const GemmOps& gemm_scalar();
const GemmOps* gemm_avx2();
const GemmOps* gemm_avx512();

// The active variant over the thread pool, in blocks of C (and of k, to keep a panel of B in L2).
void gemm(size_t m, size_t n, size_t k, StridedA a, const float* b, size_t ldb, float* c, size_t ldc,
          bool accumulate);

}  // namespace quorum::kernels
