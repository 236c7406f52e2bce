// N-API bindings of kernels/maxsim.h: argument checks and conversions only.
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../kernels/contract.h"
#include "../kernels/maxsim.h"
#include "args.h"
#include "errors.h"
#include "kernel_call.h"

namespace quorum::napi {
namespace {

// Queries [lq, dim] (one query) or [nq, lq, dim], f32, with an optional u8 mask of nq * lq entries
// (kernels/contract.h, shared with the CUDA module).
kernels::TokenQueries token_queries(const TensorObject* q, const TensorObject* mask) {
  const auto s = kernels::contract::maxsim_queries(q->dtype(), q->shape());
  kernels::TokenQueries t{reinterpret_cast<const float*>(q->data()), s.nq, s.lq, s.dim, nullptr};
  if (mask) {
    require_dtype(mask, Dtype::U8, "queryMask");
    kernels::contract::maxsim_query_mask(mask->numel(), s);
    t.mask = mask->data();
  }
  return t;
}

// Documents packed [sum Ld, dim] or padded [N, Ld, dim], with lengths i32 [N] and an optional u8 token
// mask over all token rows. The start/length arrays live in `keep` for the duration of the call.
kernels::TokenDocs token_docs(const TensorObject* d, const TensorObject* lengths, const TensorObject* mask,
                              size_t dim, std::shared_ptr<std::vector<int64_t>>& keep) {
  require_dtype(lengths, Dtype::I32, "lengths");
  if (lengths->shape().size() != 1) throw Error("ERR_SHAPE", "lengths must be 1-D [N], got " + shape_str(lengths->shape()));
  const size_t n = size_t(lengths->shape()[0]);
  keep = std::make_shared<std::vector<int64_t>>(2 * n);
  int64_t* start = keep->data();
  const size_t rows = kernels::contract::maxsim_documents(d->dtype(), d->shape(), dim,
                                                          reinterpret_cast<const int32_t*>(lengths->data()), n, start,
                                                          start + n);
  const uint8_t* tm = nullptr;
  if (mask) {
    require_dtype(mask, Dtype::U8, "tokenMask");
    kernels::contract::maxsim_token_mask(mask->numel(), rows);
    tm = mask->data();
  }
  return {d->data(), d->dtype(), rows, dim, n, start, start + n, tm};
}

// Narrows `d` to the documents `select` names, in its order (the candidates of a first stage, scored in place:
// docs/methods/came.md#serving). The new start/length arrays replace `keep`.
void select_docs(kernels::TokenDocs& d, const TensorObject* select, std::shared_ptr<std::vector<int64_t>>& keep) {
  require_dtype(select, Dtype::I32, "select");
  if (select->shape().size() != 1) throw Error("ERR_SHAPE", "select must be 1-D [M], got " + shape_str(select->shape()));
  const size_t m = select->numel();
  const auto* ids = reinterpret_cast<const int32_t*>(select->data());
  auto sub = std::make_shared<std::vector<int64_t>>(2 * m);
  for (size_t i = 0; i < m; ++i) {
    if (ids[i] < 0 || size_t(ids[i]) >= d.n)
      throw Error("ERR_RANGE", "select[" + std::to_string(i) + "] = " + std::to_string(ids[i]) + " is not a document (0.." +
                                   std::to_string(d.n) + ")");
    (*sub)[i] = d.start[ids[i]];
    (*sub)[m + i] = d.length[ids[i]];
  }
  keep = std::move(sub);
  d.n = m;
  d.start = keep->data();
  d.length = keep->data() + m;
}

// maxSim(queries, queryMask, docs, lengths, tokenMask, clampZero, wantArgmax, async, select?)
//   -> { scores: f32 [nq, N or M], argmax?: i32 [nq, N or M, Lq] }
Napi::Value MaxSim(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto q = token_queries(TensorObject::From(env, info[0], "queries"), optional_tensor(env, info[1], "queryMask"));
  std::shared_ptr<std::vector<int64_t>> keep;
  auto d = token_docs(TensorObject::From(env, info[2], "documents"), TensorObject::From(env, info[3], "lengths"),
                      optional_tensor(env, info[4], "tokenMask"), q.dim, keep);
  const TensorObject* select = optional_tensor(env, info[8], "select");
  if (select) select_docs(d, select, keep);
  bool clamp = flag(info[5]);
  Napi::Object result = Napi::Object::New(env);
  Napi::Object scores = TensorObject::Create(env, Dtype::F32, {int64_t(q.nq), int64_t(d.n)});
  result.Set("scores", scores);
  int32_t* argmax = nullptr;
  std::vector<Napi::Object> pins = operands({info[0], info[1], info[2], info[3], info[4], info[8], scores});
  if (flag(info[6])) {
    Napi::Object am = TensorObject::Create(env, Dtype::I32, {int64_t(q.nq), int64_t(d.n), int64_t(q.lq)});
    result.Set("argmax", am);
    pins.push_back(am);
    argmax = data_of<int32_t>(am);
  }
  float* sp = data_of<float>(scores);
  return run_kernel(env, flag(info[7]), pins, result, [=] { kernels::maxsim(q, d, clamp, sp, argmax); (void)keep; });
}

// maxSimBackward(queries, queryMask, docs, lengths, tokenMask, argmax, grad, async)
//   -> { dQueries: f32 like queries, dDocuments: f32 like docs }
Napi::Value MaxSimBackward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorObject* qt = TensorObject::From(env, info[0], "queries");
  auto q = token_queries(qt, optional_tensor(env, info[1], "queryMask"));
  std::shared_ptr<std::vector<int64_t>> keep;
  TensorObject* dt = TensorObject::From(env, info[2], "documents");
  auto d = token_docs(dt, TensorObject::From(env, info[3], "lengths"), optional_tensor(env, info[4], "tokenMask"),
                      q.dim, keep);
  TensorObject* at = TensorObject::From(env, info[5], "argmax");
  require_dtype(at, Dtype::I32, "argmax");
  require_shape(at, {int64_t(q.nq), int64_t(d.n), int64_t(q.lq)}, "argmax");
  TensorObject* gt = TensorObject::From(env, info[6], "grad");
  require_dtype(gt, Dtype::F32, "grad");
  require_shape(gt, {int64_t(q.nq), int64_t(d.n)}, "grad");
  // maxsim_backward clears both before accumulating: no second zero fill here.
  Napi::Object dq = TensorObject::Create(env, Dtype::F32, qt->shape(), false);
  Napi::Object dd = TensorObject::Create(env, Dtype::F32, dt->shape(), false);
  Napi::Object result = Napi::Object::New(env);
  result.Set("dQueries", dq);
  result.Set("dDocuments", dd);
  const auto* am = reinterpret_cast<const int32_t*>(at->data());
  const auto* g = reinterpret_cast<const float*>(gt->data());
  float* dqp = data_of<float>(dq);
  float* ddp = data_of<float>(dd);
  return run_kernel(env, flag(info[7]), operands({info[0], info[1], info[2], info[3], info[4], info[5], info[6], dq, dd}),
                    result, [=] {
                      kernels::maxsim_backward(q, d, am, g, dqp, ddp);
                      (void)keep;
                    });
}

}  // namespace

void register_maxsim(Napi::Env env, Napi::Object exports) {
  exports.Set("maxSim", Napi::Function::New<guarded<MaxSim>>(env, "maxSim"));
  exports.Set("maxSimBackward", Napi::Function::New<guarded<MaxSimBackward>>(env, "maxSimBackward"));
}

}  // namespace quorum::napi
