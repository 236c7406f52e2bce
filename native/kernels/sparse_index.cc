#include "sparse_index.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>

#include "../common/error.h"
#include "../common/thread_pool.h"
#include "topk.h"

namespace quorum::kernels {
namespace {

void check_rows(const SparseView& r, size_t nnz, bool check_weights) {
  if (r.offsets[0] != 0 || r.offsets[r.rows] != int64_t(nnz))
    throw Error("ERR_RANGE", "sparse offsets must start at 0 and end at the number of entries (" +
                                 std::to_string(nnz) + ")");
  for (size_t i = 0; i < r.rows; ++i)
    if (r.offsets[i + 1] < r.offsets[i]) throw Error("ERR_RANGE", "sparse offsets must not decrease");
  for (size_t e = 0; e < nnz; ++e) {
    if (r.indices[e] < 0) throw Error("ERR_RANGE", "term id " + std::to_string(r.indices[e]) + " is negative");
    if (check_weights && !std::isfinite(r.values[e]))
      throw Error("ERR_NONFINITE", "sparse weights must be finite");
  }
}

}  // namespace

void SparseIndex::add(const int64_t* ids, const SparseView& rows, size_t nnz) {
  check_rows(rows, nnz, true);
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (ids_.size() + rows.rows > size_t(std::numeric_limits<uint32_t>::max()))
    throw Error("ERR_RANGE", "a sparse index holds at most 2^32 - 1 documents");
  int32_t max_term = -1;
  for (size_t e = 0; e < nnz; ++e) max_term = std::max(max_term, rows.indices[e]);
  if (size_t(max_term + 1) > terms_.size()) terms_.resize(size_t(max_term) + 1);
  for (size_t i = 0; i < rows.rows; ++i) {
    const uint32_t doc = uint32_t(ids_.size());
    ids_.push_back(ids[i]);
    for (int64_t e = rows.offsets[i]; e < rows.offsets[i + 1]; ++e) {
      auto& list = terms_[size_t(rows.indices[e])];
      if (!list.empty() && list.back().doc == doc) {
        list.back().weight += rows.values[e];  // a repeated term within the document
      } else {
        list.push_back({doc, rows.values[e]});
        ++postings_;
      }
    }
  }
}

void SparseIndex::search(const SparseView& q, size_t nnz, size_t k, int64_t* ids, float* scores) const {
  check_rows(q, nnz, false);
  std::shared_lock<std::shared_mutex> lock(mutex_);
  const size_t n = ids_.size();
  const ThreadPool::Lease lease = ThreadPool::lease();
  struct Scratch {
    std::vector<float> acc;
    std::vector<uint32_t> stamp;
    std::vector<uint32_t> touched;
    std::vector<Hit> heap;
    uint32_t generation = 0;
  };
  std::vector<Scratch> scratch(size_t(lease.threads()));
  const size_t kk = std::min(k, n);
  lease.pool().parallel_for(q.rows, [&](size_t r, int worker) {
    Scratch& s = scratch[size_t(worker)];
    if (s.acc.size() != n) {
      s.acc.assign(n, 0.f);
      s.stamp.assign(n, 0);
      s.heap.resize(kk);
    }
    if (++s.generation == 0) {  // stamps wrapped: clear them once
      std::fill(s.stamp.begin(), s.stamp.end(), 0);
      s.generation = 1;
    }
    s.touched.clear();
    for (int64_t e = q.offsets[r]; e < q.offsets[r + 1]; ++e) {
      const size_t term = size_t(q.indices[e]);
      if (term >= terms_.size()) continue;  // a term no document has
      const float w = q.values[e];
      for (const Posting& p : terms_[term]) {
        if (s.stamp[p.doc] != s.generation) {
          s.stamp[p.doc] = s.generation;
          s.acc[p.doc] = 0.f;
          s.touched.push_back(p.doc);
        }
        s.acc[p.doc] += w * p.weight;
      }
    }
    TopKHeap heap(s.heap.data(), kk);
    for (uint32_t d : s.touched)
      if (!std::isnan(s.acc[d])) heap.push(Hit{s.acc[d], ids_[d]});
    std::vector<Hit> best(heap.data(), heap.data() + heap.size());
    std::sort(best.begin(), best.end(), better);
    for (size_t j = 0; j < k; ++j) {
      ids[r * k + j] = j < best.size() ? best[j].id : -1;
      scores[r * k + j] = j < best.size() ? best[j].score : -std::numeric_limits<float>::infinity();
    }
  });
}

size_t SparseIndex::size() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return ids_.size();
}

size_t SparseIndex::postings() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return postings_;
}

size_t SparseIndex::vocab() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return terms_.size();
}

}  // namespace quorum::kernels
