// Scalar reference of quant_dot.h: plain loops. Every SIMD variant is tested against this one.
#include <cstring>

#include "quant_dot.h"

namespace quorum::kernels {
namespace {

void score_s8(const uint8_t* q, size_t qstride, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim,
              float* out, size_t ldo) {
  const size_t pad = (dim + kS8Pad - 1) / kS8Pad * kS8Pad;
  for (size_t i = 0; i < nq; ++i) {
    const int8_t* qi = reinterpret_cast<const int8_t*>(q + i * qstride);
    float scale;
    std::memcpy(&scale, q + i * qstride + pad, 4);
    for (size_t j = 0; j < nrows; ++j) {
      int32_t acc = 0;
      for (size_t d = 0; d < dim; ++d) acc += int32_t(qi[d]) * int32_t(rows[j][d]);
      out[i * ldo + j] = scale * float(acc);
    }
  }
}

bool s8_tile(size_t dim, const uint8_t* const* rows, const int8_t* panel, const float* scales, float* c, size_t ldc,
             size_t m_used, size_t n_used, const float* thr, uint32_t* hits) {
  bool any = false;
  for (size_t i = 0; i < m_used; ++i) {
    uint32_t h = 0;
    for (size_t j = 0; j < n_used; ++j) {
      int32_t acc = 0;
      for (size_t d = 0; d < dim; ++d) acc += int32_t(rows[i][d]) * int32_t(panel[(d / 4) * 4 * kS8TileQueries + 4 * j + d % 4]);
      const float x = scales[j] * float(acc);
      c[i * ldc + j] = x;
      if (thr && x >= thr[j]) h |= 1u << j;
    }
    if (thr) hits[i] = h, any = any || h != 0;
  }
  return any;
}

#include "quant_dot_body.h"

}  // namespace

const QuantDotOps& quant_dot_scalar() {
  static const QuantDotOps ops{"scalar", false, score_s8, score_bits, s8_tile};
  return ops;
}

}  // namespace quorum::kernels
