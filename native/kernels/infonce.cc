#include "infonce.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../common/aligned_buffer.h"
#include "../common/error.h"
#include "../common/int_math.h"
#include "../common/thread_pool.h"
#include "gemm.h"
#include "softmax.h"

namespace quorum::kernels {
namespace {

constexpr float kNormEps = 1e-12f;  // F.normalize's eps
constexpr size_t kRowsPerTask = 8;  // rows of the loss's row pass per pool task (1.02-1.03x over 1 at B = 128)

std::vector<float> row_norms(const float* x, size_t rows, size_t dim) {
  std::vector<float> out(rows);
  for (size_t r = 0; r < rows; ++r) {
    double s = 0;
    for (size_t j = 0; j < dim; ++j) s += double(x[r * dim + j]) * x[r * dim + j];
    out[r] = std::max(float(std::sqrt(s)), kNormEps);
  }
  return out;
}

// Turns g = dL/dx̂ (x̂ = x / n) into dL/dx in place: (g - x̂ (x̂ . g)) / n, or g / eps below the eps clamp
// (where F.normalize divides by the constant eps).
void through_normalize(const float* x, const std::vector<float>& norm, size_t rows, size_t dim, float* g) {
  ThreadPool::global().parallel_for(rows, [&](size_t r, int) {
    const float* xr = x + r * dim;
    float* gr = g + r * dim;
    const float n = norm[r];
    bool clamped = n <= kNormEps;
    double dot = 0;
    for (size_t j = 0; j < dim; ++j) dot += double(xr[j]) * gr[j];
    const float c = clamped ? 0.f : float(dot) / (n * n);
    for (size_t j = 0; j < dim; ++j) gr[j] = (gr[j] - xr[j] * c) / n;
  });
}

}  // namespace

void info_nce(const InfoNceArgs& a, InfoNceOut& out) {
  const size_t B = a.batch, M = a.passages, D = a.dim;
  if (!(a.temperature > 0.f) || !std::isfinite(a.temperature))
    throw Error("ERR_RANGE", "temperature must be positive and finite");
  for (size_t i = 0; i < B; ++i)
    if (a.pos[i] < 0 || size_t(a.pos[i]) >= M)
      throw Error("ERR_RANGE", "positive index " + std::to_string(a.pos[i]) + " of row " + std::to_string(i) +
                                   " is outside [0, " + std::to_string(M) + ")");
  if (B == 0) return;

  AlignedBuffer big_s;
  float* S = ThreadScratch::floats(ThreadScratch::kLossScores, B * M, big_s);
  gemm(B, M, D, {a.q, D, 1}, {a.p, 1, D}, S, M, false);

  std::vector<float> qn, pn;
  if (a.cosine) {
    qn = row_norms(a.q, B, D);
    pn = row_norms(a.p, M, D);
  }
  const float inv_t = 1.f / a.temperature;
  const bool grads = out.dq || out.dp;
  // Row pass: logits, log-sum-exp with the max subtracted, loss, rank; S becomes dL/da (scaled below).
  // Dot scores are logits times 1/tau > 0, which keeps their order: the max and the rank are taken on the raw
  // scores and the scale goes into the exponentials, saving a pass over the row. Cosine scores are rescaled
  // per column first.
  const SoftmaxOps& sm = softmax_ops();
  const auto row_pass = [&](size_t i) {
    float* s = S + i * M;
    const float ri = a.cosine ? inv_t / qn[i] : inv_t;
    if (a.cosine)
      for (size_t j = 0; j < M; ++j) s[j] *= ri / pn[j];
    const float k = a.cosine ? 1.f : ri;
    const float mx = sm.max(s, M);
    const float sp = s[a.pos[i]];
    out.rank[i] = int32_t(1 + sm.count_greater(s, M, sp));
    const double sum = sm.exp_shift(s, M, mx, k, s);
    out.row_loss[i] = float((double(mx) - double(sp)) * double(k) + std::log(sum));
    if (grads) {
      // dL/da scaled for the backward products: by 1/tau, and for cosine by 1/|q_i| (see below).
      const double w = a.weights ? double(a.weights[i]) : 1.0;
      const double rs = double(ri);
      sm.scale(s, M, float(w / double(B) / sum * rs));
      s[a.pos[i]] -= float(w / double(B) * rs);
    }
  };
  // A row is well under a microsecond of work: one task per row made the two threads trade the pool's task
  // counter more than they worked (measured: this pass took 1.6x the CPU time on two threads as on one).
  ThreadPool::global().parallel_for(ceil_div(B, kRowsPerTask), [&](size_t t, int) {
    for (size_t i = t * kRowsPerTask, end = std::min(B, i + kRowsPerTask); i < end; ++i) row_pass(i);
  });
  double loss = 0;
  size_t hits = 0;
  for (size_t i = 0; i < B; ++i) {
    loss += (a.weights ? double(a.weights[i]) : 1.0) * double(out.row_loss[i]);
    hits += out.rank[i] == 1;
  }
  out.loss = loss / double(B);
  out.accuracy = double(hits) / double(B);
  if (!grads) return;

  // With G = dL/da: dL/dp̂_j = sum_i G_ij / tau * q̂_i and dL/dq̂_i = sum_j G_ij / tau * p̂_j. S now holds
  // H_ij = G_ij / (tau |q_i|) (|q_i| = 1 for dot scores), so dL/dp̂ = Hᵀ Q with the raw Q, read through a
  // transposed view of S (no copy). For dL/dq̂ the scale must be 1 / (tau |p_j|): S is rescaled in place.
  const GemmProduct dp{M, D, B, {S, 1, M}, {a.q, D, 1}, out.dp, D, false};
  const GemmProduct dq{B, D, M, {S, M, 1}, {a.p, D, 1}, out.dq, D, false};
  if (!a.cosine) {
    // Dot scores: the two products read the same S, so they share one parallel region.
    GemmProduct both[2];
    size_t n = 0;
    if (out.dp) both[n++] = dp;
    if (out.dq) both[n++] = dq;
    gemm_batch(both, n);
    return;
  }
  if (out.dp) {
    gemm_batch(&dp, 1);
    through_normalize(a.p, pn, M, D, out.dp);
  }
  if (out.dq) {
    for (size_t i = 0; i < B; ++i)
      for (size_t j = 0; j < M; ++j) S[i * M + j] *= qn[i] / pn[j];
    gemm_batch(&dq, 1);
    through_normalize(a.q, qn, B, D, out.dq);
  }
}

}  // namespace quorum::kernels
