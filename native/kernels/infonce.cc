#include "infonce.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "../common/aligned_buffer.h"
#include "../common/int_math.h"
#include "../common/thread_pool.h"
#include "contract.h"
#include "gemm.h"
#include "softmax.h"

namespace quorum::kernels {
namespace {

constexpr float kNormEps = 1e-12f;  // F.normalize's eps
constexpr size_t kRowsPerTask = 8;  // rows per pool task in the row passes (1.02-1.03x over 1 at B = 128)

// fn(r) for r < rows over the pool, kRowsPerTask rows per task: a row is well under a microsecond of work, and
// one task per row made the two threads trade the pool's task counter more than they worked (measured: the loss's
// row pass took 1.6x the CPU time on two threads as on one).
template <class Fn>
void for_rows(size_t rows, Fn&& fn) {
  ThreadPool::global().parallel_for(ceil_div(rows, kRowsPerTask), [&](size_t t, int) {
    for (size_t r = t * kRowsPerTask, end = std::min(rows, r + kRowsPerTask); r < end; ++r) fn(r);
  });
}

// Row norms clamped at F.normalize's eps, and their inverses.
struct Norms {
  std::vector<float> n, inv;
  explicit Norms(size_t rows = 0) : n(rows), inv(rows) {}
  void set(const SoftmaxOps& sm, const float* x, size_t dim, size_t r) {
    n[r] = std::max(float(std::sqrt(sm.dot(x + r * dim, x + r * dim, dim))), kNormEps);
    inv[r] = 1.f / n[r];
  }
};

// Turns g = dL/dx̂ (x̂ = x / n) into dL/dx for one row, in place: (g - x̂ (x̂ . g)) / n, or g / eps below the eps
// clamp (where F.normalize divides by the constant eps).
void through_normalize(const SoftmaxOps& sm, const float* x, const Norms& norm, size_t r, size_t dim, float* g) {
  const float* xr = x + r * dim;
  float* gr = g + r * dim;
  const float n = norm.n[r];
  const float c = n <= kNormEps ? 0.f : float(sm.dot(xr, gr, dim)) / (n * n);
  sm.sub_scaled(gr, xr, dim, c, norm.inv[r]);
}

}  // namespace

void info_nce(const InfoNceArgs& a, InfoNceOut& out) {
  const size_t B = a.batch, M = a.passages, D = a.dim;
  contract::temperature(a.temperature);
  contract::info_nce_positives(a.pos, {B, M, D});
  if (B == 0) return;

  AlignedBuffer big_s;
  float* S = ThreadScratch::floats(ThreadScratch::kLossScores, B * M, big_s);
  gemm(B, M, D, {a.q, D, 1}, {a.p, 1, D}, S, M, false);

  const SoftmaxOps& sm = softmax_ops();
  Norms qn(a.cosine ? B : 0), pn(a.cosine ? M : 0);
  if (a.cosine) for_rows(B + M, [&](size_t r) { r < B ? qn.set(sm, a.q, D, r) : pn.set(sm, a.p, D, r - B); });
  const float inv_t = 1.f / a.temperature;
  const bool grads = out.dq || out.dp;
  // For cosine scores, dL/dq̂ needs G scaled per column rather than per row (see below): a second B x M buffer,
  // filled by the row pass, lets both backward products run in one parallel region.
  AlignedBuffer s2_buf;
  float* S2 = nullptr;
  if (a.cosine && out.dq) {
    s2_buf.reset(B * M * sizeof(float));
    S2 = s2_buf.as<float>();
  }
  // Row pass: logits, log-sum-exp with the max subtracted, loss, rank; S becomes dL/da (scaled below).
  // Dot scores are logits times 1/tau > 0, which keeps their order: the max and the rank are taken on the raw
  // scores and the scale goes into the exponentials, saving a pass over the row. Cosine scores are rescaled
  // per column first.
  const auto row_pass = [&](size_t i) {
    float* s = S + i * M;
    const float ri = a.cosine ? inv_t * qn.inv[i] : inv_t;
    if (a.cosine) sm.scale_cols(s, pn.inv.data(), M, ri, s);
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
      if (S2) sm.scale_cols(s, pn.inv.data(), M, qn.n[i], S2 + i * M);
    }
  };
  for_rows(B, row_pass);
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
  // transposed view of S (no copy). For dL/dq̂ the scale must be 1 / (tau |p_j|): S2 = H_ij |q_i| / |p_j|.
  // The two products read disjoint outputs, so they share one parallel region.
  GemmProduct both[2];
  size_t n = 0;
  if (out.dp) both[n++] = {M, D, B, {S, 1, M}, {a.q, D, 1}, out.dp, D, false};
  if (out.dq) both[n++] = {B, D, M, {S2 ? S2 : S, M, 1}, {a.p, D, 1}, out.dq, D, false};
  gemm_batch(both, n);
  if (!a.cosine) return;
  const size_t p_rows = out.dp ? M : 0, q_rows = out.dq ? B : 0;
  for_rows(p_rows + q_rows, [&](size_t r) {
    if (r < p_rows) through_normalize(sm, a.p, pn, r, D, out.dp);
    else through_normalize(sm, a.q, qn, r - p_rows, D, out.dq);
  });
}

}  // namespace quorum::kernels
