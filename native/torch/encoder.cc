#include "encoder.h"

#include <cmath>
#include <limits>

#include "../common/error.h"

namespace quorum::torchx {
namespace {

std::string layer_prefix(int64_t l) { return "encoder.layer." + std::to_string(l); }

}  // namespace

torch::Tensor unit_rows(const torch::Tensor& x) { return x / x.norm(2, -1, true).clamp_min(1e-12); }

void EncoderConfig::validate() const {
  auto positive = [](int64_t v, const char* name, int64_t max) {
    need(v >= 1 && v <= max, "ERR_RANGE", std::string(name) + " must be in [1, " + std::to_string(max) + "], got " +
                                             std::to_string(v));
  };
  positive(vocab_size, "vocabSize", 1 << 24);
  positive(hidden, "hiddenSize", 1 << 16);
  need(layers >= 0 && layers <= 256, "ERR_RANGE", "layers must be in [0, 256], got " + std::to_string(layers));
  positive(heads, "heads", 1024);
  positive(ffn, "ffnSize", 1 << 18);
  positive(max_positions, "maxPositions", 1 << 16);
  positive(type_vocab, "typeVocabSize", 1024);
  positive(embedding_size, "embeddingSize", 1 << 16);
  need(layers == 0 || hidden % heads == 0, "ERR_ARG",
       "hiddenSize " + std::to_string(hidden) + " is not a multiple of heads " + std::to_string(heads));
  need(projection_dim >= 0 && projection_dim <= (1 << 16), "ERR_RANGE", "projectionDim must be in [0, 65536]");
  need(projection_hidden >= 0 && projection_hidden <= (1 << 16), "ERR_RANGE",
       "projectionHidden must be in [0, 65536]");
  need(!token_weights || pooling == Pooling::kMean, "ERR_ARG", "tokenWeights needs mean pooling");
  need(embeddings || !token_weights, "ERR_ARG", "tokenWeights needs the embedding tables");
  need(layers > 0 || pooling != Pooling::kCls || !embeddings, "ERR_ARG",
       "cls pooling needs at least one layer: with 0 layers the [CLS] state is the same for every text (use mean or max)");
  need(projection_hidden == 0 || projection_dim > 0, "ERR_ARG", "projectionHidden (an MLP head) needs projectionDim > 0");
  need(dropout >= 0 && dropout < 1, "ERR_RANGE", "dropout must be in [0, 1)");
  need(ln_eps > 0 && ln_eps < 1, "ERR_RANGE", "layerNormEps must be in (0, 1)");
  need(attention_window >= 0 && attention_window <= (1 << 16), "ERR_RANGE", "attentionWindow must be in [0, 65536]");
  if (routing != Routing::kNone) {
    positive(every, "taser.every", layers);
    need(experts >= 2 && experts <= 64, "ERR_RANGE", "taser.experts must be in [2, 64]");
    need(std::isfinite(entropy_weight), "ERR_RANGE", "taser.entropyWeight must be finite");
  }
}

torch::Tensor& BertEncoder::add(const std::string& name, torch::Tensor t) {
  index_[name] = params_.size();
  params_.emplace_back(name, t.set_requires_grad(true));
  return params_.back().second;
}

void BertEncoder::add_linear(const std::string& name, int64_t out, int64_t in) {
  add(name + ".weight", torch::randn({out, in}) * 0.02);
  add(name + ".bias", torch::zeros({out}));
}

void BertEncoder::add_norm(const std::string& name, int64_t n) {
  add(name + ".weight", torch::ones({n}));
  add(name + ".bias", torch::zeros({n}));
}

void BertEncoder::add_ffn(const std::string& p) {
  add_linear(p + ".intermediate.dense", config_.ffn, config_.hidden);
  add_linear(p + ".output.dense", config_.hidden, config_.ffn);
  add_norm(p + ".output.LayerNorm", config_.hidden);
}

BertEncoder::BertEncoder(const EncoderConfig& c) : config_(c) {
  c.validate();
  torch::NoGradGuard no_grad;
  if (c.embeddings) {
    torch::Tensor word = torch::randn({c.vocab_size, c.embedding_size}) * 0.02;
    word[0].zero_();  // [PAD]
    add("embeddings.word_embeddings.weight", word);
    if (c.embedding_size != c.hidden) add_linear("embeddings.projection", c.hidden, c.embedding_size);
    add("embeddings.position_embeddings.weight", torch::randn({c.max_positions, c.hidden}) * 0.02);
    add("embeddings.token_type_embeddings.weight", torch::randn({c.type_vocab, c.hidden}) * 0.02);
    add_norm("embeddings.LayerNorm", c.hidden);
    if (c.token_weights) add("embeddings.token_weights.weight", torch::zeros({c.vocab_size}));  // log-weights: 1 each
  }
  if (c.learned_router() && !c.per_layer_gate) add_linear("encoder.gate", c.experts, c.hidden);
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = layer_prefix(l);
    for (const char* m : {"query", "key", "value"}) add_linear(p + ".attention.self." + m, c.hidden, c.hidden);
    add_linear(p + ".attention.output.dense", c.hidden, c.hidden);
    add_norm(p + ".attention.output.LayerNorm", c.hidden);
    if (c.specialized(l)) {
      for (int64_t e = 0; e < c.experts; ++e) add_ffn(p + ".experts." + std::to_string(e));
      if (c.learned_router() && c.per_layer_gate) add_linear(p + ".gate", c.experts, c.hidden);
    } else {
      add_ffn(p);
    }
  }
  if (c.center) add("pooler.center", torch::zeros({c.hidden}));
  if (c.projection_hidden > 0) {
    add_linear("projection.hidden", c.projection_hidden, c.hidden);
    add_linear("projection", c.projection_dim, c.projection_hidden);
  } else if (c.projection_dim > 0) {
    add_linear("projection", c.projection_dim, c.hidden);
  }
}

