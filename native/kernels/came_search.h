// CAME's search stage as one call (docs/methods/came.md#serving): for a batch of encoded questions, each expert's
// top-K over the corpus, then their fusion, in one task off the event loop. The experts are the kernels the
// separate calls use:
//   lexical  SPLADE question rows against the passages' inverted index (SparseIndex, ids = corpus rows);
//   local    PLAID's centroid interaction for candidates (CentroidIndex), then exact MaxSim over the candidates'
//            token vectors where they lie; or exact MaxSim over every (allowed) passage;
//   global   exact inner product over the passage vectors (score_topk).
// An allowed set of rows filters inside every search (the filtered top-K exactly where the expert is exact).
//
// The fusion is lib/methods/came/fusion.ts's fuseExperts (the reference, and the paper's Table 4), computed in
// double in the same order of operations so that the order and the scores equal it: per question, over the union
// of the lists (rows ascending),
//   sum      sum over experts of the score, or the expert's K-th (last) score where the row is missing;
//   linear   the same with weights w_e, then + bias;
//   normsum  sum of the min-max normalised scores of the experts that list the row;
//   normmax  max of the min-max normalised scores (a missing row: -inf);
//   sumrr    sum of 1 / (position + 1) over the experts that list the row;
//   maxrr    max of those;
// min-max: (s - min) / max(max - min, 1e-9) over the expert's list. Best first, ties to the lower row, cut at k.
//
// Contract: each expert list holds at most K rows, sorted by score descending then row ascending, no row twice;
// a passage no query term reaches (lexical), with no tokens (local) or outside the allowed rows is never listed,
// so a list may be shorter than K, or empty (a question with no local tokens).
#pragma once
#include <cstddef>
#include <cstdint>

#include "centroid_index.h"
#include "dense_search.h"
#include "sparse_index.h"

namespace quorum::kernels {

enum class CameFusion { kSum = 0, kNormSum = 1, kNormMax = 2, kSumRR = 3, kMaxRR = 4, kLinear = 5 };

// One expert's inputs; `kind` says which fields are read.
struct CameExpert {
  enum Kind { kLexical, kLocal, kGlobal } kind;
  // lexical: question rows [batch] (checked by the search)
  const SparseIndex* sparse = nullptr;
  SparseView sparse_q{};
  size_t sparse_nnz = 0;
  // local: question tokens packed [sum q_lengths, dim]; passage p's tokens are rows token_starts[p] ..
  // + token_lengths[p] of `tokens` [token_rows, dim]
  const CentroidIndex* centroids = nullptr;
  const float* tokens = nullptr;
  size_t token_rows = 0;
  const int64_t* token_starts = nullptr;
  const int64_t* token_lengths = nullptr;
  const float* q_tokens = nullptr;
  const int32_t* q_lengths = nullptr;
  size_t nprobe = 0;  // centroids probed per question token (0: approximate every passage)
  size_t keep = 0;    // candidates re-scored exactly (>= K); 0: every passage exactly
  // global: question vectors [batch, corpus.dim]
  CorpusMatrix corpus{};
  const float* q = nullptr;
};

struct CameSearchPlan {
  const CameExpert* experts;  // searched and fused in this order
  size_t n_experts;
  size_t batch, passages;
  size_t expert_k, k;
  const int32_t* rows = nullptr;  // strictly ascending allowed rows in [0, passages), or null for all
  size_t n_rows = 0;
  CameFusion fusion = CameFusion::kSum;
  const double* weights = nullptr;  // linear: one per expert
  double bias = 0;
};

struct CameSearchOut {
  int32_t* expert_ids;     // [n_experts, batch, expert_k]; past a list's count: -1
  float* expert_scores;    // [n_experts, batch, expert_k]; past a list's count: -inf
  int32_t* expert_counts;  // [n_experts, batch]
  int32_t* ids;            // [batch, k]; past count: -1
  double* scores;          // [batch, k]; past count: -inf
  int32_t* counts;         // [batch]
  double* ms;              // [n_experts + 1]: each expert's wall time and the fusion's
};

// Throws ERR_ARG / ERR_SHAPE / ERR_RANGE for a plan that breaks the contract before searching.
void came_search(const CameSearchPlan& plan, const CameSearchOut& out);

// One question's fusion (the second half of came_search): lists[e] holds len rows sorted as above. Writes at most
// k rows and returns how many (the union's size, cut at k).
struct CameList {
  const int32_t* ids;
  const float* scores;
  size_t len;
};
size_t came_fuse(const CameList* lists, size_t n, CameFusion fusion, const double* weights, double bias, size_t k,
                 int32_t* ids, double* scores);

}  // namespace quorum::kernels
