// Bounded selection of the best k (score, id) pairs. Order everywhere: score descending, then id ascending,
// so results are deterministic whatever the thread count or block order.
#pragma once
#include <cstddef>
#include <algorithm>
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

// The best k by `better` over caller-provided storage of 2k hits: a hit at or above the threshold is appended; when
// the storage is full the best k are kept (nth_element) and the threshold rises to the k-th of them. O(1) amortized
// a hit where a heap's push is O(log k) with unpredictable branches: scoreTopK's lists of 100 over 64 questions spent
// about two thirds of their time in heap pushes (docs/results/serving.md#dpr-muf). Holds up to 2k hits, unordered,
// a superset of the best k: merge_topk sorts them.
class TopKBuffer {
 public:
  TopKBuffer() = default;
  TopKBuffer(Hit* storage, size_t k) : h_(storage), k_(k) {}
  static constexpr size_t kSlotsPerK = 2;

  size_t size() const { return n_; }
  const Hit* data() const { return h_; }
  // Scores below this cannot be among the best k; scores equal to it may (a smaller id wins the tie).
  float threshold() const { return k_ == 0 ? std::numeric_limits<float>::infinity() : thr_; }

  void push(Hit x) {
    if (k_ == 0 || !(x.score >= thr_)) return;
    if (n_ == kSlotsPerK * k_) {
      // A lambda, not the function's address: std's algorithms inline it then.
      std::nth_element(h_, h_ + (k_ - 1), h_ + n_, [](const Hit& a, const Hit& b) { return better(a, b); });
      n_ = k_;
      thr_ = h_[k_ - 1].score;
      if (!(x.score >= thr_)) return;
    }
    h_[n_++] = x;
  }

 private:
  Hit* h_ = nullptr;
  size_t k_ = 0;
  size_t n_ = 0;
  float thr_ = -std::numeric_limits<float>::infinity();
};

// Merges per-thread candidate lists into the best k, sorted; pads with id -1 and score -inf.
void merge_topk(const Hit* const* lists, const size_t* sizes, size_t nlists, size_t k, int32_t* ids, float* scores);

}  // namespace quorum
