#include "cuda_tensor.h"

#include <string>

#include "../common/error.h"
#include "../cuda/runtime.h"
#include "errors.h"
#include "scalar_args.h"

namespace quorum::napi {
namespace {

Napi::FunctionReference* the_ctor = nullptr;  // one addon instance per process (no worker_threads support claimed)

}  // namespace

DeviceBlock::DeviceBlock(size_t n) : ptr(cuda::alloc(n)), bytes(n) {}
DeviceBlock::~DeviceBlock() { cuda::release(ptr, bytes); }

Napi::Function CudaTensor::Init(Napi::Env env, Napi::FunctionReference* ctor) {
  Napi::Function f = DefineClass(env, "CudaTensor",
                                 {InstanceMethod<&CudaTensor::Dispose>("dispose"),
                                  InstanceMethod<&CudaTensor::Buffer>("buffer"),
                                  InstanceMethod<&CudaTensor::Noop>("pin"),
                                  InstanceMethod<&CudaTensor::Noop>("unpin"),
                                  InstanceAccessor<&CudaTensor::IsDisposed>("disposed"),
                                  InstanceAccessor<&CudaTensor::Shape>("shape"),
                                  InstanceAccessor<&CudaTensor::DtypeCode>("dtype"),
                                  InstanceAccessor<&CudaTensor::Device>("device"),
                                  InstanceAccessor<&CudaTensor::Owned>("owned")});
  *ctor = Napi::Persistent(f);
  the_ctor = ctor;
  return f;
}

// new CudaTensor(dtype, shape, zero): device memory for the shape.
CudaTensor::CudaTensor(const Napi::CallbackInfo& info) : Napi::ObjectWrap<CudaTensor>(info) {
  Napi::Env env = info.Env();
  try {
    dtype_ = parse_dtype(info[0]);
    int64_t numel = 0;
    shape_ = parse_shape(info[1], numel);
    numel_ = size_t(numel);
    block_ = std::make_shared<DeviceBlock>(bytes());
    if (info[2].IsBoolean() && info[2].As<Napi::Boolean>().Value() && bytes() > 0) {
      cuda::check(cudaMemsetAsync(block_->ptr, 0, bytes(), cuda::stream()), "cudaMemset");
      cuda::sync("cudaMemset");
    }
  } catch (const Napi::Error&) {
    throw;
  } catch (...) {
    rethrow_as_js(env);
  }
}

CudaTensor::~CudaTensor() = default;

Napi::Object CudaTensor::Create(Napi::Env env, Dtype dtype, const std::vector<int64_t>& shape, bool zero) {
  Napi::Array s = shape_array(env, shape);
  return the_ctor->New({Napi::Number::New(env, int(dtype)), s, Napi::Boolean::New(env, zero)});
}

Napi::Object CudaTensor::New(Napi::Env env, const Napi::Value& dtype, const Napi::Value& shape) {
  return the_ctor->New({dtype, shape, Napi::Boolean::New(env, false)});
}

bool CudaTensor::Is(Napi::Env env, const Napi::Value& v) {
  return v.IsObject() && the_ctor && v.As<Napi::Object>().InstanceOf(the_ctor->Value());
}

CudaTensor* CudaTensor::From(Napi::Env env, const Napi::Value& v, const char* what) {
  if (!Is(env, v)) throw Error("ERR_ARG", std::string(what) + " must be a tensor on cuda");
  CudaTensor* t = Unwrap(v.As<Napi::Object>());
  if (t->disposed_) throw Error("ERR_DISPOSED", std::string(what) + " was disposed");
  return t;
}

Napi::Value CudaTensor::Dispose(const Napi::CallbackInfo& info) {
  disposed_ = true;
  block_.reset();  // async kernels that hold the block keep it until they finish
  return info.Env().Undefined();
}
Napi::Value CudaTensor::IsDisposed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), disposed_); }
Napi::Value CudaTensor::Buffer(const Napi::CallbackInfo& info) {
  throw typed_error(info.Env(), "ERR_UNSUPPORTED", "the tensor is on cuda: copy it with .to('cpu') to read its values");
}
Napi::Value CudaTensor::Shape(const Napi::CallbackInfo& info) { return shape_array(info.Env(), shape_); }
Napi::Value CudaTensor::DtypeCode(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), int(dtype_)); }
Napi::Value CudaTensor::Device(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), "cuda"); }
Napi::Value CudaTensor::Owned(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), true); }
Napi::Value CudaTensor::Noop(const Napi::CallbackInfo& info) { return info.Env().Undefined(); }

}  // namespace quorum::napi
