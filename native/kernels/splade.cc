#include "splade.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "../common/aligned_buffer.h"
#include "../common/error.h"
#include "../common/thread_pool.h"
#include "dispatch.h"

namespace quorum::kernels {
namespace {

const SpladeOps& ops() { return pick(splade_scalar(), splade_avx2(), splade_avx512(), splade_neon()); }

// Vocabulary columns per task: 16 KiB runs of each token row for the hardware prefetcher, while the
// running max and arg-max (2 x 16 KiB) stay in L1/L2. With four token rows per update (so that the running
// values move once per four rows) the chunk size mattered little on a Skylake-SP (1024 to 32768 tried).
constexpr size_t kVocabChunk = 4096;

const uint8_t* row_ptr(const Logits& x, size_t b, size_t t) {
  return static_cast<const uint8_t*>(x.data) + ((b * x.len + t) * x.vocab) * dtype_size(x.dtype);
}

float logit_at(const Logits& x, size_t b, size_t t, size_t v) {
  const uint8_t* p = row_ptr(x, b, t);
  switch (x.dtype) {
    case Dtype::F32: return reinterpret_cast<const float*>(p)[v];
    case Dtype::BF16: return bf16_to_f32(reinterpret_cast<const uint16_t*>(p)[v]);
    default: return f16_to_f32(reinterpret_cast<const uint16_t*>(p)[v]);
  }
}

}  // namespace

void splade_pool(const Logits& x, float* w, int32_t* argmax) {
  if (x.len >= (size_t(1) << 24)) throw Error("ERR_RANGE", "sequence length must be below 2^24");
  const SpladeOps& o = ops();
  const size_t chunks = (x.vocab + kVocabChunk - 1) / kVocabChunk;
  if (x.batch == 0 || chunks == 0) return;
  const ThreadPool::Lease lease = ThreadPool::lease();  // per-worker scratch below is sized from its threads
  ThreadPool& pool = lease.pool();
  std::vector<AlignedBuffer> args(size_t(lease.threads()));
  for (auto& a : args) a.reset(kVocabChunk * sizeof(float));
  pool.parallel_for(x.batch * chunks, [&](size_t task, int worker) {
    const size_t b = task / chunks, v0 = (task % chunks) * kVocabChunk;
    const size_t n = std::min(kVocabChunk, x.vocab - v0);
    float* best = w + b * x.vocab + v0;
    float* arg = argmax ? args[size_t(worker)].as<float>() : nullptr;
    std::fill(best, best + n, 0.f);  // relu: only positive logits ever replace it
    if (arg) std::fill(arg, arg + n, -1.f);
    const size_t esize = dtype_size(x.dtype);
    const void* rows[4];
    float toks[4];
    size_t r = 0;
    for (size_t t = 0; t < x.len; ++t) {
      if (x.mask && !x.mask[b * x.len + t]) continue;
      rows[r] = row_ptr(x, b, t) + v0 * esize;
      toks[r++] = float(t);
      if (r == 4) {
        o.max_update(rows, r, x.dtype, n, toks, best, arg);
        r = 0;
      }
    }
    if (r) o.max_update(rows, r, x.dtype, n, toks, best, arg);
    o.log1p_inplace(best, n);
    if (argmax)
      for (size_t i = 0; i < n; ++i) argmax[b * x.vocab + v0 + i] = int32_t(arg[i]);
  });
}

void splade_pool_backward(const Logits& x, const int32_t* argmax, const float* grad, float* dlogits) {
  ThreadPool::global().parallel_for(x.batch, [&](size_t b, int) {
    float* db = dlogits + b * x.len * x.vocab;
    std::memset(db, 0, x.len * x.vocab * sizeof(float));
    for (size_t v = 0; v < x.vocab; ++v) {
      const int32_t t = argmax[b * x.vocab + v];
      if (t < 0) continue;
      if (size_t(t) >= x.len)
        throw Error("ERR_RANGE", "argmax " + std::to_string(t) + " is outside the sequence length " +
                                     std::to_string(x.len));
      const float xv = logit_at(x, b, size_t(t), v);
      if (xv > 0.f) db[size_t(t) * x.vocab + v] = grad[b * x.vocab + v] / (1.f + xv);
    }
  });
}

double splade_regularizer(const float* w, size_t batch, size_t vocab, SparseReg kind, float* grad) {
  if (batch == 0) return 0.0;
  const double inv_b = 1.0 / double(batch);
  if (kind == SparseReg::L1) {
    double total = 0.0;
    for (size_t i = 0; i < batch * vocab; ++i) {
      total += std::fabs(double(w[i]));
      if (grad) grad[i] = float((w[i] > 0.f ? 1.0 : w[i] < 0.f ? -1.0 : 0.0) * inv_b);
    }
    return total * inv_b;
  }
  // FLOPS: column means of |w| (f64), then their squares; d/dw_bv = (2/B) mean_v sign(w_bv).
  std::vector<double> mean(vocab, 0.0);
  for (size_t b = 0; b < batch; ++b)
    for (size_t v = 0; v < vocab; ++v) mean[v] += std::fabs(double(w[b * vocab + v]));
  double total = 0.0;
  for (size_t v = 0; v < vocab; ++v) {
    mean[v] *= inv_b;
    total += mean[v] * mean[v];
  }
  if (grad)
    for (size_t b = 0; b < batch; ++b)
      for (size_t v = 0; v < vocab; ++v) {
        float x = w[b * vocab + v];
        double s = x > 0.f ? 1.0 : x < 0.f ? -1.0 : 0.0;
        grad[b * vocab + v] = float(2.0 * inv_b * mean[v] * s);
      }
  return total;
}

SparseRows to_sparse(const float* w, size_t rows, size_t vocab, float threshold, size_t top_k) {
  SparseRows out;
  out.offsets.reserve(rows + 1);
  out.offsets.push_back(0);
  std::vector<int32_t> keep;
  for (size_t r = 0; r < rows; ++r) {
    const float* x = w + r * vocab;
    keep.clear();
    for (size_t v = 0; v < vocab; ++v)
      if (x[v] > threshold) keep.push_back(int32_t(v));
    if (top_k > 0 && keep.size() > top_k) {
      auto better = [x](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); };
      std::nth_element(keep.begin(), keep.begin() + std::ptrdiff_t(top_k), keep.end(), better);
      keep.resize(top_k);
      std::sort(keep.begin(), keep.end());
    }
    for (int32_t v : keep) {
      out.indices.push_back(v);
      out.values.push_back(x[v]);
    }
    out.offsets.push_back(int64_t(out.indices.size()));
  }
  return out;
}

