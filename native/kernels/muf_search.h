// DPR-MUF's search stage as one call (docs/methods/muf.md#serving): for a batch of encoded questions, every expert's
// top-L over its corpus vectors, its confidence, and the fusion of the experts' lists by those confidences, in one
// task off the event loop. The corpus scans and the familiarity banks' k-NN scans of all experts share one parallel
// region (score_topk_many), so a question pays one fork and join for them instead of one per scan.
//
// Confidence, per `mode`:
//   uniform      1 for every expert (DPR-MUF's uniform baseline); mi NaN.
//   familiarity  P(the question is of the expert's task) (lib/methods/muf/familiarity.ts, the reference): with q the
//                question as a unit row (f32 of q * (1 / max(|q|, 1e-12)), the norm in double),
//                  margin = f32(mean of the fam_k best q . own rows - mean of the fam_k best q . other rows)
//                (means in double over min(fam_k, rows) scores), P = f32(1 / (1 + exp(-(bias + weight * margin))));
//                mi NaN.
//   heads        the expert's K heads and their mutual information over its top-L (muf_heads.h).
// Fusion: muf_fuse.h over the experts' top-L lists, weighted by the confidences.
#pragma once
#include <cstddef>
#include <cstdint>

#include "dense_search.h"
#include "muf_heads.h"

namespace quorum::kernels {

enum class MufConfidenceMode { kUniform = 0, kFamiliarity = 1, kHeads = 2 };

struct MufSearchExpert {
  const float* queries;  // [batch, passages.dim]
  CorpusMatrix passages;  // [N, dim]; N equal for every expert (the shared corpus)
  // Binary passages (docs/methods/quantization.md): the best `candidates` rows by `passages` are rescored with these
  // full vectors (plain or int8, the same rows) into the expert's top-L, and the heads read them. Empty: none.
  CorpusMatrix rescore{};
  size_t candidates = 0;
  // familiarity: the expert's training questions as unit rows, its task's and the other tasks'
  CorpusMatrix own{}, other{};
  size_t fam_k = 0;
  double platt_bias = 0, platt_weight = 0;
  // heads: as HeadsExpert (queries, passages, ids, len, mi and conf are filled in by the search)
  const HeadsLayer* layers = nullptr;
  size_t n_layers = 0;
  size_t members = 0;
  float temperature = 1.f;
};

struct MufSearchPlan {
  const MufSearchExpert* experts;  // fused in this order
  size_t n_experts;
  size_t batch;
  size_t top_l;                   // each expert's list length, 1 <= top_l <= the rows searched
  const int32_t* rows = nullptr;  // strictly ascending allowed corpus rows, or null for all
  size_t n_rows = 0;
  MufConfidenceMode mode = MufConfidenceMode::kUniform;
  size_t k;                           // fused rows per question
  const int32_t* tie_rank = nullptr;  // [N] or null (muf_fuse.h)
};

struct MufSearchOut {
  float* mi;          // [n_experts, batch]
  float* confidence;  // [n_experts, batch]
  int32_t* ids;       // [batch, k]
  float* scores;      // [batch, k]
  double* ms;         // [3]: the scans (corpus and familiarity), the confidence, the fusion
};

// One expert's confidence when the heads do not run: `weights` [batch] (the caller's, e.g. P(own task)), or 1 for
// every question when null (uniform); mi NaN.
void fixed_confidence(size_t batch, const float* weights, float* mi, float* conf);

// Throws ERR_ARG / ERR_SHAPE / ERR_RANGE for a plan that breaks the contract, before searching.
void muf_search(const MufSearchPlan& plan, const MufSearchOut& out);

}  // namespace quorum::kernels
