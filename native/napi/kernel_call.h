// Runs a kernel either now (Sync form) or on the libuv pool behind a Promise (async form). Operand tensors
// are pinned (kept alive and undisposable) until the work has finished; errors keep their `code`.
#pragma once
#include <napi.h>

#include <functional>
#include <string>
#include <vector>

#include "tensor_object.h"

namespace quorum::napi {

// Runs on the main thread after `work` succeeded, to put what the work computed (scalars, outputs whose
// size was unknown before) into the result object.
using Finish = std::function<void(Napi::Env, Napi::Object result)>;

// `tensors` are every TensorObject the work touches, inputs and outputs; `result` is what the call returns
// (or the Promise resolves to). `work` must not touch N-API: it may run on another thread.
Napi::Value run_kernel(Napi::Env env, bool async, const std::vector<Napi::Object>& tensors, Napi::Value result,
                       std::function<void()> work, Finish finish = nullptr);

}  // namespace quorum::napi
