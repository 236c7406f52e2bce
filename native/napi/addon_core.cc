// Entry point of quorum_core.node: tensors, kernels, runtime settings. No system libraries.
#include <napi.h>

#include "addon_data.h"
#include "tensor_object.h"

namespace quorum::napi {
void register_dense(Napi::Env env, Napi::Object exports);
void register_quant(Napi::Env env, Napi::Object exports);
void register_runtime(Napi::Env env, Napi::Object exports);
void register_maxsim(Napi::Env env, Napi::Object exports);
void register_splade(Napi::Env env, Napi::Object exports);
void register_losses(Napi::Env env, Napi::Object exports);
void register_muf(Napi::Env env, Napi::Object exports);
void register_embedding_bag(Napi::Env env, Napi::Object exports);
void register_sparse_index(Napi::Env env, Napi::Object exports);
void register_centroid_index(Napi::Env env, Napi::Object exports);
void register_plaid_index(Napi::Env env, Napi::Object exports);
void register_came_search(Napi::Env env, Napi::Object exports);
void register_tokenizer(Napi::Env env, Napi::Object exports);
void register_tensor_file(Napi::Env env, Napi::Object exports);
}  // namespace quorum::napi

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  using namespace quorum::napi;
  auto* data = new AddonData();
  Napi::Function ctor = TensorObject::Init(env);
  data->tensor_ctor = Napi::Persistent(ctor);
  env.SetInstanceData(data);
  exports.Set("NativeTensor", ctor);
  register_dense(env, exports);
  register_quant(env, exports);
  register_runtime(env, exports);
  register_maxsim(env, exports);
  register_splade(env, exports);
  register_losses(env, exports);
  register_muf(env, exports);
  register_embedding_bag(env, exports);
  register_sparse_index(env, exports);
  register_centroid_index(env, exports);
  register_plaid_index(env, exports);
  register_came_search(env, exports);
  register_tokenizer(env, exports);
  register_tensor_file(env, exports);
  return exports;
}

NODE_API_MODULE(quorum_core, Init)
