// Argument conversion shared by quorum_torch's objects (the Retriever, the MUF ensemble): option fields, typed
// arrays, range-checked index tensors, and c10 errors as typed errors.
#pragma once
#include <napi.h>
#include "../torch/torch_includes.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../common/error.h"
#include "async_call.h"
#include "errors.h"
#include "process_group_object.h"
#include "scalar_args.h"

namespace quorum::napi {

// Runs f, turning c10 errors (bad shapes inside libtorch, unreadable archives) into quorum errors.
template <class F>
auto torch_call(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw Error("ERR_NATIVE", std::string("libtorch: ") + e.what_without_backtrace());
  }
}

Napi::Object object_arg(const Napi::Value& v, const char* what);
double field(const Napi::Object& o, const char* key, double fallback);
int64_t int_field(const Napi::Object& o, const char* key, int64_t fallback);
std::string string_field(const Napi::Object& o, const char* key);

// A Float32Array or an Int32Array (T), else ERR_ARG / ERR_DTYPE.
template <class T>
T typed_array(const Napi::Value& v, const char* what) {
  using E = typename std::remove_pointer<decltype(std::declval<T>().Data())>::type;
  if (!v.IsTypedArray()) throw Error("ERR_ARG", std::string(what) + " must be a typed array");
  Napi::TypedArray t = v.As<Napi::TypedArray>();
  const napi_typedarray_type want = std::is_same<E, float>::value ? napi_float32_array : napi_int32_array;
  if (t.TypedArrayType() != want)
    throw Error("ERR_DTYPE", std::string(what) + (want == napi_float32_array ? " must be a Float32Array" : " must be an Int32Array"));
  return v.As<T>();
}

// An int64 copy of an Int32Array, each value checked against [lo, hi).
torch::Tensor long_tensor(const Napi::Int32Array& a, std::vector<int64_t> shape, int64_t lo, int64_t hi, const char* what);

// A Float32Array copy of a tensor (any float dtype).
Napi::Float32Array float_array_of(Napi::Env env, const torch::Tensor& t);

// [{ name, shape }] of a model's parameter table.
Napi::Array parameter_list(Napi::Env env, const std::vector<std::pair<std::string, torch::Tensor>>& params);

// `v` (a Float32Array) as new values for parameter `name` shaped like `target`: a view, not a copy; ERR_SHAPE for
// another length, ERR_NONFINITE for NaN or infinity.
torch::Tensor parameter_values(const Napi::Value& v, const torch::Tensor& target, const std::string& name);

// getParameter(name) -> Float32Array (a copy) and setParameter(name, Float32Array) of any model with a parameter
// table (parameter(name), set_parameter(name, values), mutex()).
template <class M>
Napi::Value get_parameter(const Napi::CallbackInfo& info, M& model) {
  std::lock_guard<std::mutex> lock(model.mutex());
  return float_array_of(info.Env(), model.parameter(path_arg(info[0])));
}

template <class M>
Napi::Value set_parameter(const Napi::CallbackInfo& info, M& model) {
  const std::string name = path_arg(info[0]);
  std::lock_guard<std::mutex> lock(model.mutex());
  torch::Tensor v = parameter_values(info[1], model.parameter(name), name);
  torch_call([&] { model.set_parameter(name, v); });
  return info.Env().Undefined();
}

// Runs `work` under the model's mutex, now or on the libuv pool (every call on one model is serialized, so async
// calls never interleave); c10 errors become typed errors.
template <class M>
Napi::Value run_locked(Napi::Env env, const Napi::Value& async, const std::shared_ptr<M>& model, std::vector<Napi::Object> keep,
                       Napi::Value result, std::function<void()> work, Finish finish = nullptr) {
  return run_work(env, flag(async), keep, result,
                  [model, work = std::move(work)] {
                    std::lock_guard<std::mutex> lock(model->mutex());
                    torch_call(work);
                  },
                  std::move(finish));
}

