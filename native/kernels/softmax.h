// Row pieces shared by the losses: the exponentials of a shifted, scaled row and their sum, one SIMD pass, and the
// row's max, rank count and rescaling (the contrastive loss calls them once per query row); dot products and the
// per-column scalings of its cosine path.
#pragma once
#include <cstddef>

namespace quorum::kernels {

struct SoftmaxOps {
  const char* isa;
  // out[j] = exp((x[j] - shift) * scale) for j < n; returns the sum of out (f32 lanes, combined in f64).
  // out may alias x.
  double (*exp_shift)(const float* x, size_t n, float shift, float scale, float* out);
  // The maximum of x[0..n) (-inf for n = 0; NaN entries are skipped).
  float (*max)(const float* x, size_t n);
  // How many x[j] > t for j < n (NaN entries are not greater).
  size_t (*count_greater)(const float* x, size_t n, float t);
  // x[j] *= k for j < n.
  void (*scale)(float* x, size_t n, float k);
  // sum_j x[j] y[j] for j < n (f32 lanes, combined in f64).
  double (*dot)(const float* x, const float* y, size_t n);
  // out[j] = x[j] * (a * k[j]) for j < n; out may alias x.
  void (*scale_cols)(const float* x, const float* k, size_t n, float a, float* out);
  // g[j] = (g[j] - c * x[j]) * k for j < n.
  void (*sub_scaled)(float* g, const float* x, size_t n, float c, float k);
};

const SoftmaxOps& softmax_scalar();
const SoftmaxOps* softmax_avx2();
const SoftmaxOps* softmax_avx512();
const SoftmaxOps* softmax_neon();  // AArch64 builds only (else nullptr)
const SoftmaxOps& softmax_ops();  // the active variant

}  // namespace quorum::kernels
