// Late interaction's candidate stage from centroids alone (PLAID's centroid interaction, Santhanam et al. 2022;
// docs/methods/came.md#the-local-experts-index). Every passage token is replaced by the id of its nearest
// centroid (its code), so a question scores a passage approximately without reading a single token vector:
//   C[q, c]   = dot(Q[q], centroid[c])      for the question's tokens q (the dense kernel, centroids read in place)
//   approx(p) = sum over q of  max over tokens t of p of  C[q, code[t]]
// which is MaxSim with each passage token moved to its centroid. The passages scored are those with a token in
// one of each question token's `nprobe` best centroids (every passage when nprobe = 0), within an optional allowed
// set; the best `keep` go on to exact MaxSim over their real token vectors.
//
// Contract: codes in [0, centroids), lengths >= 0 adding up to the codes; ties go to the lower passage; a passage
// with no tokens is never a candidate.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace quorum::kernels {

// The hot loop, one variant per ISA (centroid_index_body.h).
struct CentroidOps {
  const char* isa;
  // One passage's approx: ct is Cᵀ [centroids, lanes] with the question tokens as lanes (a multiple of 16, the
  // padding lanes 0); sum over lanes of the max over the passage's len > 0 codes of ct[code * lanes + lane].
  float (*approx)(const float* ct, size_t lanes, const int32_t* codes, size_t len);
  float (*approx16)(const float* ct, size_t lanes, const uint16_t* codes, size_t len);  // the same over uint16 codes
};

const CentroidOps& centroid_scalar();
const CentroidOps* centroid_avx2();
const CentroidOps* centroid_avx512();
const CentroidOps* centroid_neon();  // AArch64 builds only (else nullptr)
const CentroidOps& centroid_ops();  // the active variant

// Question-token lanes are padded to a multiple of this (the widest variant's vector).
constexpr size_t kCentroidLanes = 16;

class CentroidIndex {
 public:
  // Copies its inputs. ERR_SHAPE / ERR_RANGE when they break the contract.
  CentroidIndex(const float* centroids, size_t n_centroids, size_t dim, const int32_t* codes, size_t tokens,
                const int32_t* lengths, size_t passages);

  size_t passages() const { return starts_.size() - 1; }
  size_t dim() const { return dim_; }

  // The `keep` best candidates of one question (lq token vectors of dim(), row-major) by approx, best first:
  // their passages into rows and scores into scores (each of room `keep`). Returns how many were written.
  // allowed: passages (each < passages()) that may be returned, or null for all.
  size_t candidates(const float* q, size_t lq, size_t nprobe, const int32_t* allowed, size_t n_allowed, size_t keep,
                    int32_t* rows, float* scores) const;

 private:
  size_t n_centroids_, dim_;
  std::vector<float> centroids_;
  std::vector<int32_t> codes_;
  std::vector<int64_t> starts_;        // passage p is tokens starts_[p] .. starts_[p + 1]
  std::vector<int64_t> list_offsets_;  // centroid c's passages: list_passages_[list_offsets_[c] .. [c + 1])
  std::vector<int32_t> list_passages_;
};

}  // namespace quorum::kernels
