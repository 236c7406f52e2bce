// N-API binding of kernels/embedding_bag.h: argument checks and conversions only (docs/methods/kernels.md#0-layer-encoder).
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../common/int_math.h"
#include "../common/thread_pool.h"
#include "../kernels/embedding_bag.h"
#include "args.h"
#include "embedding_bag_args.h"
#include "errors.h"
#include "index_args.h"
#include "kernel_call.h"
#include "scalar_args.h"

namespace quorum::napi {
namespace {

// An f32 tensor of `dims` (-1: any extent) from model[key], pinned; nullptr when the key is absent and optional.
const float* model_tensor(Napi::Env env, Napi::Object model, const char* key, const std::vector<int64_t>& dims,
                          std::vector<Napi::Object>& pins, bool optional = false) {
  Napi::Value v = model.Get(key);
  if (optional && (v.IsUndefined() || v.IsNull())) return nullptr;
  TensorObject* t = TensorObject::From(env, v, key);
  require_dtype(t, Dtype::F32, key);
  require_shape(t, dims, key);
  pins.push_back(v.As<Napi::Object>());
  return reinterpret_cast<const float*>(t->data());
}

// A linear layer (model[w] [out, in], model[b] [out]) or none when model[w] is absent.
kernels::Linear linear_arg(Napi::Env env, Napi::Object model, const char* w, const char* b, int64_t in,
                           std::vector<Napi::Object>& pins) {
  kernels::Linear l;
  Napi::Value wv = model.Get(w);
  if (wv.IsUndefined() || wv.IsNull()) return l;
  TensorObject* t = TensorObject::From(env, wv, w);
  require_dtype(t, Dtype::F32, w);
  require_shape(t, {-1, in}, w);
  const int64_t out = t->shape()[0];
  if (out == 0) throw Error("ERR_SHAPE", std::string(w) + " has no outputs");
  l.w = model_tensor(env, model, w, {out, in}, pins);
  l.b = model_tensor(env, model, b, {out}, pins);
  l.in = size_t(in);
  l.out = size_t(out);
  return l;
}

// Texts and pairs present and matched; the output width read off the model.
void check_texts(TextsToEmbed& t, const std::string& who) {
  if (t.first.empty()) throw Error("ERR_ARG", who + "nothing to encode: give at least one text");
  if (!t.second.empty() && t.second.size() != t.first.size())
    throw Error("ERR_SHAPE", who + std::to_string(t.first.size()) + " texts but " + std::to_string(t.second.size()) + " pairs");
  t.dim = kernels::embedding_bag_dim(t.model);
}

// embeddingBag(model, ids, typeIds, lengths, async) -> f32 [rows, dim]
//   ids, typeIds i32 [rows, seqLen]; lengths i32 [rows]
Napi::Value EmbeddingBag(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<Napi::Object> pins;
  const kernels::EmbeddingBagModel m = embedding_bag_model_arg(env, info[0], pins);

  TensorObject* ids = TensorObject::From(env, info[1], "ids");
  TensorObject* types = TensorObject::From(env, info[2], "typeIds");
  TensorObject* lengths = TensorObject::From(env, info[3], "lengths");
  require_dtype(ids, Dtype::I32, "ids");
  require_shape(ids, {-1, -1}, "ids");
  const int64_t rows = ids->shape()[0], seq = ids->shape()[1];
  if (rows == 0) throw Error("ERR_SHAPE", "no rows to encode");
  require_dtype(types, Dtype::I32, "typeIds");
  require_shape(types, {rows, seq}, "typeIds");
  require_dtype(lengths, Dtype::I32, "lengths");
  require_shape(lengths, {rows}, "lengths");
  const size_t dim = kernels::embedding_bag_dim(m);
  Napi::Object out = TensorObject::Create(env, Dtype::F32, {rows, int64_t(dim)});
  for (size_t i = 1; i <= 3; ++i) pins.push_back(info[i].As<Napi::Object>());
  pins.push_back(out);
  const auto* ip = reinterpret_cast<const int32_t*>(ids->data());
  const auto* tp = reinterpret_cast<const int32_t*>(types->data());
  const auto* lp = reinterpret_cast<const int32_t*>(lengths->data());
  float* op = data_of<float>(out);
  return run_kernel(env, flag(info[4]), pins, out, [m, ip, tp, lp, rows, seq, op] {
    kernels::embedding_bag(m, ip, tp, lp, size_t(rows), size_t(seq), op);
  });
}

// embedTexts(model, wordpiece, first: string[], second: string[] | null, maxLength, marker, async) -> Float32Array
//   [rows * dim]: the texts (already normalized) segmented and framed as WordPiece.encode does, then embedded, in one
//   call: a 0-layer encoder's question costs the event loop one hop and no token tensors (docs/results/serving.md).
Napi::Value EmbedTexts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<Napi::Object> pins;
  auto t = std::make_shared<TextsToEmbed>();
  t->model = embedding_bag_model_arg(env, info[0], pins);
  t->wordpiece = wordpiece_arg(env, info[1], "tokenizer");
  t->first = strings_arg(info[2], "texts");
  if (!info[3].IsNull() && !info[3].IsUndefined()) t->second = strings_arg(info[3], "pairs");
  check_texts(*t, "");
  t->options = encode_options_arg(*t->wordpiece, info[4], info[5], Napi::Boolean::New(env, false));
  Napi::Float32Array out = Napi::Float32Array::New(env, t->rows() * t->dim);
  float* op = out.Data();
  return run_kernel(env, flag(info[6]), pins, out, [t, op] { t->embed(op); });
}

}  // namespace

