#include "kernel_call.h"

namespace quorum::napi {

Napi::Value run_kernel(Napi::Env env, bool async, const std::vector<Napi::Object>& tensors, Napi::Value result,
                       std::function<void()> work, Finish finish) {
  if (!async) return run_work(env, false, {}, result, std::move(work), std::move(finish));
  std::vector<TensorObject*> pinned;
  for (const auto& t : tensors) {
    pinned.push_back(Napi::ObjectWrap<TensorObject>::Unwrap(t));
    pinned.back()->Pin();
  }
  // The worker keeps the tensor objects referenced, so the raw pointers stay valid until the release.
  return run_work(env, true, tensors, result, std::move(work), std::move(finish), [pinned](Napi::Env e) {
    for (TensorObject* t : pinned) t->Unpin(e);
  });
}

}  // namespace quorum::napi
