// A dual-encoder retriever over BertEncoders, its contrastive training step and its optimizer state.
//   bi-encoder  separate question and passage encoders ("query", "passage"); with per-task query encoders,
//               "query.<task>" for each task over the one passage encoder (Maillard et al.)
//   siamese     one encoder ("encoder") for both sides
//   taser       one encoder with specialized blocks (routing by side or by a learned router)
// Parameter names are "<encoder>.<BERT name>". The loss is DPR's in-batch NLL (docs/methods/kernels.md#infonce)
// through libtorch's autograd, plus beta times the routers' negative entropy.
#pragma once
#include "torch_includes.h"

#include <memory>
#include <string>
#include <vector>

#include "encoder.h"
#include "distributed.h"
#include "trainable.h"

namespace quorum::torchx {

enum class Preset { kBiEncoder, kSiamese, kTaser };

struct RetrieverConfig {
  Preset preset = Preset::kBiEncoder;
  EncoderConfig encoder;
  std::vector<std::string> tasks;
  bool per_task_query_encoders = false;
};

// One contrastive batch. Passage rows hold each question's positive and hard negatives; every passage is a
// negative for every other question unless `ignore` lists the (question, passage) pair.
struct TrainBatch {
  TokenBatch queries, passages;
  torch::Tensor positives;  // [Bq] int64: the passage row of each question's positive
  torch::Tensor ignore;     // [K, 2] int64 (question, passage) pairs left out of the softmax, or undefined
  int64_t task = 0;
  double loss_scale = 1.0;  // per-task multiplier (and 1 / accumulation steps)
  double temperature = 1.0; // scores are divided by it before the softmax (cosine models want ~0.05)
};

// ERR_SHAPE / ERR_RANGE / ERR_ARG for a batch with no questions or passages, a positive outside the passages, an
// ignored pair outside the batch or a question's own positive in its ignore list.
void check_batch(const TrainBatch& b);

class Retriever : public Trainable {
 public:
  explicit Retriever(RetrieverConfig config);

  const RetrieverConfig& config() const { return config_; }
  int64_t out_dim() const { return config_.encoder.out_dim(); }

  // Embeds a batch with the query encoder of `task` or the passage encoder, in evaluation mode, without gradients;
  // with `state`, returns the pooled state [B, hidden] before the centre and the head.
  torch::Tensor encode(const TokenBatch& batch, Side side, int64_t task, bool state = false);
  // Forward and backward of one batch, adding to the gradients (gradient accumulation). With a group of several
  // ranks, `batch` is this rank's part of the global batch: the question and passage vectors are gathered, so every
  // question is scored against every rank's passages, and the loss is the global batch's (its gradient reaches this
  // rank's encoders; all_reduce_gradients (distributed.h) sums the ranks'). Every rank must call it for each batch.
  StepStats accumulate(const TrainBatch& batch, ProcessGroup* group = nullptr);

  // q p^T with the ignored (question, passage) pairs at -inf: what the loss and the in-batch accuracy read.
  static torch::Tensor batch_scores(const torch::Tensor& q, const torch::Tensor& p, const torch::Tensor& ignore);
  // `scores` [questions, passages] with the ignored pairs at -inf.
  static torch::Tensor mask_ignored(torch::Tensor scores, const torch::Tensor& ignore);
  // The loss the training step uses, on given embeddings (for tests against the infoNce kernel).
  static torch::Tensor contrastive_loss(const torch::Tensor& q, const torch::Tensor& p, const torch::Tensor& positives,
                                        const torch::Tensor& ignore);

  // "query", "passage", "query.<task>" or "encoder": the prefixes of the parameter names.
  const std::vector<std::string>& encoder_names() const { return encoder_names_; }


 protected:
  double lr_multiplier(const std::string& name, const OptimizerConfig& o) const override;

 private:
  BertEncoder& query_encoder(int64_t task);
  BertEncoder& passage_encoder();

  RetrieverConfig config_;
  std::vector<std::unique_ptr<BertEncoder>> encoders_;
  std::vector<std::string> encoder_names_;
};

}  // namespace quorum::torchx