// The model object of embeddingBag / embedTexts:
//   model = { word [V, E], factorWeight? [H, E], factorBias? [H], position [P, H], type [T, H], lnWeight [H],
//             lnBias [H], lnEps, tokenWeights? [V], maxPool, centre? [H], headHiddenWeight? [h, H],
//             headHiddenBias? [h], headWeight? [out, h or H], headBias? [out], normalize }
kernels::EmbeddingBagModel embedding_bag_model_arg(Napi::Env env, const Napi::Value& v, std::vector<Napi::Object>& pins) {
  if (!v.IsObject()) throw Error("ERR_ARG", "model must be an object of tensors");
  Napi::Object model = v.As<Napi::Object>();
  kernels::EmbeddingBagModel m{};
  TensorObject* word = TensorObject::From(env, model.Get("word"), "word");
  require_dtype(word, Dtype::F32, "word");
  require_shape(word, {-1, -1}, "word");
  m.vocab = size_t(word->shape()[0]);
  m.embed = size_t(word->shape()[1]);
  m.word = model_tensor(env, model, "word", {-1, -1}, pins);
  TensorObject* pos = TensorObject::From(env, model.Get("position"), "position");
  require_shape(pos, {-1, -1}, "position");
  const int64_t H = pos->shape()[1];
  if (H == 0 || m.embed == 0 || m.vocab == 0) throw Error("ERR_SHAPE", "the embedding tables are empty");
  m.hidden = size_t(H);
  m.positions = size_t(pos->shape()[0]);
  m.position = model_tensor(env, model, "position", {-1, H}, pins);
  TensorObject* type = TensorObject::From(env, model.Get("type"), "type");
  require_shape(type, {-1, H}, "type");
  m.types = size_t(type->shape()[0]);
  m.type = model_tensor(env, model, "type", {-1, H}, pins);
  m.factor = linear_arg(env, model, "factorWeight", "factorBias", int64_t(m.embed), pins);
  if (m.factor.w ? m.factor.out != m.hidden : m.embed != m.hidden)
    throw Error("ERR_SHAPE", "word vectors of " + std::to_string(m.embed) + " need a factor to the hidden size " + std::to_string(H));
  m.ln_weight = model_tensor(env, model, "lnWeight", {H}, pins);
  m.ln_bias = model_tensor(env, model, "lnBias", {H}, pins);
  m.ln_eps = float(number_arg(model.Get("lnEps"), "lnEps"));
  if (!(m.ln_eps > 0)) throw Error("ERR_RANGE", "lnEps must be positive");
  m.token_weights = model_tensor(env, model, "tokenWeights", {int64_t(m.vocab)}, pins, true);
  m.max_pool = flag(model.Get("maxPool"));
  m.centre = model_tensor(env, model, "centre", {H}, pins, true);
  m.head_hidden = linear_arg(env, model, "headHiddenWeight", "headHiddenBias", H, pins);
  m.head = linear_arg(env, model, "headWeight", "headBias", m.head_hidden.w ? int64_t(m.head_hidden.out) : H, pins);
  if (m.head_hidden.w && !m.head.w) throw Error("ERR_ARG", "an MLP head needs its output layer (headWeight)");
  m.normalize = flag(model.Get("normalize"));

  return m;
}

