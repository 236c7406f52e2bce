// Bounded selection of the best k (score, id) pairs. Order everywhere: score descending, then id ascending,
// so results are deterministic whatever the thread count or block order.
#pragma once
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <cstring>
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

// Moves the k smallest of a[0, n) to a[0, k), the k-th smallest at a[k - 1] and the others in no particular order
// (1 <= k <= n), in place. A quickselect whose partitions are branch-free (each key is swapped to the front or in
// place, and the front moves by the comparison): std::nth_element over a list of a few hundred keys spent most of its
// time in mispredicted branches, a fifth of DPR-MUF's B = 64 search in merges and cuts
// (docs/results/serving.md#dpr-muf).
inline void select_smallest(uint64_t* a, size_t n, size_t k) {
  size_t lo = 0, hi = n;  // a[0, lo) are among the k smallest, a[hi, n) are not: lo < k <= hi
  while (hi - lo > 8) {  // partitions down to 8 keys: nth_element over 32 was 4 % of a B = 64 MUF search
    const uint64_t x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
    const uint64_t p = std::max(std::min(x, y), std::min(std::max(x, y), z));  // the median of three
    size_t l = lo;  // a[lo, l) < p <= a[l, i)
    for (size_t i = lo; i < hi; ++i) {
      const uint64_t v = a[i];
      a[i] = a[l];
      a[l] = v;
      l += v < p;
    }
    if (l == k) {  // a[lo, k) holds the k-th smallest: their greatest
      size_t m = lo;
      for (size_t i = lo + 1; i < k; ++i) m = a[i] > a[m] ? i : m;
      std::swap(a[m], a[k - 1]);
      return;
    }
    if (l > k) hi = l;  // p is on the right: l < hi
    else if (l > lo) lo = l;
    else break;  // nothing below p (p the range's least, repeated): the exact selection below finishes
  }
  std::nth_element(a + lo, a + (k - 1), a + hi);
}

// A hit of a dense scan as one integer whose order is `better`'s: the high half is the score mapped to an unsigned
// integer that falls as the score rises (IEEE order, -0 read as +0 as `better` compares them), the low half the row
// id (0 <= id < 2^31: the scans' outputs are int32). Selection and sorting on these are plain integer comparisons:
// nth_element over 200 keys took about a quarter of the time it took over (score, id) structs and `better`.
// NaN never becomes a key (the buffer's threshold test rejects it).
inline uint64_t rank_key(float score, int32_t id) {
  const float s = score + 0.f;  // -0 -> +0
  uint32_t u;
  std::memcpy(&u, &s, sizeof u);
  const uint32_t ordered = u ^ ((u >> 31) ? 0xffffffffu : 0x80000000u);  // rises with the score
  return (uint64_t(~ordered) << 32) | uint32_t(id);
}
inline int32_t key_id(uint64_t key) { return int32_t(uint32_t(key)); }
inline float key_score(uint64_t key) {
  const uint32_t ordered = ~uint32_t(key >> 32);
  const uint32_t u = ordered ^ ((ordered >> 31) ? 0x80000000u : 0xffffffffu);
  float s;
  std::memcpy(&s, &u, sizeof s);
  return s;
}

// The best k by `better` over caller-provided storage of slots(k) keys (rank_key): a hit at or above the threshold is
// appended; when the storage is full it is cut to the best k (cut()) and the threshold rises to the k-th. O(1)
// amortized a hit where a heap's push is O(log k) with unpredictable branches: scoreTopK's lists of 100 over 64
// questions spent about two thirds of their time in heap pushes (docs/results/serving.md#dpr-muf). Holds up to
// slots(k) keys, unordered, a superset of the best k: merge_topk selects them.
class TopKBuffer {
 public:
  TopKBuffer() = default;
  // storage: slots(k) keys.
  TopKBuffer(uint64_t* storage, size_t k)
      : h_(storage), k_(k), cap_(slots(k)), thr_(k == 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity()) {}
  // Twice k; from k = 16 on at least 128, 1 KiB, what k = 64 takes anyway, so that small lists cut less often
  // (familiarity's k = 30 over 4,000 rows at B = 64: 0.84 -> 0.66 ms, measured with the sampled cuts of before; with
  // exact cuts, 2k slots for every k took 1.07x the CPU of a B = 64 MUF search in paired runs). Below 16 more slots
  // only add pushes (k = 1: 0.35 -> 0.56 ms).
  static size_t slots(size_t k) { return k < 16 ? 2 * k : std::max<size_t>(2 * k, 128); }

  size_t size() const { return n_; }
  const uint64_t* data() const { return h_; }
  // Scores below this cannot be among the best k; scores equal to it may (a smaller id wins the tie).
  float threshold() const { return thr_; }  // +inf for k = 0: nothing enters

  // Returns the threshold after the push. The members are read once: the key's store could alias them.
  float push(float score, int32_t id) {
    float thr = thr_;
    if (!(score >= thr)) return thr;
    size_t n = n_;
    if (n == cap_) {
      cut();
      n = n_;
      thr = thr_;
      if (!(score >= thr)) return thr;
    }
    h_[n] = rank_key(score, id);
    n_ = n + 1;
    return thr;
  }

 private:
  // Keeps the best k and raises the threshold to the k-th's score: whatever is dropped has k better keys kept. Exact,
  // by the branch-free select_smallest: the threshold is the k-th best so far, so fewer hits pass it than after the
  // sampled cuts of before (which kept about 5k/4 keys, read off a sample of 32, with nth_element on a miss); DPR-MUF's
  // B = 64 search took 10-13 % less CPU in two of three paired runs, 2 % more in the third
  // (docs/results/serving.md#dpr-muf). std::nth_element here had been a third of a B = 64, k = 100 scoreTopK, nearly
  // all of it mispredicted branches.
  void cut() {
    select_smallest(h_, n_, k_);
    n_ = k_;
    thr_ = key_score(h_[k_ - 1]);
  }

  uint64_t* h_ = nullptr;
  size_t k_ = 0;
  size_t cap_ = 0;
  size_t n_ = 0;
  float thr_ = -std::numeric_limits<float>::infinity();
};

// Merges per-thread candidate lists (TopKBuffer keys) into the best k, sorted (or, with sorted false, the same k in
// no particular order); pads with id -1 and score -inf after them.
// floors[l]: list l's threshold (TopKBuffer::threshold), a lower bound of the k-th best score of all.
void merge_topk(const uint64_t* const* lists, const size_t* sizes, const float* floors, size_t nlists, size_t k, int32_t* ids,
                float* scores, bool sorted = true);

}  // namespace quorum
