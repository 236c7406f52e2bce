// CAME's training losses (Cai et al.; docs/methods/came.md#competitive-learning): each expert's contrastive NLL
// over the batch's passages, summed over experts in the standardized stage, weighted per question by the
// competitive weights in the specialized stage:
//   w[b, e] = softmax_e( (1 / rank_e(b)) / tau ),   rank_e(b) = 1 + #{passages p : S_e[b, p] > S_e[b, pos(b)]}
// (the positive's 1-based rank among the question's candidates under expert e; ties count in its favour; a smaller
// tau means a more intense competition), with no gradient through the weights.
#pragma once
#include "torch_includes.h"

#include <vector>

namespace quorum::torchx {

// scores: one [B, P] tensor per expert (question b against the batch's passages; -inf leaves a pair out);
// positives [B] int64. Returns w [B, E], rows summing to 1, without gradient.
torch::Tensor competitive_weights(const std::vector<torch::Tensor>& scores, const torch::Tensor& positives, double tau);

// The batch loss: mean over questions of sum_e c[b, e] * NLL_e(b), with c = 1 (standardized) or the competitive
// weights (specialized). NLL_e(b) = -log softmax_p(S_e[b, p])[pos(b)].
// With `parts`, also each expert's mean NLL and mean weight over the batch ([E] each, no gradient).
struct CameLossParts {
  torch::Tensor nll, weights;
};
torch::Tensor came_loss(const std::vector<torch::Tensor>& scores, const torch::Tensor& positives, double tau, bool competitive,
                        CameLossParts* parts = nullptr);

}  // namespace quorum::torchx
