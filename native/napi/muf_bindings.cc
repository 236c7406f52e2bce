// N-API binding of kernels/muf_heads.h: argument checks and conversions only (docs/methods/muf.md, Serving).
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../kernels/muf_heads.h"
#include "args.h"
#include "errors.h"
#include "kernel_call.h"

namespace quorum::napi {
namespace {

// One expert of mufConfidence: the kernel's view plus the layer table it points into.
struct ExpertArg {
  kernels::HeadsExpert e{};
  std::vector<kernels::HeadsLayer> layers;
};

// mufConfidence(experts, epsMode, async) -> { mi: f32 [E, B], confidence: f32 [E, B] }
//   experts[x] = { queries: f32 [B, dim], passages: f32 | bf16 | f16 [N, dim], ids: i32 [B, L],
//                  weights: [Wt_0 f32|bf16 [K, h, dim], b_0 f32 [K, h], ..., Wt_last [K, dim, h], b_last f32 [K, dim]]
//                  (each weight transposed: a row per output unit),
//                  members: K, temperature }
Napi::Value MufConfidence(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray() || info[0].As<Napi::Array>().Length() == 0)
    throw Error("ERR_ARG", "experts must be a non-empty array");
  Napi::Array list = info[0].As<Napi::Array>();
  const size_t E = list.Length();
  auto experts = std::make_shared<std::vector<ExpertArg>>(E);
  std::vector<Napi::Object> pins;
  int64_t B = -1;
  for (size_t x = 0; x < E; ++x) {
    Napi::Value v = list.Get(uint32_t(x));
    if (!v.IsObject()) throw Error("ERR_ARG", "experts[" + std::to_string(x) + "] must be an object");
    Napi::Object o = v.As<Napi::Object>();
    const std::string who = "experts[" + std::to_string(x) + "]";
    TensorObject* qt = TensorObject::From(env, o.Get("queries"), "queries");
    TensorObject* pt = TensorObject::From(env, o.Get("passages"), "passages");
    TensorObject* it = TensorObject::From(env, o.Get("ids"), "ids");
    require_dtype(qt, Dtype::F32, "queries");
    require_shape(qt, {-1, -1}, "queries");
    if (B < 0) B = qt->shape()[0];
    const int64_t D = qt->shape()[1];
    require_shape(qt, {B, D}, "queries");
    if (D == 0) throw Error("ERR_SHAPE", who + ": queries have dimension 0");
    if (pt->dtype() != Dtype::F32 && pt->dtype() != Dtype::BF16 && pt->dtype() != Dtype::F16)
      throw Error("ERR_DTYPE", who + ": passages must be f32, bf16 or f16, got " + dtype_name(pt->dtype()));
    require_shape(pt, {-1, D}, "passages");
    require_dtype(it, Dtype::I32, "ids");
    require_shape(it, {B, -1}, "ids");
    const int64_t L = it->shape()[1];
    if (L == 0) throw Error("ERR_SHAPE", who + ": ids has no candidates");
    const double K = number_arg(o.Get("members"), "members");
    if (!(K >= 1) || K != double(int64_t(K))) throw Error("ERR_RANGE", who + ": members must be a positive integer");
    if (!o.Get("weights").IsArray()) throw Error("ERR_ARG", who + ": weights must be an array of tensors");
    Napi::Array w = o.Get("weights").As<Napi::Array>();
    if (w.Length() < 2 || w.Length() % 2 != 0)
      throw Error("ERR_SHAPE", who + ": weights must be pairs (W, b) of at least one layer");
    ExpertArg& a = (*experts)[x];
    int64_t in = D;
    for (uint32_t i = 0; i < w.Length(); i += 2) {
      TensorObject* wt = TensorObject::From(env, w.Get(i), "weight");
      TensorObject* bt = TensorObject::From(env, w.Get(i + 1), "bias");
      if (wt->dtype() != Dtype::F32 && wt->dtype() != Dtype::BF16)
        throw Error("ERR_DTYPE", who + ": weights must be f32 or bf16, got " + dtype_name(wt->dtype()));
      require_dtype(bt, Dtype::F32, "bias");
      require_shape(wt, {int64_t(K), -1, in}, "weight");
      const int64_t out = wt->shape()[1];
      if (out == 0) throw Error("ERR_SHAPE", who + ": a layer has no outputs");
      require_shape(bt, {int64_t(K), out}, "bias");
      a.layers.push_back({wt->data(), wt->dtype(), reinterpret_cast<const float*>(bt->data()), size_t(in), size_t(out)});
      pins.push_back(w.Get(i).As<Napi::Object>());
      pins.push_back(w.Get(i + 1).As<Napi::Object>());
      in = out;
    }
    if (in != D) throw Error("ERR_SHAPE", who + ": the last layer gives " + std::to_string(in) + " values for " + std::to_string(D) + "-d passages");
    a.e.members = size_t(K);
    a.e.n_layers = a.layers.size();
    a.e.queries = reinterpret_cast<const float*>(qt->data());
    a.e.passages = {pt->data(), size_t(pt->shape()[0]), size_t(D), pt->dtype()};
    a.e.ids = reinterpret_cast<const int32_t*>(it->data());
    a.e.len = size_t(L);
    a.e.temperature = float(number_arg(o.Get("temperature"), "temperature"));
    for (const char* k : {"queries", "passages", "ids"}) pins.push_back(o.Get(k).As<Napi::Object>());
  }
  Napi::Object result = Napi::Object::New(env);
  Napi::Object mi = TensorObject::Create(env, Dtype::F32, {int64_t(E), B});
  Napi::Object conf = TensorObject::Create(env, Dtype::F32, {int64_t(E), B});
  result.Set("mi", mi);
  result.Set("confidence", conf);
  pins.push_back(mi);
  pins.push_back(conf);
  float* mp = data_of<float>(mi);
  float* cp = data_of<float>(conf);
  for (size_t x = 0; x < E; ++x) {
    ExpertArg& a = (*experts)[x];
    a.e.layers = a.layers.data();
    a.e.mi = mp + x * size_t(B);
    a.e.conf = cp + x * size_t(B);
  }
  const bool eps = flag(info[1]);
  return run_kernel(env, flag(info[2]), pins, result, [experts, B, eps] {
    std::vector<kernels::HeadsExpert> views;
    for (const ExpertArg& a : *experts) views.push_back(a.e);
    kernels::muf_confidence(views.data(), views.size(), size_t(B), eps);
  });
}

}  // namespace

void register_muf(Napi::Env env, Napi::Object exports) {
  exports.Set("mufConfidence", Napi::Function::New<guarded<MufConfidence>>(env, "mufConfidence"));
}

}  // namespace quorum::napi
