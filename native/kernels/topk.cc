#include "topk.h"

#include <algorithm>
#include <vector>

namespace quorum {

void merge_topk(const Hit* const* lists, const size_t* sizes, size_t nlists, size_t k, int32_t* ids, float* scores) {
  std::vector<Hit> all;
  for (size_t l = 0; l < nlists; ++l) all.insert(all.end(), lists[l], lists[l] + sizes[l]);
  size_t m = std::min(k, all.size());
  std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(m), all.end(), [](const Hit& a, const Hit& b) { return better(a, b); });
  for (size_t j = 0; j < k; ++j) {
    ids[j] = j < m ? int32_t(all[j].id) : -1;
    scores[j] = j < m ? all[j].score : -std::numeric_limits<float>::infinity();
  }
}

}  // namespace quorum
