#include "muf_heads.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../common/aligned_buffer.h"
#include "../common/error.h"
#include "../common/thread_pool.h"
#include "dense_dot.h"
#include "dispatch.h"
#include "ensemble.h"
#include "gemm.h"

namespace quorum::kernels {
namespace {

void check(const HeadsExpert& e, size_t index) {
  const std::string who = "expert " + std::to_string(index);
  if (e.members == 0 || e.n_layers == 0 || e.len == 0) throw Error("ERR_SHAPE", who + ": no members, layers or candidates");
  const size_t dim = e.passages.dim;
  if (e.layers[0].in != dim || e.layers[e.n_layers - 1].out != dim)
    throw Error("ERR_SHAPE", who + ": heads map " + std::to_string(e.layers[0].in) + " -> " +
                                 std::to_string(e.layers[e.n_layers - 1].out) + " for " + std::to_string(dim) +
                                 "-d passages");
  for (size_t i = 1; i < e.n_layers; ++i)
    if (e.layers[i].in != e.layers[i - 1].out) throw Error("ERR_SHAPE", who + ": layer " + std::to_string(i) + " does not chain");
  if (!(e.temperature > 0.f) || !std::isfinite(e.temperature))
    throw Error("ERR_RANGE", who + ": temperature must be positive and finite");
}

}  // namespace

void muf_confidence(const HeadsExpert* experts, size_t count, size_t batch, bool eps_mode) {
  for (size_t x = 0; x < count; ++x) {
    check(experts[x], x);
    const HeadsExpert& e = experts[x];
    for (size_t i = 0; i < batch * e.len; ++i)
      if (e.ids[i] < 0 || size_t(e.ids[i]) >= e.passages.rows)
        throw Error("ERR_RANGE", "expert " + std::to_string(x) + ": candidate " + std::to_string(e.ids[i]) +
                                     " is outside the corpus (" + std::to_string(e.passages.rows) + " rows)");
  }
  if (batch == 0) return;
  // Activations member-major per expert: act[x][k * batch * width + b * width + j]. The last layer writes the
  // members question-major instead ([batch, K, dim]), the row order the scores and MI read.
  std::vector<AlignedBuffer> act(count), next(count);
  size_t depth = 0;
  for (size_t x = 0; x < count; ++x)
    if (experts[x].members > 1) depth = std::max(depth, experts[x].n_layers);
  // One product of a layer: C [batch, out] (row stride ldc) = A [batch, in] Wᵀ, before bias and ReLU.
  struct Product {
    const float* a;
    const uint8_t* wt;
    Dtype dtype;
    size_t in, out;
    float* c;
    size_t ldc;
  };
  std::vector<Product> products, streamed;
  std::vector<GemmProduct> gemms;
  const DenseDotOps& ops = dense_dot();
  for (size_t i = 0; i < depth; ++i) {
    products.clear();
    for (size_t x = 0; x < count; ++x) {
      const HeadsExpert& e = experts[x];
      if (e.members < 2 || i >= e.n_layers) continue;
      const HeadsLayer& l = e.layers[i];
      const size_t K = e.members, B = batch;
      const bool last = i + 1 == e.n_layers;
      next[x].reset(K * B * l.out * sizeof(float));
      float* out = next[x].as<float>();
      const size_t row_bytes = l.in * dtype_size(l.dtype);
      for (size_t k = 0; k < K; ++k)
        products.push_back({i == 0 ? e.queries : act[x].as<float>() + k * B * l.in,
                            static_cast<const uint8_t*>(l.w) + k * l.out * row_bytes, l.dtype, l.in, l.out,
                            last ? out + k * l.out : out + k * B * l.out, last ? K * l.out : l.out});
    }
    streamed.clear();
    gemms.clear();
    for (const Product& g : products) {
      if (g.dtype != Dtype::F32 || batch <= kHeadsStreamBatch)
        streamed.push_back(g);
      else
        gemms.push_back({batch, g.out, g.in, {g.a, g.in, 1}, {reinterpret_cast<const float*>(g.wt), 1, g.in}, g.c, g.ldc, false});
    }
    if (!streamed.empty()) {
      // Each product's activations prepared once for the dense_dot variant, then tasks of kRows weight rows each.
      constexpr size_t kRows = 32;
      std::vector<AlignedBuffer> prepared(streamed.size());
      std::vector<size_t> first_task(streamed.size() + 1, 0), strides(streamed.size());
      for (size_t p = 0; p < streamed.size(); ++p) {
        const Product& g = streamed[p];
        strides[p] = ops.prepared_stride(g.in, g.dtype);
        prepared[p].reset(batch * strides[p] * sizeof(float));
        for (size_t b = 0; b < batch; ++b)
          ops.prepare(g.a + b * g.in, g.in, g.dtype, prepared[p].as<float>() + b * strides[p]);
        first_task[p + 1] = first_task[p] + (g.out + kRows - 1) / kRows;
      }
      const ThreadPool::Lease lease = ThreadPool::lease();
      lease.pool().parallel_for(first_task.back(), [&](size_t t, int) {
        const size_t p = size_t(std::upper_bound(first_task.begin(), first_task.end(), t) - first_task.begin()) - 1;
        const Product& g = streamed[p];
        const size_t r0 = (t - first_task[p]) * kRows, rn = std::min(kRows, g.out - r0);
        const size_t row_bytes = g.in * dtype_size(g.dtype);
        const uint8_t* rows[kRows];
        for (size_t r = 0; r < rn; ++r) rows[r] = g.wt + (r0 + r) * row_bytes;
        ops.score(prepared[p].as<float>(), strides[p], batch, rows, rn, g.in, g.dtype, g.c + r0, g.ldc);
      });
    }
    if (!gemms.empty()) gemm_batch(gemms.data(), gemms.size());
    // Bias, and ReLU between layers.
    for (size_t x = 0; x < count; ++x) {
      const HeadsExpert& e = experts[x];
      if (e.members < 2 || i >= e.n_layers) continue;
      const HeadsLayer& l = e.layers[i];
      const bool last = i + 1 == e.n_layers;
      float* out = next[x].as<float>();
      for (size_t k = 0; k < e.members; ++k)
        for (size_t b = 0; b < batch; ++b) {
          float* c = last ? out + (b * e.members + k) * l.out : out + (k * batch + b) * l.out;
          const float* bias = l.b + k * l.out;
          if (last)
            for (size_t j = 0; j < l.out; ++j) c[j] += bias[j];
          else
            for (size_t j = 0; j < l.out; ++j) c[j] = std::max(c[j] + bias[j], 0.f);
        }
      std::swap(act[x], next[x]);
    }
  }
  std::vector<int32_t> ids;
  AlignedBuffer z;
  for (size_t x = 0; x < count; ++x) {
    const HeadsExpert& e = experts[x];
    if (e.members < 2) {
      std::fill(e.mi, e.mi + batch, 0.f);
      std::fill(e.conf, e.conf + batch, 1.f);
      continue;
    }
    const size_t K = e.members, L = e.len, dim = e.passages.dim;
    // z [batch, K, L]: member k of question b against b's candidates, one gather over batch * K rows.
    ids.resize(batch * K * L);
    for (size_t b = 0; b < batch; ++b)
      for (size_t k = 0; k < K; ++k) std::copy(e.ids + b * L, e.ids + (b + 1) * L, ids.begin() + (b * K + k) * L);
    z.reset(batch * K * L * sizeof(float));
    gather_scores({act[x].as<float>(), batch * K, dim}, e.passages, ids.data(), false, L, z.as<float>());
    ensemble_mi(z.as<float>(), batch, K, L, nullptr, e.temperature, eps_mode, e.mi, e.conf);
  }
}

}  // namespace quorum::kernels
