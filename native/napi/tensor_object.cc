#include "tensor_object.h"

#include <cmath>
#include <cstring>
#include <string>

#include "../common/error.h"
#include "addon_data.h"
#include "errors.h"
#include "scalar_args.h"

namespace quorum::napi {

Napi::Function TensorObject::Init(Napi::Env env) {
  return DefineClass(env, "NativeTensor",
                     {InstanceMethod<&TensorObject::Dispose>("dispose"),
                      InstanceMethod<&TensorObject::PinJs>("pin"),
                      InstanceMethod<&TensorObject::UnpinJs>("unpin"),
                      InstanceMethod<&TensorObject::Buffer>("buffer"),
                      InstanceAccessor<&TensorObject::IsDisposed>("disposed"),
                      InstanceAccessor<&TensorObject::Shape>("shape"),
                      InstanceAccessor<&TensorObject::DtypeCode>("dtype"),
                      InstanceAccessor<&TensorObject::Device>("device"),
                      InstanceAccessor<&TensorObject::Owned>("owned")});
}

TensorObject::TensorObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TensorObject>(info) {
  Napi::Env env = info.Env();
  try {
    dtype_ = parse_dtype(info[0]);
    int64_t numel;
    shape_ = parse_shape(info[1], numel);
    bytes_ = size_t(numel) * dtype_size(dtype_);
    if (info.Length() > 2 && !info[2].IsUndefined()) {
      if (!info[2].IsTypedArray())
        throw Error("ERR_ARG", std::string("data must be a ") + typed_array_name(dtype_));
      Napi::TypedArray ta = info[2].As<Napi::TypedArray>();
      if (!typed_array_matches(ta, dtype_))
        throw Error("ERR_DTYPE", std::string("dtype ") + dtype_name(dtype_) + " needs a " + typed_array_name(dtype_));
      if (int64_t(ta.ElementLength()) != numel)
        throw Error("ERR_SHAPE", "data has " + std::to_string(ta.ElementLength()) + " elements, shape needs " +
                                     std::to_string(numel));
      ptr_ = static_cast<uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
      borrowed_ = Napi::Persistent(info[2].As<Napi::Object>());
    } else if (info.Length() > 4 && info[4].IsExternal()) {
      // Adopt(): the storage is given (internal; the External holds the buffer, moved out here).
      auto* given = info[4].As<Napi::External<AlignedBuffer>>().Data();
      if (given->bytes() != bytes_) throw Error("ERR_SHAPE", "the adopted storage does not match the shape");
      owned_ = std::make_shared<AlignedBuffer>(std::move(*given));
      ptr_ = owned_->as<uint8_t>();
    } else {
      owned_ = std::make_shared<AlignedBuffer>(bytes_);
      ptr_ = owned_->as<uint8_t>();
      // A 4th argument `false` (internal: kernel outputs that the kernel writes in full) skips the zero fill.
      bool zero = !(info.Length() > 3 && info[3].IsBoolean() && !info[3].As<Napi::Boolean>().Value());
      if (bytes_ && zero) std::memset(ptr_, 0, bytes_);
      Napi::MemoryManagement::AdjustExternalMemory(env, int64_t(bytes_));
      accounted_ = true;
    }
  } catch (const Napi::Error&) {
    throw;
  } catch (...) {
    rethrow_as_js(env);
  }
}

TensorObject::~TensorObject() {
  if (accounted_) Napi::MemoryManagement::AdjustExternalMemory(Env(), -int64_t(bytes_));
}

Napi::Object TensorObject::Create(Napi::Env env, Dtype dtype, const std::vector<int64_t>& shape, bool zero) {
  Napi::Array s = shape_array(env, shape);
  return addon_data(env).tensor_ctor.New(
      {Napi::Number::New(env, int(dtype)), s, env.Undefined(), Napi::Boolean::New(env, zero)});
}

Napi::Object TensorObject::Adopt(Napi::Env env, Dtype dtype, const std::vector<int64_t>& shape, AlignedBuffer buffer) {
  Napi::Array s = shape_array(env, shape);
  // The External only carries the buffer into the constructor, which moves it out; nothing to finalize.
  return addon_data(env).tensor_ctor.New({Napi::Number::New(env, int(dtype)), s, env.Undefined(), Napi::Boolean::New(env, false),
                                          Napi::External<AlignedBuffer>::New(env, &buffer)});
}

bool TensorObject::IsTensor(Napi::Env env, const Napi::Value& v) {
  return v.IsObject() && v.As<Napi::Object>().InstanceOf(addon_data(env).tensor_ctor.Value());
}

TensorObject* TensorObject::From(Napi::Env env, const Napi::Value& v, const char* what) {
  if (!IsTensor(env, v)) throw Error("ERR_ARG", std::string(what) + " must be a Tensor");
  TensorObject* t = Napi::ObjectWrap<TensorObject>::Unwrap(v.As<Napi::Object>());
  if (t->disposed_) throw Error("ERR_DISPOSED", std::string(what) + " was disposed");
  if (!t->borrowed_.IsEmpty()) t->RefreshBorrowed(what);
  if (t->owned_) t->owned_->check_mapping();  // a mapped file truncated since: ERR_IO, not SIGBUS
  return t;
}

void TensorObject::RefreshBorrowed(const char* what) {
  // The borrowed array's memory belongs to V8: a transfer (postMessage, structuredClone) detaches the buffer and
  // moves the memory elsewhere, so the address taken at wrap time may be freed. Re-read it at every use.
  Napi::TypedArray ta = borrowed_.Value().As<Napi::TypedArray>();
  Napi::ArrayBuffer ab = ta.ArrayBuffer();
  if (ab.IsDetached() || ta.ByteLength() != bytes_)
    throw Error("ERR_DISPOSED", std::string(what) + " wraps a buffer that was transferred or detached");
  ptr_ = bytes_ ? static_cast<uint8_t*>(ab.Data()) + ta.ByteOffset() : nullptr;
}

void TensorObject::FreeOwned(Napi::Env env) {
  if (owned_) {
    owned_->release();  // the ArrayBuffer is detached: no JS view can reach this memory any more
    owned_.reset();
  }
  borrowed_.Reset();
  ptr_ = nullptr;
  if (accounted_) {
    Napi::MemoryManagement::AdjustExternalMemory(env, -int64_t(bytes_));
    accounted_ = false;
  }
}

void TensorObject::Unpin(Napi::Env env) {
  if (--pins_ == 0 && disposed_) FreeOwned(env);
}

Napi::Value TensorObject::PinJs(const Napi::CallbackInfo& info) {
  if (disposed_) throw typed_error(info.Env(), "ERR_DISPOSED", "tensor was disposed");
  Pin();
  return info.Env().Undefined();
}

Napi::Value TensorObject::UnpinJs(const Napi::CallbackInfo& info) {
  if (pins_ > 0) Unpin(info.Env());
  return info.Env().Undefined();
}

Napi::Value TensorObject::Dispose(const Napi::CallbackInfo& info) {
  if (disposed_) return info.Env().Undefined();
  disposed_ = true;
  if (!array_buffer_.IsEmpty()) {
    Napi::ArrayBuffer ab = array_buffer_.Value();
    if (!ab.IsDetached()) ab.Detach();
    array_buffer_.Reset();
  }
  if (pins_ == 0) FreeOwned(info.Env());
  return info.Env().Undefined();
}

Napi::Value TensorObject::IsDisposed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), disposed_); }

Napi::Value TensorObject::Owned(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), bool(owned_)); }

Napi::Value TensorObject::Buffer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (disposed_) throw typed_error(env, "ERR_DISPOSED", "tensor was disposed");
  if (!borrowed_.IsEmpty()) return borrowed_.Value();
  if (array_buffer_.IsEmpty()) {
    Napi::ArrayBuffer ab;
    if (bytes_ == 0) {
      ab = Napi::ArrayBuffer::New(env, 0);
    } else {
      auto* keep = new std::shared_ptr<AlignedBuffer>(owned_);
      ab = Napi::ArrayBuffer::New(
          env, ptr_, bytes_, [](Napi::Env, void*, std::shared_ptr<AlignedBuffer>* k) { delete k; }, keep);
    }
    array_buffer_ = Napi::Persistent(ab);
  }
  return array_buffer_.Value();
}

Napi::Value TensorObject::Shape(const Napi::CallbackInfo& info) { return shape_array(info.Env(), shape_); }

Napi::Value TensorObject::DtypeCode(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), int(dtype_)); }

Napi::Value TensorObject::Device(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), "cpu"); }

}  // namespace quorum::napi
