#include "topk.h"

#include <algorithm>
#include <vector>

namespace quorum {

void merge_topk(const uint64_t* const* lists, const size_t* sizes, size_t nlists, size_t k, int32_t* ids, float* scores) {
  std::vector<uint64_t> all;
  for (size_t l = 0; l < nlists; ++l) all.insert(all.end(), lists[l], lists[l] + sizes[l]);
  const size_t m = std::min(k, all.size());
  if (m > 0 && m < all.size()) std::nth_element(all.begin(), all.begin() + std::ptrdiff_t(m - 1), all.end());
  std::sort(all.begin(), all.begin() + std::ptrdiff_t(m));
  for (size_t j = 0; j < k; ++j) {
    ids[j] = j < m ? key_id(all[j]) : -1;
    scores[j] = j < m ? key_score(all[j]) : -std::numeric_limits<float>::infinity();
  }
}

}  // namespace quorum
