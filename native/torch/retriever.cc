#include "retriever.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "../common/error.h"

namespace quorum::torchx {
namespace {

// The layer index after "encoder.layer." in `name`, or -1. Exact tokens: "encoder.layer.1" must not match layer 10.
int64_t layer_of(const std::string& name) {
  static const std::string key = "encoder.layer.";
  const size_t at = name.find(key);
  if (at == std::string::npos) return -1;
  size_t i = at + key.size(), j = i;
  while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
  return j > i ? std::stoll(name.substr(i, j - i)) : -1;
}

}  // namespace

Retriever::Retriever(RetrieverConfig config) : config_(std::move(config)) {
  EncoderConfig& e = config_.encoder;
  if (config_.preset == Preset::kTaser && e.routing == Routing::kNone)
    throw Error("ERR_ARG", "the taser preset needs a taser encoder configuration");
  if (config_.preset != Preset::kTaser && e.routing != Routing::kNone)
    throw Error("ERR_ARG", "a taser encoder configuration needs the taser preset");
  if (config_.per_task_query_encoders && config_.preset != Preset::kBiEncoder)
    throw Error("ERR_ARG", "per-task query encoders need the bi-encoder preset");
  if (config_.per_task_query_encoders && config_.tasks.empty())
    throw Error("ERR_ARG", "per-task query encoders need at least one task");
  e.validate();
  if (config_.preset == Preset::kBiEncoder) {
    if (config_.per_task_query_encoders)
      for (const auto& t : config_.tasks) encoder_names_.push_back("query." + t);
    else
      encoder_names_.push_back("query");
    encoder_names_.push_back("passage");
  } else {
    encoder_names_.push_back("encoder");
  }
  NamedTensors params;
  for (const auto& n : encoder_names_) {
    encoders_.push_back(std::make_unique<BertEncoder>(e));
    for (const auto& [name, t] : encoders_.back()->parameters()) params.emplace_back(n + "." + name, t);
  }
  set_parameters(std::move(params));
}

// TASER's layer-wise decay (docs/methods/training.md#taser-specialized-blocks): weight = decay^(n_layers + 2 - depth),
// embeddings at depth 0, block l at depth l + 1, the output projection at n + 2 (weight 1), a shared gate at
// n / 2 + 2.
double Retriever::lr_multiplier(const std::string& name, const OptimizerConfig& o) const {
  const double d = o.layer_decay;
  if (d == 1.0) return 1.0;
  const int64_t n = config_.encoder.layers;
  int64_t depth = n + 2;
  if (name.find(".embeddings.") != std::string::npos) depth = 0;
  else if (const int64_t l = layer_of(name); l >= 0) depth = l + 1;
  else if (name.find(".encoder.gate.") != std::string::npos) depth = n / 2 + 2;
  return std::pow(d, double(n + 2 - depth));
}

BertEncoder& Retriever::query_encoder(int64_t task) {
  if (task < 0 || (config_.per_task_query_encoders && size_t(task) >= config_.tasks.size()))
    throw Error("ERR_RANGE", "task index " + std::to_string(task) + " outside the " +
                                 std::to_string(config_.tasks.size()) + " tasks");
  return *encoders_[config_.per_task_query_encoders ? size_t(task) : 0];
}

BertEncoder& Retriever::passage_encoder() { return *encoders_.back(); }

torch::Tensor Retriever::encode(const TokenBatch& batch, Side side, int64_t task, bool state) {
  torch::NoGradGuard no_grad;
  BertEncoder& enc = side == Side::kQuery ? query_encoder(task) : passage_encoder();
  EncodeOutput out = enc.forward(batch, side, false);
  return (state ? out.state : out.pooled).contiguous();
}

torch::Tensor Retriever::batch_scores(const torch::Tensor& q, const torch::Tensor& p, const torch::Tensor& ignore) {
  return mask_ignored(torch::matmul(q, p.t()), ignore);
}

torch::Tensor Retriever::mask_ignored(torch::Tensor scores, const torch::Tensor& ignore) {
  if (ignore.defined() && ignore.numel() > 0) {
    torch::Tensor mask = torch::zeros_like(scores, torch::kBool);
    mask.index_put_({ignore.select(1, 0), ignore.select(1, 1)}, true);
    scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  }
  return scores;
}

torch::Tensor Retriever::contrastive_loss(const torch::Tensor& q, const torch::Tensor& p, const torch::Tensor& positives,
                                          const torch::Tensor& ignore) {
  return torch::nll_loss(torch::log_softmax(batch_scores(q, p, ignore), 1), positives);
}

void check_batch(const TrainBatch& b) {
  const int64_t nq = b.queries.ids.size(0), np = b.passages.ids.size(0);
  if (b.positives.numel() != nq)
    throw Error("ERR_SHAPE", std::to_string(b.positives.numel()) + " positives for " + std::to_string(nq) + " questions");
  if (nq == 0 || np == 0) throw Error("ERR_SHAPE", "a training batch needs questions and passages");
  if (b.positives.min().item<int64_t>() < 0 || b.positives.max().item<int64_t>() >= np)
    throw Error("ERR_RANGE", "a positive index is outside the batch's " + std::to_string(np) + " passages");
  if (b.ignore.defined() && b.ignore.numel() > 0) {
    if (b.ignore.min().item<int64_t>() < 0 || b.ignore.select(1, 0).max().item<int64_t>() >= nq ||
        b.ignore.select(1, 1).max().item<int64_t>() >= np)
      throw Error("ERR_RANGE", "an ignored (question, passage) pair is outside the batch");
    torch::Tensor hits = (b.ignore.select(1, 1) == b.positives.index_select(0, b.ignore.select(1, 0)));
    if (hits.any().item<bool>()) throw Error("ERR_ARG", "a question's own positive is in its ignore list");
  }
}

StepStats Retriever::accumulate(const TrainBatch& b, ProcessGroup* group) {
  check_batch(b);
  EncodeOutput q = query_encoder(b.task).forward(b.queries, Side::kQuery, true);
  EncodeOutput p = passage_encoder().forward(b.passages, Side::kPassage, true);
  torch::Tensor qv = q.pooled, pv = p.pooled, positives = b.positives, ignore = b.ignore;
  const int ranks = group ? group->size() : 1;
  // The global batch: every rank's questions and passages in rank order, this rank's own rows carrying gradient.
  if (ranks > 1) gather_batch(*group, qv, pv, positives, ignore);
  torch::Tensor scores = batch_scores(qv, pv, ignore);
  if (b.temperature != 1.0) scores = scores / b.temperature;
  torch::Tensor loss = torch::nll_loss(torch::log_softmax(scores, 1), positives);
  torch::Tensor total = loss * b.loss_scale;
  // TASER's router entropy is this rank's own batch's: each rank adds its share (the global batch's mean when the
  // ranks' batches are of one size).
  torch::Tensor entropy = (q.entropy + p.entropy) / 2;
  if (config_.encoder.learned_router() && config_.encoder.entropy_weight != 0)
    total = total + config_.encoder.entropy_weight * b.loss_scale * entropy / double(ranks);
  total.backward();

  StepStats s;
  s.loss = loss.item<double>();
  s.entropy = entropy.item<double>();
  s.correct = (scores.detach().argmax(1) == positives).sum().item<int64_t>();
  s.questions = qv.size(0);
  s.tokens = b.queries.lengths.sum().item<int64_t>() + b.passages.lengths.sum().item<int64_t>();
  return s;
}

}  // namespace quorum::torchx
