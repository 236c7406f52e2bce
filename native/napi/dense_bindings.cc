// N-API bindings of kernels/dense_search.h: argument checks and conversions only.
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../kernels/contract.h"
#include "../kernels/dense_search.h"
#include "../kernels/pair_distance.h"
#include "args.h"
#include "corpus_arg.h"
#include "errors.h"
#include "kernel_call.h"
#include "tensor_object.h"

namespace quorum::napi {
namespace {

using kernels::CorpusMatrix;
using kernels::QueryMatrix;

// Queries f32 [rows, dim] and a corpus f32 / bf16 / f16 [rows, dim] (kernels/contract.h, shared with the CUDA
// module).
QueryMatrix queries(const TensorObject* q) {
  const auto s = kernels::contract::dense_queries(q->dtype(), q->shape());
  return {reinterpret_cast<const float*>(q->data()), s.rows, s.dim};
}

// A Tensor corpus (the contract's checks and messages, shared with the CUDA module) or a coded one (corpus_arg.h).
CorpusMatrix corpus(Napi::Env env, const Napi::Value& v, const QueryMatrix& q, std::vector<Napi::Object>& pins) {
  if (TensorObject* c = TensorObject::IsTensor(env, v) ? TensorObject::From(env, v, "corpus") : nullptr) {
    pins.push_back(v.As<Napi::Object>());
    return {c->data(), kernels::contract::dense_corpus(c->dtype(), c->shape(), q.dim), q.dim, c->dtype()};
  }
  return corpus_operand(env, v, "corpus", int64_t(q.dim), pins);
}

// A coded corpus's codes are finite by construction and its tables were checked when it was read.
void check_finite(const QueryMatrix& q, const CorpusMatrix& c) {
  if (!kernels::all_finite(q.data, q.rows * q.dim, Dtype::F32))
    throw Error("ERR_NONFINITE", "queries contain NaN or Infinity");
  if (c.coding == kernels::Coding::Plain && !kernels::all_finite(c.data, c.rows * c.dim, c.dtype))
    throw Error("ERR_NONFINITE", "corpus contains NaN or Infinity");
}

// scoreTopK(queries, corpus, k, checkFinite, async, rows?, full?, candidates?) -> { ids: i32 [B, k], scores: f32 [B, k] }
//   rows: i32 [M] strictly ascending: only those corpus rows are searched (a filter's allowed rows)
//   full, candidates: the best `candidates` (>= k) rows of `corpus` are rescored with the vectors of `full` (a plain or
//   int8 corpus of the same rows) and the best k of them returned: an oversampled quantized search
//   (docs/methods/quantization.md), in one call.
Napi::Value ScoreTopK(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorObject* qt = TensorObject::From(env, info[0], "queries");
  QueryMatrix q = queries(qt);
  std::vector<Napi::Object> pins{info[0].As<Napi::Object>()};
  CorpusMatrix c = corpus(env, info[1], q, pins);
  const size_t k = k_arg(info[2]);
  bool finite = flag(info[3]);
  const TensorObject* rt = optional_tensor(env, info[5], "rows");
  std::shared_ptr<std::vector<int32_t>> rows = rt ? allowed_rows(rt, c.rows) : nullptr;
  const bool rescore = !info[6].IsUndefined() && !info[6].IsNull();
  CorpusMatrix full{};
  size_t m = k;
  if (rescore) {
    full = corpus_operand(env, info[6], "rescore vectors", int64_t(q.dim), pins);
    if (full.coding == kernels::Coding::Binary)
      throw Error("ERR_ARG", "rescore vectors must be f32, bf16, f16 or int8, not binary");
    if (full.rows != c.rows)
      throw Error("ERR_SHAPE", "rescore vectors hold " + std::to_string(full.rows) + " rows for a corpus of " +
                                   std::to_string(c.rows));
    m = k_arg(info[7]);
    if (m < k) throw Error("ERR_ARG", "candidates must be at least k");
  }
  Napi::Object ids = TensorObject::Create(env, Dtype::I32, {int64_t(q.rows), int64_t(k)});
  Napi::Object scores = TensorObject::Create(env, Dtype::F32, {int64_t(q.rows), int64_t(k)});
  auto* ip = reinterpret_cast<int32_t*>(Napi::ObjectWrap<TensorObject>::Unwrap(ids)->data());
  auto* sp = reinterpret_cast<float*>(Napi::ObjectWrap<TensorObject>::Unwrap(scores)->data());
  Napi::Object result = Napi::Object::New(env);
  result.Set("ids", ids);
  result.Set("scores", scores);
  pins.push_back(ids);
  pins.push_back(scores);
  return run_kernel(env, flag(info[4]), pins, result,
                    [=] {
                      if (finite) check_finite(q, c);
                      if (finite && rescore) check_finite(q, full);
                      // An empty vector's data() may be null, which the kernel reads as "every row".
                      static const int32_t kNoRow = 0;
                      const int32_t* rp = rows ? (rows->empty() ? &kNoRow : rows->data()) : nullptr;
                      const size_t nr = rows ? rows->size() : 0;
                      if (!rescore) return kernels::score_topk(q, c, k, ip, sp, rp, nr);
                      kernels::score_topk_rescored(q, c, full, m, k, ip, sp, rp, nr);
                    });
}

// scoreMatrix(queries, corpus, checkFinite, async) -> f32 [B, N]
Napi::Value ScoreMatrix(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  QueryMatrix q = queries(TensorObject::From(env, info[0], "queries"));
  std::vector<Napi::Object> pins{info[0].As<Napi::Object>()};
  CorpusMatrix c = corpus(env, info[1], q, pins);
  bool finite = flag(info[2]);
  Napi::Object out = TensorObject::Create(env, Dtype::F32, {int64_t(q.rows), int64_t(c.rows)});
  auto* op = reinterpret_cast<float*>(Napi::ObjectWrap<TensorObject>::Unwrap(out)->data());
  pins.push_back(out);
  return run_kernel(env, flag(info[3]), pins, out, [=] {
    if (finite) check_finite(q, c);
    kernels::score_matrix(q, c, op);
  });
}

// gatherScores(queries, corpus, ids, checkFinite, async) -> f32 [B, m]
Napi::Value GatherScores(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  QueryMatrix q = queries(TensorObject::From(env, info[0], "queries"));
  std::vector<Napi::Object> pins{info[0].As<Napi::Object>()};
  CorpusMatrix c = corpus(env, info[1], q, pins);
  TensorObject* it = TensorObject::From(env, info[2], "ids");
  pins.push_back(info[2].As<Napi::Object>());
  if (it->dtype() != Dtype::I32 && it->dtype() != Dtype::I64)
    throw Error("ERR_DTYPE", std::string("ids must be i32 or i64, got ") + dtype_name(it->dtype()));
  if (it->shape().size() != 2 || size_t(it->shape()[0]) != q.rows)
    throw Error("ERR_SHAPE", "ids must be [" + std::to_string(q.rows) + ", m], got shape " + shape_str(it->shape()));
  size_t m = size_t(it->shape()[1]);
  const void* idp = it->data();
  bool ids64 = it->dtype() == Dtype::I64;
  bool finite = flag(info[3]);
  Napi::Object out = TensorObject::Create(env, Dtype::F32, {int64_t(q.rows), int64_t(m)});
  auto* op = reinterpret_cast<float*>(Napi::ObjectWrap<TensorObject>::Unwrap(out)->data());
  pins.push_back(out);
  return run_kernel(env, flag(info[4]), pins, out,
                    [=] {
                      if (finite) check_finite(q, c);
                      kernels::gather_scores(q, c, idp, ids64, m, op);
                    });
}

// convert(tensor, dtypeCode, async) -> new tensor of that dtype and the same shape
Napi::Value Convert(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorObject* src = TensorObject::From(env, info[0], "tensor");
  int code = info[1].IsNumber() ? info[1].As<Napi::Number>().Int32Value() : -1;
  if (code < 0 || code > 5) throw Error("ERR_DTYPE", "unknown dtype code");
  Dtype from = src->dtype(), to = Dtype(code);
  if (!dtype_is_float(from) || !dtype_is_float(to))
    throw Error("ERR_DTYPE", std::string("cannot convert ") + dtype_name(from) + " to " + dtype_name(to) +
                                 ": only f32, bf16 and f16 convert");
  Napi::Object out = TensorObject::Create(env, to, src->shape());
  void* dst = Napi::ObjectWrap<TensorObject>::Unwrap(out)->data();
  const void* sp = src->data();
  size_t n = src->numel();
  return run_kernel(env, flag(info[2]), {info[0].As<Napi::Object>(), out}, out,
                    [=] { kernels::convert(sp, from, dst, to, n); });
}

}  // namespace

// pairDistance(a f32 [n], b f32 [n], "dot" | "l2sq") -> number. The HNSW distance kernel of the faiss module,
// exposed so that tests check every ISA variant against the reference (internal).
Napi::Value PairDistance(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorObject* a = TensorObject::From(env, info[0], "a");
  TensorObject* b = TensorObject::From(env, info[1], "b");
  require_dtype(a, Dtype::F32, "a");
  require_dtype(b, Dtype::F32, "b");
  if (a->numel() != b->numel()) throw Error("ERR_SHAPE", "a and b differ in length");
  const std::string kind = info[2].IsString() ? info[2].As<Napi::String>().Utf8Value() : "";
  if (kind != "dot" && kind != "l2sq") throw Error("ERR_ARG", "kind must be 'dot' or 'l2sq'");
  const auto& ops = kernels::pair_distance();
  const auto* pa = reinterpret_cast<const float*>(a->data());
  const auto* pb = reinterpret_cast<const float*>(b->data());
  return Napi::Number::New(env, kind == "dot" ? ops.dot(pa, pb, a->numel()) : ops.l2sq(pa, pb, a->numel()));
}

void register_dense(Napi::Env env, Napi::Object exports) {
  exports.Set("pairDistance", Napi::Function::New<guarded<PairDistance>>(env, "pairDistance"));
  exports.Set("scoreTopK", Napi::Function::New<guarded<ScoreTopK>>(env, "scoreTopK"));
  exports.Set("scoreMatrix", Napi::Function::New<guarded<ScoreMatrix>>(env, "scoreMatrix"));
  exports.Set("gatherScores", Napi::Function::New<guarded<GatherScores>>(env, "gatherScores"));
  exports.Set("convert", Napi::Function::New<guarded<Convert>>(env, "convert"));
}

}  // namespace quorum::napi