const torch::Tensor& BertEncoder::param(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw Error("ERR_NOT_FOUND", "no parameter named '" + name + "'");
  return params_[it->second].second;
}

torch::Tensor BertEncoder::linear(const std::string& name, const torch::Tensor& x) const {
  return torch::linear(x, param(name + ".weight"), param(name + ".bias"));
}

torch::Tensor BertEncoder::norm(const std::string& name, const torch::Tensor& x) const {
  return torch::layer_norm(x, {config_.hidden}, param(name + ".weight"), param(name + ".bias"), config_.ln_eps);
}

torch::Tensor BertEncoder::attention(const std::string& p, const torch::Tensor& x, const torch::Tensor& key_bias,
                                     bool training) const {
  const int64_t B = x.size(0), T = x.size(1), H = config_.hidden, nh = config_.heads, d = H / nh;
  auto heads = [&](const char* m) {
    return linear(p + ".attention.self." + m, x).view({B, T, nh, d}).transpose(1, 2);  // [B, nh, T, d]
  };
  torch::Tensor q = heads("query"), k = heads("key"), v = heads("value");
  torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(double(d)) + key_bias;
  torch::Tensor probs = torch::dropout(torch::softmax(scores, -1), config_.dropout, training);
  torch::Tensor ctx = torch::matmul(probs, v).transpose(1, 2).reshape({B, T, H});
  torch::Tensor out = torch::dropout(linear(p + ".attention.output.dense", ctx), config_.dropout, training);
  return norm(p + ".attention.output.LayerNorm", x + out);
}

torch::Tensor BertEncoder::ffn(const std::string& p, const torch::Tensor& a, bool training) const {
  torch::Tensor h = torch::gelu(linear(p + ".intermediate.dense", a));  // exact erf GELU, as BERT
  torch::Tensor out = torch::dropout(linear(p + ".output.dense", h), config_.dropout, training);
  return norm(p + ".output.LayerNorm", a + out);
}

// Rows are bucketed by expert and each expert runs one GEMM over its rows only (see
// docs/methods/training.md#taser-specialized-blocks), instead of every expert over every row as the reference code
// does.
torch::Tensor BertEncoder::routed_ffn(int64_t layer, const torch::Tensor& a, const torch::Tensor& expert,
                                      const torch::Tensor& scale, bool training) const {
  const std::string p = layer_prefix(layer) + ".experts.";
  torch::Tensor out = torch::zeros_like(a);
  for (int64_t e = 0; e < config_.experts; ++e) {
    torch::Tensor rows = (expert == e).nonzero().squeeze(1);
    if (rows.numel() == 0) continue;
    torch::Tensor y = ffn(p + std::to_string(e), a.index_select(0, rows), training);
    if (scale.defined()) y = y * scale.index_select(0, rows).unsqueeze(1);
    out = out.index_copy(0, rows, y);
  }
  return out;
}

