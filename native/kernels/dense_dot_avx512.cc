// AVX-512 (F/BW/VL/DQ) variant of dense_dot.h. Register tile: up to 4 queries x 4 corpus rows, sixteen
// zmm accumulators along the dimension, reduced together by one shuffle tree (30 shuffles for 16 dots)
// instead of sixteen separate horizontal sums.
#include "dense_dot.h"

#if defined(__x86_64__)
#include <immintrin.h>

// After every include, so that only the functions below are compiled for AVX-512.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace quorum::kernels {
namespace {

constexpr int kMR = 4;  // queries per tile
constexpr int kNR = 4;  // corpus rows per tile

size_t stride(size_t dim, Dtype t) {
  size_t w = t == Dtype::BF16 ? 32 : 16;
  return (dim + w - 1) / w * w;
}

void prepare(const float* q, size_t dim, Dtype t, float* out) {
  size_t s = stride(dim, t);
  if (t != Dtype::BF16) {
    for (size_t d = 0; d < s; ++d) out[d] = d < dim ? q[d] : 0.f;
    return;
  }
  // Per 32 elements: the 16 even ones, then the 16 odd ones (see load_bf16_pair).
  for (size_t c = 0; c < s; c += 32)
    for (size_t t2 = 0; t2 < 16; ++t2) {
      size_t e = c + 2 * t2, o = e + 1;
      out[c + t2] = e < dim ? q[e] : 0.f;
      out[c + 16 + t2] = o < dim ? q[o] : 0.f;
    }
}

// 32 bf16 values as two f32 vectors: the low halves of the 32-bit lanes (even elements) shifted up, and the
// high halves (odd elements) masked. Two cheap integer ops instead of two widening conversions.
inline void bf16_pair(__m512i raw, __m512& even, __m512& odd) {
  even = _mm512_castsi512_ps(_mm512_slli_epi32(raw, 16));
  odd = _mm512_castsi512_ps(_mm512_and_si512(raw, _mm512_set1_epi32(int(0xffff0000u))));
}

template <int MR>
inline void fma_rows(__m512 (&acc)[kMR][kNR], const float* qp, size_t qs, size_t off, const __m512 (&c)[kNR]) {
  for (int i = 0; i < MR; ++i) {
    __m512 q = _mm512_loadu_ps(qp + i * qs + off);
    for (int j = 0; j < kNR; ++j) acc[i][j] = _mm512_fmadd_ps(q, c[j], acc[i][j]);
  }
}

// Sums each of the 16 accumulators; lane 4*i + j of the result is the dot of query i with row j.
inline __m512 reduce16(const __m512 (&acc)[kMR][kNR]) {
  __m512 t[kNR];
  for (int j = 0; j < kNR; ++j) {
    // Halve the 128-bit lanes of (acc[0][j], acc[1][j]) and (acc[2][j], acc[3][j]) ...
    __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(acc[0][j], acc[1][j], 0x44),
                              _mm512_shuffle_f32x4(acc[0][j], acc[1][j], 0xee));
    __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2][j], acc[3][j], 0x44),
                              _mm512_shuffle_f32x4(acc[2][j], acc[3][j], 0xee));
    // ... then again, leaving lane i with four partial sums of acc[i][j].
    t[j] = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xdd));
  }
  // Transpose-and-add inside each lane: slot j of lane i becomes the total of acc[i][j].
  __m512 p01 = _mm512_add_ps(_mm512_unpacklo_ps(t[0], t[1]), _mm512_unpackhi_ps(t[0], t[1]));
  __m512 p23 = _mm512_add_ps(_mm512_unpacklo_ps(t[2], t[3]), _mm512_unpackhi_ps(t[2], t[3]));
  return _mm512_add_ps(_mm512_shuffle_ps(p01, p23, 0x44), _mm512_shuffle_ps(p01, p23, 0xee));
}

