// N-API bindings of kernels/infonce.h and kernels/ensemble.h: argument checks and conversions only.
#include <napi.h>

#include <memory>
#include <string>

#include "../common/error.h"
#include "../kernels/contract.h"
#include "../kernels/ensemble.h"
#include "../kernels/infonce.h"
#include "args.h"
#include "errors.h"
#include "kernel_call.h"

namespace quorum::napi {
namespace {

// infoNce(q, p, pos, weights, temperature, cosine, wantGrad, async)
//   -> { loss, accuracy, rowLoss: f32 [B], rank: i32 [B], dQ?: f32 [B, D], dP?: f32 [M, D] }
Napi::Value InfoNce(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorObject* qt = TensorObject::From(env, info[0], "queries");
  TensorObject* pt = TensorObject::From(env, info[1], "passages");
  TensorObject* post = TensorObject::From(env, info[2], "positives");
  TensorObject* wt = optional_tensor(env, info[3], "weights");
  // Shapes and counts here; the positives' values and the temperature inside the work (kernels/contract.h).
  const auto c = kernels::contract::info_nce(qt->dtype(), qt->shape(), pt->dtype(), pt->shape());
  require_dtype(post, Dtype::I32, "positives");
  if (wt) require_dtype(wt, Dtype::F32, "weights");
  kernels::contract::info_nce_counts(post->numel(), wt ? wt->numel() : 0, wt != nullptr, c);
  const int64_t B = int64_t(c.batch), M = int64_t(c.passages), D = int64_t(c.dim);
  kernels::InfoNceArgs a{reinterpret_cast<const float*>(qt->data()),
                         reinterpret_cast<const float*>(pt->data()),
                         size_t(B),
                         size_t(M),
                         size_t(D),
                         reinterpret_cast<const int32_t*>(post->data()),
                         wt ? reinterpret_cast<const float*>(wt->data()) : nullptr,
                         float(number_arg(info[4], "temperature")),
                         flag(info[5])};
  Napi::Object result = Napi::Object::New(env);
  Napi::Object rl = TensorObject::Create(env, Dtype::F32, {B});
  Napi::Object rk = TensorObject::Create(env, Dtype::I32, {B});
  result.Set("rowLoss", rl);
  result.Set("rank", rk);
  auto pins = operands({info[0], info[1], info[2], info[3], rl, rk});
  auto out = std::make_shared<kernels::InfoNceOut>();
  out->row_loss = data_of<float>(rl);
  out->rank = data_of<int32_t>(rk);
  out->dq = out->dp = nullptr;
  if (flag(info[6])) {
    Napi::Object dq = TensorObject::Create(env, Dtype::F32, {B, D}, false);  // written in full by the GEMMs
    Napi::Object dp = TensorObject::Create(env, Dtype::F32, {M, D}, false);
    result.Set("dQ", dq);
    result.Set("dP", dp);
    pins.push_back(dq);
    pins.push_back(dp);
    out->dq = data_of<float>(dq);
    out->dp = data_of<float>(dp);
  }
  return run_kernel(
      env, flag(info[7]), pins, result, [=] { kernels::info_nce(a, *out); },
      [out](Napi::Env e, Napi::Object r) {
        r.Set("loss", Napi::Number::New(e, out->loss));
        r.Set("accuracy", Napi::Number::New(e, out->accuracy));
      });
}

// ensembleMI(z [B, K, L], lengths, temperature, epsMode, async) -> { mi: f32 [B], confidence: f32 [B] }
Napi::Value EnsembleMi(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorObject* zt = TensorObject::From(env, info[0], "scores");
  TensorObject* lt = optional_tensor(env, info[1], "lengths");
  // Shape and count here; the lengths' values and the temperature inside the work (kernels/contract.h).
  const auto c = kernels::contract::ensemble_scores(zt->dtype(), zt->shape());
  if (lt) {
    require_dtype(lt, Dtype::I32, "lengths");
    kernels::contract::ensemble_length_count(lt->numel(), c);
  }
  const int64_t B = int64_t(c.batch), K = int64_t(c.members), L = int64_t(c.len);
  const float temperature = float(number_arg(info[2], "temperature"));
  const bool eps = flag(info[3]);
  Napi::Object result = Napi::Object::New(env);
  Napi::Object mi = TensorObject::Create(env, Dtype::F32, {B});
  Napi::Object conf = TensorObject::Create(env, Dtype::F32, {B});
  result.Set("mi", mi);
  result.Set("confidence", conf);
  const auto* zp = reinterpret_cast<const float*>(zt->data());
  const auto* lp = lt ? reinterpret_cast<const int32_t*>(lt->data()) : nullptr;
  float* mp = data_of<float>(mi);
  float* cp = data_of<float>(conf);
  return run_kernel(env, flag(info[4]), operands({info[0], info[1], mi, conf}), result, [=] {
    kernels::ensemble_mi(zp, size_t(B), size_t(K), size_t(L), lp, temperature, eps, mp, cp);
  });
}

}  // namespace

void register_losses(Napi::Env env, Napi::Object exports) {
  exports.Set("infoNce", Napi::Function::New<guarded<InfoNce>>(env, "infoNce"));
  exports.Set("ensembleMI", Napi::Function::New<guarded<EnsembleMi>>(env, "ensembleMI"));
}

}  // namespace quorum::napi
