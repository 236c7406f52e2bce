// AVX-512 (F/BW/VL/DQ) variant of dense_dot.h: the shared body over 16-lane vectors, with a 4-query x 4-row
// register tile whose sixteen zmm accumulators are reduced together by one shuffle tree (30 shuffles for 16 dots)
// instead of sixteen separate horizontal sums.
#include "dense_dot.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

// After every include, so that only the functions below are compiled for AVX-512.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace quorum::kernels {
namespace {
#include "simd/vec_avx512.h"
#include "simd/vec_math.h"

struct Dot {
  static constexpr int MR = 4;

  static void bf16_pair(const uint8_t* p, __m512& even, __m512& odd) {
    const __m512i raw = _mm512_loadu_si512(p);
    even = _mm512_castsi512_ps(_mm512_slli_epi32(raw, 16));
    odd = _mm512_castsi512_ps(_mm512_and_si512(raw, _mm512_set1_epi32(int(0xffff0000u))));
  }

  // Sums each of the 16 accumulators; lane 4*i + j of the result is the dot of query i with row j.
  static __m512 reduce16(const __m512 (&acc)[MR][4]) {
    __m512 t[4];
    for (int j = 0; j < 4; ++j) {
      // Halve the 128-bit lanes of (acc[0][j], acc[1][j]) and (acc[2][j], acc[3][j]) ...
      const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(acc[0][j], acc[1][j], 0x44), _mm512_shuffle_f32x4(acc[0][j], acc[1][j], 0xee));
      const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2][j], acc[3][j], 0x44), _mm512_shuffle_f32x4(acc[2][j], acc[3][j], 0xee));
      // ... then again, leaving lane i with four partial sums of acc[i][j].
      t[j] = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xdd));
    }
    // Transpose-and-add inside each lane: slot j of lane i becomes the total of acc[i][j].
    const __m512 p01 = _mm512_add_ps(_mm512_unpacklo_ps(t[0], t[1]), _mm512_unpackhi_ps(t[0], t[1]));
    const __m512 p23 = _mm512_add_ps(_mm512_unpacklo_ps(t[2], t[3]), _mm512_unpackhi_ps(t[2], t[3]));
    return _mm512_add_ps(_mm512_shuffle_ps(p01, p23, 0x44), _mm512_shuffle_ps(p01, p23, 0xee));
  }

  // Rows i >= mr of `acc` were never written (a partial tile): their lanes are dropped, so the tree may read them.
  static void store_tile(const __m512 (&acc)[MR][4], size_t mr, size_t nr, float* o, size_t ldo, bool add) {
    const __m512 s = reduce16(acc);
    if (nr == 4) {
      const __m128 lanes[4] = {_mm512_castps512_ps128(s), _mm512_extractf32x4_ps(s, 1), _mm512_extractf32x4_ps(s, 2), _mm512_extractf32x4_ps(s, 3)};
      for (size_t i = 0; i < mr; ++i) _mm_storeu_ps(o + i * ldo, add ? _mm_add_ps(_mm_loadu_ps(o + i * ldo), lanes[i]) : lanes[i]);
    } else {
      alignas(64) float res[16];
      _mm512_store_ps(res, s);
      for (size_t i = 0; i < mr; ++i)
        for (size_t j = 0; j < nr; ++j) o[i * ldo + j] = (add ? o[i * ldo + j] : 0.f) + res[i * 4 + j];
    }
  }
};

#include "dense_dot_body.h"

size_t select_ge(const float* s, size_t n, float thr, uint32_t* idx) {
  size_t m = 0, j = 0;
  const __m512 t = _mm512_set1_ps(thr);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (; j + 16 <= n; j += 16) {
    const __mmask16 k = _mm512_cmp_ps_mask(_mm512_loadu_ps(s + j), t, _CMP_GE_OQ);
    // Branch-free: whether a group of 16 has a hit is a coin flip early in a scan (a mispredicted branch cost more
    // than the store), and a compress into a register then a full store is cheaper than a compress to memory.
    _mm512_storeu_si512(idx + m, _mm512_maskz_compress_epi32(k, _mm512_add_epi32(iota, _mm512_set1_epi32(int(j)))));
    m += size_t(__builtin_popcount(unsigned(k)));
  }
  for (; j < n; ++j)
    if (s[j] >= thr) idx[m++] = uint32_t(j);
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
