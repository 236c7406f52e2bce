// N-API binding of kernels/came_search.h: argument checks and conversions only (docs/methods/came.md#serving).
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../kernels/came_search.h"
#include "args.h"
#include "errors.h"
#include "index_args.h"
#include "kernel_call.h"

namespace quorum::napi {
namespace {

// What one expert's work holds: the kernel's view and the native objects and arrays it points into.
struct ExpertHold {
  kernels::CameExpert x{};
  std::shared_ptr<kernels::SparseIndex> sparse;
  std::shared_ptr<kernels::CentroidIndex> centroids;
  std::vector<int64_t> starts, lengths;
};

kernels::CameFusion fusion_arg(const Napi::Value& v) {
  const std::string f = v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
  if (f == "sum") return kernels::CameFusion::kSum;
  if (f == "normsum") return kernels::CameFusion::kNormSum;
  if (f == "normmax") return kernels::CameFusion::kNormMax;
  if (f == "sumrr") return kernels::CameFusion::kSumRR;
  if (f == "maxrr") return kernels::CameFusion::kMaxRR;
  if (f == "linear") return kernels::CameFusion::kLinear;
  throw Error("ERR_ARG", "fusion must be one of sum, normsum, normmax, sumrr, maxrr, linear");
}

// cameSearch(plan, async) -> { ids: i32 [B, k], scores: Float64Array [B * k], counts: i32 [B],
//                              experts: [{ ids: i32 [B, K], scores: f32 [B, K], counts: i32 [B] }], ms: number[] }
//   plan = { batch, passages, k, expertK, fusion, weights?: number[] (linear), bias?, rows?: i32 [n] (ascending),
//            experts: [ { kind: 'lexical', index: SparseIndex, offsets, indices, values }
//                     | { kind: 'local', index: CentroidIndex, tokens: f32 [T, dim], lengths: i32 [passages],
//                         queries: f32 [Tq, dim], queryLengths: i32 [batch], nprobe, keep }
//                     | { kind: 'global', corpus: f32 | bf16 | f16 [passages, G], queries: f32 [batch, G] } ] }
Napi::Value CameSearch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw Error("ERR_ARG", "cameSearch needs a plan object");
  Napi::Object o = info[0].As<Napi::Object>();
  auto plan = std::make_shared<kernels::CameSearchPlan>();
  plan->batch = count_arg(o.Get("batch"), "batch", true);
  plan->passages = count_arg(o.Get("passages"), "passages", true);
  plan->k = count_arg(o.Get("k"), "k", true);
  plan->expert_k = count_arg(o.Get("expertK"), "expertK", true);
  plan->fusion = fusion_arg(o.Get("fusion"));
  const int64_t B = int64_t(plan->batch), N = int64_t(plan->passages);
  std::vector<Napi::Object> pins;
  const auto pin = [&](const Napi::Value& v) { pins.push_back(v.As<Napi::Object>()); };
  // Copied: JS may write to the array while the work runs. Null for no filter; an empty filter allows nothing.
  std::shared_ptr<std::vector<int32_t>> rows;
  if (const TensorObject* r = optional_tensor(env, o.Get("rows"), "rows")) {
    require_dtype(r, Dtype::I32, "rows");
    const auto* rp = reinterpret_cast<const int32_t*>(r->data());
    rows = std::make_shared<std::vector<int32_t>>(rp, rp + r->numel());
  }
  if (!o.Get("experts").IsArray()) throw Error("ERR_ARG", "experts must be an array");
  Napi::Array list = o.Get("experts").As<Napi::Array>();
  auto holds = std::make_shared<std::vector<ExpertHold>>(list.Length());
  for (uint32_t e = 0; e < list.Length(); e++) {
    if (!list.Get(e).IsObject()) throw Error("ERR_ARG", "experts[" + std::to_string(e) + "] must be an object");
    Napi::Object x = list.Get(e).As<Napi::Object>();
    ExpertHold& h = (*holds)[e];
    const std::string kind = x.Get("kind").IsString() ? x.Get("kind").As<Napi::String>().Utf8Value() : "";
    if (kind == "lexical") {
      h.x.kind = kernels::CameExpert::kLexical;
      h.sparse = sparse_index_arg(env, x.Get("index"), "the lexical index");
      TensorObject* off = TensorObject::From(env, x.Get("offsets"), "offsets");
      TensorObject* idx = TensorObject::From(env, x.Get("indices"), "indices");
      TensorObject* val = TensorObject::From(env, x.Get("values"), "values");
      require_dtype(off, Dtype::I64, "offsets");
      require_dtype(idx, Dtype::I32, "indices");
      require_dtype(val, Dtype::F32, "values");
      require_shape(off, {B + 1}, "offsets");
      need(idx->numel() == val->numel(), "ERR_SHAPE", "indices and values differ in length");
      h.x.sparse = h.sparse.get();
      h.x.sparse_q = {reinterpret_cast<const int64_t*>(off->data()), reinterpret_cast<const int32_t*>(idx->data()),
                      reinterpret_cast<const float*>(val->data()), plan->batch};
      h.x.sparse_nnz = idx->numel();
      for (const char* k : {"offsets", "indices", "values"}) pin(x.Get(k));
    } else if (kind == "local") {
      h.x.kind = kernels::CameExpert::kLocal;
      h.centroids = centroid_index_arg(env, x.Get("index"), "the token index");
      const int64_t dim = int64_t(h.centroids->dim());
      TensorObject* tok = TensorObject::From(env, x.Get("tokens"), "tokens");
      TensorObject* len = TensorObject::From(env, x.Get("lengths"), "lengths");
      TensorObject* q = TensorObject::From(env, x.Get("queries"), "question tokens");
      TensorObject* ql = TensorObject::From(env, x.Get("queryLengths"), "question token counts");
      require_dtype(tok, Dtype::F32, "tokens");
      require_shape(tok, {-1, dim}, "tokens");
      require_dtype(len, Dtype::I32, "lengths");
      require_shape(len, {N}, "lengths");
      require_dtype(q, Dtype::F32, "question tokens");
      require_shape(q, {-1, dim}, "question tokens");
      require_dtype(ql, Dtype::I32, "question token counts");
      require_shape(ql, {B}, "question token counts");
      // The lengths are read here, on the calling thread: the passages' token rows as the kernel's start / length.
      const auto* lp = reinterpret_cast<const int32_t*>(len->data());
      h.starts.resize(size_t(N));
      h.lengths.resize(size_t(N));
      int64_t at = 0;
      for (int64_t p = 0; p < N; p++) {
        if (lp[p] < 0) throw Error("ERR_RANGE", "a passage's token count is negative");
        h.starts[size_t(p)] = at;
        h.lengths[size_t(p)] = lp[p];
        at += lp[p];
      }
      need(at == tok->shape()[0], "ERR_SHAPE", "the passages' token counts do not add up to the token vectors");
      const auto* qlp = reinterpret_cast<const int32_t*>(ql->data());
      int64_t total = 0;
      for (int64_t b = 0; b < B; b++) total += qlp[b] < 0 ? 0 : qlp[b];
      need(total == q->shape()[0], "ERR_SHAPE", "the question token counts do not add up to the question tokens");
      h.x.centroids = h.centroids.get();
      h.x.tokens = reinterpret_cast<const float*>(tok->data());
      h.x.token_rows = size_t(tok->shape()[0]);
      h.x.q_tokens = reinterpret_cast<const float*>(q->data());
      h.x.q_lengths = qlp;
      h.x.nprobe = count_arg(x.Get("nprobe"), "nprobe", false);
      h.x.keep = count_arg(x.Get("keep"), "keep", false);
      for (const char* k : {"tokens", "queries", "queryLengths"}) pin(x.Get(k));
    } else if (kind == "global") {
      h.x.kind = kernels::CameExpert::kGlobal;
      TensorObject* c = TensorObject::From(env, x.Get("corpus"), "passage vectors");
      TensorObject* q = TensorObject::From(env, x.Get("queries"), "question vectors");
      need(c->dtype() == Dtype::F32 || c->dtype() == Dtype::BF16 || c->dtype() == Dtype::F16, "ERR_DTYPE", "passage vectors must be f32, bf16 or f16");
      require_shape(c, {N, -1}, "passage vectors");
      require_dtype(q, Dtype::F32, "question vectors");
      require_shape(q, {B, c->shape()[1]}, "question vectors");
      h.x.corpus = {c->data(), size_t(N), size_t(c->shape()[1]), c->dtype()};
      h.x.q = reinterpret_cast<const float*>(q->data());
      for (const char* k : {"corpus", "queries"}) pin(x.Get(k));
    } else {
      throw Error("ERR_ARG", "experts[" + std::to_string(e) + "].kind must be lexical, local or global");
    }
  }
  const size_t E = holds->size();
  auto weights = std::make_shared<std::vector<double>>();
  if (plan->fusion == kernels::CameFusion::kLinear) {
    if (!o.Get("weights").IsArray() || o.Get("weights").As<Napi::Array>().Length() != E)
      throw Error("ERR_ARG", "linear fusion needs one weight per expert");
    Napi::Array w = o.Get("weights").As<Napi::Array>();
    for (uint32_t e = 0; e < E; e++) weights->push_back(number_arg(w.Get(e), "weight"));
    plan->bias = o.Get("bias").IsUndefined() ? 0 : number_arg(o.Get("bias"), "bias");
  }
  Napi::Object result = Napi::Object::New(env);
  const int64_t K = int64_t(plan->expert_k);
  Napi::Object eids = TensorObject::Create(env, Dtype::I32, {int64_t(E), B, K}, false);
  Napi::Object escores = TensorObject::Create(env, Dtype::F32, {int64_t(E), B, K}, false);
  Napi::Object ecounts = TensorObject::Create(env, Dtype::I32, {int64_t(E), B}, false);
  Napi::Object ids = TensorObject::Create(env, Dtype::I32, {B, int64_t(plan->k)}, false);
  Napi::Object counts = TensorObject::Create(env, Dtype::I32, {B}, false);
  result.Set("expertIds", eids);
  result.Set("expertScores", escores);
  result.Set("expertCounts", ecounts);
  result.Set("ids", ids);
  result.Set("counts", counts);
  for (const auto& t : {eids, escores, ecounts, ids, counts}) pins.push_back(t);
  // Doubles have no tensor dtype: the fused scores and timings come back as plain arrays when the work ends.
  auto scores = std::make_shared<std::vector<double>>(size_t(B) * plan->k);
  auto ms = std::make_shared<std::vector<double>>(E + 1);
  const kernels::CameSearchOut out{data_of<int32_t>(eids), data_of<float>(escores), data_of<int32_t>(ecounts),
                                   data_of<int32_t>(ids),  scores->data(),          data_of<int32_t>(counts), ms->data()};
  return run_kernel(
      env, flag(info[1]), pins, result,
      [plan, holds, rows, weights, out] {
        std::vector<kernels::CameExpert> xs;
        for (const ExpertHold& h : *holds) {
          xs.push_back(h.x);
          if (h.x.kind == kernels::CameExpert::kLocal) {
            xs.back().token_starts = h.starts.data();
            xs.back().token_lengths = h.lengths.data();
          }
        }
        kernels::CameSearchPlan p = *plan;
        p.experts = xs.data();
        p.n_experts = xs.size();
        static const int32_t kNone = 0;
        p.rows = !rows ? nullptr : rows->empty() ? &kNone : rows->data();
        p.n_rows = rows ? rows->size() : 0;
        p.weights = weights->empty() ? nullptr : weights->data();
        kernels::came_search(p, out);
      },
      [scores, ms](Napi::Env e, Napi::Object r) {
        Napi::Float64Array s = Napi::Float64Array::New(e, scores->size());
        std::copy(scores->begin(), scores->end(), s.Data());
        r.Set("scores", s);
        Napi::Array t = Napi::Array::New(e, ms->size());
        for (uint32_t i = 0; i < ms->size(); i++) t.Set(i, Napi::Number::New(e, (*ms)[i]));
        r.Set("ms", t);
      });
}

}  // namespace

void register_came_search(Napi::Env env, Napi::Object exports) {
  exports.Set("cameSearch", Napi::Function::New<guarded<CameSearch>>(env, "cameSearch"));
}

}  // namespace quorum::napi
