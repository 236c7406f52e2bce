// AVX2 + FMA (+F16C) variant of dense_dot.h: the shared body over 8-lane vectors, with a 2-query x 4-row register
// tile (sixteen ymm registers).
#include "dense_dot.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

// After every include, so that only the functions below are compiled for AVX2.
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace quorum::kernels {
namespace {
#include "simd/vec_avx2.h"
#include "simd/vec_math.h"

struct Dot {
  static constexpr int MR = 2;

  static void bf16_pair(const uint8_t* p, __m256& even, __m256& odd) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    even = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
    odd = _mm256_castsi256_ps(_mm256_and_si256(raw, _mm256_set1_epi32(int(0xffff0000u))));
  }

  // [sum a, sum b, sum c, sum d]
  static __m128 reduce4(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
  }

  static void store_tile(const __m256 (&acc)[MR][4], size_t mr, size_t nr, float* o, size_t ldo, bool add) {
    for (size_t i = 0; i < mr; ++i) {
      __m128 s = reduce4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
      if (nr == 4) {
        if (add) s = _mm_add_ps(_mm_loadu_ps(o + i * ldo), s);
        _mm_storeu_ps(o + i * ldo, s);
      } else {
        alignas(16) float tmp[4];
        _mm_store_ps(tmp, s);
        for (size_t j = 0; j < nr; ++j) o[i * ldo + j] = (add ? o[i * ldo + j] : 0.f) + tmp[j];
      }
    }
  }
};

#include "dense_dot_body.h"


}  // namespace

const DenseDotOps* dense_dot_avx2() {
  static const DenseDotOps ops{"avx2", stride, prepare, score, select_ge_bits};
  return &ops;
}

}  // namespace quorum::kernels

#pragma GCC pop_options

#else
namespace quorum::kernels {
const DenseDotOps* dense_dot_avx2() { return nullptr; }
}  // namespace quorum::kernels
#endif
