// Checks for plain JS arguments (numbers, flags, paths, dtype codes, shapes), shared by every addon: each failure
// is a quorum::Error with a code. Tensor arguments are in args.h (core only).
#pragma once
#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../common/dtype.h"
#include "../kernels/contract.h"

namespace quorum::napi {

// A dtype code (lib/dtype.ts's dtypeCode): ERR_DTYPE unless one of the six.
Dtype parse_dtype(const Napi::Value& v);
// A shape: non-negative integers whose product (written to numel) is at most 2^46 (ERR_SHAPE, ERR_RANGE).
std::vector<int64_t> parse_shape(const Napi::Value& v, int64_t& numel);
// The inverse: a shape as a JS array of numbers.
Napi::Array shape_array(Napi::Env env, const std::vector<int64_t>& shape);
// Whether a typed array holds `t`'s elements (bf16 and f16 travel as Uint16Array), and that array type's name.
bool typed_array_matches(const Napi::TypedArray& ta, Dtype t);
const char* typed_array_name(Dtype t);

using kernels::contract::shape_str;
bool flag(const Napi::Value& v);
// A finite number, else ERR_ARG naming `what`.
double number_arg(const Napi::Value& v, const char* what);
// A count: an integer >= 1 (positive) or >= 0, else ERR_RANGE naming `what` (ERR_ARG for a non-number).
size_t count_arg(const Napi::Value& v, const std::string& what, bool positive = true);
// A top-k size: an integer in [1, 2^20], else ERR_RANGE.
size_t k_arg(const Napi::Value& v);
// A thread count: an integer in [1, ThreadPool::kMaxThreads], else ERR_RANGE (every addon's setThreads).
int threads_arg(const Napi::Value& v);
// An array of strings, else ERR_ARG naming `what` (and the index of a non-string).
std::vector<std::string> strings_arg(const Napi::Value& v, const char* what);
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
