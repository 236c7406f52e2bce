#include "torch_batch_args.h"

#include <cmath>

#include "../common/error.h"
#include "scalar_args.h"

namespace quorum::napi {

torchx::EncoderConfig encoder_config(const Napi::Object& o) {
  torchx::EncoderConfig c;
  c.vocab_size = int_field(o, "vocabSize", c.vocab_size);
  c.hidden = int_field(o, "hiddenSize", c.hidden);
  c.layers = int_field(o, "layers", c.layers);
  c.heads = int_field(o, "heads", c.heads);
  c.ffn = int_field(o, "ffnSize", c.ffn);
  c.max_positions = int_field(o, "maxPositions", c.max_positions);
  c.type_vocab = int_field(o, "typeVocabSize", c.type_vocab);
  c.embedding_size = int_field(o, "embeddingSize", c.hidden);
  c.projection_dim = int_field(o, "projectionDim", 0);
  c.dropout = field(o, "dropout", c.dropout);
  c.ln_eps = field(o, "layerNormEps", c.ln_eps);
  c.projection_hidden = int_field(o, "projectionHidden", 0);
  c.attention_window = int_field(o, "attentionWindow", 0);
  c.normalize = flag(o.Get("normalize"));
  c.token_weights = flag(o.Get("tokenWeights"));
  c.center = flag(o.Get("center"));
  Napi::Value pooling = o.Get("pooling");
  if (!pooling.IsUndefined()) {
    const std::string p = string_field(o, "pooling");
    c.pooling = p == "cls"    ? torchx::Pooling::kCls
                : p == "mean" ? torchx::Pooling::kMean
                : p == "max"  ? torchx::Pooling::kMax
                              : throw Error("ERR_ARG", "pooling must be 'cls', 'mean' or 'max', got '" + p + "'");
  }
  Napi::Value t = o.Get("taser");
  if (!t.IsUndefined() && !t.IsNull()) {
    Napi::Object taser = object_arg(t, "taser");
    const std::string r = string_field(taser, "routing");
    c.routing = r == "det"   ? torchx::Routing::kDet
                : r == "seq" ? torchx::Routing::kSeq
                : r == "tok" ? torchx::Routing::kTok
                             : throw Error("ERR_ARG", "taser.routing must be 'det', 'seq' or 'tok', got '" + r + "'");
    c.every = int_field(taser, "every", c.every);
    c.experts = int_field(taser, "experts", c.experts);
    c.per_layer_gate = flag(taser.Get("perLayerGate"));
    c.entropy_weight = field(taser, "entropyWeight", 0.0);
  }
  return c;
}

torchx::TokenBatch token_batch(const Napi::Value& v, const torchx::EncoderConfig& c, const char* what) {
  Napi::Object o = object_arg(v, what);
  const int64_t rows = int_field(o, "rows", -1), len = int_field(o, "seqLen", -1);
  if (rows < 0 || len < 1) throw Error("ERR_ARG", std::string(what) + " needs rows >= 0 and seqLen >= 1");
  if (len > c.max_positions)
    throw Error("ERR_RANGE", std::string(what) + ": seqLen " + std::to_string(len) + " exceeds maxPositions " +
                                 std::to_string(c.max_positions));
  auto ids = typed_array<Napi::Int32Array>(o.Get("ids"), "ids");
  auto types = typed_array<Napi::Int32Array>(o.Get("typeIds"), "typeIds");
  auto lengths = typed_array<Napi::Int32Array>(o.Get("lengths"), "lengths");
  if (int64_t(ids.ElementLength()) != rows * len || int64_t(types.ElementLength()) != rows * len ||
      int64_t(lengths.ElementLength()) != rows)
    throw Error("ERR_SHAPE", std::string(what) + ": ids and typeIds need rows x seqLen = " + std::to_string(rows * len) +
                                 " values and lengths " + std::to_string(rows));
  torchx::TokenBatch b;
  b.ids = long_tensor(ids, {rows, len}, 0, c.vocab_size, "ids");
  b.types = long_tensor(types, {rows, len}, 0, c.type_vocab, "typeIds");
  b.lengths = long_tensor(lengths, {rows}, 1, len + 1, "lengths");
  return b;
}

torchx::Side side_arg(const Napi::Value& v) {
  const std::string s = v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
  if (s == "query") return torchx::Side::kQuery;
  if (s == "passage") return torchx::Side::kPassage;
  throw Error("ERR_ARG", "side must be 'query' or 'passage'");
}

torch::Tensor ignore_arg(const Napi::Value& v, int64_t questions, int64_t passages) {
  if (v.IsUndefined() || v.IsNull()) return torch::Tensor();
  auto a = typed_array<Napi::Int32Array>(v, "ignore");
  if (a.ElementLength() % 2) throw Error("ERR_SHAPE", "ignore holds (question, passage) pairs: its length must be even");
  return long_tensor(a, {int64_t(a.ElementLength() / 2), 2}, 0, std::max(questions, passages), "ignore");
}

torchx::TrainBatch train_batch(const Napi::Value& v, const torchx::EncoderConfig& c) {
  Napi::Object o = object_arg(v, "batch");
  torchx::TrainBatch b;
  b.queries = token_batch(o.Get("queries"), c, "queries");
  b.passages = token_batch(o.Get("passages"), c, "passages");
  const int64_t nq = b.queries.ids.size(0), np = b.passages.ids.size(0);
  auto pos = typed_array<Napi::Int32Array>(o.Get("positives"), "positives");
  if (int64_t(pos.ElementLength()) != nq)
    throw Error("ERR_SHAPE", std::to_string(pos.ElementLength()) + " positives for " + std::to_string(nq) + " questions");
  b.positives = long_tensor(pos, {nq}, 0, np, "positives");
  b.ignore = ignore_arg(o.Get("ignore"), nq, np);
  b.task = int_field(o, "task", 0);
  b.loss_scale = field(o, "lossScale", 1.0);
  if (!(b.loss_scale >= 0)) throw Error("ERR_RANGE", "lossScale must be >= 0");
  b.temperature = field(o, "temperature", 1.0);
  if (!(b.temperature > 0) || !std::isfinite(b.temperature)) throw Error("ERR_RANGE", "temperature must be finite and > 0");
  return b;
}

void put_stats(Napi::Object o, const torchx::StepStats& s) {
  o.Set("loss", s.loss);
  o.Set("entropy", s.entropy);
  o.Set("correct", double(s.correct));
  o.Set("questions", double(s.questions));
  o.Set("tokens", double(s.tokens));
}

torchx::OptimizerConfig optimizer_config(const Napi::Value& v) {
  Napi::Object o = object_arg(v, "optimizer options");
  torchx::OptimizerConfig c;
  c.beta1 = field(o, "beta1", c.beta1);
  c.beta2 = field(o, "beta2", c.beta2);
  c.eps = field(o, "eps", c.eps);
  c.weight_decay = field(o, "weightDecay", c.weight_decay);
  c.layer_decay = field(o, "layerDecay", c.layer_decay);
  if (o.Has("frozen") && !o.Get("frozen").IsUndefined()) c.frozen = strings_arg(o.Get("frozen"), "frozen");
  return c;
}

}  // namespace quorum::napi
