// The native object behind a Tensor on 'cuda': device memory from the caching allocator (runtime.h), held by a
// shared_ptr so that an async kernel that captured it keeps it alive through dispose(). It has the host tensor's
// interface (shape, dtype, device, disposed, dispose) so lib/tensor.ts wraps either; its memory is not addressable
// from JS: buffer() is ERR_UNSUPPORTED (copy it to the CPU first).
#pragma once
#include <napi.h>

#include <memory>
#include <vector>

#include "../common/dtype.h"

namespace quorum::napi {

struct DeviceBlock {
  void* ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBlock(size_t n);
  ~DeviceBlock();
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;
};

class CudaTensor : public Napi::ObjectWrap<CudaTensor> {
 public:
  static Napi::Function Init(Napi::Env env, Napi::FunctionReference* ctor);
  explicit CudaTensor(const Napi::CallbackInfo& info);
  ~CudaTensor() override;

  // A new device tensor (uninitialised unless zero).
  static Napi::Object Create(Napi::Env env, Dtype dtype, const std::vector<int64_t>& shape, bool zero = false);
  // A new device tensor from JS arguments (dtype code, shape array), checked as the constructor checks them.
  static Napi::Object New(Napi::Env env, const Napi::Value& dtype, const Napi::Value& shape);
  // The tensor in `v`; ERR_ARG when it is not a cuda tensor, ERR_DISPOSED when it was disposed.
  static CudaTensor* From(Napi::Env env, const Napi::Value& v, const char* what);
  static bool Is(Napi::Env env, const Napi::Value& v);

  template <class T = void>
  T* data() const { return static_cast<T*>(block_->ptr); }
  std::shared_ptr<DeviceBlock> block() const { return block_; }
  Dtype dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t numel() const { return numel_; }
  size_t bytes() const { return numel_ * dtype_size(dtype_); }

 private:
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value IsDisposed(const Napi::CallbackInfo& info);
  Napi::Value Buffer(const Napi::CallbackInfo& info);
  Napi::Value Shape(const Napi::CallbackInfo& info);
  Napi::Value DtypeCode(const Napi::CallbackInfo& info);
  Napi::Value Device(const Napi::CallbackInfo& info);
  Napi::Value Owned(const Napi::CallbackInfo& info);
  Napi::Value Noop(const Napi::CallbackInfo& info);

  std::shared_ptr<DeviceBlock> block_;
  Dtype dtype_ = Dtype::F32;
  std::vector<int64_t> shape_;
  size_t numel_ = 0;
  bool disposed_ = false;
};

}  // namespace quorum::napi
