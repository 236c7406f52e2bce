// AVX-512 variant of gemm.h: the shared body over 16-lane vectors, with a 16 x 16 in-register transpose to
// pack B = Xᵀ (the contrastive loss's passages, scoreTopK's queries).
#include "gemm.h"

#include "../common/dtype.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c,prfchw")

namespace quorum::kernels {
namespace {
#include "simd/vec_avx512.h"
#include "simd/vec_math.h"
void pack_panel_transposed16(size_t k, size_t nr, StridedB b, size_t j0, float* o);
void pack_a_rows16(size_t k, size_t mu, StridedA a, float* out);
#define QUORUM_GEMM_PACK_TRANSPOSED pack_panel_transposed16
#define QUORUM_GEMM_PACK_A_ROWS pack_a_rows16
#include "gemm_body.h"

// r[i] holds row i of a 16 x 16 block; afterwards r[j] holds column j. Four rounds of 16 shuffles: pairs of
// rows interleave, then quads inside 128-bit lanes, then lanes across row groups of 8, then of 16.
inline void transpose16(__m512 (&r)[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // u[4g + c], lane L: column 4L + c of rows 4g .. 4g + 3.
  for (int g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
    u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
  }
  for (int c = 0; c < 4; ++c) {
    // Rows 0-7 and 8-15: x holds columns c and 8 + c, y columns 4 + c and 12 + c, as (rows 0-3 | 4-7) halves.
    __m512 x0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88), y0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);
    __m512 x1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88), y1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);
    r[c] = _mm512_shuffle_f32x4(x0, x1, 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(x0, x1, 0xdd);
    r[4 + c] = _mm512_shuffle_f32x4(y0, y1, 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(y0, y1, 0xdd);
  }
}

// Up to 16 rows of X (row i at src + i * ld, rows >= rows_valid read as zero), transposed 16 steps of k at a
// time (masked loads for the last steps): step p goes to out + p * out_stride, the lanes in `lanes` stored.
void pack_transposed(size_t k, const float* src, size_t ld, size_t rows_valid, float* out, size_t out_stride,
                     __mmask16 lanes) {
  for (size_t p0 = 0; p0 < k; p0 += 16) {
    const size_t np = std::min<size_t>(16, k - p0);
    const __mmask16 m = Vec::first(np);
    __m512 r[16];
    for (size_t i = 0; i < 16; ++i)
      r[i] = i < rows_valid ? _mm512_maskz_loadu_ps(m, src + i * ld + p0) : _mm512_setzero_ps();
    transpose16(r);
    for (size_t t = 0; t < np; ++t) _mm512_mask_storeu_ps(out + (p0 + t) * out_stride, lanes, r[t]);
  }
}

// B(p, j) = b.b[p + j * b.col]: each half panel of 16 columns is 16 rows of X (zero rows past nr).
void pack_panel_transposed16(size_t k, size_t nr, StridedB b, size_t j0, float* o) {
  for (size_t h = 0; h < kNR; h += 16)
    pack_transposed(k, b.b + (j0 + h) * b.col, b.col, nr > h ? nr - h : 0, o + h, kNR, Vec::first(16));
}

// A row-major A tile: its kMR = 12 rows transposed, the first 12 lanes of each step stored (rows past mu zero).
void pack_a_rows16(size_t k, size_t mu, StridedA a, float* out) {
  static_assert(kMR <= 16, "one 16 x 16 transpose covers the tile's rows");
  pack_transposed(k, a.a, a.row, mu, out, kMR, Vec::first(kMR));
}

}  // namespace

const GemmOps* gemm_avx512() { return &kGemmOps; }

}  // namespace quorum::kernels

#pragma GCC pop_options
#else
namespace quorum::kernels {
const GemmOps* gemm_avx512() { return nullptr; }
}  // namespace quorum::kernels
#endif
