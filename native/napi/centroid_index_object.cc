// The native object behind CAME's TokenIndex (lib/methods/came/token-index.ts): a kernels::CentroidIndex held
// through a shared_ptr, so async work keeps it alive if the JS object is disposed or collected meanwhile.
#include <napi.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../kernels/centroid_index.h"
#include "addon_data.h"
#include "args.h"
#include "errors.h"
#include "index_args.h"
#include "kernel_call.h"

namespace quorum::napi {
namespace {

class CentroidIndexObject : public Napi::ObjectWrap<CentroidIndexObject> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "CentroidIndex",
                       {InstanceMethod<&CentroidIndexObject::Candidates>("candidates"),
                        InstanceMethod<&CentroidIndexObject::Dispose>("dispose"),
                        InstanceMethod<&CentroidIndexObject::IsDisposed>("isDisposed")});
  }

  // new CentroidIndex(centroids f32 [C, dim], codes i32 [tokens], lengths i32 [passages])
  explicit CentroidIndexObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<CentroidIndexObject>(info) {
    guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      TensorObject* c = TensorObject::From(env, info[0], "centroids");
      require_dtype(c, Dtype::F32, "centroids");
      require_shape(c, {-1, -1}, "centroids");
      TensorObject* codes = TensorObject::From(env, info[1], "codes");
      require_dtype(codes, Dtype::I32, "codes");
      TensorObject* lengths = TensorObject::From(env, info[2], "lengths");
      require_dtype(lengths, Dtype::I32, "lengths");
      index_ = std::make_shared<kernels::CentroidIndex>(
          reinterpret_cast<const float*>(c->data()), size_t(c->shape()[0]), size_t(c->shape()[1]),
          reinterpret_cast<const int32_t*>(codes->data()), codes->numel(),
          reinterpret_cast<const int32_t*>(lengths->data()), lengths->numel());
      return env.Undefined();
    });
  }

 // The index, or ERR_DISPOSED after dispose(); queued work holds its own reference.
  std::shared_ptr<kernels::CentroidIndex> held() const {
    if (!index_) throw Error("ERR_DISPOSED", "this token index was disposed");
    return index_;
  }

 private:
  // candidates(queries f32 [lq, dim], nprobe, keep, allowed i32 [n] | null, async) -> { rows: i32 [keep], scores: f32 [keep], count }
  //   the first `count` entries hold the candidates, best first; allowed is copied and checked here.
  Napi::Value Candidates(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto index = held();
      TensorObject* q = TensorObject::From(env, info[0], "question tokens");
      require_dtype(q, Dtype::F32, "question tokens");
      require_shape(q, {-1, int64_t(index->dim())}, "question tokens");
      const double nprobe = number_arg(info[1], "nprobe");
      need(nprobe >= 0 && nprobe == std::floor(nprobe), "ERR_RANGE", "nprobe must be a non-negative integer");
      const size_t keep = k_arg(info[2]);
      std::shared_ptr<std::vector<int32_t>> allowed;
      if (const TensorObject* a = optional_tensor(env, info[3], "allowed passages")) {
        require_dtype(a, Dtype::I32, "allowed passages");
        const auto* ap = reinterpret_cast<const int32_t*>(a->data());
        allowed = std::make_shared<std::vector<int32_t>>(ap, ap + a->numel());
        for (int32_t r : *allowed)
          need(r >= 0 && size_t(r) < index->passages(), "ERR_RANGE", [&] {
            return "allowed passage " + std::to_string(r) + " is not a row of the " + std::to_string(index->passages()) + " passages";
          });
      }
      Napi::Object rows = TensorObject::Create(env, Dtype::I32, {int64_t(keep)}, false);
      Napi::Object scores = TensorObject::Create(env, Dtype::F32, {int64_t(keep)}, false);
      Napi::Object result = Napi::Object::New(env);
      result.Set("rows", rows);
      result.Set("scores", scores);
      auto* rp = data_of<int32_t>(rows);
      auto* sp = data_of<float>(scores);
      const auto* qp = reinterpret_cast<const float*>(q->data());
      const auto lq = size_t(q->shape()[0]);
      auto count = std::make_shared<size_t>(0);
      return run_kernel(
          env, flag(info[4]), operands({info[0], rows, scores}), result,
          [=] {
            *count = index->candidates(qp, lq, size_t(nprobe), allowed ? allowed->data() : nullptr,
                                       allowed ? allowed->size() : 0, keep, rp, sp);
          },
          [count](Napi::Env e, Napi::Object r) { r.Set("count", Napi::Number::New(e, double(*count))); });
    });
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    index_.reset();
    return info.Env().Undefined();
  }

  Napi::Value IsDisposed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), !index_); }

  std::shared_ptr<kernels::CentroidIndex> index_;
};

}  // namespace

void register_centroid_index(Napi::Env env, Napi::Object exports) {
  Napi::Function ctor = CentroidIndexObject::Init(env);
  addon_data(env).centroid_index_ctor = Napi::Persistent(ctor);
  exports.Set("CentroidIndex", ctor);
}

std::shared_ptr<kernels::CentroidIndex> centroid_index_arg(Napi::Env env, const Napi::Value& v, const char* what) {
  return wrapped_arg<CentroidIndexObject>(v, addon_data(env).centroid_index_ctor, what, "CentroidIndex");
}

}  // namespace quorum::napi
