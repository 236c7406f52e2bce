// N-API binding of kernels/muf_heads.h: argument checks and conversions only (docs/methods/muf.md, Serving).
#include <napi.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../kernels/muf_fuse.h"
#include "../kernels/muf_heads.h"
#include "../kernels/muf_search.h"
#include "args.h"
#include "corpus_arg.h"
#include "embedding_bag_args.h"
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

// An expert's heads: `members` and `weights` [Wt_0, b_0, ..., Wt_last, b_last] (each weight transposed, a row per
// output unit), checked to chain from dim back to dim; the layer table filled, the tensors pinned. Returns K.
size_t read_heads(Napi::Env env, const Napi::Object& o, const std::string& who, int64_t D, std::vector<kernels::HeadsLayer>& layers,
                  std::vector<Napi::Object>& pins) {
  const double K = number_arg(o.Get("members"), "members");
  if (!(K >= 1) || K != double(int64_t(K))) throw Error("ERR_RANGE", who + ": members must be a positive integer");
  if (!o.Get("weights").IsArray()) throw Error("ERR_ARG", who + ": weights must be an array of tensors");
  Napi::Array w = o.Get("weights").As<Napi::Array>();
  if (w.Length() < 2 || w.Length() % 2 != 0)
    throw Error("ERR_SHAPE", who + ": weights must be pairs (W, b) of at least one layer");
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
    layers.push_back({wt->data(), wt->dtype(), reinterpret_cast<const float*>(bt->data()), size_t(in), size_t(out)});
    pins.push_back(w.Get(i).As<Napi::Object>());
    pins.push_back(w.Get(i + 1).As<Napi::Object>());
    in = out;
  }
  if (in != D) throw Error("ERR_SHAPE", who + ": the last layer gives " + std::to_string(in) + " values for " + std::to_string(D) + "-d passages");
  return size_t(K);
}

// A corpus-row argument (passages, familiarity banks): f32, bf16 or f16 [rows, D] (D -1: any width), or a coded
// corpus (int8 / binary passages: corpus_arg.h).
kernels::CorpusMatrix corpus_arg(Napi::Env env, const Napi::Value& v, const std::string& who, const char* what, int64_t D,
                                 std::vector<Napi::Object>& pins) {
  return corpus_operand(env, v, who + ": " + what, D, pins);
}

// A fusion's tie ranks: i32 [rows] (pinned), or null when v is undefined or null.
const int32_t* tie_rank_arg(Napi::Env env, const Napi::Value& v, int64_t rows, std::vector<Napi::Object>& pins) {
  const TensorObject* tr = optional_tensor(env, v, "tieRank");
  if (!tr) return nullptr;
  require_dtype(tr, Dtype::I32, "tieRank");
  require_shape(tr, {rows}, "tieRank");
  pins.push_back(v.As<Napi::Object>());
  return reinterpret_cast<const int32_t*>(tr->data());
}

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
    require_dtype(qt, Dtype::F32, "queries");
    require_shape(qt, {-1, -1}, "queries");
    if (B < 0) B = qt->shape()[0];
    const int64_t D = qt->shape()[1];
    require_shape(qt, {B, D}, "queries");
    if (D == 0) throw Error("ERR_SHAPE", who + ": queries have dimension 0");
    const kernels::CorpusMatrix passages = corpus_arg(env, o.Get("passages"), who, "passages", D, pins);
    TensorObject* it = TensorObject::From(env, o.Get("ids"), "ids");
    require_dtype(it, Dtype::I32, "ids");
    require_shape(it, {B, -1}, "ids");
    const int64_t L = it->shape()[1];
    if (L == 0) throw Error("ERR_SHAPE", who + ": ids has no candidates");
    ExpertArg& a = (*experts)[x];
    const size_t K = read_heads(env, o, who, D, a.layers, pins);
    a.e.members = K;
    a.e.n_layers = a.layers.size();
    a.e.queries = reinterpret_cast<const float*>(qt->data());
    a.e.passages = passages;
    a.e.ids = reinterpret_cast<const int32_t*>(it->data());
    a.e.len = size_t(L);
    a.e.temperature = float(number_arg(o.Get("temperature"), "temperature"));
    for (const char* k : {"queries", "ids"}) pins.push_back(o.Get(k).As<Napi::Object>());
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
    k = int64_t(count_arg(f.Get("k"), "k"));
    tie_rank = tie_rank_arg(env, f.Get("tieRank"), int64_t(rows), pins);
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
      for (size_t x = 0; x < views.size(); ++x)
        kernels::fixed_confidence(size_t(B), given ? given + x * size_t(B) : nullptr, views[x].mi, views[x].conf);
    } else {
      kernels::muf_confidence(views.data(), views.size(), size_t(B), eps);
    }
    if (!fusing) return;
    std::vector<kernels::FuseList> lists;
    for (const ExpertArg& a : *experts) lists.push_back({a.e.ids, a.scores, a.e.len, a.e.conf});
    kernels::muf_fuse(lists.data(), lists.size(), size_t(B), tie_rank, rows, size_t(k), fused_ids, fused_scores);
  });
}


