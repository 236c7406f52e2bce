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
  // Per question, every (row, position) of the experts' lists as one integer: the row in the high half, the entry's
  // position in the low (positions run in expert order), so one integer sort groups each row's entries with its
  // experts in order (a (row, expert) struct sort with a comparator was 5% of a B = 64 MUF search). On the calling
  // thread: spread over the pool, the questions of a B = 64 call took more CPU time and no less wall time.
  struct Fused {
    double score;
    int32_t row;
  };
  std::vector<uint64_t> keys;
  std::vector<float> scores;
  std::vector<Fused> fused;
  std::vector<double> w(count), fill(count), value(count);
  std::vector<uint32_t> expert_of;  // the expert of each position of a question's entries
  for (size_t e = 0; e < count; ++e) expert_of.insert(expert_of.end(), lists[e].len, uint32_t(e));
  for (size_t b = 0; b < batch; ++b) {
    bool any = false;
    for (size_t e = 0; e < count; ++e) any = any || lists[e].weights[b] > 0;
    double total = 0;
    for (size_t e = 0; e < count; ++e) total += any ? double(lists[e].weights[b]) : 1.0;
    keys.clear();
    scores.clear();
    for (size_t e = 0; e < count; ++e) {
      const FuseList& l = lists[e];
      w[e] = (any ? double(l.weights[b]) : 1.0) / total;
      double lo = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < l.len; ++i) {
        lo = std::min(lo, double(l.scores[b * l.len + i]));
        keys.push_back((uint64_t(uint32_t(l.ids[b * l.len + i])) << 32) | uint64_t(scores.size()));
        scores.push_back(l.scores[b * l.len + i]);
      }
      fill[e] = lo;
    }
    std::sort(keys.begin(), keys.end());
    fused.clear();
    for (size_t i = 0; i < keys.size();) {
      const uint32_t row = uint32_t(keys[i] >> 32);
      std::copy(fill.begin(), fill.end(), value.begin());
      for (; i < keys.size() && uint32_t(keys[i] >> 32) == row; ++i) {
        const uint32_t at = uint32_t(keys[i]);
        value[expert_of[at]] = scores[at];
      }
      double s = 0;
      for (size_t e = 0; e < count; ++e) s = s + w[e] * value[e];
      fused.push_back({s, int32_t(row)});
    }
    const auto rank = [&](int32_t r) { return tie_rank ? tie_rank[r] : r; };
    const size_t n = std::min(k, fused.size());
    std::partial_sort(fused.begin(), fused.begin() + ptrdiff_t(n), fused.end(), [&](const Fused& p, const Fused& q) {
      return p.score != q.score ? p.score > q.score : rank(p.row) < rank(q.row);
    });
    for (size_t j = 0; j < k; ++j) {
      out_ids[b * k + j] = j < n ? fused[j].row : -1;
      out_scores[b * k + j] = j < n ? float(fused[j].score) : -std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace quorum::kernels
