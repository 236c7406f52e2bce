// DPR-MUF's ensemble heads (docs/methods/muf.md#ensemble-training): K independent MLPs, each mapping a frozen
// expert question vector to a new vector in the same space as the expert's frozen passage vectors,
//   f_k(q) = W_L ReLU(... ReLU(W_1 q + b_1) ...) + b_L      (`layers` hidden ReLU layers of width `hidden`),
// stored member-major so that all K run as one batched matmul ([K, in, out] weights, [K, out] biases). Member k is
// trained only on its own contiguous sub-batch with the DPR NLL against the positive, the hard negatives and the
// sub-batch's other passages; members start from different draws of PyTorch's nn.Linear initialisation.
#pragma once
#include "distributed.h"
#include "torch_includes.h"

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace quorum::torchx {

struct EnsembleConfig {
  int64_t dim = 768, hidden = 512, layers = 2, members = 20;
  // Throws ERR_RANGE naming the first bad field.
  void validate() const;
};

struct EnsembleStepStats {
  double loss = 0;                   // mean over members of the sub-batch mean NLL
  std::vector<double> member_loss;   // [K]
  int64_t correct = 0, questions = 0;
};

class MlpEnsemble {
 public:
  explicit MlpEnsemble(EnsembleConfig config);

  const EnsembleConfig& config() const { return config_; }
  // "layer.<i>.weight" [K, in, out] and "layer.<i>.bias" [K, out], i = 0 .. layers.
  const std::vector<std::pair<std::string, torch::Tensor>>& parameters() const { return params_; }
  int64_t parameter_count() const;

  // x [K, B, dim] (member k reads row block k) -> [K, B, dim].
  torch::Tensor forward(const torch::Tensor& x) const;
  // Every member on every question: q [B, dim] -> [B, K, dim], without gradients.
  torch::Tensor members(const torch::Tensor& q) const;
  // z[b, k, l] = f_k(q_b) . passages[ids[b, l]]: q [B, dim], passages [N, dim], ids [B, L] int64 in [0, N).
  torch::Tensor score(const torch::Tensor& q, const torch::Tensor& passages, const torch::Tensor& ids) const;

  // One Adam step over K sub-batches: questions [N_q, dim] and passages [N_p, dim] are the whole frozen tables;
  // q_rows [K * b] picks each member's b questions (member k: rows k*b .. k*b+b-1); p_rows [K * b * group] their
  // passages, `group` per question with the positive first. With a group of several ranks, each member's b
  // questions are this rank's part of its sub-batch: the heads' outputs and the passages are gathered per member,
  // so each member's loss is its whole sub-batch's, and the ranks' gradients are summed before clipping and Adam.
  EnsembleStepStats step(const torch::Tensor& questions, const torch::Tensor& passages, const torch::Tensor& q_rows,
                         const torch::Tensor& p_rows, int64_t group, double lr, double clip, ProcessGroup* ranks = nullptr);

  const torch::Tensor& parameter(const std::string& name) const;
  void set_parameter(const std::string& name, const torch::Tensor& values);
  int64_t optimizer_steps() const { return steps_; }

  std::mutex& mutex() { return mutex_; }

 private:
  EnsembleConfig config_;
  std::vector<std::pair<std::string, torch::Tensor>> params_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  int64_t steps_ = 0;
  std::mutex mutex_;
};

}  // namespace quorum::torchx