// mufSearch(plan, async) -> { mi: Float32Array [E * B], confidence: Float32Array [E * B], ids: Int32Array [B * k],
//                             scores: Float32Array [B * k], ms: number[3] }
//   plan = { mode: 'uniform' | 'familiarity' | 'heads', topL, k, tieRank?: i32 [N], rows?: i32 [n] (ascending),
//            experts: [{ queries: f32 [B, dim], a Float32Array of B * dim, or B texts to embed (embedding_bag_args.h),
//                        passages: f32 | bf16 | f16 [N, dim],
//                        familiarity: own / other: [n, dim] unit rows, k, bias, weight,
//                        heads: weights, members, temperature (as mufConfidence's) }] }
//   (kernels/muf_search.h).
Napi::Value MufSearch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw Error("ERR_ARG", "mufSearch needs a plan object");
  Napi::Object o = info[0].As<Napi::Object>();
  const std::string mode = o.Get("mode").IsString() ? o.Get("mode").As<Napi::String>().Utf8Value() : "";
  auto plan = std::make_shared<kernels::MufSearchPlan>();
  if (mode == "uniform") plan->mode = kernels::MufConfidenceMode::kUniform;
  else if (mode == "familiarity") plan->mode = kernels::MufConfidenceMode::kFamiliarity;
  else if (mode == "heads") plan->mode = kernels::MufConfidenceMode::kHeads;
  else throw Error("ERR_ARG", "mode must be uniform, familiarity or heads");
  plan->top_l = count_arg(o.Get("topL"), "topL");
  plan->k = count_arg(o.Get("k"), "k");
  if (!o.Get("experts").IsArray() || o.Get("experts").As<Napi::Array>().Length() == 0)
    throw Error("ERR_ARG", "experts must be a non-empty array");
  Napi::Array list = o.Get("experts").As<Napi::Array>();
  const size_t E = list.Length();
  // What the work reads: the experts' views, their layer tables, the filter (copied: JS may write to it meanwhile).
  struct Hold {
    std::vector<kernels::MufSearchExpert> experts;
    std::vector<std::vector<kernels::HeadsLayer>> layers;
    std::shared_ptr<std::vector<int32_t>> rows;
    std::vector<std::vector<float>> queries;  // questions given as Float32Arrays (copied) or embedded in the task
    std::vector<std::optional<TextsToEmbed>> texts;  // questions given as texts, per expert
  };
  auto hold = std::make_shared<Hold>();
  hold->experts.resize(E);
  hold->layers.resize(E);
  hold->queries.resize(E);
  hold->texts.resize(E);
  std::vector<Napi::Object> pins;
  int64_t B = -1, N = -1;
  for (size_t x = 0; x < E; ++x) {
    const std::string who = "experts[" + std::to_string(x) + "]";
    if (!list.Get(uint32_t(x)).IsObject()) throw Error("ERR_ARG", who + " must be an object");
    Napi::Object e = list.Get(uint32_t(x)).As<Napi::Object>();
    kernels::MufSearchExpert& m = hold->experts[x];
    // The questions: an f32 tensor [B, dim], a Float32Array of B rows of the passages' width (copied: an encoder's
    // output goes in without a tensor made for it), or B texts that a 0-layer encoder embeds in the call's task (one
    // hop for a question's every step: docs/results/serving.md#dpr-muf).
    const Napi::Value qv = e.Get("queries");
    int64_t D;
    const bool as_texts = qv.IsObject() && qv.As<Napi::Object>().Has("texts");
    if (as_texts || (qv.IsTypedArray() && qv.As<Napi::TypedArray>().TypedArrayType() == napi_float32_array)) {
      m.passages = corpus_arg(env, e.Get("passages"), who, "passages", -1, pins);
      D = int64_t(m.passages.dim);
      int64_t rows;
      if (as_texts) {
        const TextsToEmbed& t = hold->texts[x].emplace(texts_to_embed_arg(env, qv, who, pins));
        if (size_t(D) != t.dim)
          throw Error("ERR_SHAPE", who + ": the encoder gives vectors of " + std::to_string(t.dim) + ", the passages have " + std::to_string(D));
        rows = int64_t(t.rows());
        hold->queries[x].resize(t.rows() * t.dim);  // filled in the task
      } else {
        Napi::Float32Array a = qv.As<Napi::Float32Array>();
        if (D == 0 || a.ElementLength() == 0 || a.ElementLength() % size_t(D) != 0)
          throw Error("ERR_SHAPE", who + ": queries must hold whole rows of the passages' width " + std::to_string(D));
        rows = int64_t(a.ElementLength()) / D;
        hold->queries[x].assign(a.Data(), a.Data() + a.ElementLength());
      }
      if (B >= 0 && rows != B) throw Error("ERR_SHAPE", who + ": queries have " + std::to_string(rows) + " rows, the others " + std::to_string(B));
      B = rows;
      m.queries = hold->queries[x].data();
    } else {
      TensorObject* qt = TensorObject::From(env, qv, "queries");
      require_dtype(qt, Dtype::F32, "queries");
      require_shape(qt, {B, -1}, "queries");
      B = qt->shape()[0];
      D = qt->shape()[1];
      if (B == 0 || D == 0) throw Error("ERR_SHAPE", who + ": queries must be a non-empty [B, dim] tensor");
      pins.push_back(qv.As<Napi::Object>());
      m.queries = reinterpret_cast<const float*>(qt->data());
      m.passages = corpus_arg(env, e.Get("passages"), who, "passages", D, pins);
    }
    if (!e.Get("rescore").IsUndefined() && !e.Get("rescore").IsNull()) {
      m.rescore = corpus_arg(env, e.Get("rescore"), who, "rescore", D, pins);
      if (m.rescore.coding == kernels::Coding::Binary) throw Error("ERR_ARG", who + ": rescore vectors must be f32, bf16, f16 or int8");
      if (m.rescore.rows != m.passages.rows) throw Error("ERR_SHAPE", who + ": rescore vectors must hold the passages' rows");
      m.candidates = count_arg(e.Get("candidates"), who + ": candidates");
    }
    if (N >= 0 && int64_t(m.passages.rows) != N) throw Error("ERR_SHAPE", who + ": fusion needs every expert over the same corpus rows");
    N = int64_t(m.passages.rows);
    if (plan->mode == kernels::MufConfidenceMode::kFamiliarity) {
      if (!e.Get("familiarity").IsObject()) throw Error("ERR_ARG", who + ": familiarity must be an object");
      Napi::Object f = e.Get("familiarity").As<Napi::Object>();
      m.own = corpus_arg(env, f.Get("own"), who, "own", D, pins);
      m.other = corpus_arg(env, f.Get("other"), who, "other", D, pins);
      m.fam_k = count_arg(f.Get("k"), who + ": familiarity k");
      m.platt_bias = number_arg(f.Get("bias"), "bias");
      m.platt_weight = number_arg(f.Get("weight"), "weight");
    } else if (plan->mode == kernels::MufConfidenceMode::kHeads) {
      m.members = read_heads(env, e, who, D, hold->layers[x], pins);
      m.n_layers = hold->layers[x].size();
      m.temperature = float(number_arg(e.Get("temperature"), "temperature"));
    }
  }
  if (const TensorObject* r = optional_tensor(env, o.Get("rows"), "rows")) {
    hold->rows = allowed_rows(r, size_t(N));
    if (hold->rows->empty()) throw Error("ERR_ARG", "rows allows no passage");
  }
  plan->tie_rank = tie_rank_arg(env, o.Get("tieRank"), N, pins);
  plan->batch = size_t(B);
  Napi::Object result = Napi::Object::New(env);
  // Plain typed arrays, not tensors: the caller reads them once and owes no dispose (the result object keeps them
  // alive while the work writes them).
  Napi::Float32Array mi = Napi::Float32Array::New(env, E * size_t(B));
  Napi::Float32Array conf = Napi::Float32Array::New(env, E * size_t(B));
  Napi::Int32Array ids = Napi::Int32Array::New(env, size_t(B) * plan->k);
  Napi::Float32Array scores = Napi::Float32Array::New(env, size_t(B) * plan->k);
  result.Set("mi", mi);
  result.Set("confidence", conf);
  result.Set("ids", ids);
  result.Set("scores", scores);
  auto ms = std::make_shared<std::vector<double>>(3);
  const kernels::MufSearchOut out{mi.Data(), conf.Data(), ids.Data(), scores.Data(), ms->data()};
  return run_kernel(
      env, flag(info[1]), pins, result,
      [plan, hold, out] {
        kernels::MufSearchPlan p = *plan;
        std::vector<const TextsToEmbed*> jobs;
        std::vector<float*> outs;
        std::vector<std::string> labels;  // what only the embedding finds (a token past the model's tables) names its expert
        for (size_t x = 0; x < hold->experts.size(); ++x) {
          hold->experts[x].layers = hold->layers[x].data();
          if (!hold->texts[x]) continue;
          jobs.push_back(&*hold->texts[x]);
          outs.push_back(hold->queries[x].data());
          labels.push_back("experts[" + std::to_string(x) + "]: ");
        }
        embed_all(jobs.data(), outs.data(), labels.data(), jobs.size());
        p.experts = hold->experts.data();
        p.n_experts = hold->experts.size();
        p.rows = hold->rows ? hold->rows->data() : nullptr;
        p.n_rows = hold->rows ? hold->rows->size() : 0;
        kernels::muf_search(p, out);
      },
      [ms](Napi::Env e, Napi::Object r) {
        Napi::Array t = Napi::Array::New(e, ms->size());
        for (uint32_t i = 0; i < ms->size(); i++) t.Set(i, Napi::Number::New(e, (*ms)[i]));
        r.Set("ms", t);
      });
}

}  // namespace

void register_muf(Napi::Env env, Napi::Object exports) {
  exports.Set("mufConfidence", Napi::Function::New<guarded<MufConfidence>>(env, "mufConfidence"));
  exports.Set("mufSearch", Napi::Function::New<guarded<MufSearch>>(env, "mufSearch"));
}

}  // namespace quorum::napi