// The JS class of a torch-backed model held as `model_` (Derived's base, CRTP): the parameter-table methods every
// such object answers alike (parameters, getParameter, setParameter, broadcastParameters), and `run` for work under
// the model's mutex.
template <class Derived, class Model>
class TorchObject : public Napi::ObjectWrap<Derived> {
 public:
  explicit TorchObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Derived>(info) {}

 protected:
  using Methods = std::vector<Napi::ClassPropertyDescriptor<Derived>>;

  // Derived's own methods plus parameters / getParameter / setParameter / dispose.
  static Methods with_parameter_methods(Methods own) {
    using W = Napi::ObjectWrap<Derived>;
    own.push_back(W::InstanceMethod("parameters", &TorchObject::Parameters));
    own.push_back(W::InstanceMethod("getParameter", &TorchObject::GetParameter));
    own.push_back(W::InstanceMethod("setParameter", &TorchObject::SetParameter));
    own.push_back(W::InstanceMethod("broadcastParameters", &TorchObject::BroadcastParameters));
    own.push_back(W::InstanceMethod("dispose", &TorchObject::Dispose));
    own.push_back(W::InstanceMethod("isDisposed", &TorchObject::IsDisposed));
    return own;
  }

  // The model, or ERR_DISPOSED after dispose(). Queued work holds its own reference (run_locked), so dispose()
  // during an async call frees the model when that call ends, not under it.
  const std::shared_ptr<Model>& live() const {
    if (!model_) throw Error("ERR_DISPOSED", "this model was disposed");
    return model_;
  }

  // dispose(): drops the model (its weights and optimizer state) now, or when the last queued call ends.
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    model_.reset();
    return info.Env().Undefined();
  }

  Napi::Value IsDisposed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), !model_); }

  // The constructor's body: model_ = make(), which parses the arguments and builds the model; quorum and c10
  // errors become a thrown JS error.
  template <class F>
  void create(const Napi::CallbackInfo& info, F make) {
    guard(info.Env(), [&] {
      model_ = torch_call(make);
      return info.Env().Undefined();
    });
  }

  // { parameterCount, optimizerSteps }: the start of every model's info(); the caller holds the model's mutex.
  Napi::Object count_info(Napi::Env env) const {
    Napi::Object o = Napi::Object::New(env);
    o.Set("parameterCount", double(live()->parameter_count()));
    o.Set("optimizerSteps", double(live()->optimizer_steps()));
    return o;
  }

  Napi::Value run(Napi::Env env, const Napi::Value& async, std::vector<Napi::Object> keep, Napi::Value result,
                  std::function<void()> work, Finish finish = nullptr) {
    return run_locked(env, async, live(), std::move(keep), result, std::move(work), std::move(finish));
  }

  // parameters() -> [{ name, shape }]
  Napi::Value Parameters(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] { return Napi::Value(parameter_list(info.Env(), live()->parameters())); });
  }

  Napi::Value GetParameter(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] { return get_parameter(info, *live()); });
  }

  Napi::Value SetParameter(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] { return set_parameter(info, *live()); });
  }

  // broadcastParameters(group, root, async): every rank takes rank `root`'s parameters.
  Napi::Value BroadcastParameters(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto group = group_arg(info[0]);
      if (!group) throw Error("ERR_ARG", "group must be a ProcessGroup");
      const double root = number_arg(info[1], "root");
      if (root < 0 || root >= group->size() || root != double(int(root)))
        throw Error("ERR_RANGE", "root must be a rank of the group");
      auto model = live();
      return run(info.Env(), info[2], {}, Napi::Object::New(info.Env()),
                 [=] { torchx::broadcast_parameters(*group, model->parameters(), int(root)); });
    });
  }

  std::shared_ptr<Model> model_;
};

// The ensemble's JS class (mlp_ensemble_object.cc).
Napi::Function MlpEnsembleClass(Napi::Env env);

}  // namespace quorum::napi
