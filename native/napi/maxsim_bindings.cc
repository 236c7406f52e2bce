// N-API bindings of kernels/maxsim.h: argument checks and conversions only.
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../kernels/maxsim.h"
#include "args.h"
#include "errors.h"
#include "kernel_call.h"

namespace quorum::napi {
namespace {

// Queries [lq, dim] (one query) or [nq, lq, dim], f32, with an optional u8 mask of nq * lq entries.
kernels::TokenQueries token_queries(const TensorObject* q, const TensorObject* mask) {
  require_dtype(q, Dtype::F32, "queries");
  const auto& s = q->shape();
  if (s.size() != 2 && s.size() != 3)
    throw Error("ERR_SHAPE", "queries must be [Lq, dim] or [nq, Lq, dim], got " + shape_str(s));
  kernels::TokenQueries t{reinterpret_cast<const float*>(q->data()), s.size() == 3 ? size_t(s[0]) : 1,
                          size_t(s[s.size() - 2]), size_t(s.back()), nullptr};
  if (t.dim == 0) throw Error("ERR_SHAPE", "query token vectors have dimension 0");
  if (mask) {
    require_dtype(mask, Dtype::U8, "queryMask");
    if (mask->numel() != t.nq * t.lq)
      throw Error("ERR_SHAPE", "queryMask must hold nq * Lq = " + std::to_string(t.nq * t.lq) + " entries, got " +
                                   std::to_string(mask->numel()));
    t.mask = mask->data();
  }
  return t;
}

// Documents packed [sum Ld, dim] or padded [N, Ld, dim], with lengths i32 [N] and an optional u8 token
// mask over all token rows. The start/length arrays live in `keep` for the duration of the call.
kernels::TokenDocs token_docs(const TensorObject* d, const TensorObject* lengths, const TensorObject* mask,
                              size_t dim, std::shared_ptr<std::vector<int64_t>>& keep) {
  if (d->dtype() != Dtype::F32 && d->dtype() != Dtype::BF16 && d->dtype() != Dtype::F16)
    throw Error("ERR_DTYPE", std::string("documents must be f32, bf16 or f16, got ") + dtype_name(d->dtype()));
  const auto& s = d->shape();
  if (s.size() != 2 && s.size() != 3)
    throw Error("ERR_SHAPE", "documents must be packed [tokens, dim] or padded [N, Ld, dim], got " + shape_str(s));
  if (size_t(s.back()) != dim)
    throw Error("ERR_SHAPE", "document dimension " + std::to_string(s.back()) + " differs from the queries' " +
                                 std::to_string(dim));
  require_dtype(lengths, Dtype::I32, "lengths");
  if (lengths->shape().size() != 1) throw Error("ERR_SHAPE", "lengths must be 1-D [N], got " + shape_str(lengths->shape()));
  const size_t n = size_t(lengths->shape()[0]);
  const auto* len = reinterpret_cast<const int32_t*>(lengths->data());
  const size_t rows = s.size() == 3 ? size_t(s[0] * s[1]) : size_t(s[0]);
  keep = std::make_shared<std::vector<int64_t>>(2 * n);
  int64_t* start = keep->data();
  int64_t* length = keep->data() + n;
  int64_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    if (len[i] < 0) throw Error("ERR_RANGE", "length " + std::to_string(len[i]) + " of document " + std::to_string(i) + " is negative");
    length[i] = len[i];
    if (s.size() == 3) {
      if (n != size_t(s[0])) throw Error("ERR_SHAPE", "padded documents [N, Ld, dim] need N = " + std::to_string(s[0]) + " lengths, got " + std::to_string(n));
      if (len[i] > s[1]) throw Error("ERR_RANGE", "length " + std::to_string(len[i]) + " of document " + std::to_string(i) + " exceeds the padded length " + std::to_string(s[1]));
      start[i] = int64_t(i) * s[1];
    } else {
      start[i] = at;
      at += len[i];
    }
  }
  if (s.size() == 2 && size_t(at) != rows)
    throw Error("ERR_SHAPE", "document lengths sum to " + std::to_string(at) + " but the packed documents hold " +
                                 std::to_string(rows) + " token rows");
  const uint8_t* tm = nullptr;
  if (mask) {
    require_dtype(mask, Dtype::U8, "tokenMask");
    if (mask->numel() != rows)
      throw Error("ERR_SHAPE", "tokenMask must hold one entry per token row (" + std::to_string(rows) + "), got " +
                                   std::to_string(mask->numel()));
    tm = mask->data();
  }
  return {d->data(), d->dtype(), rows, dim, n, start, length, tm};
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