std::pair<torch::Tensor, torch::Tensor> BertEncoder::route(const std::string& gate, const torch::Tensor& u,
                                                           const torch::Tensor& valid, bool training,
                                                           std::vector<torch::Tensor>& entropies) const {
  torch::Tensor logits = linear(gate, u);  // [N, E]
  torch::Tensor logp = torch::log_softmax(logits, -1);
  // mean over valid rows of sum_e p log p: the negative entropy the loss adds with weight beta.
  torch::Tensor neg_entropy = (logp.exp() * logp).sum(-1);
  torch::Tensor w = valid.to(neg_entropy.scalar_type());
  entropies.push_back((neg_entropy * w).sum() / w.sum().clamp_min(1));
  if (!training) return {logits.argmax(-1), torch::Tensor()};
  // Hard Gumbel-softmax, tau = 1, with the straight-through estimate: the chosen expert's weight is
  // 1 - sg(y_soft) + y_soft, exactly 1 forward but carrying y_soft's gradient back to the gate.
  torch::Tensor uniform = torch::rand_like(logits).clamp(1e-10, 1.0 - 1e-7);
  torch::Tensor y_soft = torch::softmax(logits - torch::log(-torch::log(uniform)), -1);
  torch::Tensor choice = y_soft.argmax(-1);
  torch::Tensor picked = y_soft.gather(1, choice.unsqueeze(1)).squeeze(1);
  return {choice, (1.0 - picked.detach()) + picked};
}

// Det-R: questions use experts [0, E/2), passages [E/2, E): drawn uniformly within the side while training, the
// side's first expert at inference (as TASER's released scripts hard-code ids 0 and 1 for E = 2).
torch::Tensor BertEncoder::det_experts(int64_t rows, Side side, bool training) const {
  const int64_t half = config_.experts / 2;
  const int64_t lo = side == Side::kQuery ? 0 : half, hi = side == Side::kQuery ? half : config_.experts;
  if (!training || hi - lo == 1) return torch::full({rows}, lo, torch::kLong);
  return torch::randint(lo, hi, {rows}, torch::kLong);
}

torch::Tensor BertEncoder::pool(const torch::Tensor& x, const torch::Tensor& valid, const torch::Tensor& ids) const {
  switch (config_.pooling) {
    case Pooling::kCls:
      return x.select(1, 0);
    case Pooling::kMean: {
      torch::Tensor w = valid.to(x.scalar_type());
      // exp keeps the weights positive and makes the optimizer's steps relative to them.
      if (config_.token_weights) w = w * torch::embedding(param("embeddings.token_weights.weight").unsqueeze(1), ids).squeeze(2).exp();
      w = w.unsqueeze(2);
      return (x * w).sum(1) / w.sum(1);  // every row has at least one real token (lengths >= 1)
    }
    case Pooling::kMax:
      return x.masked_fill(~valid.unsqueeze(2), -std::numeric_limits<float>::infinity()).amax(1);
  }
  throw Error("ERR_ARG", "unknown pooling");
}

torch::Tensor BertEncoder::project(const torch::Tensor& pooled) const {
  torch::Tensor y = pooled;
  if (config_.projection_hidden > 0) y = linear("projection", torch::gelu(linear("projection.hidden", y)));
  else if (config_.projection_dim > 0) y = linear("projection", y);
  // eps as F.normalize's 1e-12, so a zero vector stays zero instead of NaN.
  if (config_.normalize) y = unit_rows(y);
  return y;
}

torch::Tensor BertEncoder::blocks(torch::Tensor x, const torch::Tensor& valid, Side side, bool training,
                                  std::vector<torch::Tensor>& entropies) const {
  const EncoderConfig& c = config_;
  const int64_t B = x.size(0), T = x.size(1);
  // -1e9 rather than -inf: exp underflows to exactly 0 for padded keys, with no NaN risk.
  torch::Tensor key_bias = (~valid).to(torch::kFloat).mul(-1e9).view({B, 1, 1, T});
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = layer_prefix(l);
    const torch::Tensor layer_input = x;
    torch::Tensor a = attention(p, x, key_bias, training);
    if (!c.specialized(l)) {
      x = ffn(p, a, training);
      continue;
    }
    const std::string gate = c.per_layer_gate ? p + ".gate" : "encoder.gate";
    torch::Tensor flat = a.reshape({B * T, c.hidden});
    torch::Tensor expert, scale;
    if (c.routing == Routing::kDet) {
      expert = det_experts(B, side, training).repeat_interleave(T);
    } else if (c.routing == Routing::kSeq) {
      auto [e, s] = route(gate, layer_input.select(1, 0), torch::ones({B}, torch::kBool), training, entropies);
      expert = e.repeat_interleave(T);
      if (s.defined()) scale = s.repeat_interleave(T);
    } else {
      std::tie(expert, scale) = route(gate, flat, valid.reshape({B * T}), training, entropies);
    }
    x = routed_ffn(l, flat, expert, scale, training).view({B, T, c.hidden});
  }
  return x;
}

