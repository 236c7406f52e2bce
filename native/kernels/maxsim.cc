#include "maxsim.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../common/aligned_buffer.h"
#include "../common/error.h"
#include "../common/thread_pool.h"
#include "dispatch.h"

namespace quorum::kernels {

const MaxSimOps& maxsim_ops() { return pick(maxsim_scalar(), maxsim_avx2(), maxsim_avx512(), maxsim_neon()); }

namespace {

const MaxSimOps& ops() { return maxsim_ops(); }

size_t round_up(size_t a, size_t b) { return (a + b - 1) / b * b; }

void check_docs(const TokenDocs& d) {
  for (size_t n = 0; n < d.n; ++n) {
    int64_t s = d.start[n], l = d.length[n];
    if (s < 0 || l < 0 || uint64_t(s) + uint64_t(l) > d.rows)
      throw Error("ERR_RANGE", "document " + std::to_string(n) + " (tokens " + std::to_string(s) + " + " +
                                   std::to_string(l) + ") lies outside the " + std::to_string(d.rows) + " token rows");
    if (l >= (int64_t(1) << 24))
      throw Error("ERR_RANGE", "document " + std::to_string(n) + " has more than 2^24 tokens");
  }
}

size_t max_length(const TokenDocs& d) {
  int64_t m = 0;
  for (size_t n = 0; n < d.n; ++n) m = std::max(m, d.length[n]);
  return size_t(m);
}

// Documents per task: enough tasks to balance the threads, few enough to amortise the scheduling.
size_t docs_per_task(size_t n, size_t threads) { return std::clamp<size_t>(n / (8 * threads), 1, 64); }

const uint8_t* stored_rows(const TokenDocs& d, size_t n) {
  return d.data + size_t(d.start[n]) * d.dim * dtype_size(d.dtype);
}

// Token rows of document n as f32: in place for f32 storage, else converted into `scratch`.
const float* doc_rows(const MaxSimOps& o, const TokenDocs& d, size_t n, float* scratch) {
  const uint8_t* p = stored_rows(d, n);
  if (d.dtype == Dtype::F32) return reinterpret_cast<const float*>(p);
  o.to_f32(p, d.dtype, size_t(d.length[n]) * d.dim, scratch);
  return scratch;
}

// What the scoring of document n fetches ahead (MaxSimOps::update): rows read in place stream on into the
// next document by themselves; a converted copy is already in cache, so the next document's stored rows are
// fetched instead, and its conversion does not wait on memory.
struct Ahead {
  const uint8_t* base;  // null: nothing to fetch
  size_t row;
  // The stream as seen from token r of the document (a run of unmasked tokens starting there).
  const void* from(size_t r) const { return base ? base + r * row : nullptr; }
};
Ahead ahead(const MaxSimOps& o, const TokenDocs& d, size_t n, const float* tok) {
  if (d.dtype == Dtype::F32)
    return {reinterpret_cast<const uint8_t*>(tok + o.tile_tokens * d.dim), d.dim * sizeof(float)};
  if (n + 1 >= d.n) return {nullptr, 0};
  return {stored_rows(d, n + 1), d.dim * dtype_size(d.dtype)};
}

}  // namespace

void maxsim(const TokenQueries& q, const TokenDocs& d, bool clamp_zero, float* scores, int32_t* argmax) {
  check_docs(d);
  if (q.nq == 0 || d.n == 0) return;
  const MaxSimOps& o = ops();
  const size_t dim = q.dim, lq = q.lq, lqp = round_up(std::max<size_t>(lq, 1), o.lanes);

  // Each query transposed to [dim, lqp], zero-padded: one document element broadcasts against a vector of
  // query tokens.
  AlignedBuffer qt(q.nq * dim * lqp * sizeof(float));
  float* qtp = qt.as<float>();
  std::memset(qtp, 0, q.nq * dim * lqp * sizeof(float));
  for (size_t b = 0; b < q.nq; ++b)
    for (size_t i = 0; i < lq; ++i)
      for (size_t j = 0; j < dim; ++j) qtp[(b * dim + j) * lqp + i] = q.data[(b * lq + i) * dim + j];

  const ThreadPool::Lease lease = ThreadPool::lease();  // per-worker scratch below is sized from its threads
  ThreadPool& pool = lease.pool();
  const size_t T = size_t(lease.threads());
  const size_t per = docs_per_task(d.n, T);
  const size_t conv = d.dtype == Dtype::F32 ? 0 : max_length(d) * dim;
  struct Scratch {
    AlignedBuffer rows, best, arg;
  };
  std::vector<Scratch> scratch(T);
  for (auto& s : scratch) {
    s.rows.reset(std::max<size_t>(conv, 1) * sizeof(float));
    s.best.reset(lqp * sizeof(float));
    s.arg.reset(lqp * sizeof(float));
  }
  const float kNegInf = -std::numeric_limits<float>::infinity();

  pool.parallel_for((d.n + per - 1) / per, [&](size_t task, int worker) {
    Scratch& s = scratch[size_t(worker)];
    float* best = s.best.as<float>();
    float* arg = s.arg.as<float>();
    for (size_t n = task * per, end = std::min(d.n, n + per); n < end; ++n) {
      const float* tok = doc_rows(o, d, n, s.rows.as<float>());
      const Ahead pf = ahead(o, d, n, tok);
      const size_t len = size_t(d.length[n]);
      const uint8_t* tmask = d.token_mask ? d.token_mask + d.start[n] : nullptr;
      for (size_t b = 0; b < q.nq; ++b) {
        std::fill(best, best + lqp, kNegInf);
        std::fill(arg, arg + lqp, -1.f);
        const float* qb = qtp + b * dim * lqp;
        if (!tmask) {
          o.update(qb, lqp, dim, tok, len, 0.f, pf.from(0), pf.row, best, arg);
        } else {
          for (size_t t = 0; t < len;) {  // runs of unmasked tokens
            while (t < len && !tmask[t]) ++t;
            size_t r0 = t;
            while (t < len && tmask[t]) ++t;
            if (t > r0) o.update(qb, lqp, dim, tok + r0 * dim, t - r0, float(r0), pf.from(r0), pf.row, best, arg);
          }
        }
        float total = 0.f;
        const uint8_t* qm = q.mask ? q.mask + b * lq : nullptr;
        int32_t* am = argmax ? argmax + (b * d.n + n) * lq : nullptr;
        for (size_t i = 0; i < lq; ++i) {
          float v = best[i];
          int32_t a = int32_t(arg[i]);
          if (qm && !qm[i]) {
            v = 0.f;
            a = -1;
          } else if (clamp_zero && !(v > 0.f)) {
            v = 0.f;
            a = -1;
          }
          total += v;
          if (am) am[i] = a;
        }
        scores[b * d.n + n] = total;
      }
    }
  });
}

void maxsim_backward(const TokenQueries& q, const TokenDocs& d, const int32_t* argmax, const float* grad, float* dq,
                     float* dd) {
  check_docs(d);
  const size_t dim = q.dim, lq = q.lq, qsize = q.nq * lq * dim;
  std::memset(dq, 0, qsize * sizeof(float));
  std::memset(dd, 0, d.rows * dim * sizeof(float));
  if (q.nq == 0 || d.n == 0) return;
  const MaxSimOps& o = ops();
  const ThreadPool::Lease lease = ThreadPool::lease();  // per-worker scratch below is sized from its threads
  ThreadPool& pool = lease.pool();
  const size_t T = size_t(lease.threads());
  const size_t per = docs_per_task(d.n, T);
  const size_t conv = d.dtype == Dtype::F32 ? 0 : max_length(d) * dim;
  // Documents own disjoint rows of dd; dq is shared, so each worker sums into its own copy.
  struct Scratch {
    AlignedBuffer rows, dq;
  };
  std::vector<Scratch> scratch(T);
  for (auto& s : scratch) {
    s.rows.reset(std::max<size_t>(conv, 1) * sizeof(float));
    s.dq.reset(std::max<size_t>(qsize, 1) * sizeof(float));
    std::memset(s.dq.data(), 0, qsize * sizeof(float));
  }
  pool.parallel_for((d.n + per - 1) / per, [&](size_t task, int worker) {
    Scratch& s = scratch[size_t(worker)];
    float* dqw = s.dq.as<float>();
    for (size_t n = task * per, end = std::min(d.n, n + per); n < end; ++n) {
      const float* tok = doc_rows(o, d, n, s.rows.as<float>());
      const int64_t len = d.length[n];
      float* ddn = dd + size_t(d.start[n]) * dim;
      for (size_t b = 0; b < q.nq; ++b) {
        const float g = grad[b * d.n + n];
        const int32_t* am = argmax + (b * d.n + n) * lq;
        for (size_t i = 0; i < lq; ++i) {
          const int32_t a = am[i];
          if (a < 0 || g == 0.f) continue;
          if (a >= len)
            throw Error("ERR_RANGE", "argmax " + std::to_string(a) + " is outside document " + std::to_string(n) +
                                         " (" + std::to_string(len) + " tokens)");
          const float* qv = q.data + (b * lq + i) * dim;
          const float* dv = tok + size_t(a) * dim;
          float* gq = dqw + (b * lq + i) * dim;
          float* gd = ddn + size_t(a) * dim;
          for (size_t j = 0; j < dim; ++j) {
            gq[j] += g * dv[j];
            gd[j] += g * qv[j];
          }
        }
      }
    }
  });
  for (const auto& s : scratch) {
    const float* p = s.dq.as<float>();
    for (size_t i = 0; i < qsize; ++i) dq[i] += p[i];
  }
}

}  // namespace quorum::kernels