TextsToEmbed texts_to_embed_arg(Napi::Env env, const Napi::Value& v, const std::string& who, std::vector<Napi::Object>& pins) {
  if (!v.IsObject()) throw Error("ERR_ARG", who + ": texts to embed must be an object");
  Napi::Object o = v.As<Napi::Object>();
  TextsToEmbed t;
  t.model = embedding_bag_model_arg(env, o.Get("model"), pins);
  t.wordpiece = wordpiece_arg(env, o.Get("tokenizer"), "tokenizer");
  t.first = strings_arg(o.Get("texts"), "texts");
  if (!o.Get("pairs").IsNull() && !o.Get("pairs").IsUndefined()) t.second = strings_arg(o.Get("pairs"), "pairs");
  check_texts(t, who + ": ");
  t.options = encode_options_arg(*t.wordpiece, o.Get("maxLength"), o.Get("marker"), Napi::Boolean::New(env, false));
  return t;
}

void TextsToEmbed::embed_rows(size_t r0, size_t r1, float* out) const {
  const std::vector<std::string> a(first.begin() + std::ptrdiff_t(r0), first.begin() + std::ptrdiff_t(r1));
  const std::vector<std::string> b = second.empty() ? std::vector<std::string>{}
                                                    : std::vector<std::string>(second.begin() + std::ptrdiff_t(r0), second.begin() + std::ptrdiff_t(r1));
  const text::EncodedBatch e = text::encode_batch(*wordpiece, a, b, options);
  kernels::embedding_bag_serial(model, e.ids.data(), e.type_ids.data(), e.lengths.data(), e.rows, e.seq_len, out, r0);
}

void TextsToEmbed::embed(float* out) const {
  const TextsToEmbed* self = this;
  const std::string label;
  embed_all(&self, &out, &label, 1);
}

void embed_all(const TextsToEmbed* const* jobs, float* const* outs, const std::string* labels, size_t n) {
  constexpr size_t kTexts = 8;  // a task: segmenting and embedding 8 questions is some tens of microseconds
  std::vector<size_t> offsets(n + 1, 0);
  for (size_t j = 0; j < n; ++j) offsets[j + 1] = offsets[j] + ceil_div(jobs[j]->rows(), kTexts);
  std::vector<std::exception_ptr> errors(offsets[n]);
  const auto job_of = [&](size_t task) { return size_t(std::upper_bound(offsets.begin(), offsets.end(), task) - offsets.begin()) - 1; };
  const auto run = [&](size_t task, int) {
    const size_t j = job_of(task);
    const TextsToEmbed& t = *jobs[j];
    const size_t r0 = (task - offsets[j]) * kTexts, r1 = std::min(t.rows(), r0 + kTexts);
    try {
      t.embed_rows(r0, r1, outs[j] + r0 * t.dim);
    } catch (...) {
      errors[task] = std::current_exception();
    }
  };
  // A few questions (a server's B = 1 over 5 experts) stay on the calling thread: waking the pool for them cost the
  // event loop more than the embedding (bench/muf-event-loop.ts).
  size_t texts = 0;
  for (size_t j = 0; j < n; ++j) texts += jobs[j]->rows();
  if (texts <= 2 * kTexts) {
    for (size_t task = 0; task < offsets[n]; ++task) run(task, 0);
  } else {
    ThreadPool::global().parallel_for(offsets[n], run);
  }
  for (size_t task = 0; task < errors.size(); ++task) {
    if (!errors[task]) continue;
    const size_t j = job_of(task);
    try {
      std::rethrow_exception(errors[task]);
    } catch (const Error& e) {
      if (labels[j].empty()) throw;
      throw Error(e.code(), labels[j] + e.what());
    }
  }
}

void register_embedding_bag(Napi::Env env, Napi::Object exports) {
  exports.Set("embeddingBag", Napi::Function::New<guarded<EmbeddingBag>>(env, "embeddingBag"));
  exports.Set("embedTexts", Napi::Function::New<guarded<EmbedTexts>>(env, "embedTexts"));
}

}  // namespace quorum::napi
