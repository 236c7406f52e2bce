#include "muf_fuse.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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
    // A NaN or infinite score has no place in the order of fused scores (and -inf x 0 is NaN).
    for (size_t i = 0; i < batch * l.len; ++i)
      need(std::isfinite(l.scores[i]), "ERR_RANGE", [&] {
        return "expert " + std::to_string(e) + ": score " + std::to_string(l.scores[i]) + " at [" + std::to_string(i / l.len) + ", " +
               std::to_string(i % l.len) + "] is not finite";
      });
  }
  // Per question, each row of the union gets a slot the first time it is met, and the slot holds its value for every
  // expert, the fill until the expert's list has the row: one pass over the entries. Rows find their slots in an
  // open-addressing table of at least twice the entries (cleared per question: its size follows the lists, not the
  // corpus). Sorting the (row, position) entries to group them instead was 10% of a B = 64 MUF search, all of it on
  // the calling thread (docs/results/serving.md#dpr-muf).
  struct Fused {
    double score;
    int32_t row;
  };
  size_t entries = 0;
  for (size_t e = 0; e < count; ++e) entries += lists[e].len;
  size_t bits = 4;
  while ((size_t(1) << bits) < 2 * entries) ++bits;
  const size_t mask = (size_t(1) << bits) - 1;
  std::vector<int64_t> table(mask + 1);  // row << 32 | slot, or -1
  const auto slot_of = [&](int32_t row, int32_t fresh) -> int32_t {  // the row's slot, `fresh` if it had none
    for (size_t h = (uint32_t(row) * 0x9E3779B1u) >> (32 - std::min<size_t>(bits, 32)) & mask;; h = (h + 1) & mask) {
      if (table[h] < 0) {
        table[h] = int64_t(row) << 32 | uint32_t(fresh);
        return fresh;
      }
      if (int32_t(table[h] >> 32) == row) return int32_t(uint32_t(table[h]));
    }
  };
  std::vector<int32_t> slot_row;
  std::vector<double> values;  // [slot, expert]
  std::vector<Fused> fused;
  std::vector<double> w(count), fill(count);
  for (size_t b = 0; b < batch; ++b) {
    bool any = false;
    for (size_t e = 0; e < count; ++e) any = any || lists[e].weights[b] > 0;
    double total = 0;
    for (size_t e = 0; e < count; ++e) total += any ? double(lists[e].weights[b]) : 1.0;
    for (size_t e = 0; e < count; ++e) {
      const FuseList& l = lists[e];
      w[e] = (any ? double(l.weights[b]) : 1.0) / total;
      double lo = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < l.len; ++i) lo = std::min(lo, double(l.scores[b * l.len + i]));
      fill[e] = lo;
    }
    slot_row.clear();
    values.clear();
    std::fill(table.begin(), table.end(), -1);
    for (size_t e = 0; e < count; ++e) {
      const FuseList& l = lists[e];
      for (size_t i = 0; i < l.len; ++i) {
        const int32_t row = l.ids[b * l.len + i];
        const int32_t slot = slot_of(row, int32_t(slot_row.size()));
        if (size_t(slot) == slot_row.size()) {
          slot_row.push_back(row);
          values.insert(values.end(), fill.begin(), fill.end());
        }
        values[size_t(slot) * count + e] = l.scores[b * l.len + i];
      }
    }
    fused.clear();
    for (size_t j = 0; j < slot_row.size(); ++j) {
      double s = 0;
      for (size_t e = 0; e < count; ++e) s = s + w[e] * values[j * count + e];
      fused.push_back({s, slot_row[j]});
    }
    // (score, tie rank, row) orders the rows totally (a caller's ranks may repeat), so the best k do not depend on the
    // order the slots were made in.
    const auto rank = [&](int32_t r) { return tie_rank ? tie_rank[r] : r; };
    const size_t n = std::min(k, fused.size());
    std::partial_sort(fused.begin(), fused.begin() + ptrdiff_t(n), fused.end(), [&](const Fused& p, const Fused& q) {
      if (p.score != q.score) return p.score > q.score;
      const int32_t rp = rank(p.row), rq = rank(q.row);
      return rp != rq ? rp < rq : p.row < q.row;
    });
    for (size_t j = 0; j < k; ++j) {
      out_ids[b * k + j] = j < n ? fused[j].row : -1;
      out_scores[b * k + j] = j < n ? float(fused[j].score) : -std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace quorum::kernels
