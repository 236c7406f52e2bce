#include "corpus_arg.h"

#include <cmath>

#include "../common/error.h"
#include "args.h"
#include "tensor_object.h"

namespace quorum::napi {
namespace {

const float* param(Napi::Env env, const Napi::Object& o, const char* key, size_t dim, const std::string& what,
                   std::vector<Napi::Object>& pins, bool optional) {
  const Napi::Value v = o.Get(key);
  if (optional && (v.IsUndefined() || v.IsNull())) return nullptr;
  const std::string name = what + "." + key;
  TensorObject* t = TensorObject::From(env, v, name.c_str());
  require_dtype(t, Dtype::F32, name.c_str());
  require_shape(t, {int64_t(dim)}, name.c_str());
  const float* p = reinterpret_cast<const float*>(t->data());
  for (size_t d = 0; d < dim; ++d)
    if (!std::isfinite(p[d]) || (std::string(key) == "scale" && p[d] < 0.f))
      throw Error("ERR_FORMAT", name + " holds " + std::to_string(p[d]) + " at " + std::to_string(d) +
                                    ": the quantization table is corrupt");
  pins.push_back(v.As<Napi::Object>());
  return p;
}

}  // namespace

std::shared_ptr<const kernels::Rotation> rotation_arg(const Napi::Value& v, size_t dim, const std::string& what) {
  if (v.IsUndefined() || v.IsNull()) return nullptr;
  const double seed = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
  if (!(seed >= 0 && seed <= 4294967295.0 && seed == std::floor(seed))) throw Error("ERR_ARG", what + " must be a 32-bit unsigned seed");
  return kernels::shared_rotation(dim, uint32_t(seed));
}

kernels::CorpusMatrix corpus_operand(Napi::Env env, const Napi::Value& v, const std::string& what, int64_t D,
                                     std::vector<Napi::Object>& pins) {
  if (v.IsObject() && !v.As<Napi::Object>().Get("coding").IsUndefined()) {
    const Napi::Object o = v.As<Napi::Object>();
    const std::string coding = o.Get("coding").IsString() ? o.Get("coding").As<Napi::String>().Utf8Value() : "";
    if (coding != "int8" && coding != "binary")
      throw Error("ERR_ARG", what + ": coding must be 'int8' or 'binary'");
    const Napi::Value dv = o.Get("dim");
    const double dim = dv.IsNumber() ? dv.As<Napi::Number>().DoubleValue() : -1;
    if (!(dim >= 1 && dim <= 1 << 16 && dim == std::floor(dim)))
      throw Error("ERR_ARG", what + ": dim must be an integer in [1, 65536]");
    if (D >= 0 && int64_t(dim) != D)
      throw Error("ERR_SHAPE", what + " dimension " + std::to_string(int64_t(dim)) + " differs from the queries' " +
                                   std::to_string(D));
    kernels::CorpusMatrix c{nullptr, 0, size_t(dim), Dtype::U8};
    c.coding = coding == "int8" ? kernels::Coding::Int8 : kernels::Coding::Binary;
    const std::string codes_name = what + ".codes";
    TensorObject* t = TensorObject::From(env, o.Get("codes"), codes_name.c_str());
    require_dtype(t, Dtype::U8, codes_name.c_str());
    require_shape(t, {-1, int64_t(c.row_bytes())}, codes_name.c_str());
    pins.push_back(o.Get("codes").As<Napi::Object>());
    c.data = t->data();
    c.rows = size_t(t->shape()[0]);
    const Napi::Value qb = o.Get("queryBits");
    const int bits = qb.IsNumber() ? qb.As<Napi::Number>().Int32Value() : 0;
    if (c.coding == kernels::Coding::Int8) {
      c.scale = param(env, o, "scale", c.dim, what, pins, false);
      c.offset = param(env, o, "offset", c.dim, what, pins, false);
      if (bits != 0 && bits != 8 && bits != 32) throw Error("ERR_ARG", what + ": queryBits of an int8 corpus must be 8 or 32");
    } else {
      c.center = param(env, o, "center", c.dim, what, pins, true);
      c.rotation = rotation_arg(o.Get("rotation"), c.dim, what + ": rotation");
      if (bits != 0 && bits != 1 && bits != 4) throw Error("ERR_ARG", what + ": queryBits of a binary corpus must be 1 or 4");
    }
    c.query_bits = bits;
    return c;
  }
  TensorObject* t = TensorObject::From(env, v, what.c_str());
  if (t->dtype() != Dtype::F32 && t->dtype() != Dtype::BF16 && t->dtype() != Dtype::F16)
    throw Error("ERR_DTYPE", what + " must be f32, bf16 or f16, got " + dtype_name(t->dtype()));
  require_shape(t, {-1, D}, what.c_str());
  pins.push_back(v.As<Napi::Object>());
  return {t->data(), size_t(t->shape()[0]), size_t(t->shape()[1]), t->dtype()};
}

}  // namespace quorum::napi
