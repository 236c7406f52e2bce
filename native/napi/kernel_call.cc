#include "kernel_call.h"

#include "errors.h"

namespace quorum::napi {
namespace {

class KernelWorker : public Napi::AsyncWorker {
 public:
  KernelWorker(Napi::Env env, const std::vector<Napi::Object>& tensors, Napi::Value result, std::function<void()> work,
               Finish finish)
      : Napi::AsyncWorker(env, "quorum:kernel"),
        deferred_(Napi::Promise::Deferred::New(env)),
        work_(std::move(work)),
        finish_(std::move(finish)) {
    for (const auto& t : tensors) {
      pinned_.push_back(Napi::Persistent(t));
      Napi::ObjectWrap<TensorObject>::Unwrap(t)->Pin();
    }
    result_ = Napi::Persistent(result.As<Napi::Object>());
  }

  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    // Nothing may escape a worker thread: an exception here would terminate the process.
    try {
      work_();
    } catch (...) {
      describe_current_exception(code_, message_);
      SetError(message_);
    }
  }

  void OnOK() override {
    Unpin();
    Napi::Object result = result_.Value();
    if (finish_) {
      try {
        finish_(Env(), result);
      } catch (...) {
        describe_current_exception(code_, message_);
        deferred_.Reject(typed_error(Env(), code_, message_).Value());
        return;
      }
    }
    deferred_.Resolve(result);
  }

  void OnError(const Napi::Error&) override {
    Unpin();
    deferred_.Reject(typed_error(Env(), code_, message_).Value());
  }

 private:
  void Unpin() {
    for (auto& ref : pinned_) Napi::ObjectWrap<TensorObject>::Unwrap(ref.Value())->Unpin(Env());
  }

  Napi::Promise::Deferred deferred_;
  std::function<void()> work_;
  Finish finish_;
  std::vector<Napi::ObjectReference> pinned_;
  Napi::ObjectReference result_;
  const char* code_ = "ERR_NATIVE";
  std::string message_;
};

}  // namespace

Napi::Value run_kernel(Napi::Env env, bool async, const std::vector<Napi::Object>& tensors, Napi::Value result,
                       std::function<void()> work, Finish finish) {
  if (!async) {
    work();  // exceptions become typed JS errors in guarded<>
    if (finish) finish(env, result.As<Napi::Object>());
    return result;
  }
  auto* worker = new KernelWorker(env, tensors, result, std::move(work), std::move(finish));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace quorum::napi
