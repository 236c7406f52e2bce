// A corpus operand of the dense kernels and the search stages: a Tensor (f32 / bf16 / f16 [rows, dim]) or a coded
// corpus from lib/quantized.ts: { coding: 'int8' | 'binary', dim, codes: u8 [rows, rowBytes], scale, offset (int8,
// f32 [dim]), center (binary, f32 [dim] or null), rotation (binary: the seed of
// kernels::Rotation, or null), queryBits }. One reader for every binding.
#pragma once
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "../kernels/dense_search.h"

namespace quorum::napi {

// D: the queries' dimension, or -1 (any). The operand's tensors (TensorObjects only: run_kernel pins them) are
// appended to `pins`.
kernels::CorpusMatrix corpus_operand(Napi::Env env, const Napi::Value& v, const std::string& what, int64_t D,
                                     std::vector<Napi::Object>& pins);

// A rotation seed (a 32-bit unsigned integer; ERR_ARG otherwise, named `what`) as the shared rotation of `dim`
// dimensions, or null for undefined / null.
std::shared_ptr<const kernels::Rotation> rotation_arg(const Napi::Value& v, size_t dim, const std::string& what);

}  // namespace quorum::napi
