// Entry point of quorum_torch.node: the libtorch Retriever (native/torch/retriever.h) behind lib/models/retriever.ts.
// A separate module because loading libtorch costs ~160 MB and up to a second: servers that only search never
// load it. This layer converts and validates; c10 errors become typed errors (ERR_NATIVE) without their C++
// backtraces, and every call on one model runs under that model's mutex, so async calls never interleave.
#include <napi.h>
#include "../torch/torch_includes.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../torch/retriever.h"
#include "async_call.h"
#include "errors.h"
#include "process_group_object.h"
#include "scalar_args.h"
#include "torch_args.h"
#include "torch_batch_args.h"

namespace quorum::napi {
namespace {

using torchx::Retriever;

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

class RetrieverObject : public TrainableObject<RetrieverObject, Retriever> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "Retriever",
                       with_trainable_methods({InstanceMethod<&RetrieverObject::Info>("info"),
                                               InstanceMethod<&RetrieverObject::Encode>("encode"),
                                               InstanceMethod<&RetrieverObject::Accumulate>("accumulate"),
                                               InstanceMethod<&RetrieverObject::TrainLoop>("trainLoop")}));
  }

  explicit RetrieverObject(const Napi::CallbackInfo& info) : TrainableObject<RetrieverObject, Retriever>(info) {
    create(info, [&] { return std::make_shared<Retriever>(retriever_config(object_arg(info[0], "config"))); });
  }

 private:
  Napi::Value Info(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      std::lock_guard<std::mutex> lock(live()->mutex());
      Napi::Object o = count_info(env);
      o.Set("outDim", double(live()->out_dim()));
      Napi::Array names = Napi::Array::New(env, live()->encoder_names().size());
      for (size_t i = 0; i < live()->encoder_names().size(); ++i) names.Set(uint32_t(i), live()->encoder_names()[i]);
      o.Set("encoders", names);
      return Napi::Value(o);
    });
  }

  // encode(batch, side, task, out: Float32Array | null, async) -> Float32Array [rows, outDim] (out when given)
  Napi::Value Encode(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      torchx::TokenBatch batch = token_batch(info[0], live()->config().encoder, "batch");
      const torchx::Side side = side_arg(info[1]);
      const int64_t task = info[2].IsUndefined() ? 0 : int64_t(number_arg(info[2], "task"));
      const bool state = flag(info[5]);
      const int64_t rows = batch.ids.size(0), dim = state ? live()->config().encoder.hidden : live()->out_dim();
      Napi::Float32Array out = info[3].IsUndefined() || info[3].IsNull()
                                   ? Napi::Float32Array::New(env, size_t(rows * dim))
                                   : typed_array<Napi::Float32Array>(info[3], "out");
      if (int64_t(out.ElementLength()) != rows * dim)
        throw Error("ERR_SHAPE", "out holds " + std::to_string(out.ElementLength()) + " floats, the batch needs " +
                                     std::to_string(rows * dim));
      float* dst = out.Data();
      auto model = live();
      Napi::Object result = out;
      return run(env, info[4], {result}, result, [=] {
        if (rows == 0) return;
        torch::Tensor e = model->encode(batch, side, task, state);
        std::memcpy(dst, e.data_ptr<float>(), size_t(rows * dim) * sizeof(float));
      });
    });
  }

  // accumulate(batch, async, group?) -> { loss, entropy, correct, questions, tokens }: with a group, the loss,
  // correct and questions are the global batch's (retriever.h).
  Napi::Value Accumulate(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto batch = std::make_shared<torchx::TrainBatch>(train_batch(info[0], live()->config().encoder));
      auto group = group_arg(info[2]);
      auto stats = std::make_shared<torchx::StepStats>();
      auto model = live();
      return run(env, info[1], {}, Napi::Object::New(env), [=] { *stats = model->accumulate(*batch, group.get()); },
                 [stats](Napi::Env, Napi::Object result) { put_stats(result, *stats); });
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
      for (uint32_t i = 0; i < arr.Length(); ++i) batches->push_back(train_batch(arr.Get(i), live()->config().encoder));
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
      auto model = live();
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

};

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
  exports.Set("CameModel", CameModelClass(env));
  exports.Set("RomModel", RomModelClass(env));
  exports.Set("setThreads", Napi::Function::New<guarded<SetThreads>>(env));
  exports.Set("threads", Napi::Function::New<guarded<Threads>>(env));
  exports.Set("manualSeed", Napi::Function::New<guarded<ManualSeed>>(env));
  exports.Set("ProcessGroup", ProcessGroupClass(env));
  return exports;
}

NODE_API_MODULE(quorum_torch, Init)
