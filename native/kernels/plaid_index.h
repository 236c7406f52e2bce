// The ColBERT index (docs/methods/colbert.md#the-compressed-index): ColBERTv2's residual compression and PLAID's
// search (Santhanam et al., 2022), over the token vectors of users' ColBERT models.
//
// Storage, per token: the id of its nearest centroid (uint16 up to 65,536 centroids, else uint32) and its residual
// x - centroid, one bucket of `nbits` bits per dimension (bucket = the number of cut-offs strictly below the value);
// decoding adds each bucket's weight to the centroid and L2-normalizes, as ColBERTv2 does. Byte j of a token's
// residual holds dimensions j * 8 / nbits ..., the lowest bits first. Per passage: its token count. An inverted list
// from each centroid to the passages that have a token there (ascending, once each, as varint deltas) is rebuilt from
// the codes when the index is opened and grows with adds.
//
// Search, one question of lq unit token vectors Q (PLAID's stages; defaults in lib/methods/colbert/index.ts):
//   S[c, q]  = centroid[c] . Q[q]
//   candidates: the passages in the lists of each question token's `ncells` best centroids (allowed, not deleted)
//   stage 1:  approx(p) = sum_q max over tokens t of p whose centroid keeps (max_q S[code t, q] >= threshold) of
//             S[code t, q], -9999 for a question token no kept token reaches; the best `ndocs` go on
//   stage 2:  the same over every token of p (no pruning); the best `ndocs / 4` (at least k) go on
//   stage 3:  MaxSim of Q against p's decoded tokens; the best k are the answer, or, where the index also keeps
//             the full token vectors (f32 or f16, `vectors.qtns`, mapped or read), the best `exact` (at least k) go on
//   stage 4:  exact MaxSim of Q against p's full token vectors; the best k are the answer.
// Ties go to the lower passage. Tokens are appended in passage order; passage ids are rows in order of adding.
// Removed passages keep their row (and their bytes until a rewrite) and are never returned.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "../common/aligned_buffer.h"
#include "../common/dtype.h"

namespace quorum::kernels {

class ResidualCodec {
 public:
  // ERR_RANGE / ERR_ARG unless nbits is 1 or 2, dim * nbits a positive multiple of 8, the 2^nbits - 1 cut-offs
  // finite and ascending and the 2^nbits weights finite.
  ResidualCodec(size_t dim, size_t nbits, const float* cutoffs, const float* weights);
  // Cut-offs and weights at the quantiles ColBERTv2 takes of the residuals' values (all dimensions pooled): cut-off
  // i at i / 2^nbits, weight i at (i + 0.5) / 2^nbits, linear interpolation between order statistics.
  static ResidualCodec fit(size_t dim, size_t nbits, const float* residuals, size_t n);

  size_t dim() const { return dim_; }
  size_t nbits() const { return nbits_; }
  size_t row_bytes() const { return dim_ * nbits_ / 8; }
  const std::vector<float>& cutoffs() const { return cutoffs_; }
  const std::vector<float>& weights() const { return weights_; }
  void encode(const float* x, const float* centroid, uint8_t* out) const;
  // centroid + weights, L2-normalized (a zero vector stays zero).
  void decode(const float* centroid, const uint8_t* in, float* out) const;

 private:
  size_t dim_, nbits_;
  std::vector<float> cutoffs_, weights_;
  std::vector<float> lut_;  // [256][8 / nbits]: the weights of one byte's buckets
};

struct PlaidParams {
  size_t k = 10;
  size_t ncells = 1;
  float threshold = 0.5f;
  size_t ndocs = 256;
  size_t exact = 0;  // stage 4's passages (at least k), where the full vectors are kept; 0: no stage 4
};

// One stored array: owned, or a file mapping (tensor_file.h) read in place.
struct PlaidArrays {
  AlignedBuffer codes;      // [tokens, code_bytes]
  AlignedBuffer residuals;  // [tokens, row_bytes]
  AlignedBuffer vectors;    // [tokens, dim] of the full dtype, where kept
  size_t tokens = 0;
};

class PlaidIndex {
 public:
  // centroids [n_centroids, dim] (copied); full: the dtype the full token vectors are kept in (F32 or F16), or U8 for
  // none (the compressed form alone).
  PlaidIndex(const float* centroids, size_t n_centroids, ResidualCodec codec, Dtype full);

  size_t dim() const { return codec_.dim(); }
  size_t n_centroids() const { return n_centroids_; }
  size_t code_bytes() const { return code_bytes_; }
  bool keeps_vectors() const { return full_ != Dtype::U8; }
  Dtype full_dtype() const { return full_; }
  const ResidualCodec& codec() const { return codec_; }
  const float* centroids() const { return centroids_.data(); }
  size_t passages() const;
  size_t tokens() const;
  size_t removed() const;
  // Bytes of the per-token storage (codes, residuals), the passage offsets and the inverted lists.
  size_t stored_bytes() const;

  // Appends passages: their token vectors [sum lengths, dim] (unit rows) and each token's centroid (assigned by the
  // caller, nearest by inner product). ERR_RANGE for a code outside the centroids or a negative length.
  void add(const float* tokens, const int32_t* codes, size_t n_tokens, const int32_t* lengths, size_t passages);
  // Marks rows removed; returns how many were not already. ERR_RANGE for a row outside the index.
  size_t remove(const int32_t* rows, size_t n);

  // Writes codes.qtns, residuals.qtns, lengths.qtns, removed.qtns and (kept) vectors.qtns into `dir` (which exists).
  // ERR_IO on failure.
  void save(const std::string& dir) const;
  // Opens those files: mapped in place (`map`) or read into memory. ERR_FORMAT when they disagree with each other
  // or with this index (dtype, shape, a code outside the centroids); ERR_IO when missing. Replaces the contents.
  void open(const std::string& dir, bool map);

  // The best k passages of one question (q [lq, dim], unit rows); allowed: strictly ascending rows or null. Writes
  // ids and scores (room for params.k) and returns how many.
  size_t search(const float* q, size_t lq, const PlaidParams& params, const int32_t* allowed, size_t n_allowed,
                int32_t* ids, float* scores) const;
  // Passage `row`'s decoded token vectors, [its length, dim] into out (room for its length * dim); returns the length.
  size_t decode(size_t row, float* out, size_t room) const;
  size_t length(size_t row) const;

 private:
  struct Stored;
  size_t code(size_t token) const;
  const uint8_t* residual(size_t token) const;
  const uint8_t* full_row(size_t token) const;
  void index_codes(size_t first_passage);

  size_t n_centroids_, code_bytes_;
  Dtype full_;
  std::vector<float> centroids_;
  ResidualCodec codec_;
  mutable std::shared_mutex mutex_;  // search shares it; add, remove, open take it alone
  PlaidArrays base_;                 // opened from files
  std::vector<uint8_t> tail_codes_, tail_residuals_, tail_vectors_;  // added since
  std::vector<int64_t> starts_{0};  // passage p is tokens starts_[p] .. starts_[p + 1]
  std::vector<uint8_t> removed_;
  size_t n_removed_ = 0;
  std::vector<std::vector<uint8_t>> lists_;  // per centroid: varint deltas of its passages, ascending
  std::vector<int64_t> list_last_;           // per centroid: its last passage (-1: none yet)
  std::vector<uint32_t> list_count_;
};

}  // namespace quorum::kernels
