#include "mlp_ensemble.h"

#include <cmath>

#include "../common/error.h"

namespace quorum::torchx {

void EnsembleConfig::validate() const {
  if (dim < 1 || dim > (1 << 16)) throw Error("ERR_RANGE", "dim must be in [1, 65536]");
  if (hidden < 1 || hidden > (1 << 16)) throw Error("ERR_RANGE", "hidden must be in [1, 65536]");
  if (layers < 0 || layers > 16) throw Error("ERR_RANGE", "layers (hidden layers) must be in [0, 16]");
  if (members < 1 || members > 1024) throw Error("ERR_RANGE", "members must be in [1, 1024]");
}

MlpEnsemble::MlpEnsemble(EnsembleConfig config) : config_(config) {
  config_.validate();
  const int64_t K = config_.members;
  for (int64_t i = 0; i <= config_.layers; ++i) {
    const int64_t in = i == 0 ? config_.dim : config_.hidden;
    const int64_t out = i == config_.layers ? config_.dim : config_.hidden;
    // nn.Linear's default: kaiming_uniform(a = sqrt(5)) for the weight and U(+-1/sqrt(fan_in)) for the bias, both
    // bound 1/sqrt(in). Each member draws its own values from the global generator (torch::manual_seed).
    const double bound = 1.0 / std::sqrt(double(in));
    torch::Tensor w = torch::empty({K, in, out}).uniform_(-bound, bound).set_requires_grad(true);
    torch::Tensor b = torch::empty({K, out}).uniform_(-bound, bound).set_requires_grad(true);
    params_.emplace_back("layer." + std::to_string(i) + ".weight", w);
    params_.emplace_back("layer." + std::to_string(i) + ".bias", b);
  }
  std::vector<torch::Tensor> all;
  for (const auto& p : params_) all.push_back(p.second);
  optimizer_ = std::make_unique<torch::optim::Adam>(all, torch::optim::AdamOptions(1e-3));
}

int64_t MlpEnsemble::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.second.numel();
  return n;
}

torch::Tensor MlpEnsemble::forward(const torch::Tensor& x) const {
  if (x.dim() != 3 || x.size(0) != config_.members || x.size(2) != config_.dim)
    throw Error("ERR_SHAPE", "ensemble input must be [members, rows, dim]");
  torch::Tensor h = x;
  for (int64_t i = 0; i <= config_.layers; ++i) {
    const torch::Tensor& w = params_[size_t(2 * i)].second;
    const torch::Tensor& b = params_[size_t(2 * i + 1)].second;
    h = torch::baddbmm(b.unsqueeze(1), h, w);
    if (i < config_.layers) h = torch::relu(h);
  }
  return h;
}

torch::Tensor MlpEnsemble::members(const torch::Tensor& q) const {
  if (q.dim() != 2 || q.size(1) != config_.dim) throw Error("ERR_SHAPE", "questions must be [rows, dim]");
  torch::NoGradGuard no_grad;
  return forward(q.unsqueeze(0).expand({config_.members, q.size(0), q.size(1)})).permute({1, 0, 2}).contiguous();
}

torch::Tensor MlpEnsemble::score(const torch::Tensor& q, const torch::Tensor& passages, const torch::Tensor& ids) const {
  if (passages.dim() != 2 || passages.size(1) != config_.dim) throw Error("ERR_SHAPE", "passages must be [N, dim]");
  if (ids.dim() != 2 || ids.size(0) != q.size(0)) throw Error("ERR_SHAPE", "ids must be [rows, L]");
  torch::NoGradGuard no_grad;
  const torch::Tensor m = members(q);                                                       // [B, K, D]
  const torch::Tensor c = passages.index_select(0, ids.reshape({-1})).view({ids.size(0), ids.size(1), config_.dim});
  return torch::bmm(m, c.transpose(1, 2)).contiguous();                                     // [B, K, L]
}

