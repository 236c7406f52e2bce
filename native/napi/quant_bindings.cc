// N-API bindings of kernels/quant.h (docs/methods/quantization.md): fitting and encoding quantized corpora, decoding
// them, and the rescoring stage of an oversampled search. Argument checks and conversions only.
#include <napi.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../kernels/dense_search.h"
#include "../kernels/quant.h"
#include "args.h"
#include "corpus_arg.h"
#include "errors.h"
#include "kernel_call.h"
#include "tensor_object.h"

namespace quorum::napi {
namespace {

struct Vectors {
  const void* data;
  Dtype dtype;
  size_t rows, dim;
};

// f32 / bf16 / f16 [rows, dim], not empty.
Vectors vectors_arg(Napi::Env env, const Napi::Value& v) {
  TensorObject* t = TensorObject::From(env, v, "vectors");
  if (!dtype_is_float(t->dtype()))
    throw Error("ERR_DTYPE", std::string("vectors must be f32, bf16 or f16, got ") + dtype_name(t->dtype()));
  if (t->shape().size() != 2) throw Error("ERR_SHAPE", "vectors must be 2-D [rows, dim], got shape " + shape_str(t->shape()));
  if (t->shape()[0] == 0 || t->shape()[1] == 0)
    throw Error("ERR_SHAPE", "vectors are empty (shape " + shape_str(t->shape()) + "): there is nothing to quantize");
  if (t->shape()[1] > 1 << 16) throw Error("ERR_SHAPE", "vectors wider than 65536 dimensions do not quantize");
  return {t->data(), t->dtype(), size_t(t->shape()[0]), size_t(t->shape()[1])};
}

const float* table_arg(Napi::Env env, const Napi::Value& v, const char* what, size_t dim, std::vector<Napi::Object>& pins) {
  TensorObject* t = TensorObject::From(env, v, what);
  require_dtype(t, Dtype::F32, what);
  require_shape(t, {int64_t(dim)}, what);
  pins.push_back(v.As<Napi::Object>());
  return reinterpret_cast<const float*>(t->data());
}

Napi::Object codes_for(Napi::Env env, kernels::Coding c, const Vectors& x) {
  return TensorObject::Create(env, Dtype::U8, {int64_t(x.rows), int64_t(kernels::coded_row_bytes(c, x.dim, Dtype::U8))}, false);
}

// quantizeInt8(vectors, clip, scale?, offset?, async) -> { codes: u8 [rows, dim], scale: f32 [dim], offset: f32 [dim] }
//   With scale and offset, the rows are encoded with those tables (rows added to a corpus) and they are returned.
Napi::Value QuantizeInt8(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Vectors x = vectors_arg(env, info[0]);
  const double clip = info[1].IsNumber() ? info[1].As<Napi::Number>().DoubleValue() : -1;
  if (!(clip >= 0 && clip < 0.5)) throw Error("ERR_ARG", "clip must be a number in [0, 0.5)");
  std::vector<Napi::Object> pins{info[0].As<Napi::Object>()};
  const bool given = !info[2].IsUndefined() && !info[2].IsNull();
  Napi::Object scale, offset;
  if (given) {
    table_arg(env, info[2], "scale", x.dim, pins);
    table_arg(env, info[3], "offset", x.dim, pins);
    scale = info[2].As<Napi::Object>();
    offset = info[3].As<Napi::Object>();
  } else {
    scale = TensorObject::Create(env, Dtype::F32, {int64_t(x.dim)});
    offset = TensorObject::Create(env, Dtype::F32, {int64_t(x.dim)});
    pins.push_back(scale);
    pins.push_back(offset);
  }
  Napi::Object codes = codes_for(env, kernels::Coding::Int8, x);
  pins.push_back(codes);
  float* sp = data_of<float>(scale);
  float* op = data_of<float>(offset);
  uint8_t* cp = data_of<uint8_t>(codes);
  Napi::Object result = Napi::Object::New(env);
  result.Set("codes", codes);
  result.Set("scale", scale);
  result.Set("offset", offset);
  return run_kernel(env, flag(info[4]), pins, result, [=] {
    if (!given) kernels::fit_int8(x.data, x.dtype, x.rows, x.dim, clip, sp, op);
    kernels::encode_int8(x.data, x.dtype, x.rows, x.dim, sp, op, cp);
  });
}

// quantizeBinary(vectors, center: 'fit' | Tensor f32 [dim] | null, rotation: seed | null, async)
//   -> { codes: u8 [rows, rowBytes], center }
Napi::Value QuantizeBinary(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Vectors x = vectors_arg(env, info[0]);
  std::vector<Napi::Object> pins{info[0].As<Napi::Object>()};
  const bool fit = info[1].IsString() && info[1].As<Napi::String>().Utf8Value() == "fit";
  const bool none = info[1].IsUndefined() || info[1].IsNull();
  Napi::Value center = env.Null();
  float* cp = nullptr;
  if (fit) {
    center = TensorObject::Create(env, Dtype::F32, {int64_t(x.dim)});
  } else if (!none) {
    table_arg(env, info[1], "center", x.dim, pins);
    center = info[1];
  }
  if (!center.IsNull()) {
    pins.push_back(center.As<Napi::Object>());
    cp = data_of<float>(center.As<Napi::Object>());
  }
  const std::shared_ptr<const kernels::Rotation> rotation = rotation_arg(info[2], x.dim, "rotation");
  Napi::Object codes = codes_for(env, kernels::Coding::Binary, x);
  pins.push_back(codes);
  uint8_t* out = data_of<uint8_t>(codes);
  Napi::Object result = Napi::Object::New(env);
  result.Set("codes", codes);
  result.Set("center", center);
  return run_kernel(env, flag(info[3]), pins, result, [=] {
    if (fit) kernels::fit_center(x.data, x.dtype, x.rows, x.dim, cp);
    kernels::encode_binary(x.data, x.dtype, x.rows, x.dim, cp, rotation.get(), out);
  });
}

// dequantize(coded) -> f32 [rows, dim]: the vectors the codes stand for.
Napi::Value Dequantize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<Napi::Object> pins;
  const kernels::CorpusMatrix c = corpus_operand(env, info[0], "coded", -1, pins);
  if (c.coding == kernels::Coding::Plain) throw Error("ERR_ARG", "dequantize takes a quantized corpus");
  Napi::Object out = TensorObject::Create(env, Dtype::F32, {int64_t(c.rows), int64_t(c.dim)}, false);
  kernels::decode(c.coding, c.data, c.rows, c.dim, c.scale, c.offset, c.center, c.rotation.get(), data_of<float>(out));
  return out;
}

// rescoreTopK(queries f32 [B, dim], full corpus, candidates i32 [B, m], k, async) -> { ids, scores } [B, k]
Napi::Value RescoreTopK(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorObject* qt = TensorObject::From(env, info[0], "queries");
  require_dtype(qt, Dtype::F32, "queries");
  require_shape(qt, {-1, -1}, "queries");
  const kernels::QueryMatrix q{reinterpret_cast<const float*>(qt->data()), size_t(qt->shape()[0]), size_t(qt->shape()[1])};
  std::vector<Napi::Object> pins{info[0].As<Napi::Object>()};
  const kernels::CorpusMatrix full = corpus_operand(env, info[1], "full vectors", int64_t(q.dim), pins);
  if (full.coding == kernels::Coding::Binary)
    throw Error("ERR_ARG", "the full vectors of a rescoring must be f32, bf16, f16 or int8, not binary");
  TensorObject* ct = TensorObject::From(env, info[2], "candidates");
  require_dtype(ct, Dtype::I32, "candidates");
  require_shape(ct, {int64_t(q.rows), -1}, "candidates");
  pins.push_back(info[2].As<Napi::Object>());
  const size_t m = size_t(ct->shape()[1]);
  const size_t k = k_arg(info[3]);
  Napi::Object ids = TensorObject::Create(env, Dtype::I32, {int64_t(q.rows), int64_t(k)});
  Napi::Object scores = TensorObject::Create(env, Dtype::F32, {int64_t(q.rows), int64_t(k)});
  pins.push_back(ids);
  pins.push_back(scores);
  const int32_t* cp = reinterpret_cast<const int32_t*>(ct->data());
  int32_t* ip = data_of<int32_t>(ids);
  float* sp = data_of<float>(scores);
  Napi::Object result = Napi::Object::New(env);
  result.Set("ids", ids);
  result.Set("scores", scores);
  return run_kernel(env, flag(info[4]), pins, result, [=] { kernels::rescore_topk(q, full, cp, m, k, ip, sp); });
}

}  // namespace

void register_quant(Napi::Env env, Napi::Object exports) {
  exports.Set("quantizeInt8", Napi::Function::New<guarded<QuantizeInt8>>(env, "quantizeInt8"));
  exports.Set("quantizeBinary", Napi::Function::New<guarded<QuantizeBinary>>(env, "quantizeBinary"));
  exports.Set("dequantize", Napi::Function::New<guarded<Dequantize>>(env, "dequantize"));
  exports.Set("rescoreTopK", Napi::Function::New<guarded<RescoreTopK>>(env, "rescoreTopK"));
}

}  // namespace quorum::napi
