#include "scalar_args.h"

#include <cmath>
#include <cstdio>

#include "../common/error.h"
#include "../common/thread_pool.h"

namespace quorum::napi {

namespace {
constexpr int64_t kMaxElements = int64_t(1) << 46;
}  // namespace

bool typed_array_matches(const Napi::TypedArray& ta, Dtype t) {
  switch (t) {
    case Dtype::F32: return ta.TypedArrayType() == napi_float32_array;
    case Dtype::BF16: case Dtype::F16: return ta.TypedArrayType() == napi_uint16_array;
    case Dtype::I32: return ta.TypedArrayType() == napi_int32_array;
    case Dtype::I64: return ta.TypedArrayType() == napi_bigint64_array;
    case Dtype::U8: return ta.TypedArrayType() == napi_uint8_array;
  }
  return false;
}

const char* typed_array_name(Dtype t) {
  switch (t) {
    case Dtype::F32: return "Float32Array";
    case Dtype::BF16: case Dtype::F16: return "Uint16Array";
    case Dtype::I32: return "Int32Array";
    case Dtype::I64: return "BigInt64Array";
    case Dtype::U8: return "Uint8Array";
  }
  return "?";
}

Dtype parse_dtype(const Napi::Value& v) {
  if (!v.IsNumber()) throw Error("ERR_DTYPE", "dtype code must be a number");
  const double code = v.As<Napi::Number>().DoubleValue();
  if (!(code >= 0 && code <= 5) || std::floor(code) != code) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", code);
    throw Error("ERR_DTYPE", std::string("unknown dtype code ") + text);
  }
  return Dtype(int(code));
}

std::vector<int64_t> parse_shape(const Napi::Value& v, int64_t& numel) {
  if (!v.IsArray()) throw Error("ERR_SHAPE", "shape must be an array of non-negative integers");
  Napi::Array a = v.As<Napi::Array>();
  std::vector<int64_t> shape;
  numel = 1;
  for (uint32_t i = 0; i < a.Length(); ++i) {
    Napi::Value d = a.Get(i);
    double x = d.IsNumber() ? d.As<Napi::Number>().DoubleValue() : -1;
    if (!(x >= 0) || std::floor(x) != x || x > double(kMaxElements))
      throw Error("ERR_SHAPE", "shape[" + std::to_string(i) + "] must be a non-negative integer");
    shape.push_back(int64_t(x));
    if (shape.back() != 0 && numel > kMaxElements / shape.back())
      throw Error("ERR_RANGE", "tensor too large");
    numel *= shape.back();
  }
  return shape;
}

Napi::Array shape_array(Napi::Env env, const std::vector<int64_t>& shape) {
  Napi::Array s = Napi::Array::New(env, shape.size());
  for (size_t i = 0; i < shape.size(); ++i) s.Set(uint32_t(i), Napi::Number::New(env, double(shape[i])));
  return s;
}

bool flag(const Napi::Value& v) { return v.IsBoolean() && v.As<Napi::Boolean>().Value(); }

double number_arg(const Napi::Value& v, const char* what) {
  double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
  if (!std::isfinite(d)) throw Error("ERR_ARG", std::string(what) + " must be a finite number");
  return d;
}

size_t count_arg(const Napi::Value& v, const std::string& what, bool positive) {
  const double d = number_arg(v, what.c_str());
  if (!(d >= (positive ? 1 : 0)) || d != double(int64_t(d)))
    throw Error("ERR_RANGE", what + " must be a " + (positive ? "positive" : "non-negative") + " integer");
  return size_t(d);
}

size_t k_arg(const Napi::Value& v) {
  constexpr double kMaxK = double(1 << 20);
  double k = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
  if (!(k >= 1) || std::floor(k) != k || k > kMaxK)
    throw Error("ERR_RANGE", "k must be an integer in [1, " + std::to_string(int64_t(kMaxK)) + "]");
  return size_t(k);
}

int threads_arg(const Napi::Value& v) {
  const double n = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
  if (!(n >= 1) || n > ThreadPool::kMaxThreads || std::floor(n) != n)
    throw Error("ERR_RANGE", "threads must be an integer in [1, " + std::to_string(ThreadPool::kMaxThreads) + "]");
  return int(n);
}

std::vector<std::string> strings_arg(const Napi::Value& v, const char* what) {
  if (!v.IsArray()) throw Error("ERR_ARG", std::string(what) + " must be an array of strings");
  Napi::Array a = v.As<Napi::Array>();
  std::vector<std::string> out(a.Length());
  for (uint32_t i = 0; i < a.Length(); ++i) {
    Napi::Value s = a.Get(i);
    if (!s.IsString()) throw Error("ERR_ARG", std::string(what) + "[" + std::to_string(i) + "] is not a string");
    out[i] = s.As<Napi::String>().Utf8Value();
  }
  return out;
}

std::string path_arg(const Napi::Value& v) {
  if (!v.IsString() || v.As<Napi::String>().Utf8Value().empty()) throw Error("ERR_ARG", "path must be a non-empty string");
  std::string path = v.As<Napi::String>().Utf8Value();
  // c_str() would end the path at the first NUL: another file than the one named.
  if (path.find('\0') != std::string::npos) throw Error("ERR_ARG", "path must not contain a NUL byte");
  return path;
}

Bytes bytes_arg(const Napi::Value& v) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Error("ERR_ARG", "fromBuffer needs a Buffer or Uint8Array");
  auto a = v.As<Napi::Uint8Array>();
  return {a.Data(), a.ElementLength()};
}

Napi::Value buffer_of(Napi::Env env, const std::vector<uint8_t>& bytes) {
  return Napi::Buffer<uint8_t>::Copy(env, bytes.data(), bytes.size());
}

}  // namespace quorum::napi
