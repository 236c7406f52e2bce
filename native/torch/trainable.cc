#include "trainable.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "../common/error.h"
#include "distributed.h"
#include "../common/persist.h"

namespace quorum::torchx {

std::string shape_of(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

void Trainable::set_parameters(NamedTensors params) {
  params_ = std::move(params);
  m_.assign(params_.size(), torch::Tensor());
  v_.assign(params_.size(), torch::Tensor());
  updates_.assign(params_.size(), 0);
  set_optimizer(OptimizerConfig{});
}

int64_t Trainable::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.second.numel();
  return n;
}

double Trainable::lr_multiplier(const std::string&, const OptimizerConfig&) const { return 1.0; }

void Trainable::set_optimizer(const OptimizerConfig& o) {
  if (!(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1))
    throw Error("ERR_RANGE", "AdamW betas must be in [0, 1)");
  if (!(o.eps > 0) || !(o.weight_decay >= 0) || !(o.layer_decay > 0 && o.layer_decay <= 1))
    throw Error("ERR_RANGE", "AdamW needs eps > 0, weightDecay >= 0 and layerDecay in (0, 1]");
  const auto contains = [](const std::string& name, const std::string& part) { return name.find(part) != std::string::npos; };
  // A pattern that names no parameter is a typo, not a no-op: refused before anything changes.
  for (const auto& f : o.frozen) {
    if (f.empty()) throw Error("ERR_ARG", "a frozen parameter pattern must not be empty");
    if (std::none_of(params_.begin(), params_.end(), [&](const auto& p) { return contains(p.first, f); }))
      throw Error("ERR_NOT_FOUND", "no parameter name contains '" + f + "' (frozen)");
  }
  opt_ = o;
  lr_mult_.clear();
  decays_.clear();
  frozen_.clear();
  for (const auto& [name, t] : params_) {
    frozen_.push_back(std::any_of(o.frozen.begin(), o.frozen.end(), [&](const std::string& f) { return contains(name, f); }));
    lr_mult_.push_back(lr_multiplier(name, o));
    // DPR's no-decay group: biases and LayerNorm weights; also the pooling's token log-weights and centre, whose
    // zero is no prior.
    const bool bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    decays_.push_back(!bias && name.find("LayerNorm") == std::string::npos &&
                      name.find("token_weights") == std::string::npos && name.find("pooler.center") == std::string::npos);
  }
}

double Trainable::step(double lr, double clip) {
  if (!std::isfinite(lr) || lr < 0) throw Error("ERR_RANGE", "learning rate must be finite and >= 0");
  if (!std::isfinite(clip) || clip < 0) throw Error("ERR_RANGE", "clip must be finite and >= 0");
  torch::NoGradGuard no_grad;
  // A frozen parameter neither moves nor counts toward the clipped norm, as if it were a constant.
  double sq = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& t = params_[i].second;
    if (!t.grad().defined()) continue;
    if (frozen_[i])
      t.mutable_grad().zero_();
    else
      sq += t.grad().pow(2).sum().item<double>();
  }
  const double norm = std::sqrt(sq);
  if (!std::isfinite(norm)) {
    for (const auto& [name, t] : params_)
      if (t.grad().defined()) t.mutable_grad().zero_();
    throw Error("ERR_NONFINITE", "the gradient is not finite; the update was skipped");
  }
  const double shrink = clip > 0 && norm > clip ? clip / (norm + 1e-6) : 1.0;
  ++steps_;
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor p = params_[i].second;
    if (!p.grad().defined() || frozen_[i]) continue;
    torch::Tensor g = p.grad();
    if (shrink != 1.0) g.mul_(shrink);
    if (!m_[i].defined()) {
      m_[i] = torch::zeros_like(p);
      v_[i] = torch::zeros_like(p);
    }
    m_[i].mul_(opt_.beta1).add_(g, 1 - opt_.beta1);
    v_[i].mul_(opt_.beta2).addcmul_(g, g, 1 - opt_.beta2);
    // Bias correction by this parameter's own update count (as torch.optim.AdamW's per-parameter `step`): moments
    // that start late (a parameter unfrozen, or first reached by a gradient, after many steps) are corrected as
    // young ones, instead of by the model's step count, which would make their first update ~3x too large.
    const double t = double(++updates_[i]);
    const double bc1 = 1 - std::pow(opt_.beta1, t), bc2 = 1 - std::pow(opt_.beta2, t);
    const double rate = lr * lr_mult_[i];
    if (decays_[i] && opt_.weight_decay > 0) p.mul_(1 - rate * opt_.weight_decay);
    p.addcdiv_(m_[i], (v_[i].sqrt() / std::sqrt(bc2)).add_(opt_.eps), -rate / bc1);
    g.zero_();
  }
  return norm;
}

const torch::Tensor& Trainable::parameter(const std::string& name) const {
  for (const auto& [n, t] : params_)
    if (n == name) return t;
  throw Error("ERR_NOT_FOUND", "no parameter named '" + name + "'");
}

void Trainable::set_parameter(const std::string& name, const torch::Tensor& values) {
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

void Trainable::save(const std::string& path) const {
  torch::serialize::OutputArchive archive;
  archive.write("names", names_tensor(params_));
  archive.write("steps", torch::tensor(steps_));
  for (size_t i = 0; i < params_.size(); ++i) {
    archive.write("p" + std::to_string(i), params_[i].second.detach());
    if (m_[i].defined()) {
      archive.write("m" + std::to_string(i), m_[i]);
      archive.write("v" + std::to_string(i), v_[i]);
      archive.write("t" + std::to_string(i), torch::tensor(updates_[i]));
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

void Trainable::load(const std::string& path) {
  persist::check_regular_file(path);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    throw Error("ERR_FORMAT", "cannot read checkpoint " + path + ": " + e.what_without_backtrace());
  }
  torch::Tensor names, steps;
  if (!archive.try_read("names", names) || !archive.try_read("steps", steps))
    throw Error("ERR_FORMAT", path + " is not a Quorum checkpoint");
  if (!names.equal(names_tensor(params_)))
    throw Error("ERR_FORMAT", path + " holds a model with other parameters (a different configuration)");
  // Read everything before touching the model, so a bad file leaves it as it was.
  std::vector<torch::Tensor> p(params_.size()), m(params_.size()), v(params_.size());
  std::vector<int64_t> updates(params_.size(), 0);
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string k = std::to_string(i);
    if (!archive.try_read("p" + k, p[i]) || !p[i].sizes().equals(params_[i].second.sizes()))
      throw Error("ERR_FORMAT", path + ": parameter " + params_[i].first + " is missing or has another shape");
    if (archive.try_read("m" + k, m[i]) && (!archive.try_read("v" + k, v[i]) || !m[i].sizes().equals(p[i].sizes())))
      throw Error("ERR_FORMAT", path + ": optimizer state of " + params_[i].first + " is damaged");
    if (m[i].defined()) {
      // Checkpoints written before per-parameter counts: the model's step count, as their bias correction used.
      torch::Tensor t;
      updates[i] = archive.try_read("t" + k, t) ? t.item<int64_t>() : steps.item<int64_t>();
      if (updates[i] < 1) throw Error("ERR_FORMAT", path + ": optimizer state of " + params_[i].first + " is damaged");
    }
  }
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i].second.copy_(p[i]);
    m_[i] = m[i];
    v_[i] = v[i];
    updates_[i] = updates[i];
  }
  steps_ = steps.item<int64_t>();
}

}  // namespace quorum::torchx
