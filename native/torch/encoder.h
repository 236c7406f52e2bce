// A BERT-style Transformer encoder in libtorch whose TASER structure is configuration (formulas in
// docs/methods/training.md#taser-specialized-blocks): every T-th block may carry one FFN per expert, chosen by the
// input's side (Det-R) or by a Gumbel-softmax router over the [CLS] state (Seq-R) or each token (Tok-R). Parameters
// live in a flat, ordered name -> tensor table named as Hugging Face's BertModel names them (lib/models/config.ts
// lists them), so a BERT checkpoint loads by name; the forward pass is functional (torch::linear,
// torch::layer_norm, ...) over that table.
#pragma once
#include "torch_includes.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trainable.h"

namespace quorum::torchx {

enum class Routing { kNone, kDet, kSeq, kTok };
enum class Side { kQuery, kPassage };
// How token states become one vector: the [CLS] state (BERT, DPR), or the mean or the per-dimension max over the
// sequence's real tokens ([CLS] and [SEP] included, padding never).
enum class Pooling { kCls, kMean, kMax };

struct EncoderConfig {
  int64_t vocab_size = 30522, hidden = 128, layers = 4, heads = 4, ffn = 512, max_positions = 512;
  int64_t type_vocab = 2, embedding_size = 128, projection_dim = 0;
  double dropout = 0.1, ln_eps = 1e-12;
  Pooling pooling = Pooling::kCls;
  // > 0 turns the output projection into an MLP: linear to this width, GELU, linear to projection_dim.
  int64_t projection_hidden = 0;
  // L2-normalise the output, so that the dot product of two embeddings is their cosine.
  bool normalize = false;
  // Mean pooling weighted by a learned weight per vocabulary entry (exp of "embeddings.token_weights", IDF-like).
  bool token_weights = false;
  // A learned vector "pooler.center" subtracted from the pooled state (the corpus mean, set by an initializer).
  bool center = false;
  // TASER; routing kNone means a plain BERT.
  Routing routing = Routing::kNone;
  int64_t every = 2, experts = 2;
  bool per_layer_gate = false;
  double entropy_weight = 0.0;
  // > 0: self-attention within consecutive windows of this many tokens (each window a sequence of its own), so that
  // long passages cost linear time in their length; 0 attends over the whole sequence.
  int64_t attention_window = 0;
  // false: a stack of Transformer blocks over given token states (CAME's per-expert upper layers), with no
  // embedding tables; forward() is then unavailable and transform() takes the states.
  bool embeddings = true;

  bool specialized(int64_t layer) const { return routing != Routing::kNone && (layer + 1) % every == 0; }
  bool learned_router() const { return routing == Routing::kSeq || routing == Routing::kTok; }
  int64_t out_dim() const { return projection_dim > 0 ? projection_dim : hidden; }
  // Throws ERR_ARG / ERR_RANGE naming the first bad field. layers may be 0: embeddings, pooling, projection.
  void validate() const;
};

// One tokenized batch: ids and type ids [B, T] (int64), lengths [B] (int64; positions >= length are padding).
struct TokenBatch {
  torch::Tensor ids, types, lengths;
};

// Token states [B, T, hidden] and which positions are real tokens (valid [B, T] bool).
struct TokenStates {
  torch::Tensor x, valid;
};

struct EncodeOutput {
  torch::Tensor pooled;   // [B, out_dim]
  torch::Tensor entropy;  // scalar: mean over gate layers of mean_rows sum_e p log p (0 when nothing is routed)
  torch::Tensor state;    // [B, hidden]: the pooled state before the centre, the head and the normalization
};

// Each row (last dimension) scaled to unit L2 norm; a zero row stays zero.
torch::Tensor unit_rows(const torch::Tensor& x);

class BertEncoder {
 public:
  // Parameters initialised as BERT does: N(0, 0.02) weights, zero biases, LayerNorm (1, 0), [PAD] row zero.
  explicit BertEncoder(const EncoderConfig& config);

  EncodeOutput forward(const TokenBatch& batch, Side side, bool training) const;
  // The last block's token states (embeddings, then every block), and the routers' mean negative entropy.
  TokenStates token_states(const TokenBatch& batch, Side side, bool training, torch::Tensor* entropy = nullptr) const;
  // Runs this encoder's blocks over given token states (an encoder built with embeddings = false).
  torch::Tensor transform(const TokenStates& in, Side side, bool training) const;
  // The configured pooling of token states: [CLS], or the mean / max over real tokens ([B, hidden]).
  torch::Tensor pool(const torch::Tensor& x, const torch::Tensor& valid, const torch::Tensor& ids) const;

  const EncoderConfig& config() const { return config_; }
  const NamedTensors& parameters() const { return params_; }
  // The parameter `name`; throws ERR_NOT_FOUND.
  const torch::Tensor& param(const std::string& name) const;

 private:
  torch::Tensor& add(const std::string& name, torch::Tensor t);
  void add_linear(const std::string& name, int64_t out, int64_t in);
  void add_norm(const std::string& name, int64_t n);
  void add_ffn(const std::string& prefix);
  torch::Tensor linear(const std::string& name, const torch::Tensor& x) const;
  torch::Tensor norm(const std::string& name, const torch::Tensor& x) const;
  torch::Tensor attention(const std::string& p, const torch::Tensor& x, const torch::Tensor& key_bias,
                          bool training) const;
  torch::Tensor ffn(const std::string& p, const torch::Tensor& a, bool training) const;
  torch::Tensor routed_ffn(int64_t layer, const torch::Tensor& a, const torch::Tensor& expert,
                           const torch::Tensor& scale, bool training) const;
  std::pair<torch::Tensor, torch::Tensor> route(const std::string& gate, const torch::Tensor& u,
                                                const torch::Tensor& valid, bool training,
                                                std::vector<torch::Tensor>& entropies) const;
  torch::Tensor det_experts(int64_t rows, Side side, bool training) const;
  // blocks() over attention windows when the config asks for them and the sequence is longer than one window.
  torch::Tensor windowed_blocks(const torch::Tensor& x, const torch::Tensor& valid, Side side, bool training,
                                std::vector<torch::Tensor>& entropies) const;
  torch::Tensor blocks(torch::Tensor x, const torch::Tensor& valid, Side side, bool training,
                       std::vector<torch::Tensor>& entropies) const;
  torch::Tensor project(const torch::Tensor& pooled) const;

  EncoderConfig config_;
  NamedTensors params_;
  std::map<std::string, size_t> index_;
};

}  // namespace quorum::torchx