// Each step touches one cache line per row; prefetching the same line of the next row group keeps enough
// misses in flight for one core to approach its share of memory bandwidth on bf16/f16 rows.
inline void prefetch_rows(const uint8_t* const (&pf)[kNR], size_t byte) {
  for (int j = 0; j < kNR; ++j) _mm_prefetch(reinterpret_cast<const char*>(pf[j] + byte), _MM_HINT_T0);
}

template <Dtype T, int MR>
inline __m512 tile(const float* qp, size_t qs, const uint8_t* const (&r)[kNR], const uint8_t* const (&pf)[kNR],
                   size_t dim) {
  __m512 acc[kMR][kNR];
  for (auto& row : acc)
    for (auto& a : row) a = _mm512_setzero_ps();
  if constexpr (T == Dtype::BF16) {
    size_t d = 0;
    __m512 e[kNR], o[kNR];
    for (; d + 32 <= dim; d += 32) {
      prefetch_rows(pf, 2 * d);
      for (int j = 0; j < kNR; ++j) bf16_pair(_mm512_loadu_si512(r[j] + 2 * d), e[j], o[j]);
      fma_rows<MR>(acc, qp, qs, d, e);
      fma_rows<MR>(acc, qp, qs, d + 16, o);
    }
    if (d < dim) {
      __mmask32 m = _cvtu32_mask32(uint32_t((uint64_t(1) << (dim - d)) - 1));
      for (int j = 0; j < kNR; ++j) bf16_pair(_mm512_maskz_loadu_epi16(m, r[j] + 2 * d), e[j], o[j]);
      fma_rows<MR>(acc, qp, qs, d, e);
      fma_rows<MR>(acc, qp, qs, d + 16, o);
    }
  } else {
    size_t d = 0;
    __m512 c[kNR];
    for (; d + 16 <= dim; d += 16) {
      prefetch_rows(pf, (T == Dtype::F16 ? 2 : 4) * d);
      for (int j = 0; j < kNR; ++j) {
        if constexpr (T == Dtype::F16)
          c[j] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r[j] + 2 * d)));
        else
          c[j] = _mm512_loadu_ps(reinterpret_cast<const float*>(r[j]) + d);
      }
      fma_rows<MR>(acc, qp, qs, d, c);
    }
    if (d < dim) {
      __mmask16 m = _cvtu32_mask16((1u << (dim - d)) - 1);
      for (int j = 0; j < kNR; ++j) {
        if constexpr (T == Dtype::F16)
          c[j] = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, r[j] + 2 * d));
        else
          c[j] = _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(r[j]) + d);
      }
      fma_rows<MR>(acc, qp, qs, d, c);
    }
  }
  return reduce16(acc);
}

// Each tile reads two full vectors per 16 FMAs, so both operands must come from L1. With more than one
// query tile, the dimension is cut into blocks of kDimBlock so that a sub-chunk of kQuerySub prepared queries
// (16 KB) and a row group stay in L1; partial dots are summed into `out` block by block.
constexpr size_t kDimBlock = 256;  // a multiple of 32 (the bf16 chunk)
constexpr size_t kQuerySub = 16;

template <Dtype T>
inline void tile_into(const float* q, size_t qs, size_t mr, const uint8_t* const (&r)[kNR],
                      const uint8_t* const (&pf)[kNR], size_t dim, float* o, size_t ldo, size_t nr, bool add) {
  __m512 s;
  switch (mr) {
    case 4: s = tile<T, 4>(q, qs, r, pf, dim); break;
    case 3: s = tile<T, 3>(q, qs, r, pf, dim); break;
    case 2: s = tile<T, 2>(q, qs, r, pf, dim); break;
    default: s = tile<T, 1>(q, qs, r, pf, dim); break;
  }
  alignas(64) float res[kMR * kNR];
  if (nr == size_t(kNR)) {
    __m128 lanes[4] = {_mm512_castps512_ps128(s), _mm512_extractf32x4_ps(s, 1), _mm512_extractf32x4_ps(s, 2),
                       _mm512_extractf32x4_ps(s, 3)};
    for (size_t i = 0; i < mr; ++i) {
      __m128 v = add ? _mm_add_ps(_mm_loadu_ps(o + i * ldo), lanes[i]) : lanes[i];
      _mm_storeu_ps(o + i * ldo, v);
    }
  } else {
    _mm512_store_ps(res, s);
    for (size_t i = 0; i < mr; ++i)
      for (size_t j = 0; j < nr; ++j) o[i * ldo + j] = (add ? o[i * ldo + j] : 0.f) + res[i * kNR + j];
  }
}

