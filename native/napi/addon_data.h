// Per-environment state of the core addon (worker threads each get their own).
#pragma once
#include <napi.h>

namespace quorum::napi {

struct AddonData {
  Napi::FunctionReference tensor_ctor;
};

inline AddonData& addon_data(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

}  // namespace quorum::napi
