// Per-environment state of the core addon (worker threads each get their own).
#pragma once
#include <napi.h>

namespace quorum::napi {

struct AddonData {
  Napi::FunctionReference tensor_ctor;
  // The index classes, so that a call taking an index (cameSearch) can check what it was given.
  Napi::FunctionReference sparse_index_ctor;
  Napi::FunctionReference centroid_index_ctor;
  // The tokenizer, so that a call taking one (embedTexts) can check what it was given.
  Napi::FunctionReference wordpiece_ctor;
};

inline AddonData& addon_data(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

}  // namespace quorum::napi
