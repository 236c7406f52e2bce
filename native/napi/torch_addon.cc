// Entry point of quorum_torch.node: the libtorch Retriever (native/torch/retriever.h) behind lib/train/retriever.ts.
// A separate module because loading libtorch costs ~160 MB and up to a second: servers that only search never
// load it. This layer converts and validates; c10 errors become typed errors (ERR_NATIVE) without their C++
// backtraces, and every call on one model runs under that model's mutex, so async calls never interleave.
#include <napi.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../torch/retriever.h"
#include "async_call.h"
#include "errors.h"
#include "scalar_args.h"
#include "torch_args.h"

namespace quorum::napi {
namespace {

using torchx::Retriever;

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

torchx::RetrieverConfig retriever_config(const Napi::Object& o) {
  torchx::RetrieverConfig c;
  const std::string preset = string_field(o, "preset");
  c.preset = preset == "bi-encoder" ? torchx::Preset::kBiEncoder
             : preset == "siamese"  ? torchx::Preset::kSiamese
             : preset == "taser"    ? torchx::Preset::kTaser
                                    : throw Error("ERR_ARG", "preset must be 'bi-encoder', 'siamese' or 'taser'");
  c.encoder = encoder_config(object_arg(o.Get("encoder"), "encoder"));
  Napi::Value tasks = o.Get("tasks");
  if (tasks.IsArray()) {
    Napi::Array a = tasks.As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); ++i) {
      if (!a.Get(i).IsString()) throw Error("ERR_ARG", "tasks must be strings");
      c.tasks.push_back(a.Get(i).As<Napi::String>().Utf8Value());
    }
  }
  c.per_task_query_encoders = flag(o.Get("perTaskQueryEncoders"));
  return c;
}

// { ids, typeIds, lengths: Int32Array, rows, seqLen } as produced by lib/text/tokenizer.ts.
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

// (question, passage) pairs as an Int32Array of even length, or null / undefined for none.
torch::Tensor ignore_arg(const Napi::Value& v, int64_t questions, int64_t passages) {
  if (v.IsUndefined() || v.IsNull()) return torch::Tensor();
  auto a = typed_array<Napi::Int32Array>(v, "ignore");
  if (a.ElementLength() % 2) throw Error("ERR_SHAPE", "ignore holds (question, passage) pairs: its length must be even");
  return long_tensor(a, {int64_t(a.ElementLength() / 2), 2}, 0, std::max(questions, passages), "ignore");
}

