// Scalar reference of dense_dot.h: plain loops, one f32 accumulator per dot product. Every SIMD variant is
// tested against this one and against the TypeScript reference.
#include "dense_dot.h"

namespace quorum::kernels {
namespace {

size_t stride(size_t dim, Dtype) { return dim; }

void prepare(const float* q, size_t dim, Dtype, float* out) {
  for (size_t d = 0; d < dim; ++d) out[d] = q[d];
}

float load(const uint8_t* row, size_t d, Dtype t) {
  switch (t) {
    case Dtype::BF16: return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[d]);
    case Dtype::F16: return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[d]);
    case Dtype::U8: return float(row[d]);
    default: return reinterpret_cast<const float*>(row)[d];
  }
}

void score(const float* qp, size_t qstride, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim,
           Dtype t, float* out, size_t ldo) {
  for (size_t i = 0; i < nq; ++i) {
    const float* q = qp + i * qstride;
    for (size_t j = 0; j < nrows; ++j) {
      float acc = 0.f;
      for (size_t d = 0; d < dim; ++d) acc += q[d] * load(rows[j], d, t);
      out[i * ldo + j] = acc;
    }
  }
}

size_t select_ge(const float* s, size_t n, float thr, uint32_t* idx) {
  size_t m = 0;
  for (size_t j = 0; j < n; ++j)
    if (s[j] >= thr) idx[m++] = uint32_t(j);
  return m;
}

}  // namespace

const DenseDotOps& dense_dot_scalar() {
  static const DenseDotOps ops{"scalar", stride, prepare, score, select_ge};
  return ops;
}

}  // namespace quorum::kernels