void check_sparse_offsets(const SparseView& s, size_t nnz) {
  if (s.offsets[0] != 0 || s.offsets[s.rows] != int64_t(nnz))
    throw Error("ERR_RANGE", "sparse offsets must start at 0 and end at the number of entries (" +
                                 std::to_string(nnz) + ")");
  for (size_t r = 0; r < s.rows; ++r)
    if (s.offsets[r + 1] < s.offsets[r]) throw Error("ERR_RANGE", "sparse offsets must not decrease");
}

void check_sparse(const SparseView& s, size_t nnz, int64_t vocab) {
  check_sparse_offsets(s, nnz);
  for (size_t r = 0; r < s.rows; ++r)
    for (int64_t i = s.offsets[r]; i < s.offsets[r + 1]; ++i) {
      int32_t id = s.indices[i];
      if (id < 0 || (vocab >= 0 && id >= vocab))
        throw Error("ERR_RANGE", "term id " + std::to_string(id) + " is outside the vocabulary");
      if (i > s.offsets[r] && id <= s.indices[i - 1])
        throw Error("ERR_RANGE", "term ids of sparse row " + std::to_string(r) + " are not strictly ascending");
    }
}

void sparse_sparse_scores(const SparseView& a, const SparseView& b, float* out) {
  ThreadPool::global().parallel_for(a.rows, [&](size_t i, int) {
    for (size_t j = 0; j < b.rows; ++j) {
      int64_t p = a.offsets[i], pe = a.offsets[i + 1], q = b.offsets[j], qe = b.offsets[j + 1];
      float s = 0.f;
      while (p < pe && q < qe) {
        int32_t x = a.indices[p], y = b.indices[q];
        if (x == y) s += a.values[p++] * b.values[q++];
        else if (x < y) ++p;
        else ++q;
      }
      out[i * b.rows + j] = s;
    }
  });
}

void sparse_dense_scores(const SparseView& a, const float* dense, size_t n, size_t vocab, float* out) {
  ThreadPool::global().parallel_for(a.rows, [&](size_t i, int) {
    for (size_t j = 0; j < n; ++j) {
      const float* row = dense + j * vocab;
      float s = 0.f;
      for (int64_t p = a.offsets[i]; p < a.offsets[i + 1]; ++p) s += a.values[p] * row[a.indices[p]];
      out[i * n + j] = s;
    }
  });
}

}  // namespace quorum::kernels
