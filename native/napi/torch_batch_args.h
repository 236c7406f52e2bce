// Argument conversion for quorum_torch's Transformer models (the Retriever, CAME): encoder configurations,
// tokenized batches, contrastive training batches, step statistics, and the JS methods every Trainable answers the
// same way (setOptimizer, step, save, load).
#pragma once
#include <napi.h>
#include "../torch/torch_includes.h"

#include <memory>
#include <mutex>
#include <string>

#include "../torch/encoder.h"
#include "../torch/retriever.h"
#include "../torch/trainable.h"
#include "process_group_object.h"
#include "torch_args.h"

namespace quorum::napi {

// { vocabSize, hiddenSize, layers, heads, ffnSize, ..., pooling, taser? } (lib/models/config.ts's EncoderConfig).
torchx::EncoderConfig encoder_config(const Napi::Object& o);
// { ids, typeIds, lengths: Int32Array, rows, seqLen } as produced by lib/text/tokenizer.ts.
torchx::TokenBatch token_batch(const Napi::Value& v, const torchx::EncoderConfig& c, const char* what);
// 'query' | 'passage'
torchx::Side side_arg(const Napi::Value& v);
// (question, passage) pairs as an Int32Array of even length, or null / undefined for none.
torch::Tensor ignore_arg(const Napi::Value& v, int64_t questions, int64_t passages);
// { queries, passages, positives: Int32Array, ignore?: Int32Array (pairs), task?, lossScale?, temperature? }
torchx::TrainBatch train_batch(const Napi::Value& v, const torchx::EncoderConfig& c);
void put_stats(Napi::Object o, const torchx::StepStats& s);
// { beta1, beta2, eps, weightDecay, layerDecay, frozen }
torchx::OptimizerConfig optimizer_config(const Napi::Value& v);

// TorchObject plus the calls every Trainable answers alike: setOptimizer(options), step(lr, clip, async) ->
// { gradNorm }, save(path, async), load(path, async).
template <class Derived, class Model>
class TrainableObject : public TorchObject<Derived, Model> {
 public:
  explicit TrainableObject(const Napi::CallbackInfo& info) : TorchObject<Derived, Model>(info) {}

 protected:
  using typename TorchObject<Derived, Model>::Methods;
  using TorchObject<Derived, Model>::model_;

  static Methods with_trainable_methods(Methods own) {
    using W = Napi::ObjectWrap<Derived>;
    own.push_back(W::InstanceMethod("setOptimizer", &TrainableObject::SetOptimizer));
    own.push_back(W::InstanceMethod("step", &TrainableObject::Step));
    own.push_back(W::InstanceMethod("save", &TrainableObject::Save));
    own.push_back(W::InstanceMethod("load", &TrainableObject::Load));
    return TorchObject<Derived, Model>::with_parameter_methods(std::move(own));
  }

  Napi::Value SetOptimizer(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      const torchx::OptimizerConfig c = optimizer_config(info[0]);
      std::lock_guard<std::mutex> lock(model_->mutex());
      model_->set_optimizer(c);
      return info.Env().Undefined();
    });
  }

  // step(lr, clip, async, group?): with a group, the ranks' gradients are summed first.
  Napi::Value Step(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      const double lr = number_arg(info[0], "lr"), clip = number_arg(info[1], "clip");
      auto group = group_arg(info[3]);
      auto norm = std::make_shared<double>(0);
      auto model = model_;
      return this->run(env, info[2], {}, Napi::Object::New(env),
                       [=] {
                         if (group) torchx::all_reduce_gradients(*group, model->parameters());
                         *norm = model->step(lr, clip);
                       },
                       [norm](Napi::Env, Napi::Object result) { result.Set("gradNorm", *norm); });
    });
  }

  Napi::Value Save(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      const std::string path = path_arg(info[0]);
      auto model = model_;
      return this->run(info.Env(), info[1], {}, Napi::Object::New(info.Env()), [=] { model->save(path); });
    });
  }

  Napi::Value Load(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      const std::string path = path_arg(info[0]);
      auto model = model_;
      return this->run(info.Env(), info[1], {}, Napi::Object::New(info.Env()), [=] { model->load(path); });
    });
  }
};

// The CAME model's JS class (came_object.cc).
Napi::Function CameModelClass(Napi::Env env);
// The ROM model's JS class (rom_object.cc).
Napi::Function RomModelClass(Napi::Env env);

}  // namespace quorum::napi
