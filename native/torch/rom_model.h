// ROM (Fun, Gandhi, Ravi; docs/methods/rom.md#tasks-schedules-and-index-refresh): one BertEncoder ("encoder.*")
// serves questions, passages and the reader, with light task heads:
//   retrieval   a linear map of the pooled state, shared by questions and passages; DPR's in-batch NLL
//   ict         its own linear head, the same loss over (pseudo-query sentence, block) pairs (Lee et al.)
//   phrase_ict  its own linear head, over (TF-IDF phrase, block) pairs
//   reader      over "[CLS] question [SEP] passage [SEP]": a start and an end logit per passage token and a relevance
//               logit from the [CLS] state (DPR's reader); loss = passage selection over each question's passages +
//               the span's start and end log-softmax over the positive passage's tokens
// A head of the hidden width starts as the identity, so that the pooled (e.g. GloVe-initialised) state is what the
// dot product reads at step 0; another width starts as BERT's N(0, 0.02).
// Loss scales differ (log of the batch's passages for retrieval, log P + 2 log L for the reader), so a step may
// divide each task's loss by the loss of a uniform guess on that batch before weighting it by its lambda: then the
// schedule's lambdas, not the tasks' scales, set their balance.
#pragma once
#include "torch_includes.h"

#include <array>
#include <memory>
#include <string>

#include "distributed.h"
#include "encoder.h"
#include "retriever.h"
#include "trainable.h"

namespace quorum::torchx {

enum class RomHead : int { kRetrieval = 0, kIct = 1, kPhraseIct = 2 };
constexpr int kRomHeads = 3;
// "retrieval", "ict", "phrase_ict"
const char* rom_head_name(int h);

struct RomConfig {
  // pooling and normalize shape the heads' input and output; token weights, centre, projection and routing are not
  // part of ROM (its heads are the projections).
  EncoderConfig encoder;
  int64_t head_dim = 0;  // 0: the hidden width
  int64_t out_dim() const { return head_dim > 0 ? head_dim : encoder.hidden; }
  void validate() const;
};

// The reader's batch: Q questions with P passages each. Row q * P + j of `inputs` is question q with its passage j
// as "[CLS] question [SEP] passage [SEP]", type id 1 on the passage and its [SEP] (2 on a passage token that also
// occurs in the question, DrQA's exact-match feature, when the encoder has a third type); answer positions are
// passage tokens (type >= 1, before the final [SEP]).
struct ReaderBatch {
  TokenBatch inputs;
  int64_t passages = 1;
  torch::Tensor positive;    // [Q] int64: which of the question's P passages holds the answer
  torch::Tensor start, end;  // [Q] int64: the answer's first and last token in that row
  double loss_scale = 1.0;   // lambda (and 1 / accumulation steps)
  bool normalize = true;     // divide the loss by a uniform guess's loss on this batch
};

// The reader's logits: start and end [N, T] with every position outside the passage at -inf, relevance [N].
struct ReaderOutput {
  torch::Tensor start, end, relevance;
};

struct RomStepStats : StepStats {
  // The loss of a uniform guess on this batch (what `normalize` divides by).
  double chance = 0;
  // Reader only: questions whose positive passage and whose exact span (start and end) ranked first.
  int64_t passage_correct = 0, span_correct = 0;
};

class RomModel : public Trainable {
 public:
  explicit RomModel(RomConfig config);

  const RomConfig& config() const { return config_; }

  // Evaluation mode, no gradients: the head's vectors [B, out_dim].
  torch::Tensor encode(const TokenBatch& batch, Side side, RomHead head);
  // Evaluation mode, no gradients.
  ReaderOutput read(const TokenBatch& inputs);

  // Forward and backward of a contrastive batch through `head` (retrieval, ICT or PhraseICT); with `normalize`,
  // the loss is divided by the mean over questions of log(passages in its softmax).
  // With a group of several ranks, `batch` is this rank's part: the vectors are gathered and the loss is the global
  // batch's (retriever.h).
  RomStepStats accumulate(const TrainBatch& batch, RomHead head, bool normalize, ProcessGroup* group = nullptr);
  // Forward and backward of a reader batch. With a group, `batch` is this rank's questions: each question's loss is
  // its own, so each rank adds its questions' losses over the global question count (and the chance level is the
  // global batch's); the figures are the global batch's.
  RomStepStats accumulate_reader(const ReaderBatch& batch, ProcessGroup* group = nullptr);

  // Which positions of reader rows are passage tokens: type >= 1, real, before the last token ([SEP]).
  static torch::Tensor answer_positions(const TokenBatch& inputs);
  // The reader's loss on given logits, per question (selection + start + end), for tests against a plain reference.
  static torch::Tensor reader_loss(const ReaderOutput& out, const ReaderBatch& b);

 private:
  torch::Tensor head(const torch::Tensor& state, RomHead h) const;
  ReaderOutput reader_logits(const TokenBatch& inputs, bool training) const;
  const torch::Tensor& p(const std::string& name) const { return parameter(name); }

  RomConfig config_;
  std::unique_ptr<BertEncoder> encoder_;
};

// ERR_SHAPE / ERR_RANGE / ERR_ARG for a reader batch whose rows are not Q x P, whose positive is outside 0..P-1, or
// whose span is not inside the positive row's passage with start <= end.
void check_reader_batch(const ReaderBatch& b);

}  // namespace quorum::torchx
