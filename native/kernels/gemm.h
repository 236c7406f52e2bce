// C += A * B for row-major f32 matrices: the backward products of the contrastive loss (dQ = G P, dP = Gᵀ Q).
// The variant computes a register tile by broadcasting one element of A against vectors of a row of B, so no
// operand is packed or transposed.
#pragma once
#include <cstddef>

namespace quorum::kernels {

struct GemmOps {
  const char* isa;
  // C[i, j] += sum_p A[i, p] * B[p, j] for i < m, j < n, p < k.
  void (*gemm_nn)(size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b, size_t ldb, float* c,
                  size_t ldc);
};

const GemmOps& gemm_scalar();
const GemmOps* gemm_avx2();
const GemmOps* gemm_avx512();

// The active variant over the thread pool, in blocks of C (and of k, to keep a panel of B in L2).
void gemm_nn(size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b, size_t ldb, float* c,
             size_t ldc);

}  // namespace quorum::kernels
