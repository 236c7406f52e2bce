// AVX2 + FMA (+F16C) variant of dense_dot.h. Sixteen ymm registers allow a 2-query x 4-row tile.
#include "dense_dot.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

// After every include, so that only the functions below are compiled for AVX2.
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace quorum::kernels {
namespace {

constexpr int kMR = 2;
constexpr int kNR = 4;
constexpr size_t kW = 8;

size_t stride(size_t dim, Dtype t) {
  size_t w = t == Dtype::BF16 ? 2 * kW : kW;
  return (dim + w - 1) / w * w;
}

void prepare(const float* q, size_t dim, Dtype t, float* out) {
  size_t s = stride(dim, t);
  if (t != Dtype::BF16) {
    for (size_t d = 0; d < s; ++d) out[d] = d < dim ? q[d] : 0.f;
    return;
  }
  for (size_t c = 0; c < s; c += 2 * kW)
    for (size_t t2 = 0; t2 < kW; ++t2) {
      size_t e = c + 2 * t2, o = e + 1;
      out[c + t2] = e < dim ? q[e] : 0.f;
      out[c + kW + t2] = o < dim ? q[o] : 0.f;
    }
}

template <int MR>
inline void fma_rows(__m256 (&acc)[kMR][kNR], const float* qp, size_t qs, size_t off, const __m256 (&c)[kNR]) {
  for (int i = 0; i < MR; ++i) {
    __m256 q = _mm256_loadu_ps(qp + i * qs + off);
    for (int j = 0; j < kNR; ++j) acc[i][j] = _mm256_fmadd_ps(q, c[j], acc[i][j]);
  }
}

// [sum a, sum b, sum c, sum d]
inline __m128 reduce4(__m256 a, __m256 b, __m256 c, __m256 d) {
  __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// Loads 16 bytes' worth of corpus elements starting at element d; `row` already points at the element.
template <Dtype T>
inline void load_chunk(const uint8_t* p, __m256 (&c)[2]) {
  if constexpr (T == Dtype::BF16) {
    __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    c[0] = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
    c[1] = _mm256_castsi256_ps(_mm256_and_si256(raw, _mm256_set1_epi32(int(0xffff0000u))));
  } else if constexpr (T == Dtype::F16) {
    c[0] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    c[0] = _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
}

template <Dtype T, int MR>
inline void tile(const float* qp, size_t qs, const uint8_t* const (&r)[kNR], size_t dim, float* out, size_t ldo,
                 size_t nr) {
  constexpr size_t esize = T == Dtype::F32 ? 4 : 2;
  constexpr size_t step = T == Dtype::BF16 ? 2 * kW : kW;  // elements per chunk
  constexpr int parts = T == Dtype::BF16 ? 2 : 1;
  __m256 acc[kMR][kNR];
  for (auto& row : acc)
    for (auto& a : row) a = _mm256_setzero_ps();
  size_t d = 0;
  __m256 c[kNR][2];
  auto accumulate = [&](size_t off) {
    for (int p = 0; p < parts; ++p) {
      __m256 cp[kNR] = {c[0][p], c[1][p], c[2][p], c[3][p]};
      fma_rows<MR>(acc, qp, qs, off + size_t(p) * kW, cp);
    }
  };
  for (; d + step <= dim; d += step) {
    for (int j = 0; j < kNR; ++j) load_chunk<T>(r[j] + esize * d, c[j]);
    accumulate(d);
  }
  if (d < dim) {
    // No masked 16-bit loads in AVX2: copy the tail into a zeroed chunk.
    alignas(32) uint8_t buf[kNR][32];
    std::memset(buf, 0, sizeof buf);
    for (int j = 0; j < kNR; ++j) {
      std::memcpy(buf[j], r[j] + esize * d, esize * (dim - d));
      load_chunk<T>(buf[j], c[j]);
    }
    accumulate(d);
  }
  for (int i = 0; i < MR; ++i) {
    __m128 s = reduce4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    if (nr == size_t(kNR)) {
      _mm_storeu_ps(out + i * ldo, s);
    } else {
      alignas(16) float tmp[4];
      _mm_store_ps(tmp, s);
      for (size_t j = 0; j < nr; ++j) out[i * ldo + j] = tmp[j];
    }
  }
}

template <Dtype T>
void score_t(const float* qp, size_t qs, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim,
             float* out, size_t ldo) {
  for (size_t i0 = 0; i0 < nq; i0 += kMR) {
    size_t mr = nq - i0 < size_t(kMR) ? nq - i0 : size_t(kMR);
    for (size_t j0 = 0; j0 < nrows; j0 += kNR) {
      size_t nr = nrows - j0 < size_t(kNR) ? nrows - j0 : size_t(kNR);
      const uint8_t* r[kNR];
      for (size_t j = 0; j < size_t(kNR); ++j) r[j] = rows[j0 + (j < nr ? j : nr - 1)];
      float* o = out + i0 * ldo + j0;
      if (mr == 2)
        tile<T, 2>(qp + i0 * qs, qs, r, dim, o, ldo, nr);
      else
        tile<T, 1>(qp + i0 * qs, qs, r, dim, o, ldo, nr);
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
  const __m256 t1 = _mm256_set1_ps(thr[0]);
  for (; j + 8 <= n; j += 8) {
    const __m256 t = thr_step ? _mm256_loadu_ps(thr + j) : t1;
    unsigned bits = unsigned(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(s + j), t, _CMP_GE_OQ)));
    while (bits) {
      idx[m++] = uint32_t(j + size_t(__builtin_ctz(bits)));
      bits &= bits - 1;
    }
  }
  for (; j < n; ++j)
    if (s[j] >= thr[j * thr_step]) idx[m++] = uint32_t(j);
  return m;
}

}  // namespace

const DenseDotOps* dense_dot_avx2() {
  static const DenseDotOps ops{"avx2", stride, prepare, score, select_ge};
  return &ops;
}

}  // namespace quorum::kernels

#pragma GCC pop_options

#else
namespace quorum::kernels {
const DenseDotOps* dense_dot_avx2() { return nullptr; }
}  // namespace quorum::kernels
#endif
