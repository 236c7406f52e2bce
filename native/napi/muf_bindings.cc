// N-API binding of kernels/muf_heads.h: argument checks and conversions only (docs/methods/muf.md, Serving).
#include <napi.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../kernels/muf_fuse.h"
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
  const float* scores = nullptr;  // [B, L] when fusing
};

// mufConfidence(experts, epsMode, async, fuse?) -> { mi: f32 [E, B], confidence: f32 [E, B], ids?, scores? }
//   experts[x] = { queries: f32 [B, dim], passages: f32 | bf16 | f16 [N, dim], ids: i32 [B, L],
//                  weights: [Wt_0 f32|bf16 [K, h, dim], b_0 f32 [K, h], ..., Wt_last [K, dim, h], b_last f32 [K, dim]]
//                  (each weight transposed: a row per output unit),
//                  members: K, temperature, scores?: f32 [B, L] (the expert's scores of ids, for fuse) }
//   fuse = { k, tieRank?: i32 [N], uniform, weights?: f32 [E, B] } -> ids: i32 [B, k], scores: f32 [B, k]
//   (kernels/muf_fuse.h). With uniform (every weight 1) or weights (the caller's confidences, e.g. familiarity's
//   P(own task)) the heads do not run: confidence = those weights, mi = NaN.
Napi::Value MufConfidence(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray() || info[0].As<Napi::Array>().Length() == 0)
    throw Error("ERR_ARG", "experts must be a non-empty array");
  Napi::Array list = info[0].As<Napi::Array>();
  const size_t E = list.Length();
  auto experts = std::make_shared<std::vector<ExpertArg>>(E);
  std::vector<Napi::Object> pins;
  int64_t B = -1;
  const bool fusing = !info[3].IsUndefined() && !info[3].IsNull();
  if (fusing && !info[3].IsObject()) throw Error("ERR_ARG", "fuse must be an object");
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
    if (fusing) {
      TensorObject* st = TensorObject::From(env, o.Get("scores"), "scores");
      require_dtype(st, Dtype::F32, "scores");
      require_shape(st, {B, L}, "scores");
      if (x > 0 && a.e.passages.rows != (*experts)[0].e.passages.rows)
        throw Error("ERR_SHAPE", who + ": fusion needs every expert over the same corpus rows");
      a.scores = reinterpret_cast<const float*>(st->data());
      pins.push_back(o.Get("scores").As<Napi::Object>());
    }
  }
  // Fusion: k, the corpus rows' tie ranks, uniform weights.
  int64_t k = 0;
  const int32_t* tie_rank = nullptr;
  bool uniform = false;
  const float* given = nullptr;
  const size_t rows = (*experts)[0].e.passages.rows;
  if (fusing) {
    Napi::Object f = info[3].As<Napi::Object>();
    const double kd = number_arg(f.Get("k"), "k");
    if (!(kd >= 1) || kd != double(int64_t(kd))) throw Error("ERR_RANGE", "k must be a positive integer");
    k = int64_t(kd);
    if (!f.Get("tieRank").IsUndefined() && !f.Get("tieRank").IsNull()) {
      TensorObject* tr = TensorObject::From(env, f.Get("tieRank"), "tieRank");
      require_dtype(tr, Dtype::I32, "tieRank");
      require_shape(tr, {int64_t(rows)}, "tieRank");
      tie_rank = reinterpret_cast<const int32_t*>(tr->data());
      pins.push_back(f.Get("tieRank").As<Napi::Object>());
    }
    uniform = flag(f.Get("uniform"));
    if (!f.Get("weights").IsUndefined() && !f.Get("weights").IsNull()) {
      if (uniform) throw Error("ERR_ARG", "give uniform or weights, not both");
      TensorObject* wt = TensorObject::From(env, f.Get("weights"), "weights");
      require_dtype(wt, Dtype::F32, "weights");
      require_shape(wt, {int64_t(E), B}, "weights");
      given = reinterpret_cast<const float*>(wt->data());
      pins.push_back(f.Get("weights").As<Napi::Object>());
    }
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
  int32_t* fused_ids = nullptr;
  float* fused_scores = nullptr;
  if (fusing) {
    Napi::Object ids = TensorObject::Create(env, Dtype::I32, {B, k});
    Napi::Object scores = TensorObject::Create(env, Dtype::F32, {B, k});
    result.Set("ids", ids);
    result.Set("scores", scores);
    pins.push_back(ids);
    pins.push_back(scores);
    fused_ids = data_of<int32_t>(ids);
    fused_scores = data_of<float>(scores);
  }
  const bool eps = flag(info[1]);
  return run_kernel(env, flag(info[2]), pins, result, [experts, B, eps, fusing, uniform, given, k, tie_rank, rows, fused_ids, fused_scores] {
    std::vector<kernels::HeadsExpert> views;
    for (const ExpertArg& a : *experts) views.push_back(a.e);
    if (uniform || given) {
      for (size_t x = 0; x < views.size(); ++x) {
        const kernels::HeadsExpert& e = views[x];
        std::fill(e.mi, e.mi + B, std::numeric_limits<float>::quiet_NaN());
        if (given)
          std::copy(given + x * size_t(B), given + (x + 1) * size_t(B), e.conf);
        else
          std::fill(e.conf, e.conf + B, 1.f);
      }
    } else {
      kernels::muf_confidence(views.data(), views.size(), size_t(B), eps);
    }
    if (!fusing) return;
    std::vector<kernels::FuseList> lists;
    for (const ExpertArg& a : *experts) lists.push_back({a.e.ids, a.scores, a.e.len, a.e.conf});
    kernels::muf_fuse(lists.data(), lists.size(), size_t(B), tie_rank, rows, size_t(k), fused_ids, fused_scores);
  });
}

}  // namespace

void register_muf(Napi::Env env, Napi::Object exports) {
  exports.Set("mufConfidence", Napi::Function::New<guarded<MufConfidence>>(env, "mufConfidence"));
}

}  // namespace quorum::napi
