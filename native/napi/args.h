// Tensor argument checks shared by the core's bindings: every failure is a quorum::Error with a code.
#pragma once
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "../common/dtype.h"
#include "../kernels/splade.h"
#include "scalar_args.h"
#include "tensor_object.h"

namespace quorum::napi {

// The tensor in v, or null when v is undefined or null.
TensorObject* optional_tensor(Napi::Env env, const Napi::Value& v, const char* what);
void require_dtype(const TensorObject* t, Dtype dtype, const char* what);
// ERR_SHAPE unless the shape equals `dims` (-1 matches any extent).
void require_shape(const TensorObject* t, const std::vector<int64_t>& dims, const char* what);
// The object operands of a kernel call (tensors to pin), skipping undefined and null.
std::vector<Napi::Object> operands(std::initializer_list<Napi::Value> values);
// Sparse rows given as (offsets i64 [rows + 1], indices i32 [nnz], values f32 [nnz]) at info[first..first + 2].
// Only sizes are checked here: contents are checked inside the work (JS can write to the arrays until it runs).
struct SparseArg {
  kernels::SparseView view;
  size_t nnz;
};
SparseArg sparse_arg(Napi::Env env, const Napi::CallbackInfo& info, size_t first);

// The allowed rows of a filtered search, checked (i32, 1-D, strictly ascending, inside the corpus) and copied: the
// caller's array may change while an async call waits.
std::shared_ptr<std::vector<int32_t>> allowed_rows(const TensorObject* t, size_t corpus_rows);

template <class T>
T* data_of(const Napi::Object& tensor) {
  return reinterpret_cast<T*>(Napi::ObjectWrap<TensorObject>::Unwrap(tensor)->data());
}

}  // namespace quorum::napi
