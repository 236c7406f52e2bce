// The ROM model (native/torch/rom_model.h) as a JS class of quorum_torch, behind lib/methods/rom/model.ts:
// converts and validates, runs encoding, reading and training steps now or on the libuv pool under the model's mutex.
#include <napi.h>
#include "../torch/torch_includes.h"

#include <cmath>
#include <memory>
#include <string>

#include "../torch/rom_model.h"
#include "async_call.h"
#include "errors.h"
#include "process_group_object.h"
#include "scalar_args.h"
#include "torch_args.h"
#include "torch_batch_args.h"

namespace quorum::napi {
namespace {

using torchx::RomModel;

torchx::RomHead head_arg(const Napi::Value& v) {
  if (v.IsString()) {
    const std::string s = v.As<Napi::String>().Utf8Value();
    for (int h = 0; h < torchx::kRomHeads; ++h)
      if (s == torchx::rom_head_name(h)) return torchx::RomHead(h);
  }
  throw Error("ERR_ARG", "a ROM head is 'retrieval', 'ict' or 'phrase_ict'");
}

// { encoder, headDim? }
torchx::RomConfig rom_config(const Napi::Value& v) {
  Napi::Object o = object_arg(v, "config");
  torchx::RomConfig c;
  c.encoder = encoder_config(object_arg(o.Get("encoder"), "encoder"));
  c.head_dim = int_field(o, "headDim", c.head_dim);
  return c;
}

// { inputs, passages, positive, start, end: Int32Array (one per question), lossScale?, normalize? }
torchx::ReaderBatch reader_batch(const Napi::Value& v, const torchx::EncoderConfig& c) {
  Napi::Object o = object_arg(v, "batch");
  torchx::ReaderBatch b;
  b.inputs = token_batch(o.Get("inputs"), c, "inputs");
  b.passages = int_field(o, "passages", 0);
  const int64_t rows = b.inputs.ids.size(0), T = b.inputs.ids.size(1);
  if (b.passages < 1 || rows % b.passages != 0)
    throw Error("ERR_SHAPE", std::to_string(rows) + " reader rows are not questions x " + std::to_string(b.passages) + " passages");
  const int64_t nq = rows / b.passages;
  auto one_each = [&](const char* key, int64_t hi) {
    auto a = typed_array<Napi::Int32Array>(o.Get(key), key);
    if (int64_t(a.ElementLength()) != nq)
      throw Error("ERR_SHAPE", std::to_string(a.ElementLength()) + " " + key + " values for " + std::to_string(nq) + " questions");
    return long_tensor(a, {nq}, 0, hi, key);
  };
  b.positive = one_each("positive", b.passages);
  b.start = one_each("start", T);
  b.end = one_each("end", T);
  b.loss_scale = field(o, "lossScale", 1.0);
  if (!(b.loss_scale >= 0) || !std::isfinite(b.loss_scale)) throw Error("ERR_RANGE", "lossScale must be finite and >= 0");
  if (!o.Get("normalize").IsUndefined()) b.normalize = flag(o.Get("normalize"));
  return b;
}

void put_rom_stats(Napi::Object o, const torchx::RomStepStats& s) {
  put_stats(o, s);
  o.Set("chance", s.chance);
  o.Set("passageCorrect", double(s.passage_correct));
  o.Set("spanCorrect", double(s.span_correct));
}

class RomObject : public TrainableObject<RomObject, RomModel> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "RomModel",
                       with_trainable_methods({InstanceMethod<&RomObject::Info>("info"),
                                               InstanceMethod<&RomObject::Encode>("encode"),
                                               InstanceMethod<&RomObject::Read>("read"),
                                               InstanceMethod<&RomObject::Accumulate>("accumulate"),
                                               InstanceMethod<&RomObject::AccumulateReader>("accumulateReader")}));
  }

  explicit RomObject(const Napi::CallbackInfo& info) : TrainableObject<RomObject, RomModel>(info) {
    create(info, [&] { return std::make_shared<RomModel>(rom_config(info[0])); });
  }

 private:
  // info() -> { parameterCount, optimizerSteps, outDim }
  Napi::Value Info(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      std::lock_guard<std::mutex> lock(live()->mutex());
      Napi::Object o = count_info(info.Env());
      o.Set("outDim", double(live()->config().out_dim()));
      return Napi::Value(o);
    });
  }

  // encode(batch, side, head, async) -> Float32Array [rows, outDim]
  Napi::Value Encode(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto batch = std::make_shared<torchx::TokenBatch>(token_batch(info[0], live()->config().encoder, "batch"));
      const torchx::Side side = side_arg(info[1]);
      const torchx::RomHead h = head_arg(info[2]);
      auto out = std::make_shared<torch::Tensor>();
      auto model = live();
      return run(env, info[3], {}, Napi::Object::New(env), [=] { *out = model->encode(*batch, side, h); },
                 [out](Napi::Env env, Napi::Object result) { result.Set("vectors", float_array_of(env, *out)); });
    });
  }

  // read(inputs, async) -> { start, end: Float32Array [rows, seqLen] (-Infinity outside the passage), relevance [rows] }
  Napi::Value Read(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto batch = std::make_shared<torchx::TokenBatch>(token_batch(info[0], live()->config().encoder, "inputs"));
      auto out = std::make_shared<torchx::ReaderOutput>();
      auto model = live();
      return run(env, info[1], {}, Napi::Object::New(env), [=] { *out = model->read(*batch); },
                 [out](Napi::Env env, Napi::Object result) {
                   result.Set("start", float_array_of(env, out->start));
                   result.Set("end", float_array_of(env, out->end));
                   result.Set("relevance", float_array_of(env, out->relevance));
                 });
    });
  }

  // accumulate(batch, head, normalize, async, group?) -> { loss, correct, questions, tokens, chance }
  Napi::Value Accumulate(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto batch = std::make_shared<torchx::TrainBatch>(train_batch(info[0], live()->config().encoder));
      const torchx::RomHead h = head_arg(info[1]);
      const bool normalize = flag(info[2]);
      auto group = group_arg(info[4]);
      auto stats = std::make_shared<torchx::RomStepStats>();
      auto model = live();
      return run(env, info[3], {}, Napi::Object::New(env), [=] { *stats = model->accumulate(*batch, h, normalize, group.get()); },
                 [stats](Napi::Env, Napi::Object result) { put_rom_stats(result, *stats); });
    });
  }

  // accumulateReader(batch, async, group?) -> { loss, correct, questions, tokens, chance, passageCorrect, spanCorrect }
  Napi::Value AccumulateReader(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto batch = std::make_shared<torchx::ReaderBatch>(reader_batch(info[0], live()->config().encoder));
      auto group = group_arg(info[2]);
      auto stats = std::make_shared<torchx::RomStepStats>();
      auto model = live();
      return run(env, info[1], {}, Napi::Object::New(env), [=] { *stats = model->accumulate_reader(*batch, group.get()); },
                 [stats](Napi::Env, Napi::Object result) { put_rom_stats(result, *stats); });
    });
  }
};

}  // namespace

Napi::Function RomModelClass(Napi::Env env) { return RomObject::Init(env); }

}  // namespace quorum::napi
