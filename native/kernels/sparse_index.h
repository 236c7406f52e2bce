// An inverted index over sparse vectors (term id, weight): SPLADE vectors, or BM25 term weights. Documents carry
// 64-bit ids of the caller's choosing. Search is term-at-a-time into per-thread accumulators that only touch the
// documents a query's postings reach (a stamp array marks them, so nothing is cleared per query), then a
// bounded heap: cost O(sum of the query terms' posting lengths + touched log k).
//
// Order of results: score descending, then id ascending; documents no query term reaches are never returned,
// and missing slots (fewer than k reached) hold id -1 and score -inf.
//
// Deletes: remove() marks documents dead (searches skip them, size() no longer counts them, their ids can be added
// again); once the dead pass a quarter of the documents the postings are rebuilt without them, and to_bytes()
// writes the live documents only (docs/api.md#sparse-index-bm25-hybrid).
//
// Thread safety: searches share a reader lock and may run at once; add() and remove() take the writer lock.
#pragma once
#include <cstddef>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "splade.h"

namespace quorum {
class TopKHeap;
}

namespace quorum::kernels {

// How search() walks the postings (both give the same top-k, up to f32 summation order):
//   kTaat      term at a time into per-thread accumulators: touches every posting of every query term;
//   kMaxScore  document at a time with MaxScore pruning: skips documents that cannot reach the top-k;
//   kAuto      per query row, MaxScore for short queries and small k on large indexes, else TAAT (thresholds
//              from bench/sparse-index.ts: MaxScore won 3.6x at k = 10 on 200k documents with 5-term queries,
//              and lost on 25-term SPLADE-like queries, at k = 1000, and on the 3,204 CACM abstracts).
enum class SparseAlgorithm { kTaat = 0, kMaxScore = 1, kAuto = 2 };

struct SparseSearchScratch;

class SparseIndex {
 public:
  // Adds n documents: doc i has ids[i] and entries rows.offsets[i] .. rows.offsets[i + 1]. Term ids must be
  // >= 0 and weights finite (ERR_RANGE / ERR_NONFINITE; nothing is added then). Term ids need not be sorted;
  // a repeated term within a document adds up. Ids must be >= 0 (ERR_RANGE) and new: an id already held or
  // repeated in the batch is ERR_DUPLICATE_ID, and the batch adds nothing.
  void add(const int64_t* ids, const SparseView& rows, size_t nnz);
  // Removes the documents with these ids (unknown ones are skipped); returns how many went.
  size_t remove(const int64_t* ids, size_t n);
  // Gives the documents held as from[i] the ids to[i] (a renumbering after removals, for indexes whose ids are
  // rows). ERR_ARG for an id not held or listed twice, ERR_RANGE for a negative new id, ERR_DUPLICATE_ID when two
  // documents would share an id; nothing changes then.
  void relabel(const int64_t* from, const int64_t* to, size_t n);
  // For each query row: the k best documents by sparse dot product. ids/scores are [q.rows, k].
  // With `filter` (allowed ids, any order; ids not held are ignored) only those documents can be returned
  // (docs/methods/kernels.md#filtered-search): the walk is the same, the heap admits allowed documents only, so the
  // result is exactly the filtered top-k and never short of allowed documents that a query term reaches. Building
  // the filter costs one pass over the index's ids.
  struct Filter {
    const int64_t* ids;
    size_t n;
  };
  void search(const SparseView& q, size_t nnz, size_t k, int64_t* ids, float* scores,
              SparseAlgorithm algorithm = SparseAlgorithm::kAuto, const Filter* filter = nullptr) const;

  // The index as bytes (versioned header, FNV-1a 64 checksum at the end), and back. from_bytes throws
  // ERR_FORMAT for anything that is not a complete, intact index; it never reads past `n`.
  std::vector<uint8_t> to_bytes() const;
  void from_bytes(const uint8_t* data, size_t n);
  // Atomic file save: a temporary file beside `path`, fsync, rename. ERR_IO on failure.
  void save(const std::string& path) const;
  void load(const std::string& path);

  size_t size() const;
  size_t postings() const;
  // 1 + the largest term id seen (0 when empty).
  size_t vocab() const;

 public:
  struct Posting {
    uint32_t doc;  // postings of a term are in increasing doc order (documents are appended)
    float weight;
  };

 private:
  // `ok` [size()] marks the documents a filtered search may return (null: all).
  void search_taat(const SparseView& q, size_t r, SparseSearchScratch& s, TopKHeap& heap, const uint8_t* ok) const;
  void search_maxscore(const SparseView& q, size_t r, SparseSearchScratch& s, TopKHeap& heap, const uint8_t* ok) const;
  void refresh_bounds();
  // The live documents renumbered in order, and their postings (what compaction keeps and to_bytes writes).
  struct Live {
    std::vector<std::vector<Posting>> terms;
    std::vector<int64_t> ids;
    size_t postings = 0;
  };
  Live live() const;
  // Replaces the contents (writer lock held): the id map, no dead documents, the MaxScore bounds.
  void install(std::vector<std::vector<Posting>> terms, std::vector<int64_t> ids, size_t postings);
  mutable std::shared_mutex mutex_;
  std::vector<std::vector<Posting>> terms_;
  std::vector<int64_t> ids_;
  std::unordered_map<int64_t, uint32_t> doc_of_;  // live ids -> documents: duplicates are ERR_DUPLICATE_ID
  std::vector<uint8_t> dead_;                     // per document, 1 = removed (empty while none is)
  size_t n_dead_ = 0;
  std::vector<float> max_weight_, min_weight_;  // per term, for MaxScore's bounds
  size_t postings_ = 0;
};

}  // namespace quorum::kernels
