// InfoNCE with in-batch and hard negatives (DPR form), with its gradients (docs/methods/kernels.md#infonce):
//   a[i, j] = q_i . p_j / tau            (cosine: q̂_i . p̂_j / tau, x̂ = x / max(|x|, 1e-12) as F.normalize)
//   l_i     = logsumexp_j a[i, j] - a[i, pos_i]
//   L       = (1/B) sum_i w_i l_i         (w_i = 1 without weights: DPR's mean NLL)
// Every passage row is a candidate for every query row: the other rows' positives and all hard negatives are
// the in-batch negatives. pos is explicit per row (never an assumed stride).
//
// rank_i = 1 + #{j : a[i, j] > a[i, pos_i]}: ties count in the positive's favour (CAME's rank definition,
// docs/methods/came.md#competitive-learning). Accuracy is the fraction of rows with rank 1. DPR's `correct`
// (argmax == pos, lowest index on ties) differs only on exact ties.
//
// Extra memory: the [B, M] score matrix (which becomes the gradient of the scores), a second one for cosine
// scores with gradients, the norms, and the GEMM's packed operands (gemm.h).
#pragma once
#include <cstddef>
#include <cstdint>

namespace quorum::kernels {

struct InfoNceArgs {
  const float* q;  // [batch, dim]
  const float* p;  // [passages, dim]
  size_t batch, passages, dim;
  const int32_t* pos;     // [batch], in [0, passages)
  const float* weights;   // [batch] or null
  float temperature;      // > 0
  bool cosine;
};

struct InfoNceOut {
  float* row_loss;  // [batch]
  int32_t* rank;    // [batch]
  float* dq;        // [batch, dim] or null (no gradients)
  float* dp;        // [passages, dim] or null
  double loss = 0;
  double accuracy = 0;
};

// Throws ERR_RANGE for a positive index outside [0, passages) or a temperature that is not positive and finite.
void info_nce(const InfoNceArgs& a, InfoNceOut& out);

}  // namespace quorum::kernels
