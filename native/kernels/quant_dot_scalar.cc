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

#include "quant_dot_body.h"

}  // namespace

const QuantDotOps& quant_dot_scalar() {
  static const QuantDotOps ops{"scalar", false, score_s8, score_bits};
  return ops;
}

}  // namespace quorum::kernels
