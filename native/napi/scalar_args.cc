#include "scalar_args.h"

#include <cmath>

#include "../common/error.h"
#include "../common/thread_pool.h"

namespace quorum::napi {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

bool flag(const Napi::Value& v) { return v.IsBoolean() && v.As<Napi::Boolean>().Value(); }

double number_arg(const Napi::Value& v, const char* what) {
  double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
  if (!std::isfinite(d)) throw Error("ERR_ARG", std::string(what) + " must be a finite number");
  return d;
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

std::string path_arg(const Napi::Value& v) {
  if (!v.IsString() || v.As<Napi::String>().Utf8Value().empty()) throw Error("ERR_ARG", "path must be a non-empty string");
  return v.As<Napi::String>().Utf8Value();
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
