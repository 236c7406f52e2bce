#include "muf_fuse.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../common/error.h"

namespace quorum::kernels {

void muf_fuse(const FuseList* lists, size_t count, size_t batch, const int32_t* tie_rank, size_t rows, size_t k,
              int32_t* out_ids, float* out_scores) {
  for (size_t e = 0; e < count; ++e) {
    const FuseList& l = lists[e];
    need(l.len >= 1, "ERR_SHAPE", "expert " + std::to_string(e) + " has an empty list");
    for (size_t i = 0; i < batch * l.len; ++i)
      need(l.ids[i] >= 0 && size_t(l.ids[i]) < rows, "ERR_RANGE", [&] {
        return "expert " + std::to_string(e) + ": row " + std::to_string(l.ids[i]) + " is outside the corpus (" + std::to_string(rows) + " rows)";
      });
    for (size_t b = 0; b < batch; ++b)
      need(std::isfinite(l.weights[b]) && l.weights[b] >= 0, "ERR_RANGE", [&] {
        return "expert " + std::to_string(e) + ": confidence " + std::to_string(l.weights[b]) + " is not a finite value >= 0";
      });
  }
  struct Entry {
    int32_t row;
    uint32_t expert;
    float score;
  };
  struct Fused {
    double score;
    int32_t row;
  };
  std::vector<Entry> entries;
  std::vector<Fused> fused;
  std::vector<double> w(count), fill(count), value(count);
  for (size_t b = 0; b < batch; ++b) {
    bool any = false;
    for (size_t e = 0; e < count; ++e) any = any || lists[e].weights[b] > 0;
    double total = 0;
    for (size_t e = 0; e < count; ++e) total += any ? double(lists[e].weights[b]) : 1.0;
    entries.clear();
    for (size_t e = 0; e < count; ++e) {
      const FuseList& l = lists[e];
      w[e] = (any ? double(l.weights[b]) : 1.0) / total;
      double lo = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < l.len; ++i) {
        lo = std::min(lo, double(l.scores[b * l.len + i]));
        entries.push_back({l.ids[b * l.len + i], uint32_t(e), l.scores[b * l.len + i]});
      }
      fill[e] = lo;
    }
    // Group by row; within a row the experts in order, each present at most once.
    std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) {
      return x.row != y.row ? x.row < y.row : x.expert < y.expert;
    });
    fused.clear();
    for (size_t i = 0; i < entries.size();) {
      const int32_t row = entries[i].row;
      std::copy(fill.begin(), fill.end(), value.begin());
      for (; i < entries.size() && entries[i].row == row; ++i) value[entries[i].expert] = entries[i].score;
      double s = 0;
      for (size_t e = 0; e < count; ++e) s = s + w[e] * value[e];
      fused.push_back({s, row});
    }
    const auto rank = [&](int32_t r) { return tie_rank ? tie_rank[r] : r; };
    const size_t n = std::min(k, fused.size());
    std::partial_sort(fused.begin(), fused.begin() + ptrdiff_t(n), fused.end(), [&](const Fused& x, const Fused& y) {
      return x.score != y.score ? x.score > y.score : rank(x.row) < rank(y.row);
    });
    for (size_t j = 0; j < k; ++j) {
      out_ids[b * k + j] = j < n ? fused[j].row : -1;
      out_scores[b * k + j] = j < n ? float(fused[j].score) : -std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace quorum::kernels
