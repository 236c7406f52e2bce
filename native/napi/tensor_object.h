// The native object behind lib/tensor.ts. It either owns 64-byte-aligned memory (exposed to JS as an external
// ArrayBuffer, so a typed-array view is zero-copy) or borrows the memory of a JS typed array (held by a
// reference for as long as the tensor lives; its address is re-read at every use, so a transferred buffer is
// ERR_DISPOSED rather than freed memory). A transfer while an async kernel runs is not caught here: the TypeScript
// layer copies the typed arrays it would wrap for a Promise call (lib/operand.ts, Operands.copied); a tensor the user
// wraps with Tensor.wrap is the user's promise not to transfer its buffer before the kernel's Promise settles.
//
// dispose() detaches the ArrayBuffer (every JS view becomes empty) and frees the memory at once, or, while an
// async kernel still uses the tensor (pins > 0), when the last such kernel finishes. A tensor that is never
// disposed is freed by GC; the ArrayBuffer's own finalizer shares ownership, so a view that outlives the
// tensor object stays valid.
#pragma once
#include <napi.h>

#include <memory>
#include <vector>

#include "../common/aligned_buffer.h"
#include "../common/dtype.h"

namespace quorum::napi {

class TensorObject : public Napi::ObjectWrap<TensorObject> {
 public:
  static Napi::Function Init(Napi::Env env);
  // new NativeTensor(dtype, shape) or new NativeTensor(dtype, shape, typedArray) (borrow, no copy).
  explicit TensorObject(const Napi::CallbackInfo& info);
  ~TensorObject() override;

  // A new tensor owned by native memory, zero-filled unless `zero` is false (for outputs a kernel writes in
  // full before anyone can read them).
  static Napi::Object Create(Napi::Env env, Dtype dtype, const std::vector<int64_t>& shape, bool zero = true);
  // A tensor over `buffer` (a file mapping: common/tensor_file.h), which it owns from now on. Not counted as V8
  // external memory: the pages belong to the page cache, shared between the processes that map the file.
  static Napi::Object Adopt(Napi::Env env, Dtype dtype, const std::vector<int64_t>& shape, AlignedBuffer buffer);
  static bool IsTensor(Napi::Env env, const Napi::Value& v);
  // The tensor in `v`; throws ERR_ARG when `v` is not one and ERR_DISPOSED when it was disposed.
  static TensorObject* From(Napi::Env env, const Napi::Value& v, const char* what);

  uint8_t* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  Dtype dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t numel() const { return bytes_ / dtype_size(dtype_); }

  // Async kernels pin their operands on the main thread before queueing and unpin after completion.
  void Pin() { ++pins_; }
  void Unpin(Napi::Env env);

 private:
  // pin() / unpin() from JS: lib/dense-index.ts holds a tensor this way while another addon (faiss) reads its
  // memory off the main thread.
  Napi::Value PinJs(const Napi::CallbackInfo& info);
  Napi::Value UnpinJs(const Napi::CallbackInfo& info);

  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value IsDisposed(const Napi::CallbackInfo& info);
  Napi::Value Buffer(const Napi::CallbackInfo& info);
  Napi::Value Shape(const Napi::CallbackInfo& info);
  Napi::Value DtypeCode(const Napi::CallbackInfo& info);
  Napi::Value Device(const Napi::CallbackInfo& info);
  Napi::Value Owned(const Napi::CallbackInfo& info);
  void FreeOwned(Napi::Env env);
  // A borrowed tensor's address, re-read from its typed array; ERR_DISPOSED once that array's buffer was
  // transferred or detached.
  void RefreshBorrowed(const char* what);

  std::shared_ptr<AlignedBuffer> owned_;  // shared with the external ArrayBuffer's finalizer
  Napi::ObjectReference borrowed_;        // the borrowed typed array
  Napi::Reference<Napi::ArrayBuffer> array_buffer_;
  uint8_t* ptr_ = nullptr;
  size_t bytes_ = 0;
  Dtype dtype_ = Dtype::F32;
  std::vector<int64_t> shape_;
  int pins_ = 0;
  bool disposed_ = false;
  bool accounted_ = false;  // external memory reported to V8 and not yet given back
};

}  // namespace quorum::napi