EnsembleStepStats MlpEnsemble::step(const torch::Tensor& questions, const torch::Tensor& passages,
                                    const torch::Tensor& q_rows, const torch::Tensor& p_rows, int64_t group, double lr,
                                    double clip, ProcessGroup* ranks) {
  const int64_t K = config_.members, D = config_.dim;
  if (!std::isfinite(lr) || lr < 0) throw Error("ERR_RANGE", "lr must be finite and >= 0");
  if (!std::isfinite(clip) || clip < 0) throw Error("ERR_RANGE", "clip must be finite and >= 0");
  if (group < 1) throw Error("ERR_RANGE", "group (passages per question) must be >= 1");
  if (q_rows.numel() == 0 || q_rows.numel() % K) throw Error("ERR_SHAPE", "q_rows must hold members x b rows, b >= 1");
  const int64_t b = q_rows.numel() / K;
  if (p_rows.numel() != K * b * group) throw Error("ERR_SHAPE", "p_rows must hold members x b x group rows");
  const torch::Tensor q = questions.index_select(0, q_rows).view({K, b, D});
  torch::Tensor p = passages.index_select(0, p_rows).view({K, b * group, D});
  torch::Tensor out = forward(q);                                                           // [K, b, D]
  int64_t n = b;  // questions per member in the whole sub-batch
  if (ranks && ranks->size() > 1) {
    // Rows in rank order per member: [b_r, K, D] gathered along the questions, this rank's outputs keeping their
    // gradient; the frozen passages likewise. Question i of the gathered sub-batch keeps its positive at i * group.
    int64_t offset = 0;
    out = gather_keeping_own(*ranks, out.transpose(0, 1), &offset).transpose(0, 1);
    p = ranks->all_gather_rows(p.transpose(0, 1), &offset).transpose(0, 1);
    n = out.size(1);
  }
  const torch::Tensor scores = torch::bmm(out, p.transpose(1, 2));                         // [K, n, n * group]
  const torch::Tensor target = (torch::arange(n, torch::kLong) * group).repeat({K});
  const torch::Tensor nll =
      torch::nll_loss(torch::log_softmax(scores.view({K * n, n * group}), 1), target, {}, at::Reduction::None).view({K, n});
  const torch::Tensor member_loss = nll.mean(1);
  // DPR-MUF's loss: the mean over members (Adam makes each member's step independent of the 1/K).
  optimizer_->zero_grad();
  member_loss.mean().backward();
  if (ranks) all_reduce_gradients(*ranks, params_);
  // One parameter group holds every parameter (Optimizer::parameters() is deprecated and logs a warning).
  if (clip > 0) torch::nn::utils::clip_grad_norm_(optimizer_->param_groups()[0].params(), clip);
  for (auto& g : optimizer_->param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(lr);
  optimizer_->step();
  ++steps_;
  EnsembleStepStats s;
  s.loss = member_loss.mean().item<double>();
  const torch::Tensor ml = member_loss.detach().to(torch::kDouble).contiguous();
  s.member_loss.assign(ml.data_ptr<double>(), ml.data_ptr<double>() + K);
  s.correct = scores.detach().argmax(2).eq(torch::arange(n, torch::kLong).mul(group).unsqueeze(0)).sum().item<int64_t>();
  s.questions = K * n;
  return s;
}

const torch::Tensor& MlpEnsemble::parameter(const std::string& name) const {
  for (const auto& p : params_)
    if (p.first == name) return p.second;
  throw Error("ERR_NOT_FOUND", "the ensemble has no parameter '" + name + "'");
}

void MlpEnsemble::set_parameter(const std::string& name, const torch::Tensor& values) {
  torch::Tensor t = parameter(name);
  if (!values.sizes().equals(t.sizes())) throw Error("ERR_SHAPE", "parameter " + name + " has another shape");
  torch::NoGradGuard no_grad;
  t.copy_(values);
}

}  // namespace quorum::torchx
