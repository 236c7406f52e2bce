#include "async_call.h"

#include <string>

#include "../common/thread_pool.h"
#include "errors.h"

namespace quorum::napi {
namespace {

class Worker : public Napi::AsyncWorker {
 public:
  Worker(Napi::Env env, const std::vector<Napi::Object>& keep, Napi::Value result, std::function<void()> work,
         Finish finish, Release release)
      : Napi::AsyncWorker(env, "quorum:work"),
        deferred_(Napi::Promise::Deferred::New(env)),
        work_(std::move(work)),
        finish_(std::move(finish)),
        release_(std::move(release)) {
    for (const auto& v : keep) kept_.push_back(Napi::Persistent(v));
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
    ThreadPool::global().rest();  // the result goes to the event loop next: let it have the core
  }

  void OnOK() override {
    ReleaseHeld();
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
    ReleaseHeld();
    deferred_.Reject(typed_error(Env(), code_, message_).Value());
  }

 private:
  void ReleaseHeld() {
    if (release_) release_(Env());
  }

  Napi::Promise::Deferred deferred_;
  std::function<void()> work_;
  Finish finish_;
  napi::Release release_;
  std::vector<Napi::ObjectReference> kept_;
  Napi::ObjectReference result_;
  const char* code_ = "ERR_NATIVE";
  std::string message_;
};

}  // namespace

Napi::Value run_work(Napi::Env env, bool async, const std::vector<Napi::Object>& keep, Napi::Value result,
                     std::function<void()> work, Finish finish, Release release) {
  if (!async) {
    struct Rest {
      ~Rest() { ThreadPool::global().rest(); }  // the caller's JavaScript runs next
    } rest;
    work();  // exceptions become typed JS errors in guard()
    if (finish) finish(env, result.As<Napi::Object>());
    return result;
  }
  auto* worker = new Worker(env, keep, result, std::move(work), std::move(finish), std::move(release));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace quorum::napi
