// Exact dense retrieval over a row-major corpus: fused scoring + top-k, the full score matrix, and scores for
// given ids. Everything runs on the global thread pool with the active kernel variant (dispatch.h).
//
// scoreTopK never materialises the B x N score matrix: each worker scores a block of corpus rows (sized to
// stay in L2) against a chunk of queries into a small buffer, and only scores that can still enter a query's
// top-k (>= its current threshold) reach the worker's candidate buffer (topk.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "../common/dtype.h"
#include "quant.h"

namespace quorum::kernels {

struct QueryMatrix {
  const float* data;
  size_t rows;
  size_t dim;
};

struct CorpusMatrix {
  const uint8_t* data;
  size_t rows;
  size_t dim;
  Dtype dtype;  // F32, BF16 or F16; U8 for a coded corpus
  // A quantized corpus (quant.h, docs/methods/quantization.md): rows of coded_row_bytes(coding, dim) bytes.
  Coding coding = Coding::Plain;
  const float* scale = nullptr;   // Int8: [dim]
  const float* offset = nullptr;  // Int8: [dim]
  const float* center = nullptr;  // Binary: [dim], or null for plain signs
  std::shared_ptr<const Rotation> rotation{};  // Binary: the codes' rotation, or null for none
  // The queries' form: Int8: 32 (f32), 8 (int8, quant_dot's score_s8) or 0 (the faster on this CPU); Binary: the
  // query's bit planes, 1 (Hamming) or 4 (0 = 4).
  int query_bits = 0;
  size_t row_bytes() const { return coded_row_bytes(coding, dim, dtype); }
};

// ids/scores: [q.rows, k], sorted by score descending then id ascending. When fewer than k corpus rows have
// a non-NaN score, the remaining slots hold id -1 and score -inf. With `rows` (n_rows strictly ascending row ids
// in [0, c.rows), e.g. a metadata filter's allowed rows) only those rows are scored: exactly the top-k of the
// filtered corpus, at the cost of the rows read (docs/methods/kernels.md#filtered-search).
void score_topk(const QueryMatrix& q, const CorpusMatrix& c, size_t k, int32_t* ids, float* scores,
                const int32_t* rows = nullptr, size_t n_rows = 0);

// Several independent searches (each as score_topk, over its own corpus) in one parallel region: a server stage
// that searches many small corpora for one question (DPR-MUF's experts and their familiarity banks, muf_search.h)
// pays one fork and join instead of one per search, and with many queries a search that is a small part of the
// call's work keeps one candidate list per query instead of one per thread. Results equal score_topk's for each
// search.
struct TopKSearch {
  QueryMatrix q;
  CorpusMatrix c;
  size_t k;
  int32_t* ids;    // [q.rows, k]
  float* scores;   // [q.rows, k]
  const int32_t* rows = nullptr;
  size_t n_rows = 0;
  // false: each query's k rows in no particular order (the same set), for a caller that does not need the order
  // (DPR-MUF's fusion): saves sorting them.
  bool sorted = true;
};
void score_topk_many(const TopKSearch* searches, size_t n);

// out: [q.rows, c.rows].
void score_matrix(const QueryMatrix& q, const CorpusMatrix& c, float* out);

// out[b, j] = dot(q_b, c_{ids[b, j]}), ids [q.rows, m] as int32 (ids64 false) or int64. Throws ERR_RANGE
// for an id outside [0, c.rows) before computing anything.
void gather_scores(const QueryMatrix& q, const CorpusMatrix& c, const void* ids, bool ids64, size_t m, float* out);

// The best k of each query's `m` candidate ids (ids [q.rows, m], -1 for none) rescored with the full vectors of
// `full` (a plain or int8 corpus): an oversampled binary search's second stage. Same order and padding as score_topk.
// ERR_RANGE for a candidate outside `full`.
void rescore_topk(const QueryMatrix& q, const CorpusMatrix& full, const int32_t* cand, size_t m, size_t k, int32_t* ids,
                  float* scores);

// score_topk's best m (>= k) rows of `c` (rows / n_rows as there) rescored with `full` by rescore_topk: an oversampled
// quantized search in one call.
void score_topk_rescored(const QueryMatrix& q, const CorpusMatrix& c, const CorpusMatrix& full, size_t m, size_t k, int32_t* ids,
                         float* scores, const int32_t* rows = nullptr, size_t n_rows = 0);

// True when no element is NaN or +-Inf.
bool all_finite(const void* data, size_t count, Dtype dtype);

// Float conversions between F32, BF16 and F16 (round to nearest even). Throws ERR_DTYPE otherwise.
void convert(const void* src, Dtype from, void* dst, Dtype to, size_t count);

}  // namespace quorum::kernels
