// Bounded selection of the best k (score, id) pairs. Order everywhere: score descending, then id ascending,
// so results are deterministic whatever the thread count or block order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>

namespace quorum {

struct Hit {
  float score;
  int64_t id;
};

inline bool better(const Hit& a, const Hit& b) { return a.score > b.score || (a.score == b.score && a.id < b.id); }

// A min-heap (by `better`) over caller-provided storage of k hits: the root is the worst hit kept.
class TopKHeap {
 public:
  TopKHeap() = default;
  TopKHeap(Hit* storage, size_t k) : h_(storage), k_(k) {}

  size_t size() const { return n_; }
  const Hit* data() const { return h_; }
  // Scores below this cannot enter; scores equal to it may (a smaller id wins the tie).
  float threshold() const {
    if (n_ < k_) return -std::numeric_limits<float>::infinity();
    return k_ == 0 ? std::numeric_limits<float>::infinity() : h_[0].score;  // a 0-capacity heap takes nothing
  }

  void push(Hit x) {
    if (n_ < k_) {
      size_t i = n_++;
      while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!better(h_[p], x)) break;
        h_[i] = h_[p];
        i = p;
      }
      h_[i] = x;
    } else if (k_ > 0 && better(x, h_[0])) {
      size_t i = 0;
      for (;;) {
        size_t l = 2 * i + 1;
        if (l >= n_) break;
        size_t w = (l + 1 < n_ && better(h_[l], h_[l + 1])) ? l + 1 : l;  // the worse child
        if (!better(x, h_[w])) break;
        h_[i] = h_[w];
        i = w;
      }
      h_[i] = x;
    }
  }

 private:
  Hit* h_ = nullptr;
  size_t k_ = 0;
  size_t n_ = 0;
};

// Merges per-thread candidate lists into the best k, sorted; pads with id -1 and score -inf.
void merge_topk(const Hit* const* lists, const size_t* sizes, size_t nlists, size_t k, int32_t* ids, float* scores);

}  // namespace quorum
