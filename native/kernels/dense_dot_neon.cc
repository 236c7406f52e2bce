// AArch64 NEON variant of dense_dot.h: the shared body over 4-lane vectors, with a 4-query x 4-row register tile
// (sixteen of the 32 vector registers, as AVX-512's 4 x 4 of 32).
#include "dense_dot.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

namespace quorum::kernels {
namespace {
#include "simd/vec_neon.h"
#include "simd/vec_math.h"

struct Dot {
  static constexpr int MR = 4;

  static void bf16_pair(const uint8_t* p, float32x4_t& even, float32x4_t& odd) {
    const uint32x4_t raw = vld1q_u32(reinterpret_cast<const uint32_t*>(p));
    even = vreinterpretq_f32_u32(vshlq_n_u32(raw, 16));
    odd = vreinterpretq_f32_u32(vandq_u32(raw, vdupq_n_u32(0xffff0000u)));
  }

  // [sum a, sum b, sum c, sum d]
  static float32x4_t reduce4(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d) {
    return vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d));
  }

  static void store_tile(const float32x4_t (&acc)[MR][4], size_t mr, size_t nr, float* o, size_t ldo, bool add) {
    for (size_t i = 0; i < mr; ++i) {
      float32x4_t s = reduce4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
      if (nr == 4) {
        if (add) s = vaddq_f32(vld1q_f32(o + i * ldo), s);
        vst1q_f32(o + i * ldo, s);
      } else {
        float tmp[4];
        vst1q_f32(tmp, s);
        for (size_t j = 0; j < nr; ++j) o[i * ldo + j] = (add ? o[i * ldo + j] : 0.f) + tmp[j];
      }
    }
  }
};

#include "dense_dot_body.h"


}  // namespace

const DenseDotOps* dense_dot_neon() {
  static const DenseDotOps ops{"neon", stride, prepare, score, select_ge_bits};
  return &ops;
}

}  // namespace quorum::kernels

#else
namespace quorum::kernels {
const DenseDotOps* dense_dot_neon() { return nullptr; }
}  // namespace quorum::kernels
#endif