// { queries, passages, positives: Int32Array, ignore?: Int32Array (pairs), task?, lossScale? }
torchx::TrainBatch train_batch(const Napi::Value& v, const Retriever& r) {
  Napi::Object o = object_arg(v, "batch");
  const auto& c = r.config().encoder;
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

class RetrieverObject : public Napi::ObjectWrap<RetrieverObject> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "Retriever",
                       {InstanceMethod<&RetrieverObject::Info>("info"),
                        InstanceMethod<&RetrieverObject::Parameters>("parameters"),
                        InstanceMethod<&RetrieverObject::GetParameter>("getParameter"),
                        InstanceMethod<&RetrieverObject::SetParameter>("setParameter"),
                        InstanceMethod<&RetrieverObject::SetOptimizer>("setOptimizer"),
                        InstanceMethod<&RetrieverObject::Encode>("encode"),
                        InstanceMethod<&RetrieverObject::Accumulate>("accumulate"),
                        InstanceMethod<&RetrieverObject::Step>("step"),
                        InstanceMethod<&RetrieverObject::TrainLoop>("trainLoop"),
                        InstanceMethod<&RetrieverObject::Save>("save"),
                        InstanceMethod<&RetrieverObject::Load>("load")});
  }

  explicit RetrieverObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<RetrieverObject>(info) {
    guard(info.Env(), [&] {
      auto config = retriever_config(object_arg(info[0], "config"));
      model_ = torch_call([&] { return std::make_shared<Retriever>(std::move(config)); });
      return info.Env().Undefined();
    });
  }

 private:
  Napi::Value run(Napi::Env env, const Napi::Value& async, std::vector<Napi::Object> keep, Napi::Value result,
                  std::function<void()> work, Finish finish = nullptr) {
    return run_locked(env, async, model_, std::move(keep), result, std::move(work), std::move(finish));
  }

  Napi::Value Info(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      std::lock_guard<std::mutex> lock(model_->mutex());
      Napi::Object o = Napi::Object::New(env);
      o.Set("parameterCount", double(model_->parameter_count()));
      o.Set("outDim", double(model_->out_dim()));
      o.Set("optimizerSteps", double(model_->optimizer_steps()));
      Napi::Array names = Napi::Array::New(env, model_->encoder_names().size());
      for (size_t i = 0; i < model_->encoder_names().size(); ++i) names.Set(uint32_t(i), model_->encoder_names()[i]);
      o.Set("encoders", names);
      return Napi::Value(o);
    });
  }

  // parameters() -> [{ name, shape }]
  Napi::Value Parameters(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] { return Napi::Value(parameter_list(info.Env(), model_->parameters())); });
  }

  Napi::Value GetParameter(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] { return get_parameter(info, *model_); });
  }

  Napi::Value SetParameter(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] { return set_parameter(info, *model_); });
  }

  // setOptimizer({ beta1, beta2, eps, weightDecay, layerDecay })
  Napi::Value SetOptimizer(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Object o = object_arg(info[0], "optimizer options");
      torchx::OptimizerConfig c;
      c.beta1 = field(o, "beta1", c.beta1);
      c.beta2 = field(o, "beta2", c.beta2);
      c.eps = field(o, "eps", c.eps);
      c.weight_decay = field(o, "weightDecay", c.weight_decay);
      c.layer_decay = field(o, "layerDecay", c.layer_decay);
      std::lock_guard<std::mutex> lock(model_->mutex());
      model_->set_optimizer(c);
      return info.Env().Undefined();
    });
  }

  // encode(batch, side, task, out: Float32Array | null, async) -> Float32Array [rows, outDim] (out when given)
  Napi::Value Encode(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      torchx::TokenBatch batch = token_batch(info[0], model_->config().encoder, "batch");
      const torchx::Side side = side_arg(info[1]);
      const int64_t task = info[2].IsUndefined() ? 0 : int64_t(number_arg(info[2], "task"));
      const bool state = flag(info[5]);
      const int64_t rows = batch.ids.size(0), dim = state ? model_->config().encoder.hidden : model_->out_dim();
      Napi::Float32Array out = info[3].IsUndefined() || info[3].IsNull()
                                   ? Napi::Float32Array::New(env, size_t(rows * dim))
                                   : typed_array<Napi::Float32Array>(info[3], "out");
      if (int64_t(out.ElementLength()) != rows * dim)
        throw Error("ERR_SHAPE", "out holds " + std::to_string(out.ElementLength()) + " floats, the batch needs " +
                                     std::to_string(rows * dim));
      float* dst = out.Data();
      auto model = model_;
      Napi::Object result = out;
      return run(env, info[4], {result}, result, [=] {
        if (rows == 0) return;
        torch::Tensor e = model->encode(batch, side, task, state);
        std::memcpy(dst, e.data_ptr<float>(), size_t(rows * dim) * sizeof(float));
      });
    });
  }

  // accumulate(batch, async) -> { loss, entropy, correct, questions, tokens }
  Napi::Value Accumulate(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto batch = std::make_shared<torchx::TrainBatch>(train_batch(info[0], *model_));
      auto stats = std::make_shared<torchx::StepStats>();
      auto model = model_;
      return run(env, info[1], {}, Napi::Object::New(env), [=] { *stats = model->accumulate(*batch); },
                 [stats](Napi::Env, Napi::Object result) { put_stats(result, *stats); });
    });
  }

  // step(lr, clip, async) -> { gradNorm }
  Napi::Value Step(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      const double lr = number_arg(info[0], "lr"), clip = number_arg(info[1], "clip");
      auto norm = std::make_shared<double>(0);
      auto model = model_;
      return run(env, info[2], {}, Napi::Object::New(env), [=] { *norm = model->step(lr, clip); },
                 [norm](Napi::Env, Napi::Object result) { result.Set("gradNorm", *norm); });
    });
  }

  // trainLoop(batches[], lrs: Float64Array, clip, accumulation, async) -> { loss, correct, questions, tokens, ms }
  // The same steps as the TypeScript loop, in one native call: the baseline its orchestration cost is measured
  // against (bench/train.ts).
  Napi::Value TrainLoop(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      if (!info[0].IsArray()) throw Error("ERR_ARG", "batches must be an array");
      Napi::Array arr = info[0].As<Napi::Array>();
      auto batches = std::make_shared<std::vector<torchx::TrainBatch>>();
      for (uint32_t i = 0; i < arr.Length(); ++i) batches->push_back(train_batch(arr.Get(i), *model_));
      if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
        throw Error("ERR_ARG", "lrs must be a Float64Array");
      auto lr_arr = info[1].As<Napi::Float64Array>();
      auto lrs = std::make_shared<std::vector<double>>(lr_arr.Data(), lr_arr.Data() + lr_arr.ElementLength());
      const double clip = number_arg(info[2], "clip");
      const double accum = number_arg(info[3], "accumulation");
      if (accum < 1 || accum != double(int64_t(accum))) throw Error("ERR_RANGE", "accumulation must be an integer >= 1");
      if (lrs->size() * size_t(accum) < batches->size())
        throw Error("ERR_SHAPE", "lrs needs one rate per optimizer step");
      auto total = std::make_shared<torchx::StepStats>();
      auto ms = std::make_shared<double>(0);
      auto model = model_;
      return run(env, info[4], {}, Napi::Object::New(env),
                 [=] {
                   const auto t0 = std::chrono::steady_clock::now();
                   for (size_t i = 0; i < batches->size(); ++i) {
                     torchx::StepStats s = model->accumulate((*batches)[i]);
                     total->loss += s.loss;
                     total->entropy += s.entropy;
                     total->correct += s.correct;
                     total->questions += s.questions;
                     total->tokens += s.tokens;
                     if ((i + 1) % size_t(accum) == 0 || i + 1 == batches->size())
                       model->step((*lrs)[i / size_t(accum)], clip);
                   }
                   *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
                 },
                 [total, ms](Napi::Env, Napi::Object result) {
                   put_stats(result, *total);
                   result.Set("ms", *ms);
                 });
    });
  }

  Napi::Value Save(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      const std::string path = path_arg(info[0]);
      auto model = model_;
      return run(info.Env(), info[1], {}, Napi::Object::New(info.Env()), [=] { model->save(path); });
    });
  }

  Napi::Value Load(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      const std::string path = path_arg(info[0]);
      auto model = model_;
      return run(info.Env(), info[1], {}, Napi::Object::New(info.Env()), [=] { model->load(path); });
    });
  }

  std::shared_ptr<Retriever> model_;
};

