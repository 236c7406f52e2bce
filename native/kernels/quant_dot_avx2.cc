// AVX2 variant of quant_dot.h. score_s8 widens both operands to 16 bits and multiplies pairs (vpmaddwd): exact, but
// no faster than f32 queries over u8 codes, so fast_s8 is false and the search keeps f32 queries here. score_bits
// is the portable body (quant_dot_body.h) with the POPCNT instruction.
#include "quant_dot.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#pragma GCC push_options
#pragma GCC target("avx2,fma,popcnt")

namespace quorum::kernels {
namespace {

int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// 16 codes of a row from byte d on (the first n of them, the rest zero), widened to 16 bits.
__m256i row16(const uint8_t* p, size_t n) {
  if (n >= 16) return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  alignas(16) uint8_t t[16] = {};
  std::memcpy(t, p, n);
  return _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}

void score_s8(const uint8_t* q, size_t qstride, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim,
              float* out, size_t ldo) {
  const size_t pad = (dim + kS8Pad - 1) / kS8Pad * kS8Pad;
  for (size_t j0 = 0; j0 < nrows; j0 += 4) {
    const size_t nr = nrows - j0 < 4 ? nrows - j0 : 4;
    for (size_t i = 0; i < nq; ++i) {
      const uint8_t* qi = q + i * qstride;
      __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
      for (size_t d = 0; d < dim; d += 16) {
        const __m256i qv = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qi + d)));
        for (size_t j = 0; j < nr; ++j) acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(row16(rows[j0 + j] + d, dim - d), qv));
      }
      float scale;
      std::memcpy(&scale, qi + pad, 4);
      for (size_t j = 0; j < nr; ++j) out[i * ldo + j0 + j] = scale * float(hsum(acc[j]));
    }
  }
}

#include "quant_dot_body.h"

}  // namespace

const QuantDotOps* quant_dot_avx2() {
  // No s8_tile: without VNNI the tile's products cost what the dot tile's do, and the dot tile needs no packing.
  static const QuantDotOps ops{"avx2", false, score_s8, score_bits, nullptr};
  return &ops;
}

}  // namespace quorum::kernels

#pragma GCC pop_options

#else
namespace quorum::kernels {
const QuantDotOps* quant_dot_avx2() { return nullptr; }
}  // namespace quorum::kernels
#endif