template <Dtype T>
void score_t(const float* qp, size_t qs, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim,
             float* out, size_t ldo) {
  constexpr size_t esize = T == Dtype::F32 ? 4 : 2;
  // 2-byte rows halve the traffic and already fit: measured slower with blocking, so only f32 blocks.
  const size_t dblock = (T == Dtype::F32 && nq > size_t(kMR)) ? kDimBlock : dim;
  for (size_t s0 = 0; s0 < nq; s0 += kQuerySub) {
    const size_t s1 = nq - s0 < kQuerySub ? nq : s0 + kQuerySub;
    for (size_t d0 = 0; d0 < dim; d0 += dblock) {
      const size_t dc = dim - d0 < dblock ? dim - d0 : dblock;
      for (size_t j0 = 0; j0 < nrows; j0 += kNR) {
        const size_t nr = nrows - j0 < size_t(kNR) ? nrows - j0 : size_t(kNR);
        // A short last group repeats its last row; the extra results are dropped.
        const uint8_t* r[kNR];
        const uint8_t* pf[kNR];
        for (size_t j = 0; j < size_t(kNR); ++j) {
          r[j] = rows[j0 + (j < nr ? j : nr - 1)] + esize * d0;
          size_t next = j0 + kNR + j;
          pf[j] = (next < nrows ? rows[next] : rows[j0 + (j < nr ? j : nr - 1)]) + esize * d0;
        }
        for (size_t i0 = s0; i0 < s1; i0 += kMR) {
          const size_t mr = s1 - i0 < size_t(kMR) ? s1 - i0 : size_t(kMR);
          tile_into<T>(qp + i0 * qs + d0, qs, mr, r, pf, dc, out + i0 * ldo + j0, ldo, nr, d0 > 0);
        }
      }
    }
  }
}

void score(const float* qp, size_t qs, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim, Dtype t,
           float* out, size_t ldo) {
  switch (t) {
    case Dtype::BF16: return score_t<Dtype::BF16>(qp, qs, nq, rows, nrows, dim, out, ldo);
    case Dtype::F16: return score_t<Dtype::F16>(qp, qs, nq, rows, nrows, dim, out, ldo);
    default: return score_t<Dtype::F32>(qp, qs, nq, rows, nrows, dim, out, ldo);
  }
}

size_t select_ge(const float* s, size_t n, const float* thr, size_t thr_step, uint32_t* idx) {
  size_t m = 0, j = 0;
  const __m512 t1 = _mm512_set1_ps(thr[0]);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (; j + 16 <= n; j += 16) {
    const __m512 t = thr_step ? _mm512_loadu_ps(thr + j) : t1;
    __mmask16 k = _mm512_cmp_ps_mask(_mm512_loadu_ps(s + j), t, _CMP_GE_OQ);
    if (k) {
      _mm512_mask_compressstoreu_epi32(idx + m, k, _mm512_add_epi32(iota, _mm512_set1_epi32(int(j))));
      m += size_t(__builtin_popcount(unsigned(k)));
    }
  }
  for (; j < n; ++j)
    if (s[j] >= thr[j * thr_step]) idx[m++] = uint32_t(j);
  return m;
}

}  // namespace

const DenseDotOps* dense_dot_avx512() {
  static const DenseDotOps ops{"avx512", stride, prepare, score, select_ge};
  return &ops;
}

}  // namespace quorum::kernels

#pragma GCC pop_options

#else
namespace quorum::kernels {
const DenseDotOps* dense_dot_avx512() { return nullptr; }
}  // namespace quorum::kernels
#endif
