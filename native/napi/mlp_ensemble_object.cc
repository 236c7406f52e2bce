// The MUF ensemble heads (native/torch/mlp_ensemble.h) as a JS class of quorum_torch: converts and validates, runs
// training steps and scoring now or on the libuv pool under the ensemble's mutex. The big tables (question and
// passage vectors) are read in place from the caller's Float32Arrays, which stay referenced until the work ends.
#include <napi.h>
#include "../torch/torch_includes.h"

#include <cstring>
#include <memory>
#include <string>

#include "../torch/mlp_ensemble.h"
#include "async_call.h"
#include "errors.h"
#include "process_group_object.h"
#include "scalar_args.h"
#include "torch_args.h"

namespace quorum::napi {
namespace {

using torchx::MlpEnsemble;

// A [rows, dim] view of a Float32Array (no copy); rows from its length.
torch::Tensor table_of(Napi::Float32Array a, int64_t dim, const char* what) {
  if (a.ElementLength() == 0 || a.ElementLength() % size_t(dim))
    throw Error("ERR_SHAPE", std::string(what) + " must hold rows x " + std::to_string(dim) + " floats (rows >= 1)");
  return torch::from_blob(a.Data(), {int64_t(a.ElementLength()) / dim, dim}, torch::kFloat);
}

class MlpEnsembleObject : public TorchObject<MlpEnsembleObject, MlpEnsemble> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "MlpEnsemble",
                       with_parameter_methods({InstanceMethod<&MlpEnsembleObject::Info>("info"),
                                               InstanceMethod<&MlpEnsembleObject::Step>("step"),
                                               InstanceMethod<&MlpEnsembleObject::Score>("score"),
                                               InstanceMethod<&MlpEnsembleObject::Members>("members")}));
  }

  explicit MlpEnsembleObject(const Napi::CallbackInfo& info) : TorchObject<MlpEnsembleObject, MlpEnsemble>(info) {
    create(info, [&] {
      Napi::Object o = object_arg(info[0], "ensemble config");
      torchx::EnsembleConfig c;
      c.dim = int_field(o, "dim", -1);
      c.hidden = int_field(o, "hidden", c.hidden);
      c.layers = int_field(o, "layers", c.layers);
      c.members = int_field(o, "members", c.members);
      return std::make_shared<MlpEnsemble>(c);
    });
  }

 private:
  Napi::Value Info(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      std::lock_guard<std::mutex> lock(live()->mutex());
      return Napi::Value(count_info(info.Env()));
    });
  }

  // step(questions: F32 [Nq*dim], passages: F32 [Np*dim], qRows: I32 [K*b], pRows: I32 [K*b*group], group, lr,
  //      clip, async, ranks?) -> { loss, memberLoss: Float64Array [K], correct, questions } (with a group of ranks:
  //      the whole sub-batches' figures)
  Napi::Value Step(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      const int64_t dim = live()->config().dim;
      auto qa = typed_array<Napi::Float32Array>(info[0], "questions");
      auto pa = typed_array<Napi::Float32Array>(info[1], "passages");
      torch::Tensor q = table_of(qa, dim, "questions"), p = table_of(pa, dim, "passages");
      torch::Tensor q_rows = long_tensor(typed_array<Napi::Int32Array>(info[2], "qRows"),
                                         {int64_t(info[2].As<Napi::TypedArray>().ElementLength())}, 0, q.size(0), "qRows");
      torch::Tensor p_rows = long_tensor(typed_array<Napi::Int32Array>(info[3], "pRows"),
                                         {int64_t(info[3].As<Napi::TypedArray>().ElementLength())}, 0, p.size(0), "pRows");
      const double group = number_arg(info[4], "group");
      if (group < 1 || group != double(int64_t(group))) throw Error("ERR_RANGE", "group must be an integer >= 1");
      const double lr = number_arg(info[5], "lr"), clip = number_arg(info[6], "clip");
      auto ranks = group_arg(info[8]);
      auto stats = std::make_shared<torchx::EnsembleStepStats>();
      auto model = live();
      return run(env, info[7], {qa, pa}, Napi::Object::New(env),
                 [=] { *stats = model->step(q, p, q_rows, p_rows, int64_t(group), lr, clip, ranks.get()); },
                 [stats](Napi::Env e, Napi::Object result) {
                   result.Set("loss", stats->loss);
                   Napi::Float64Array ml = Napi::Float64Array::New(e, stats->member_loss.size());
                   for (size_t i = 0; i < stats->member_loss.size(); ++i) ml[i] = stats->member_loss[i];
                   result.Set("memberLoss", ml);
                   result.Set("correct", double(stats->correct));
                   result.Set("questions", double(stats->questions));
                 });
    });
  }

  // score(q: F32 [B*dim], passages: F32 [N*dim], ids: I32 [B*L], L, out: F32 [B*K*L], async) -> out
  Napi::Value Score(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      const int64_t dim = live()->config().dim, K = live()->config().members;
      auto qa = typed_array<Napi::Float32Array>(info[0], "queries");
      auto pa = typed_array<Napi::Float32Array>(info[1], "passages");
      torch::Tensor q = table_of(qa, dim, "queries"), p = table_of(pa, dim, "passages");
      const double L = number_arg(info[3], "L");
      if (L < 1 || L != double(int64_t(L))) throw Error("ERR_RANGE", "L must be an integer >= 1");
      const int64_t B = q.size(0);
      auto ida = typed_array<Napi::Int32Array>(info[2], "ids");
      if (int64_t(ida.ElementLength()) != B * int64_t(L))
        throw Error("ERR_SHAPE", "ids must hold queries x L = " + std::to_string(B * int64_t(L)) + " values");
      torch::Tensor ids = long_tensor(ida, {B, int64_t(L)}, 0, p.size(0), "ids");
      auto out = typed_array<Napi::Float32Array>(info[4], "out");
      if (int64_t(out.ElementLength()) != B * K * int64_t(L))
        throw Error("ERR_SHAPE", "out must hold queries x members x L = " + std::to_string(B * K * int64_t(L)) + " floats");
      float* dst = out.Data();
      auto model = live();
      Napi::Object result = out;
      return run(env, info[5], {qa, pa, result}, result, [=] {
        torch::Tensor z = model->score(q, p, ids);
        std::memcpy(dst, z.data_ptr<float>(), size_t(z.numel()) * sizeof(float));
      });
    });
  }

  // members(q: F32 [B*dim], async) -> F32 [B*K*dim]
  Napi::Value Members(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      const int64_t dim = live()->config().dim, K = live()->config().members;
      auto qa = typed_array<Napi::Float32Array>(info[0], "queries");
      torch::Tensor q = table_of(qa, dim, "queries");
      Napi::Float32Array out = Napi::Float32Array::New(env, size_t(q.size(0) * K * dim));
      float* dst = out.Data();
      auto model = live();
      Napi::Object result = out;
      return run(env, info[1], {qa, result}, result, [=] {
        torch::Tensor m = model->members(q);
        std::memcpy(dst, m.data_ptr<float>(), size_t(m.numel()) * sizeof(float));
      });
    });
  }

};

}  // namespace

Napi::Function MlpEnsembleClass(Napi::Env env) { return MlpEnsembleObject::Init(env); }

}  // namespace quorum::napi
