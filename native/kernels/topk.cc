#include "topk.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace quorum {

void merge_topk(const uint64_t* const* lists, const size_t* sizes, const float* floors, size_t nlists, size_t k, int32_t* ids,
                float* scores) {
  // Every list's threshold bounds the k-th best of all from below: keys worse than the highest are left out first.
  float floor = -std::numeric_limits<float>::infinity();
  for (size_t l = 0; l < nlists; ++l) floor = std::max(floor, floors[l]);
  const uint64_t worst = std::isinf(floor) && floor < 0 ? ~uint64_t(0) : rank_key(floor, -1);  // id -1: every id of that score
  thread_local std::vector<uint64_t> all;
  all.clear();
  for (size_t l = 0; l < nlists; ++l)
    for (size_t i = 0; i < sizes[l]; ++i)
      if (lists[l][i] <= worst) all.push_back(lists[l][i]);
  const size_t m = std::min(k, all.size());
  if (m > 0 && m < all.size()) std::nth_element(all.begin(), all.begin() + std::ptrdiff_t(m - 1), all.end());
  std::sort(all.begin(), all.begin() + std::ptrdiff_t(m));
  for (size_t j = 0; j < k; ++j) {
    ids[j] = j < m ? key_id(all[j]) : -1;
    scores[j] = j < m ? key_score(all[j]) : -std::numeric_limits<float>::infinity();
  }
}

}  // namespace quorum
