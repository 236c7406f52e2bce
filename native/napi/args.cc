#include "args.h"

#include "../common/error.h"

namespace quorum::napi {

TensorObject* optional_tensor(Napi::Env env, const Napi::Value& v, const char* what) {
  if (v.IsUndefined() || v.IsNull()) return nullptr;
  return TensorObject::From(env, v, what);
}

void require_dtype(const TensorObject* t, Dtype dtype, const char* what) {
  if (t->dtype() != dtype)
    throw Error("ERR_DTYPE", std::string(what) + " must be " + dtype_name(dtype) + ", got " + dtype_name(t->dtype()));
}

void require_shape(const TensorObject* t, const std::vector<int64_t>& dims, const char* what) {
  bool ok = t->shape().size() == dims.size();
  for (size_t i = 0; ok && i < dims.size(); ++i) ok = dims[i] < 0 || dims[i] == t->shape()[i];
  if (!ok) {
    std::vector<int64_t> want(dims);
    std::string w = shape_str(want);
    for (size_t p = w.find("-1"); p != std::string::npos; p = w.find("-1")) w.replace(p, 2, "*");
    throw Error("ERR_SHAPE", std::string(what) + " must have shape " + w + ", got " + shape_str(t->shape()));
  }
}

SparseArg sparse_arg(Napi::Env env, const Napi::CallbackInfo& info, size_t first) {
  TensorObject* off = TensorObject::From(env, info[first], "offsets");
  TensorObject* idx = TensorObject::From(env, info[first + 1], "indices");
  TensorObject* val = TensorObject::From(env, info[first + 2], "values");
  require_dtype(off, Dtype::I64, "offsets");
  require_dtype(idx, Dtype::I32, "indices");
  require_dtype(val, Dtype::F32, "values");
  if (off->numel() < 1) throw Error("ERR_SHAPE", "offsets must hold rows + 1 entries");
  if (idx->numel() != val->numel()) throw Error("ERR_SHAPE", "indices and values differ in length");
  return {{reinterpret_cast<const int64_t*>(off->data()), reinterpret_cast<const int32_t*>(idx->data()),
           reinterpret_cast<const float*>(val->data()), off->numel() - 1},
          idx->numel()};
}

std::vector<Napi::Object> operands(std::initializer_list<Napi::Value> values) {
  std::vector<Napi::Object> out;
  for (const auto& v : values)
    if (v.IsObject()) out.push_back(v.As<Napi::Object>());
  return out;
}

// The allowed rows of a filtered search, checked (i32, 1-D, strictly ascending, inside the corpus) and copied: the
// caller's array may change while an async call waits.
std::shared_ptr<std::vector<int32_t>> allowed_rows(const TensorObject* t, size_t corpus_rows) {
  require_dtype(t, Dtype::I32, "rows");
  if (t->shape().size() != 1) throw Error("ERR_SHAPE", "rows must be 1-D, got " + shape_str(t->shape()));
  const auto* r = reinterpret_cast<const int32_t*>(t->data());
  auto out = std::make_shared<std::vector<int32_t>>(r, r + t->numel());
  for (size_t i = 0; i < out->size(); ++i) {
    const int32_t v = (*out)[i];
    if (v < 0 || size_t(v) >= corpus_rows)
      throw Error("ERR_RANGE", "rows[" + std::to_string(i) + "] = " + std::to_string(v) + " is outside the corpus (" + std::to_string(corpus_rows) + " rows)");
    if (i > 0 && v <= (*out)[i - 1]) throw Error("ERR_ARG", "rows must be strictly ascending (rows[" + std::to_string(i) + "] = " + std::to_string(v) + ")");
  }
  return out;
}

}  // namespace quorum::napi
