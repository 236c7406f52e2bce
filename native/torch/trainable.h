// What every trainable libtorch model in quorum_torch shares: an ordered name -> tensor parameter table, AdamW with
// a learning-rate multiplier per parameter and DPR's no-decay group, global gradient clipping, and checkpoints
// (parameters and optimizer state in one file, written atomically; loading checks names and shapes before touching
// anything). The Retriever (DPR, TASER) and the CAME model derive from it.
#pragma once
#include "torch_includes.h"

#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace quorum::torchx {

class ProcessGroup;

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

struct OptimizerConfig {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  double layer_decay = 1.0;  // TASER's layer-wise learning-rate decay (1 = off)
  // Parameters whose name contains one of these are not updated (learning rate 0), e.g. "word_embeddings".
  std::vector<std::string> frozen;
};

// One batch's training figures: the mean loss over its questions, the routers' entropy (TASER), how many questions
// ranked their positive first, and the real (non-padding) tokens read.
struct StepStats {
  double loss = 0, entropy = 0;
  int64_t correct = 0, questions = 0, tokens = 0;
};

class Trainable {
 public:
  virtual ~Trainable() = default;

  // Every trainable tensor in a fixed order.
  const NamedTensors& parameters() const { return params_; }
  int64_t parameter_count() const;
  // The parameter `name`; throws ERR_NOT_FOUND.
  const torch::Tensor& parameter(const std::string& name) const;
  // Copies `values` into parameter `name` (shape must match). Throws ERR_NOT_FOUND / ERR_SHAPE.
  void set_parameter(const std::string& name, const torch::Tensor& values);

  // Applies `o` to every parameter. ERR_RANGE for bad settings, ERR_ARG for an empty frozen pattern, ERR_NOT_FOUND
  // for one that names no parameter; a refused config leaves the current one in place.
  void set_optimizer(const OptimizerConfig& o);
  // Clips the global gradient norm to `clip` (0 = off), applies AdamW with learning rate lr x each parameter's
  // multiplier, clears the gradients. Returns the norm before clipping. A non-finite gradient skips the update
  // (ERR_NONFINITE) instead of poisoning the moments.
  double step(double lr, double clip);
  int64_t optimizer_steps() const { return steps_; }

  void save(const std::string& path) const;
  void load(const std::string& path);

  // Serializes every call on this model: async work from several JS calls must not interleave.
  std::mutex& mutex() { return mutex_; }

 protected:
  // Registers the parameters (call once, from the derived constructor), then applies the default optimizer.
  void set_parameters(NamedTensors params);
  // The learning-rate multiplier of parameter `name` under `o` (default 1).
  virtual double lr_multiplier(const std::string& name, const OptimizerConfig& o) const;

 private:
  NamedTensors params_;
  std::vector<double> lr_mult_;
  std::vector<bool> decays_;
  std::vector<bool> frozen_;
  std::vector<torch::Tensor> m_, v_;
  std::vector<int64_t> updates_;  // AdamW updates applied to each parameter (its moments' age)
  OptimizerConfig opt_;
  int64_t steps_ = 0;
  std::mutex mutex_;
};

// "[2, 3]"
std::string shape_of(const torch::Tensor& t);

}  // namespace quorum::torchx
