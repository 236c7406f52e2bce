// CAME (Cai et al.; docs/methods/came.md, its training in docs/methods/came.md#competitive-learning): one
// Transformer shared by questions and passages whose bottom blocks ("bottom.*": embeddings and encoder.layers
// blocks) are shared by three experts, each with its own upper blocks ("<expert>.encoder.layer.*") and head:
//   lexical  MLM head (dense, GELU, LayerNorm, decoder tied to the word embeddings plus a bias), SPLADE max pooling
//            log(1 + relu(logit)) over every real token including [CLS]; score = dot product of the two weight
//            vectors; FLOPS regularizer with SPLADE's quadratic lambda ramp
//   local    a linear map to local_dim per token, L2-normalised; score = MaxSim over every real token incl. [CLS]
//   global   the configured pooling ([CLS], mean or max) of its last block, optionally L2-normalised; dot product
// MaxSim and SPLADE pooling (fused with the tied decoder) run forward and backward through Quorum's kernels
// (kernel_autograd.h). The loss is
// came_loss.h's: the standardized sum, or the competitive weights of the specialized stage. A model may hold any
// subset of the experts (an independently trained expert is a one-expert model).
#pragma once
#include "torch_includes.h"

#include <array>
#include <memory>
#include <string>

#include "encoder.h"
#include "retriever.h"
#include "trainable.h"

namespace quorum::torchx {

enum class CameExpert : int { kLexical = 0, kLocal = 1, kGlobal = 2 };
constexpr int kCameExperts = 3;
const char* came_expert_name(int e);

struct CameConfig {
  // Embeddings and the shared bottom: encoder.layers blocks. encoder.pooling and encoder.normalize shape the global
  // head; token weights, centring, projections and TASER routing are not part of CAME.
  EncoderConfig encoder;
  int64_t expert_layers = 1;                 // private blocks per expert
  std::array<bool, kCameExperts> experts{{true, true, true}};
  int64_t local_dim = 128;
  // MaxSim and SPLADE pooling from libtorch's own ops instead of Quorum's kernels (the benchmark's reference).
  bool reference_ops = false;
  void validate() const;
};

// How the next training steps run (the stage and its hyper-parameters); set between stages.
struct CameTraining {
  bool competitive = false;  // false: standardized stage (sum of the losses); true: specialized (competitive weights)
  double tau = 0.5;          // the competition's temperature (paper: 0.5 on MS MARCO, 2.0 on NQ)
  // FLOPS weights of question and passage weight vectors; lambda_t = lambda (min(t, ramp) / ramp)^2 with t the
  // optimizer step (SPLADE's RegWeightScheduler; ramp 0 = full weight from the start).
  double flops_query = 0.01, flops_passage = 0.01;
  int64_t flops_ramp = 0;
  // Scores are divided by these before each expert's softmax (lexical, local, global).
  std::array<double, kCameExperts> temperature{{1.0, 1.0, 1.0}};
  void validate() const;
};

struct CameStepStats : StepStats {
  std::array<double, kCameExperts> expert_loss{}, weight{};
  std::array<int64_t, kCameExperts> expert_correct{};
  double flops = 0, flops_lambda = 0;
};

// One side's representations: lexical [B, V] weights, local [B, T, local_dim] token vectors (rows at and after
// `lengths` are zero), global [B, d]; an expert the call did not ask for is undefined.
struct CameEncoded {
  torch::Tensor lexical, local, global, lengths;
};

class CameModel : public Trainable {
 public:
  explicit CameModel(CameConfig config);

  const CameConfig& config() const { return config_; }
  bool has(CameExpert e) const { return config_.experts[int(e)]; }
  int64_t vocab_size() const { return config_.encoder.vocab_size; }
  int64_t global_dim() const { return config_.encoder.hidden; }

  void set_training(const CameTraining& t);
  const CameTraining& training() const { return training_; }

  // Evaluation mode, no gradients; the bottom runs once for every expert asked for.
  CameEncoded encode(const TokenBatch& batch, Side side, std::array<bool, kCameExperts> which);
  // Forward and backward of one batch (TrainBatch.temperature is ignored: CameTraining holds one per expert). With a
  // group of several ranks, `batch` is this rank's part: every expert's question and passage representations are
  // gathered (token vectors padded to the ranks' longest), so the losses, the competitive weights and FLOPS are the
  // global batch's, as Retriever::accumulate does for one expert.
  CameStepStats accumulate(const TrainBatch& batch, ProcessGroup* group = nullptr);

 private:
  struct Heads {
    torch::Tensor lexical, local, global;  // [B, V], [B, T, local_dim], [B, d]
  };
  Heads heads(const TokenStates& bottom, const TokenBatch& batch, Side side, bool training,
              std::array<bool, kCameExperts> which) const;
  // The MLM head's transform, then SPLADE pooling fused with the tied decoder ([B, V]).
  torch::Tensor lexical_weights(const torch::Tensor& x, const torch::Tensor& valid) const;
  const torch::Tensor& p(const std::string& name) const { return parameter(name); }

  CameConfig config_;
  CameTraining training_;
  std::unique_ptr<BertEncoder> bottom_;
  std::array<std::unique_ptr<BertEncoder>, kCameExperts> towers_;
};

}  // namespace quorum::torchx
