// The core's index and tokenizer objects as arguments of other calls (cameSearch, embedTexts): checked to be what they claim, and held by a
// shared_ptr for the call's life (a dispose meanwhile frees them when the call ends).
#pragma once
#include <napi.h>

#include <memory>
#include <string>

#include "../common/error.h"
#include "../kernels/centroid_index.h"
#include "../kernels/sparse_index.h"
#include "../text/wordpiece.h"

namespace quorum::napi {

// The held native of a wrapped object of class `Object` (made by `ctor`, named `cls` in the error), for the two
// functions below.
template <class Object>
auto wrapped_arg(const Napi::Value& v, const Napi::FunctionReference& ctor, const char* what, const char* cls) {
  if (!v.IsObject() || !v.As<Napi::Object>().InstanceOf(ctor.Value()))
    throw Error("ERR_ARG", std::string(what) + " must be a native " + cls);
  return Object::Unwrap(v.As<Napi::Object>())->held();
}

// ERR_ARG unless v is the core's SparseIndex / CentroidIndex object; ERR_DISPOSED after its dispose().
std::shared_ptr<kernels::SparseIndex> sparse_index_arg(Napi::Env env, const Napi::Value& v, const char* what);
std::shared_ptr<kernels::CentroidIndex> centroid_index_arg(Napi::Env env, const Napi::Value& v, const char* what);
// ERR_ARG unless v is the core's WordPiece object.
std::shared_ptr<text::WordPiece> wordpiece_arg(Napi::Env env, const Napi::Value& v, const char* what);
// A tokenizer call's encode options (maxLength in [1, 1e6], a marker id inside `wp`'s vocabulary or < 0 for none,
// padToMax), checked.
text::EncodeOptions encode_options_arg(const text::WordPiece& wp, const Napi::Value& max_length, const Napi::Value& marker,
                                       const Napi::Value& pad_to_max);

}  // namespace quorum::napi
