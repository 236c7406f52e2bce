// docs/methods/came.md#the-local-experts-index: the candidate stage of the local expert without token vectors.
#include "centroid_index.h"

#include <algorithm>
#include <limits>
#include <string>

#include "../common/error.h"
#include "../common/thread_pool.h"
#include "dispatch.h"
#include "dense_search.h"
#include "topk.h"

namespace quorum::kernels {

const CentroidOps& centroid_ops() { return pick(centroid_scalar(), centroid_avx2(), centroid_avx512(), centroid_neon()); }

CentroidIndex::CentroidIndex(const float* centroids, size_t n_centroids, size_t dim, const int32_t* codes,
                             size_t tokens, const int32_t* lengths, size_t passages)
    : n_centroids_(n_centroids), dim_(dim), centroids_(centroids, centroids + n_centroids * dim),
      codes_(codes, codes + tokens), starts_(passages + 1, 0) {
  need(n_centroids > 0 && dim > 0, "ERR_SHAPE", "a centroid index needs at least one centroid of at least one dimension");
  need(n_centroids <= size_t(std::numeric_limits<int32_t>::max()), "ERR_RANGE", "too many centroids");
  for (size_t p = 0; p < passages; ++p) {
    need(lengths[p] >= 0, "ERR_RANGE", [&] { return "passage " + std::to_string(p) + " has a negative length"; });
    starts_[p + 1] = starts_[p] + lengths[p];
  }
  need(size_t(starts_[passages]) == tokens, "ERR_SHAPE",
       "the passage lengths add up to " + std::to_string(starts_[passages]) + " tokens, the codes are " + std::to_string(tokens));
  for (size_t t = 0; t < tokens; ++t)
    need(codes[t] >= 0 && size_t(codes[t]) < n_centroids, "ERR_RANGE", [&] {
      return "token " + std::to_string(t) + " has code " + std::to_string(codes[t]) + " outside the " + std::to_string(n_centroids) + " centroids";
    });
  // Each centroid's passages (once each, ascending): a counting pass, then a fill, over the distinct (code, passage)
  // pairs (repeats inside a passage dropped by a last-seen mark per centroid).
  const auto each_pair = [&](auto&& f) {
    std::vector<int32_t> last(n_centroids, -1);
    for (size_t p = 0; p < passages; ++p)
      for (int64_t t = starts_[p]; t < starts_[p + 1]; ++t)
        if (int32_t& l = last[size_t(codes[t])]; l != int32_t(p)) {
          l = int32_t(p);
          f(size_t(codes[t]), int32_t(p));
        }
  };
  list_offsets_.assign(n_centroids + 1, 0);
  each_pair([&](size_t c, int32_t) { ++list_offsets_[c + 1]; });
  for (size_t c = 0; c < n_centroids; ++c) list_offsets_[c + 1] += list_offsets_[c];
  list_passages_.resize(size_t(list_offsets_[n_centroids]));
  std::vector<int64_t> fill(list_offsets_.begin(), list_offsets_.end() - 1);
  each_pair([&](size_t c, int32_t p) { list_passages_[size_t(fill[c]++)] = p; });
}

size_t CentroidIndex::candidates(const float* q, size_t lq, size_t nprobe, const int32_t* allowed, size_t n_allowed,
                                 size_t keep, int32_t* rows, float* scores) const {
  const size_t n = passages();
  if (lq == 0 || keep == 0 || n == 0) return 0;
  // Cᵀ [centroids, lanes] = centroids Qᵀ: one question token's scores are a column, one centroid's a contiguous row
  // (what the approximate MaxSim reads per passage token); the padding lanes stay 0.
  const size_t lanes = (lq + kCentroidLanes - 1) / kCentroidLanes * kCentroidLanes;
  // The dense kernel reads the centroids in place (a GEMM packed the same 1 MB of them again for every question:
  // 13% of a search's time, docs/results/serving.md#came), then the few question rows are turned into lanes.
  std::vector<float> s(lq * n_centroids_);
  score_matrix({q, lq, dim_}, {reinterpret_cast<const uint8_t*>(centroids_.data()), n_centroids_, dim_, Dtype::F32}, s.data());
  std::vector<float> ct(n_centroids_ * lanes, 0.0f);
  for (size_t j = 0; j < lq; ++j)
    for (size_t c = 0; c < n_centroids_; ++c) ct[c * lanes + j] = s[j * n_centroids_ + c];

  std::vector<uint8_t> ok;
  if (allowed) {
    ok.assign(n, 0);
    for (size_t i = 0; i < n_allowed; ++i) ok[size_t(allowed[i])] = 1;
  }
  std::vector<int32_t> cand;
  if (nprobe == 0 || nprobe >= n_centroids_) {
    for (size_t p = 0; p < n; ++p)
      if (starts_[p + 1] > starts_[p] && (!allowed || ok[p])) cand.push_back(int32_t(p));
  } else {
    std::vector<uint8_t> seen(n, 0);
    std::vector<Hit> heap(nprobe);
    for (size_t j = 0; j < lq; ++j) {
      TopKHeap best(heap.data(), nprobe);
      for (size_t c = 0; c < n_centroids_; ++c) best.push({ct[c * lanes + j], int64_t(c)});
      for (size_t h = 0; h < best.size(); ++h) {
        const size_t c = size_t(best.data()[h].id);
        for (int64_t i = list_offsets_[c]; i < list_offsets_[c + 1]; ++i) {
          const auto p = size_t(list_passages_[size_t(i)]);
          if (!seen[p] && (!allowed || ok[p])) {
            seen[p] = 1;
            cand.push_back(int32_t(p));
          }
        }
      }
    }
  }
  if (cand.empty()) return 0;

  // approx over the candidates (each has tokens), in blocks over the pool.
  std::vector<float> approx(cand.size());
  constexpr size_t kBlock = 64;
  const CentroidOps& ops = centroid_ops();
  const ThreadPool::Lease lease = ThreadPool::lease();
  lease.pool().parallel_for((cand.size() + kBlock - 1) / kBlock, [&](size_t b, int) {
    for (size_t i = b * kBlock, end = std::min(cand.size(), i + kBlock); i < end; ++i) {
      const auto p = size_t(cand[i]);
      approx[i] = ops.approx(ct.data(), lanes, codes_.data() + starts_[p], size_t(starts_[p + 1] - starts_[p]));
    }
  });

  std::vector<Hit> heap(std::min(keep, cand.size()));
  TopKHeap top(heap.data(), heap.size());
  for (size_t i = 0; i < cand.size(); ++i) top.push({approx[i], int64_t(cand[i])});
  heap.resize(top.size());
  std::sort(heap.begin(), heap.end(), better);
  for (size_t i = 0; i < heap.size(); ++i) {
    rows[i] = int32_t(heap[i].id);
    scores[i] = heap[i].score;
  }
  return heap.size();
}

}  // namespace quorum::kernels
