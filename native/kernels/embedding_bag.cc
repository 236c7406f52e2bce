#include "embedding_bag.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../common/thread_pool.h"
#include "softmax.h"

namespace quorum::kernels {
namespace {

// y[o] = b[o] + W[o] . x
void linear(const SoftmaxOps& ops, const Linear& l, const float* x, float* y) {
  for (size_t o = 0; o < l.out; ++o) y[o] = float(double(l.b[o]) + ops.dot(l.w + o * l.in, x, l.in));
}

void normalize_row(float* y, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(y[i]) * y[i];
  const double inv = 1.0 / std::max(std::sqrt(s), 1e-12);
  for (size_t i = 0; i < n; ++i) y[i] = float(y[i] * inv);
}

// One row: pooled token states, then centre / head / normalize into out.
void encode_row(const EmbeddingBagModel& m, const SoftmaxOps& ops, const int32_t* ids, const int32_t* types,
                size_t len, float* x, double* state, float* a, float* b, float* out) {
  const size_t H = m.hidden, E = m.embed;
  std::fill(state, state + H, m.max_pool ? -std::numeric_limits<double>::infinity() : 0.0);
  double weight_sum = 0;
  for (size_t t = 0; t < len; ++t) {
    const size_t id = size_t(ids[t]), ty = size_t(types[t]);
    if (m.factor.w)
      linear(ops, m.factor, m.word + id * E, x);
    else
      std::copy(m.word + id * H, m.word + (id + 1) * H, x);
    const float* pos = m.position + t * H;
    const float* typ = m.type + ty * H;
    double mean = 0;
    for (size_t h = 0; h < H; ++h) {
      x[h] = x[h] + pos[h] + typ[h];
      mean += x[h];
    }
    mean /= double(H);
    double var = 0;
    for (size_t h = 0; h < H; ++h) var += (x[h] - mean) * (x[h] - mean);
    const double inv = 1.0 / std::sqrt(var / double(H) + double(m.ln_eps));
    if (m.max_pool) {
      for (size_t h = 0; h < H; ++h) state[h] = std::max(state[h], (x[h] - mean) * inv * m.ln_weight[h] + m.ln_bias[h]);
    } else {
      const double w = m.token_weights ? std::exp(double(m.token_weights[id])) : 1.0;
      weight_sum += w;
      for (size_t h = 0; h < H; ++h) state[h] += w * ((x[h] - mean) * inv * m.ln_weight[h] + m.ln_bias[h]);
    }
  }
  for (size_t h = 0; h < H; ++h) a[h] = float(m.max_pool ? state[h] : state[h] / weight_sum);
  if (m.centre) {
    normalize_row(a, H);
    for (size_t h = 0; h < H; ++h) a[h] -= m.centre[h];
  }
  const float* y = a;
  if (m.head_hidden.w) {
    linear(ops, m.head_hidden, y, b);
    for (size_t i = 0; i < m.head_hidden.out; ++i) b[i] = float(0.5 * b[i] * (1.0 + std::erf(b[i] / std::sqrt(2.0))));
    y = b;
  }
  const size_t dim = embedding_bag_dim(m);
  if (m.head.w)
    linear(ops, m.head, y, out);
  else
    std::copy(y, y + dim, out);
  if (m.normalize) normalize_row(out, dim);
}

}  // namespace

size_t embedding_bag_dim(const EmbeddingBagModel& m) { return m.head.w ? m.head.out : m.hidden; }

namespace {

// Lengths and ids in range, before computing anything; rows are named from first_row on.
void check(const EmbeddingBagModel& m, const int32_t* ids, const int32_t* type_ids, const int32_t* lengths, size_t rows,
           size_t seq_len, size_t first_row) {
  const size_t max_len = std::min(seq_len, m.positions);
  for (size_t r = 0; r < rows; ++r) {
    const int64_t len = lengths[r];
    need(len >= 1 && size_t(len) <= max_len, "ERR_RANGE", [&] {
      return "row " + std::to_string(first_row + r) + " has " + std::to_string(len) + " tokens; the model takes 1 to " + std::to_string(max_len);
    });
    for (int64_t t = 0; t < len; ++t) {
      const int32_t id = ids[r * seq_len + size_t(t)], ty = type_ids[r * seq_len + size_t(t)];
      need(id >= 0 && size_t(id) < m.vocab && ty >= 0 && size_t(ty) < m.types, "ERR_RANGE",
           [&] { return "token id " + std::to_string(id) + " or type " + std::to_string(ty) + " outside the model's tables"; });
    }
  }
}

size_t width(const EmbeddingBagModel& m) { return std::max({m.hidden, m.head_hidden.out, embedding_bag_dim(m)}); }

}  // namespace

void embedding_bag(const EmbeddingBagModel& m, const int32_t* ids, const int32_t* type_ids, const int32_t* lengths,
                   size_t rows, size_t seq_len, float* out) {
  check(m, ids, type_ids, lengths, rows, seq_len, 0);
  const SoftmaxOps& ops = softmax_ops();
  const size_t dim = embedding_bag_dim(m), w = width(m);
  const ThreadPool::Lease lease = ThreadPool::lease();
  // Per worker: x, a, b (floats) and the pooled state (doubles).
  std::vector<float> scratch(size_t(lease.threads()) * 3 * w);
  std::vector<double> states(size_t(lease.threads()) * m.hidden);
  lease.pool().parallel_for(rows, [&](size_t r, int worker) {
    float* x = scratch.data() + size_t(worker) * 3 * w;
    encode_row(m, ops, ids + r * seq_len, type_ids + r * seq_len, size_t(lengths[r]), x, states.data() + size_t(worker) * m.hidden,
               x + w, x + 2 * w, out + r * dim);
  });
}

void embedding_bag_serial(const EmbeddingBagModel& m, const int32_t* ids, const int32_t* type_ids, const int32_t* lengths,
                          size_t rows, size_t seq_len, float* out, size_t first_row) {
  check(m, ids, type_ids, lengths, rows, seq_len, first_row);
  const SoftmaxOps& ops = softmax_ops();
  const size_t dim = embedding_bag_dim(m), w = width(m);
  std::vector<float> scratch(3 * w);
  std::vector<double> state(m.hidden);
  for (size_t r = 0; r < rows; ++r)
    encode_row(m, ops, ids + r * seq_len, type_ids + r * seq_len, size_t(lengths[r]), scratch.data(), state.data(), scratch.data() + w,
               scratch.data() + 2 * w, out + r * dim);
}

}  // namespace quorum::kernels
