#include "retriever.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "../common/error.h"
#include "../common/persist.h"

namespace quorum::torchx {
namespace {

std::string shape_of(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

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
  for (const auto& n : encoder_names_) {
    encoders_.push_back(std::make_unique<BertEncoder>(e));
    for (const auto& [name, t] : encoders_.back()->parameters()) params_.emplace_back(n + "." + name, t);
  }
  set_optimizer(OptimizerConfig{});
}

int64_t Retriever::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.second.numel();
  return n;
}

// TASER's layer-wise decay (SPEC §3.6): weight = decay^(n_layers + 2 - depth), embeddings at depth 0, block l at
// depth l + 1, the output projection at n + 2 (weight 1), a shared gate at n / 2 + 2.
double Retriever::lr_multiplier(const std::string& name) const {
  const double d = opt_.layer_decay;
  if (d == 1.0) return 1.0;
  const int64_t n = config_.encoder.layers;
  int64_t depth = n + 2;
  if (name.find(".embeddings.") != std::string::npos) depth = 0;
  else if (const int64_t l = layer_of(name); l >= 0) depth = l + 1;
  else if (name.find(".encoder.gate.") != std::string::npos) depth = n / 2 + 2;
  return std::pow(d, double(n + 2 - depth));
}

void Retriever::set_optimizer(const OptimizerConfig& o) {
  if (!(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1))
    throw Error("ERR_RANGE", "AdamW betas must be in [0, 1)");
  if (!(o.eps > 0) || !(o.weight_decay >= 0) || !(o.layer_decay > 0 && o.layer_decay <= 1))
    throw Error("ERR_RANGE", "AdamW needs eps > 0, weightDecay >= 0 and layerDecay in (0, 1]");
  opt_ = o;
  lr_mult_.clear();
  decays_.clear();
  for (const auto& [name, t] : params_) {
    lr_mult_.push_back(lr_multiplier(name));
    // DPR's no-decay group: biases and LayerNorm weights; also the pooling's token log-weights and centre, whose
    // zero is no prior.
    const bool bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    decays_.push_back(!bias && name.find("LayerNorm") == std::string::npos &&
                      name.find("token_weights") == std::string::npos && name.find("pooler.center") == std::string::npos);
  }
  if (m_.empty()) {
    m_.resize(params_.size());
    v_.resize(params_.size());
  }
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
  torch::Tensor scores = torch::matmul(q, p.t());
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

StepStats Retriever::accumulate(const TrainBatch& b) {
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
  EncodeOutput q = query_encoder(b.task).forward(b.queries, Side::kQuery, true);
  EncodeOutput p = passage_encoder().forward(b.passages, Side::kPassage, true);
  torch::Tensor scores = batch_scores(q.pooled, p.pooled, b.ignore);
  if (b.temperature != 1.0) scores = scores / b.temperature;
  torch::Tensor loss = torch::nll_loss(torch::log_softmax(scores, 1), b.positives);
  torch::Tensor total = loss * b.loss_scale;
  torch::Tensor entropy = (q.entropy + p.entropy) / 2;
  if (config_.encoder.learned_router() && config_.encoder.entropy_weight != 0)
    total = total + config_.encoder.entropy_weight * b.loss_scale * entropy;
  total.backward();

  StepStats s;
  s.loss = loss.item<double>();
  s.entropy = entropy.item<double>();
  s.correct = (scores.detach().argmax(1) == b.positives).sum().item<int64_t>();
  s.questions = nq;
  s.tokens = b.queries.lengths.sum().item<int64_t>() + b.passages.lengths.sum().item<int64_t>();
  return s;
}

double Retriever::step(double lr, double clip) {
  if (!std::isfinite(lr) || lr < 0) throw Error("ERR_RANGE", "learning rate must be finite and >= 0");
  if (!std::isfinite(clip) || clip < 0) throw Error("ERR_RANGE", "clip must be finite and >= 0");
  torch::NoGradGuard no_grad;
  double sq = 0;
  for (const auto& [name, t] : params_)
    if (t.grad().defined()) sq += t.grad().pow(2).sum().item<double>();
  const double norm = std::sqrt(sq);
  if (!std::isfinite(norm)) {
    // A non-finite gradient would poison the moments: drop this update instead.
    for (const auto& [name, t] : params_)
      if (t.grad().defined()) t.mutable_grad().zero_();
    throw Error("ERR_NONFINITE", "the gradient is not finite; the update was skipped");
  }
  const double shrink = clip > 0 && norm > clip ? clip / (norm + 1e-6) : 1.0;
  ++steps_;
  const double bc1 = 1 - std::pow(opt_.beta1, double(steps_)), bc2 = 1 - std::pow(opt_.beta2, double(steps_));
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor p = params_[i].second;
    if (!p.grad().defined()) continue;
    torch::Tensor g = p.grad();
    if (shrink != 1.0) g.mul_(shrink);
    if (!m_[i].defined()) {
      m_[i] = torch::zeros_like(p);
      v_[i] = torch::zeros_like(p);
    }
    m_[i].mul_(opt_.beta1).add_(g, 1 - opt_.beta1);
    v_[i].mul_(opt_.beta2).addcmul_(g, g, 1 - opt_.beta2);
    const double rate = lr * lr_mult_[i];
    if (decays_[i] && opt_.weight_decay > 0) p.mul_(1 - rate * opt_.weight_decay);
    p.addcdiv_(m_[i], (v_[i].sqrt() / std::sqrt(bc2)).add_(opt_.eps), -rate / bc1);
    g.zero_();
  }
  return norm;
}

const torch::Tensor& Retriever::parameter(const std::string& name) const {
  for (const auto& [n, t] : params_)
    if (n == name) return t;
  throw Error("ERR_NOT_FOUND", "no parameter named '" + name + "'");
}

void Retriever::set_parameter(const std::string& name, const torch::Tensor& values) {
  torch::Tensor t = parameter(name);  // shares storage with the model's tensor
  if (!values.sizes().equals(t.sizes()))
    throw Error("ERR_SHAPE", "parameter " + name + " is " + shape_of(t) + ", values are " + shape_of(values));
  torch::NoGradGuard no_grad;
  t.copy_(values);
}

namespace {

torch::Tensor names_tensor(const NamedTensors& params) {
  std::string all;
  for (const auto& p : params) all += p.first + "\n";
  return torch::from_blob(all.data(), {int64_t(all.size())}, torch::kUInt8).clone();
}

}  // namespace

void Retriever::save(const std::string& path) const {
  torch::serialize::OutputArchive archive;
  archive.write("names", names_tensor(params_));
  archive.write("steps", torch::tensor(steps_));
  for (size_t i = 0; i < params_.size(); ++i) {
    archive.write("p" + std::to_string(i), params_[i].second.detach());
    if (m_[i].defined()) {
      archive.write("m" + std::to_string(i), m_[i]);
      archive.write("v" + std::to_string(i), v_[i]);
    }
  }
  // Serialized to memory, then written like every index (persist::AtomicFile: temporary file, fsync, rename,
  // directory fsync, stale temporaries of killed saves removed).
  std::ostringstream bytes;
  try {
    archive.save_to(bytes);
  } catch (const c10::Error& e) {
    throw Error("ERR_NATIVE", std::string("cannot serialize the checkpoint: ") + e.what_without_backtrace());
  }
  const std::string data = std::move(bytes).str();
  persist::AtomicFile file(path);
  file.write(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  file.commit();
}

void Retriever::load(const std::string& path) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    throw Error("ERR_FORMAT", "cannot read checkpoint " + path + ": " + e.what_without_backtrace());
  }
  torch::Tensor names, steps;
  if (!archive.try_read("names", names) || !archive.try_read("steps", steps))
    throw Error("ERR_FORMAT", path + " is not a Quorum retriever checkpoint");
  if (!names.equal(names_tensor(params_)))
    throw Error("ERR_FORMAT", path + " holds a model with other parameters (a different configuration)");
  // Read everything before touching the model, so a bad file leaves it as it was.
  std::vector<torch::Tensor> p(params_.size()), m(params_.size()), v(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string k = std::to_string(i);
    if (!archive.try_read("p" + k, p[i]) || !p[i].sizes().equals(params_[i].second.sizes()))
      throw Error("ERR_FORMAT", path + ": parameter " + params_[i].first + " is missing or has another shape");
    if (archive.try_read("m" + k, m[i]) && (!archive.try_read("v" + k, v[i]) || !m[i].sizes().equals(p[i].sizes())))
      throw Error("ERR_FORMAT", path + ": optimizer state of " + params_[i].first + " is damaged");
  }
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i].second.copy_(p[i]);
    m_[i] = m[i];
    v_[i] = v[i];
  }
  steps_ = steps.item<int64_t>();
}

}  // namespace quorum::torchx