// contrastiveLoss(q, p: Float32Array, rows, passages, dim, positives: Int32Array, ignore: Int32Array | null)
//   -> { loss, dQ, dP }: the training step's loss and its gradients by autograd (tests compare it to infoNce).
Napi::Value ContrastiveLoss(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto qa = typed_array<Napi::Float32Array>(info[0], "q");
  auto pa = typed_array<Napi::Float32Array>(info[1], "p");
  const int64_t nq = int64_t(number_arg(info[2], "rows")), np = int64_t(number_arg(info[3], "passages")),
                d = int64_t(number_arg(info[4], "dim"));
  if (nq < 1 || np < 1 || d < 1 || int64_t(qa.ElementLength()) != nq * d || int64_t(pa.ElementLength()) != np * d)
    throw Error("ERR_SHAPE", "q must be rows x dim and p passages x dim");
  auto pos_arr = typed_array<Napi::Int32Array>(info[5], "positives");
  if (int64_t(pos_arr.ElementLength()) != nq) throw Error("ERR_SHAPE", "one positive per row");
  torch::Tensor pos = long_tensor(pos_arr, {nq}, 0, np, "positives");
  torch::Tensor ignore = ignore_arg(info[6], nq, np);
  return torch_call([&] {
    torch::Tensor q = torch::from_blob(qa.Data(), {nq, d}, torch::kFloat).clone().set_requires_grad(true);
    torch::Tensor p = torch::from_blob(pa.Data(), {np, d}, torch::kFloat).clone().set_requires_grad(true);
    torch::Tensor loss = Retriever::contrastive_loss(q, p, pos, ignore);
    loss.backward();
    Napi::Object o = Napi::Object::New(env);
    o.Set("loss", loss.item<double>());
    o.Set("dQ", float_array_of(env, q.grad()));
    o.Set("dP", float_array_of(env, p.grad()));
    return Napi::Value(o);
  });
}

Napi::Value SetThreads(const Napi::CallbackInfo& info) {
  const int n = threads_arg(info[0]);
  torch::set_num_threads(n);
  return info.Env().Undefined();
}

Napi::Value Threads(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), torch::get_num_threads()); }

Napi::Value ManualSeed(const Napi::CallbackInfo& info) {
  const double s = number_arg(info[0], "seed");
  if (s < 0 || s != double(uint64_t(s))) throw Error("ERR_RANGE", "seed must be a non-negative integer");
  torch::manual_seed(uint64_t(s));
  return info.Env().Undefined();
}

}  // namespace
}  // namespace quorum::napi

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  using namespace quorum::napi;
  exports.Set("Retriever", RetrieverObject::Init(env));
  exports.Set("MlpEnsemble", MlpEnsembleClass(env));
  InitTorchTestHooks(env, exports);
  exports.Set("contrastiveLoss", Napi::Function::New<guarded<ContrastiveLoss>>(env));
  exports.Set("setThreads", Napi::Function::New<guarded<SetThreads>>(env));
  exports.Set("threads", Napi::Function::New<guarded<Threads>>(env));
  exports.Set("manualSeed", Napi::Function::New<guarded<ManualSeed>>(env));
  return exports;
}

NODE_API_MODULE(quorum_torch, Init)