TokenStates BertEncoder::token_states(const TokenBatch& batch, Side side, bool training, torch::Tensor* entropy) const {
  const EncoderConfig& c = config_;
  need(c.embeddings, "ERR_ARG", "this encoder has no embeddings: it transforms given token states");
  const int64_t T = batch.ids.size(1);
  need(T <= c.max_positions, "ERR_RANGE",
       "sequence length " + std::to_string(T) + " exceeds maxPositions " + std::to_string(c.max_positions));
  torch::Tensor positions = torch::arange(T, torch::kLong);
  torch::Tensor valid = positions.unsqueeze(0) < batch.lengths.unsqueeze(1);  // [B, T]
  torch::Tensor x = torch::embedding(param("embeddings.word_embeddings.weight"), batch.ids);
  if (c.embedding_size != c.hidden) x = linear("embeddings.projection", x);
  x = x + torch::embedding(param("embeddings.position_embeddings.weight"), positions).unsqueeze(0) +
      torch::embedding(param("embeddings.token_type_embeddings.weight"), batch.types);
  x = torch::dropout(norm("embeddings.LayerNorm", x), c.dropout, training);
  std::vector<torch::Tensor> entropies;
  x = windowed_blocks(x, valid, side, training, entropies);
  if (entropy) *entropy = entropies.empty() ? torch::zeros({}) : torch::stack(entropies).mean();
  return {x, valid};
}

torch::Tensor BertEncoder::transform(const TokenStates& in, Side side, bool training) const {
  need(in.x.dim() == 3 && in.x.size(2) == config_.hidden, "ERR_SHAPE", "token states must be [B, T, hiddenSize]");
  std::vector<torch::Tensor> entropies;
  return windowed_blocks(in.x, in.valid, side, training, entropies);
}

torch::Tensor BertEncoder::windowed_blocks(const torch::Tensor& x, const torch::Tensor& valid, Side side, bool training,
                                           std::vector<torch::Tensor>& entropies) const {
  const int64_t W = config_.attention_window, B = x.size(0), T = x.size(1), H = x.size(2);
  if (W == 0 || T <= W || config_.layers == 0) return blocks(x, valid, side, training, entropies);
  const int64_t n = (T + W - 1) / W;
  torch::Tensor xs = torch::constant_pad_nd(x, {0, 0, 0, n * W - T}).reshape({B * n, W, H});
  torch::Tensor vs = torch::constant_pad_nd(valid.to(torch::kLong), {0, n * W - T}).reshape({B * n, W}).to(torch::kBool);
  // Windows of padding only are left out: no compute for a short passage padded to the batch's longest, and no
  // router decision (or entropy term) for a window with no token. Their states stay zero; pooling never reads them.
  torch::Tensor kept = vs.any(1).nonzero().squeeze(1);
  torch::Tensor y = blocks(xs.index_select(0, kept), vs.index_select(0, kept), side, training, entropies);
  return torch::zeros_like(xs).index_copy(0, kept, y).reshape({B, n * W, H}).narrow(1, 0, T);
}

EncodeOutput BertEncoder::forward(const TokenBatch& batch, Side side, bool training) const {
  const EncoderConfig& c = config_;
  torch::Tensor entropy;
  TokenStates t = token_states(batch, side, training, &entropy);
  torch::Tensor state = pool(t.x, t.valid, batch.ids);
  // Centring acts on the unit direction of the state: a mean state's norm shrinks with the text's length, so one
  // centre subtracted from raw states would under-centre short questions against long passages.
  torch::Tensor pooled = project(c.center ? unit_rows(state) - param("pooler.center") : state);
  return {pooled, entropy, state};
}

}  // namespace quorum::torchx
