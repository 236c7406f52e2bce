// Checks for plain JS arguments (numbers, flags, paths), shared by every addon: each failure is a quorum::Error
// with a code. Tensor arguments are in args.h (core only).
#pragma once
#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace quorum::napi {

std::string shape_str(const std::vector<int64_t>& s);
bool flag(const Napi::Value& v);
// A finite number, else ERR_ARG naming `what`.
double number_arg(const Napi::Value& v, const char* what);
// A top-k size: an integer in [1, 2^20], else ERR_RANGE.
size_t k_arg(const Napi::Value& v);
// A thread count: an integer in [1, ThreadPool::kMaxThreads], else ERR_RANGE (every addon's setThreads).
int threads_arg(const Napi::Value& v);
// A non-empty string, else ERR_ARG.
std::string path_arg(const Napi::Value& v);
// The bytes of a Buffer or Uint8Array (fromBuffer), else ERR_ARG.
struct Bytes {
  const uint8_t* data;
  size_t size;
};
Bytes bytes_arg(const Napi::Value& v);
// A Buffer holding a copy of `bytes` (toBuffer).
Napi::Value buffer_of(Napi::Env env, const std::vector<uint8_t>& bytes);

}  // namespace quorum::napi
