#include "came_loss.h"

#include <cmath>
#include <string>

#include "../common/error.h"

namespace quorum::torchx {
namespace {

void check(const std::vector<torch::Tensor>& scores, const torch::Tensor& positives, double tau) {
  if (scores.empty()) throw Error("ERR_ARG", "CAME's loss needs at least one expert's scores");
  if (!(tau > 0) || !std::isfinite(tau)) throw Error("ERR_RANGE", "tau must be finite and > 0");
  const auto& s0 = scores[0];
  if (s0.dim() != 2) throw Error("ERR_SHAPE", "each expert's scores must be [questions, passages]");
  for (const auto& s : scores)
    if (!s.sizes().equals(s0.sizes())) throw Error("ERR_SHAPE", "every expert's scores must have one shape");
  if (positives.dim() != 1 || positives.size(0) != s0.size(0))
    throw Error("ERR_SHAPE", "positives must hold one passage index per question");
  if (positives.numel() && (positives.min().item<int64_t>() < 0 || positives.max().item<int64_t>() >= s0.size(1)))
    throw Error("ERR_RANGE", "a positive's index lies outside the batch's passages");
}

}  // namespace

torch::Tensor competitive_weights(const std::vector<torch::Tensor>& scores, const torch::Tensor& positives, double tau) {
  check(scores, positives, tau);
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> inverse_ranks;
  for (const auto& s : scores) {
    const torch::Tensor pos_score = s.detach().gather(1, positives.unsqueeze(1));  // [B, 1]
    const torch::Tensor rank = s.detach().gt(pos_score).sum(1).to(torch::kDouble).add(1.0);
    inverse_ranks.push_back(rank.reciprocal());
  }
  return torch::softmax(torch::stack(inverse_ranks, 1).div(tau), 1).to(torch::kFloat);
}

torch::Tensor came_loss(const std::vector<torch::Tensor>& scores, const torch::Tensor& positives, double tau, bool competitive,
                        CameLossParts* parts) {
  check(scores, positives, tau);
  std::vector<torch::Tensor> nll;
  for (const auto& s : scores)
    nll.push_back(torch::nll_loss(torch::log_softmax(s, 1), positives, {}, at::Reduction::None));  // [B]
  const torch::Tensor per_expert = torch::stack(nll, 1);                                               // [B, E]
  const torch::Tensor weights = competitive ? competitive_weights(scores, positives, tau)
                                            : torch::ones_like(per_expert.detach());
  if (parts) {
    parts->nll = per_expert.detach().mean(0);
    parts->weights = weights.mean(0);
  }
  return (weights * per_expert).sum(1).mean();
}

}  // namespace quorum::torchx
