// The CAME model (native/torch/came_model.h) as a JS class of quorum_torch, behind lib/methods/came/model.ts:
// converts and validates, runs encoding and training steps now or on the libuv pool under the model's mutex.
#include <napi.h>
#include "../torch/torch_includes.h"

#include <array>
#include <memory>
#include <string>

#include "../torch/came_model.h"
#include "async_call.h"
#include "errors.h"
#include "process_group_object.h"
#include "scalar_args.h"
#include "torch_args.h"
#include "torch_batch_args.h"

namespace quorum::napi {
namespace {

using torchx::CameModel;
using torchx::kCameExperts;

int expert_index(const std::string& name) {
  for (int e = 0; e < kCameExperts; ++e)
    if (name == torchx::came_expert_name(e)) return e;
  throw Error("ERR_ARG", "a CAME expert is 'lexical', 'local' or 'global', got '" + name + "'");
}

// ['lexical', 'local', 'global'] (any subset, no repeats) as flags.
std::array<bool, kCameExperts> experts_arg(const Napi::Value& v) {
  if (!v.IsArray()) throw Error("ERR_ARG", "experts must be an array of 'lexical', 'local' and 'global'");
  Napi::Array a = v.As<Napi::Array>();
  std::array<bool, kCameExperts> out{{false, false, false}};
  for (uint32_t i = 0; i < a.Length(); ++i) {
    if (!a.Get(i).IsString()) throw Error("ERR_ARG", "experts must be strings");
    const int e = expert_index(a.Get(i).As<Napi::String>().Utf8Value());
    if (out[e]) throw Error("ERR_ARG", std::string("expert '") + torchx::came_expert_name(e) + "' is listed twice");
    out[e] = true;
  }
  return out;
}

// { encoder, expertLayers?, experts?, localDim?, referenceOps? }
torchx::CameConfig came_config(const Napi::Value& v) {
  Napi::Object o = object_arg(v, "config");
  torchx::CameConfig c;
  c.encoder = encoder_config(object_arg(o.Get("encoder"), "encoder"));
  c.expert_layers = int_field(o, "expertLayers", c.expert_layers);
  if (!o.Get("experts").IsUndefined()) c.experts = experts_arg(o.Get("experts"));
  c.local_dim = int_field(o, "localDim", c.local_dim);
  c.reference_ops = flag(o.Get("referenceOps"));
  return c;
}

// { competitive, tau, flopsQuery, flopsPassage, flopsRamp, temperatures: { lexical, local, global } }, each optional
// (missing fields keep the model's current value).
torchx::CameTraining training_arg(const Napi::Value& v, torchx::CameTraining t) {
  Napi::Object o = object_arg(v, "training");
  if (!o.Get("competitive").IsUndefined()) t.competitive = flag(o.Get("competitive"));
  t.tau = field(o, "tau", t.tau);
  t.flops_query = field(o, "flopsQuery", t.flops_query);
  t.flops_passage = field(o, "flopsPassage", t.flops_passage);
  t.flops_ramp = int_field(o, "flopsRamp", t.flops_ramp);
  Napi::Value temps = o.Get("temperatures");
  if (!temps.IsUndefined()) {
    Napi::Object to = object_arg(temps, "temperatures");
    for (int e = 0; e < kCameExperts; ++e) t.temperature[e] = field(to, torchx::came_expert_name(e), t.temperature[e]);
  }
  return t;
}

Napi::Object training_object(Napi::Env env, const torchx::CameTraining& t) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("competitive", t.competitive);
  o.Set("tau", t.tau);
  o.Set("flopsQuery", t.flops_query);
  o.Set("flopsPassage", t.flops_passage);
  o.Set("flopsRamp", double(t.flops_ramp));
  Napi::Object temps = Napi::Object::New(env);
  for (int e = 0; e < kCameExperts; ++e) temps.Set(torchx::came_expert_name(e), t.temperature[e]);
  o.Set("temperatures", temps);
  return o;
}

class CameObject : public TrainableObject<CameObject, CameModel> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "CameModel",
                       with_trainable_methods({InstanceMethod<&CameObject::Info>("info"),
                                               InstanceMethod<&CameObject::SetTraining>("setTraining"),
                                               InstanceMethod<&CameObject::Encode>("encode"),
                                               InstanceMethod<&CameObject::Accumulate>("accumulate")}));
  }

  explicit CameObject(const Napi::CallbackInfo& info) : TrainableObject<CameObject, CameModel>(info) {
    create(info, [&] { return std::make_shared<CameModel>(came_config(info[0])); });
  }

 private:
  // info() -> { parameterCount, optimizerSteps, experts, vocabSize, globalDim, localDim, training }
  Napi::Value Info(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      std::lock_guard<std::mutex> lock(live()->mutex());
      Napi::Object o = count_info(env);
      Napi::Array experts = Napi::Array::New(env);
      for (int e = 0; e < kCameExperts; ++e)
        if (live()->config().experts[e]) experts.Set(experts.Length(), torchx::came_expert_name(e));
      o.Set("experts", experts);
      o.Set("vocabSize", double(live()->vocab_size()));
      o.Set("globalDim", double(live()->global_dim()));
      o.Set("localDim", double(live()->config().local_dim));
      o.Set("training", training_object(env, live()->training()));
      return Napi::Value(o);
    });
  }

  // setTraining({ competitive?, tau?, flopsQuery?, flopsPassage?, flopsRamp?, temperatures? })
  Napi::Value SetTraining(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      std::lock_guard<std::mutex> lock(live()->mutex());
      live()->set_training(training_arg(info[0], live()->training()));
      return info.Env().Undefined();
    });
  }

  // encode(batch, side, experts[], async) -> { lexical?: [rows, V], local?: [rows, seqLen, localDim] (zero past
  // each length), global?: [rows, globalDim] } as Float32Arrays
  Napi::Value Encode(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto batch = std::make_shared<torchx::TokenBatch>(token_batch(info[0], live()->config().encoder, "batch"));
      const torchx::Side side = side_arg(info[1]);
      const auto which = experts_arg(info[2]);  // CameModel::encode refuses an expert it does not hold
      auto out = std::make_shared<torchx::CameEncoded>();
      auto model = live();
      return run(env, info[3], {}, Napi::Object::New(env),
                        [=] { *out = model->encode(*batch, side, which); },
                        [out](Napi::Env env, Napi::Object result) {
                          if (out->lexical.defined()) result.Set("lexical", float_array_of(env, out->lexical));
                          if (out->local.defined()) result.Set("local", float_array_of(env, out->local));
                          if (out->global.defined()) result.Set("global", float_array_of(env, out->global));
                        });
    });
  }

  // accumulate(batch, async, group?) -> { loss, correct, questions, tokens, flops, flopsLambda, experts: { <name>:
  // { loss, weight, correct } } } (with a group: the global batch's, but tokens)
  Napi::Value Accumulate(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto batch = std::make_shared<torchx::TrainBatch>(train_batch(info[0], live()->config().encoder));
      auto group = group_arg(info[2]);
      auto stats = std::make_shared<torchx::CameStepStats>();
      auto model = live();
      return run(env, info[1], {}, Napi::Object::New(env), [=] { *stats = model->accumulate(*batch, group.get()); },
                        [stats, model](Napi::Env env, Napi::Object result) {
                          put_stats(result, *stats);
                          result.Set("flops", stats->flops);
                          result.Set("flopsLambda", stats->flops_lambda);
                          Napi::Object experts = Napi::Object::New(env);
                          for (int e = 0; e < kCameExperts; ++e) {
                            if (!model->config().experts[e]) continue;
                            Napi::Object x = Napi::Object::New(env);
                            x.Set("loss", stats->expert_loss[e]);
                            x.Set("weight", stats->weight[e]);
                            x.Set("correct", double(stats->expert_correct[e]));
                            experts.Set(torchx::came_expert_name(e), x);
                          }
                          result.Set("experts", experts);
                        });
    });
  }

};

}  // namespace

Napi::Function CameModelClass(Napi::Env env) { return CameObject::Init(env); }

}  // namespace quorum::napi
