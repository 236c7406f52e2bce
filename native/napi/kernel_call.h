// Runs a kernel now (Sync form) or on the libuv pool behind a Promise (async form), with its operand tensors
// pinned (kept alive and undisposable) until the work has finished.
#pragma once
#include <napi.h>

#include <functional>
#include <vector>

#include "async_call.h"
#include "tensor_object.h"

namespace quorum::napi {

// `tensors` are every TensorObject the work touches, inputs and outputs; `result` is what the call returns
// (or the Promise resolves to). `work` must not touch N-API: it may run on another thread.
Napi::Value run_kernel(Napi::Env env, bool async, const std::vector<Napi::Object>& tensors, Napi::Value result,
                       std::function<void()> work, Finish finish = nullptr);

}  // namespace quorum::napi
