// Runs native work either now (Sync form) or on the libuv pool behind a Promise (async form). Whatever JS
// values the work reads are kept referenced until it has finished; errors keep their `code`. Every addon
// (core, faiss) uses it; kernel_call.h adds the core's tensor pinning on top.
#pragma once
#include <napi.h>

#include <functional>
#include <vector>

namespace quorum::napi {

// Runs on the main thread after `work` succeeded, to put what the work computed (scalars, outputs whose
// size was unknown before) into the result object.
using Finish = std::function<void(Napi::Env, Napi::Object result)>;
// Runs on the main thread once the async work has ended, whether it succeeded or not.
using Release = std::function<void(Napi::Env)>;

// `keep` are the JS objects the work touches (typed arrays, tensors); `result` is what the call returns (or the
// Promise resolves to). `work` must not touch N-API: it may run on another thread. `release` runs only in the
// async form (the Sync form holds everything on its own stack).
Napi::Value run_work(Napi::Env env, bool async, const std::vector<Napi::Object>& keep, Napi::Value result,
                     std::function<void()> work, Finish finish = nullptr, Release release = nullptr);

}  // namespace quorum::napi
