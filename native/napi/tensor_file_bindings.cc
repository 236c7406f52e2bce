// N-API bindings of common/tensor_file.h: tensors saved to files that processes map instead of reading.
#include <napi.h>

#include <memory>
#include <string>

#include "../common/error.h"
#include "../common/persist.h"
#include "../common/tensor_file.h"
#include "args.h"
#include "errors.h"
#include "kernel_call.h"

namespace quorum::napi {
namespace {

// saveTensorFile(tensor, path, async): written atomically, off the main thread when async.
Napi::Value SaveTensorFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorObject* t = TensorObject::From(env, info[0], "tensor");
  const std::string path = path_arg(info[1]);
  const Dtype dtype = t->dtype();
  const std::vector<int64_t> shape = t->shape();
  const uint8_t* data = t->data();
  const size_t bytes = t->bytes();
  return run_kernel(env, flag(info[2]), operands({info[0]}), Napi::Object::New(env),
                    [=] { tensor_file::write(path, dtype, shape, data, bytes); });
}

// mapTensorFile(path) -> { tensor, checksum: bigint }: the header read and the data mapped (fast: no data read).
Napi::Value MapTensorFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  tensor_file::Mapped m = tensor_file::map(path_arg(info[0]));
  Napi::Object out = Napi::Object::New(env);
  out.Set("tensor", TensorObject::Adopt(env, m.dtype, m.shape, std::move(m.buffer)));
  out.Set("checksum", Napi::BigInt::New(env, m.checksum));
  return out;
}

// tensorWordHash(tensor, async) -> { hash: bigint }: persist.h's WordHash over the tensor's bytes (a verify reads
// every page of a mapped file).
Napi::Value TensorWordHash(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorObject* t = TensorObject::From(env, info[0], "tensor");
  const uint8_t* data = t->data();
  const size_t bytes = t->bytes();
  auto hash = std::make_shared<uint64_t>(0);
  return run_kernel(
      env, flag(info[1]), operands({info[0]}), Napi::Object::New(env), [=] { *hash = persist::word_hash(data, bytes); },
      [hash](Napi::Env e, Napi::Object r) { r.Set("hash", Napi::BigInt::New(e, *hash)); });
}

}  // namespace

void register_tensor_file(Napi::Env env, Napi::Object exports) {
  exports.Set("saveTensorFile", Napi::Function::New<guarded<SaveTensorFile>>(env, "saveTensorFile"));
  exports.Set("mapTensorFile", Napi::Function::New<guarded<MapTensorFile>>(env, "mapTensorFile"));
  exports.Set("tensorWordHash", Napi::Function::New<guarded<TensorWordHash>>(env, "tensorWordHash"));
}

}  // namespace quorum::napi
