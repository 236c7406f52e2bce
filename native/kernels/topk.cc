#include "topk.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace quorum {

void merge_topk(const uint64_t* const* lists, const size_t* sizes, const float* floors, size_t nlists, size_t k, int32_t* ids,
                float* scores, bool sorted) {
  // Every list's threshold bounds the k-th best of all from below: keys worse than the highest are left out first.
  float floor = -std::numeric_limits<float>::infinity();
  for (size_t l = 0; l < nlists; ++l) floor = std::max(floor, floors[l]);
  const uint64_t worst = std::isinf(floor) && floor < 0 ? ~uint64_t(0) : rank_key(floor, -1);  // id -1: every id of that score
  size_t total = 0;
  for (size_t l = 0; l < nlists; ++l) total += sizes[l];
  thread_local std::vector<uint64_t> all;
  all.resize(total);
  size_t n = 0;
  for (size_t l = 0; l < nlists; ++l)
    for (size_t i = 0; i < sizes[l]; ++i) {  // branch-free: which keys pass is a coin flip
      const uint64_t x = lists[l][i];
      all[n] = x;
      n += x <= worst;
    }
  const size_t m = std::min(k, n);
  if (m > 0 && m < n) select_smallest(all.data(), n, m);
  if (sorted) std::sort(all.begin(), all.begin() + std::ptrdiff_t(m));
  for (size_t j = 0; j < k; ++j) {
    ids[j] = j < m ? key_id(all[j]) : -1;
    scores[j] = j < m ? key_score(all[j]) : -std::numeric_limits<float>::infinity();
  }
}

}  // namespace quorum
