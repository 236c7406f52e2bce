// AArch64 NEON variant of quant_dot.h. score_s8 widens bytes to 16 bits and multiply-accumulates into 32-bit lanes
// (exact, as every variant); score_bits is the portable body, whose 64-bit popcount AArch64 compiles to CNT on a
// vector register. No s8_tile and fast_s8 false: without SDOT (ARMv8.2 dotprod, not in every core) a byte product
// costs what an f32 one does, so int8 corpora take f32 queries here (docs/methods/quantization.md).
#include "quant_dot.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstring>

namespace quorum::kernels {
namespace {

void score_s8(const uint8_t* q, size_t qstride, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim,
              float* out, size_t ldo) {
  const size_t pad = (dim + kS8Pad - 1) / kS8Pad * kS8Pad;
  for (size_t i = 0; i < nq; ++i) {
    const uint8_t* qi = q + i * qstride;
    float scale;
    std::memcpy(&scale, qi + pad, 4);
    for (size_t j = 0; j < nrows; ++j) {
      const uint8_t* r = rows[j];
      int32x4_t acc = vdupq_n_s32(0);
      size_t d = 0;
      for (; d + 16 <= dim; d += 16) {
        const int16x8_t ql = vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(qi + d)));
        const int16x8_t qh = vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(qi + d + 8)));
        const int16x8_t cl = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(r + d)));
        const int16x8_t ch = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(r + d + 8)));
        acc = vmlal_s16(acc, vget_low_s16(ql), vget_low_s16(cl));
        acc = vmlal_high_s16(acc, ql, cl);
        acc = vmlal_s16(acc, vget_low_s16(qh), vget_low_s16(ch));
        acc = vmlal_high_s16(acc, qh, ch);
      }
      int32_t sum = vaddvq_s32(acc);
      for (; d < dim; ++d) sum += int32_t(int8_t(qi[d])) * int32_t(r[d]);
      out[i * ldo + j] = scale * float(sum);
    }
  }
}

#include "quant_dot_body.h"

}  // namespace

const QuantDotOps* quant_dot_neon() {
  static const QuantDotOps ops{"neon", false, score_s8, score_bits, nullptr};
  return &ops;
}

}  // namespace quorum::kernels

#else
namespace quorum::kernels {
const QuantDotOps* quant_dot_neon() { return nullptr; }
}  // namespace quorum::kernels
#endif
