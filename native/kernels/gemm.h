// C (+)= A * B for f32 matrices with any element strides: the products of the contrastive loss (S = Q Pᵀ,
// dQ = G P, dP = Gᵀ Q) and, through the single-thread pieces below, the many-query path of scoreTopK.
//
// Structure (Goto / BLIS): B is packed into panels of NR columns (zero-padded), one depth block at a time by the
// task that reads it, so the register tile reads two or more full vectors per step of k from one contiguous,
// L1-resident stream whatever B's layout was. A is packed once per product into row tiles of MR rows
// (zero-padded), so the tile broadcasts A from one contiguous stream too (tile_cols with lda = MR).
// scoreTopK's many-query path reads corpus rows in place instead (tile_rows): they stream from memory once.
// Tails are handled by zero padding and masked stores, never by separate kernels.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../common/dtype.h"

namespace quorum::kernels {

// A(i, p) = a[i * row + p * depth]: row-major A has (lda, 1); a transposed one, (1, lda).
struct StridedA {
  const float* a;
  size_t row, depth;
};

// B(p, j) = b[p * row + j * col]: row-major B has (ldb, 1); Bᵀ stored row-major (B = Xᵀ), (1, ldx).
struct StridedB {
  const float* b;
  size_t row, col;
};

struct GemmOps {
  const char* isa;
  size_t mr, nr;  // register tile: mr rows of C by nr columns
  // Packs B(p, j) for p < k, j < n into ceil(n / nr) panels of k x nr floats (columns >= n are zero).
  void (*pack_b)(size_t k, size_t n, StridedB b, float* out);
  // Packs one row tile of A: out[p * mr + i] = A(i, p) for i < m_used <= mr, p < k; rows >= m_used are zero.
  void (*pack_a)(size_t k, size_t m_used, StridedA a, float* out);
  // One tile: C[i, j] (+)= sum_{p < kc} A(i, p) * panel[p * nr + j] for i < m_used <= mr, j < n_used <= nr.
  // tile_rows reads A(i, p) = rows[i][p] (all mr pointers valid); tile_cols reads a[p * lda + i] for i < mr.
  void (*tile_rows)(size_t kc, const float* const* rows, const float* panel, float* c, size_t ldc, size_t m_used,
                    size_t n_used, bool accumulate);
  // tile_rows, then the hits of the values stored: bit j of hits[i] (i < m_used) set when C[i, j] >= thr[j], j < n_used
  // (ordered: NaN never passes; thr holds n_used floats); returns whether any bit is set. scoreTopK's many-query path
  // finds its candidates with it while the tile is in registers.
  bool (*tile_rows_hits)(size_t kc, const float* const* rows, const float* panel, float* c, size_t ldc, size_t m_used,
                         size_t n_used, bool accumulate, const float* thr, uint32_t* hits);
  void (*tile_cols)(size_t kc, const float* a, size_t lda, const float* panel, float* c, size_t ldc,
                    size_t m_used, size_t n_used, bool accumulate);
  // dst[i] = float(src[i]) for f32, bf16 or f16 src.
  void (*widen)(const void* src, Dtype t, size_t count, float* dst);
};

const GemmOps& gemm_scalar();
const GemmOps* gemm_avx2();
const GemmOps* gemm_avx512();
const GemmOps* gemm_neon();  // AArch64 builds only (else nullptr)
const GemmOps& gemm_ops();  // the active variant

// Depth of one pass over packed panels: a 256 x 32 panel is 32 KiB, read from L1/L2 by every tile of a row
// block.
constexpr size_t kGemmDepthBlock = 256;

// C[i, j] (+)= sum_p A(i, p) B(p, j) for i < m, j < n, over the thread pool. Overwrites C when `accumulate` is
// false (no zero fill needed). Extra memory: the packed A (m x k rounded up to whole tiles) and one depth block
// of one panel per thread (kGemmDepthBlock x nr floats, kept by the thread for its next call).
void gemm(size_t m, size_t n, size_t k, StridedA a, StridedB b, float* c, size_t ldc, bool accumulate);

// One product of gemm_batch, with gemm's arguments.
struct GemmProduct {
  size_t m, n, k;
  StridedA a;
  StridedB b;
  float* c;
  size_t ldc;
  bool accumulate;
};

// Independent products (no C overlaps another product's A, B or C) in two parallel regions in all (packing
// every A, then every product's tasks) instead of two each: the tail of one product overlaps the start of the
// next instead of waiting at a barrier (the loss's dP and dQ).
void gemm_batch(const GemmProduct* products, size_t count);

}  // namespace quorum::kernels
