// quorum_cuda.node: device tensors and the CUDA kernels (native/cuda/kernels.h) behind the same call signatures as
// the core addon's kernels, so lib/ picks the addon by the operands' device. Argument checks and conversions only.
// Small index and mask operands may come as host typed arrays (copied to the device here) or as cuda tensors.
#include <napi.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../cuda/kernels.h"
#include "../kernels/contract.h"
#include "../cuda/runtime.h"
#include "async_call.h"
#include "cuda_tensor.h"
#include "errors.h"
#include "scalar_args.h"

namespace quorum::napi {
namespace {

using Block = std::shared_ptr<DeviceBlock>;
namespace contract = kernels::contract;

template <class T>
T* ptr_of(CudaTensor* t) { return t->data<T>(); }

std::vector<Napi::Object> objects(std::initializer_list<Napi::Value> vs) {
  std::vector<Napi::Object> out;
  for (const Napi::Value& v : vs)
    if (v.IsObject()) out.push_back(v.As<Napi::Object>());
  return out;
}

void need_float(const CudaTensor* t, const char* what) {
  need(dtype_is_float(t->dtype()), "ERR_DTYPE",
       std::string(what) + " must be f32, bf16 or f16, got " + dtype_name(t->dtype()));
}

// Per-element checks below build their message only on failure (a message built for each of 100,000 documents
// cost more than the kernel).

// A small operand on the device: a cuda tensor as it is, or a host typed array whose bytes are copied now and sent
// to the device by upload() inside the work (so that an async call never waits on the stream on the main thread).
struct Aux {
  Block block;
  const void* ptr = nullptr;
  size_t numel = 0;
  std::shared_ptr<std::vector<uint8_t>> host;
  void upload() const {
    if (host && !host->empty())
      cuda::check(cudaMemcpyAsync(block->ptr, host->data(), host->size(), cudaMemcpyHostToDevice, cuda::stream()),
                  "cudaMemcpy");
  }
};
Aux aux_operand(Napi::Env env, const Napi::Value& v, const char* what, Dtype dtype) {
  Aux a;
  if (v.IsNull() || v.IsUndefined()) return a;
  if (CudaTensor::Is(env, v)) {
    CudaTensor* t = CudaTensor::From(env, v, what);
    need(t->dtype() == dtype, "ERR_DTYPE", std::string(what) + " must be " + dtype_name(dtype));
    a.block = t->block();
    a.ptr = a.block->ptr;
    a.numel = t->numel();
    return a;
  }
  need(v.IsTypedArray() && typed_array_matches(v.As<Napi::TypedArray>(), dtype), "ERR_ARG",
       std::string(what) + " must be a " + dtype_name(dtype) + " tensor");
  Napi::TypedArray ta = v.As<Napi::TypedArray>();
  a.numel = ta.ElementLength();
  const auto* src = static_cast<const uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
  a.host = std::make_shared<std::vector<uint8_t>>(src, src + ta.ByteLength());
  a.block = std::make_shared<DeviceBlock>(a.host->size());
  a.ptr = a.block->ptr;
  return a;
}

// The values of a small int32 operand on the host (for range checks), from either form.
std::vector<int32_t> host_ints(Napi::Env env, const Napi::Value& v, const char* what) {
  if (CudaTensor::Is(env, v)) {
    CudaTensor* t = CudaTensor::From(env, v, what);
    need(t->dtype() == Dtype::I32, "ERR_DTYPE", std::string(what) + " must be i32");
    std::vector<int32_t> out(t->numel());
    if (!out.empty()) {
      cuda::check(cudaMemcpyAsync(out.data(), t->data(), out.size() * 4, cudaMemcpyDeviceToHost, cuda::stream()),
                  "cudaMemcpy");
      cuda::sync("download");
    }
    return out;
  }
  need(v.IsTypedArray() && typed_array_matches(v.As<Napi::TypedArray>(), Dtype::I32), "ERR_ARG",
       std::string(what) + " must be an i32 tensor");
  Napi::Int32Array a = v.As<Napi::Int32Array>();
  return std::vector<int32_t>(a.Data(), a.Data() + a.ElementLength());
}

CudaTensor* out_tensor(Napi::Object o) { return Napi::ObjectWrap<CudaTensor>::Unwrap(o); }

Napi::Value Available(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object r = Napi::Object::New(env);
  int n = cuda::device_count();
  std::string reason = cuda::unavailable_reason();
  if (n > 0) {
    const std::string image = cuda::kernel_image_problem();
    if (!image.empty()) {
      n = 0;
      reason = image;
    }
  }
  r.Set("count", n);
  r.Set("reason", reason);
  if (n > 0) {
    const cuda::DeviceInfo d = cuda::device_info();
    r.Set("name", d.name);
    r.Set("totalBytes", double(d.total_bytes));
    r.Set("multiprocessors", d.sm_count);
    r.Set("computeCapability", std::to_string(d.major) + "." + std::to_string(d.minor));
  }
  return r;
}

// upload(dtype, shape, typedArray, async) -> a cuda tensor holding a copy of the array
Napi::Value Upload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  need(info[2].IsTypedArray(), "ERR_ARG", "upload needs a typed array");
  Napi::Object out = CudaTensor::New(env, info[0], info[1]);
  CudaTensor* t = out_tensor(out);
  Napi::TypedArray ta = info[2].As<Napi::TypedArray>();
  need(ta.ByteLength() == t->bytes(), "ERR_SHAPE",
       "the array holds " + std::to_string(ta.ByteLength()) + " bytes, the tensor needs " + std::to_string(t->bytes()));
  const uint8_t* src = static_cast<const uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
  Block dst = t->block();
  return run_work(env, flag(info[3]), objects({info[2], out}), out, [=] {
    if (dst->bytes) cuda::check(cudaMemcpyAsync(dst->ptr, src, dst->bytes, cudaMemcpyHostToDevice, cuda::stream()), "cudaMemcpy");
    cuda::sync("upload");
  });
}

// download(tensor, typedArray, async): copies the tensor's bytes into the (same-sized) array
Napi::Value Download(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaTensor* t = CudaTensor::From(env, info[0], "tensor");
  need(info[1].IsTypedArray(), "ERR_ARG", "download needs a typed array");
  Napi::TypedArray ta = info[1].As<Napi::TypedArray>();
  need(ta.ByteLength() == t->bytes(), "ERR_SHAPE", "the array's size differs from the tensor's");
  uint8_t* dst = static_cast<uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
  Block src = t->block();
  const size_t bytes = t->bytes();
  return run_work(env, flag(info[2]), objects({info[0], info[1]}), Napi::Object::New(env), [=] {
    if (bytes) cuda::check(cudaMemcpyAsync(dst, src->ptr, bytes, cudaMemcpyDeviceToHost, cuda::stream()), "cudaMemcpy");
    cuda::sync("download");
  });
}

// convert(tensor, dtype, async) -> a new cuda tensor (a copy when the dtype is the same)
Napi::Value Convert(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaTensor* t = CudaTensor::From(env, info[0], "tensor");
  const Dtype to = parse_dtype(info[1]);
  const Dtype from = t->dtype();
  need(to == from || (dtype_is_float(to) && dtype_is_float(from)), "ERR_DTYPE",
       std::string("cannot convert ") + dtype_name(from) + " to " + dtype_name(to));
  Napi::Object out = CudaTensor::Create(env, to, t->shape());
  Block src = t->block(), dst = out_tensor(out)->block();
  const size_t n = t->numel(), bytes = t->bytes();
  return run_work(env, flag(info[2]), objects({info[0], out}), out, [=] {
    if (to == from) {
      if (bytes) cuda::check(cudaMemcpyAsync(dst->ptr, src->ptr, bytes, cudaMemcpyDeviceToDevice, cuda::stream()), "cudaMemcpy");
    } else {
      cuda::convert(src->ptr, from, dst->ptr, to, n);
    }
    cuda::sync("convert");
  });
}

// scoreTopK(queries, corpus, k, checkFinite, async) -> { ids: i32 [B, k], scores: f32 [B, k] } on cuda
Napi::Value ScoreTopK(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaTensor* q = CudaTensor::From(env, info[0], "queries");
  CudaTensor* c = CudaTensor::From(env, info[1], "corpus");
  const auto qs = contract::dense_queries(q->dtype(), q->shape());
  const size_t B = qs.rows, D = qs.dim, N = contract::dense_corpus(c->dtype(), c->shape(), D);
  const size_t k = k_arg(info[2]);
  need(k <= cuda::kMaxTopK, "ERR_UNSUPPORTED", "k must be in [1, " + std::to_string(cuda::kMaxTopK) + "] on cuda");
  const bool finite = flag(info[3]);
  Napi::Object ids = CudaTensor::Create(env, Dtype::I32, {int64_t(B), int64_t(k)});
  Napi::Object scores = CudaTensor::Create(env, Dtype::F32, {int64_t(B), int64_t(k)});
  Block qb = q->block(), cb = c->block(), ib = out_tensor(ids)->block(), sb = out_tensor(scores)->block();
  const Dtype cd = c->dtype();
  Napi::Object result = Napi::Object::New(env);
  result.Set("ids", ids);
  result.Set("scores", scores);
  return run_work(env, flag(info[4]), objects({info[0], info[1], ids, scores}), result, [=] {
    if (finite) {
      need(cuda::all_finite(qb->ptr, B * D, Dtype::F32), "ERR_NONFINITE", "queries contain NaN or Infinity");
      need(cuda::all_finite(cb->ptr, N * D, cd), "ERR_NONFINITE", "corpus contains NaN or Infinity");
    }
    cuda::score_topk(static_cast<const float*>(qb->ptr), B, cb->ptr, cd, N, D, k, static_cast<int32_t*>(ib->ptr),
                     static_cast<float*>(sb->ptr));
    cuda::sync("scoreTopK");
  });
}

// maxSim(q, queryMask, docs, lengths, tokenMask, clampZero, argmax, async) -> { scores, argmax? } on cuda
Napi::Value MaxSim(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaTensor* q = CudaTensor::From(env, info[0], "queries");
  const contract::TokenQueryShape qshape = contract::maxsim_queries(q->dtype(), q->shape());
  const auto& qs = q->shape();
  const size_t nq = qshape.nq, lq = qshape.lq, dim = qshape.dim;
  CudaTensor* d = CudaTensor::From(env, info[2], "documents");
  const std::vector<int32_t> len = host_ints(env, info[3], "lengths");
  const size_t n = len.size();
  // Document offsets, start[n] then length[n], written straight into the bytes the work copies to the device.
  Aux sl;
  sl.host = std::make_shared<std::vector<uint8_t>>(n * 16);
  int64_t* start = reinterpret_cast<int64_t*>(sl.host->data());
  const size_t rows = contract::maxsim_documents(d->dtype(), d->shape(), dim, len.data(), n, start, start + n);
  Aux qm = aux_operand(env, info[1], "queryMask", Dtype::U8);
  if (qm.ptr) contract::maxsim_query_mask(qm.numel, qshape);
  Aux tm = aux_operand(env, info[4], "tokenMask", Dtype::U8);
  if (tm.ptr) contract::maxsim_token_mask(tm.numel, rows);
  const bool clamp = flag(info[5]), want_arg = flag(info[6]);
  sl.block = std::make_shared<DeviceBlock>(n * 16);
  sl.ptr = sl.block->ptr;
  std::vector<int64_t> score_shape = qs.size() == 3 ? std::vector<int64_t>{int64_t(nq), int64_t(n)} : std::vector<int64_t>{int64_t(n)};
  Napi::Object scores = CudaTensor::Create(env, Dtype::F32, score_shape);
  Napi::Object result = Napi::Object::New(env);
  result.Set("scores", scores);
  Block arg;
  Napi::Value argv = env.Undefined();
  if (want_arg) {
    std::vector<int64_t> as = score_shape;
    as.push_back(int64_t(lq));
    Napi::Object a = CudaTensor::Create(env, Dtype::I32, as);
    arg = out_tensor(a)->block();
    result.Set("argmax", a);
    argv = a;
  }
  Block qb = q->block(), db = d->block(), sb = out_tensor(scores)->block();
  const Dtype dt = d->dtype();
  return run_work(env, flag(info[7]), objects({info[0], info[2], scores, argv}), result, [=] {
    sl.upload();
    qm.upload();
    tm.upload();
    const int64_t* st = static_cast<const int64_t*>(sl.ptr);
    cuda::maxsim(static_cast<const float*>(qb->ptr), nq, lq, dim, static_cast<const uint8_t*>(qm.ptr), db->ptr, dt, n,
                 st, st ? st + n : nullptr, static_cast<const uint8_t*>(tm.ptr), clamp, static_cast<float*>(sb->ptr),
                 arg ? static_cast<int32_t*>(arg->ptr) : nullptr);
    cuda::sync("maxSim");
  });
}

contract::LogitsShape logits_shape(CudaTensor* x) { return contract::splade_logits(x->dtype(), x->shape()); }

// spladePool(logits, mask, argmax, async) -> { weights, argmax? } on cuda
Napi::Value SpladePool(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaTensor* x = CudaTensor::From(env, info[0], "logits");
  const contract::LogitsShape s = logits_shape(x);
  Aux mask = aux_operand(env, info[1], "mask", Dtype::U8);
  if (mask.ptr) contract::splade_mask(mask.numel, s);
  Napi::Object w = CudaTensor::Create(env, Dtype::F32, {int64_t(s.batch), int64_t(s.vocab)});
  Napi::Object result = Napi::Object::New(env);
  result.Set("weights", w);
  Block arg;
  Napi::Value argv = env.Undefined();
  if (flag(info[2])) {
    Napi::Object a = CudaTensor::Create(env, Dtype::I32, {int64_t(s.batch), int64_t(s.vocab)});
    arg = out_tensor(a)->block();
    result.Set("argmax", a);
    argv = a;
  }
  Block xb = x->block(), wb = out_tensor(w)->block();
  const Dtype dt = x->dtype();
  return run_work(env, flag(info[3]), objects({info[0], w, argv}), result, [=] {
    mask.upload();
    cuda::splade_pool(xb->ptr, dt, s.batch, s.len, s.vocab, static_cast<const uint8_t*>(mask.ptr), static_cast<float*>(wb->ptr),
                      arg ? static_cast<int32_t*>(arg->ptr) : nullptr);
    cuda::sync("spladePool");
  });
}

// spladePoolBackward(logits, argmax, grad, async) -> f32 [B, L, V] on cuda
Napi::Value SpladePoolBackward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaTensor* x = CudaTensor::From(env, info[0], "logits");
  const contract::LogitsShape s = logits_shape(x);
  CudaTensor* a = CudaTensor::From(env, info[1], "argmax");
  CudaTensor* g = CudaTensor::From(env, info[2], "grad");
  contract::splade_backward(a->dtype(), a->shape(), g->dtype(), g->shape(), s);
  Napi::Object out = CudaTensor::Create(env, Dtype::F32, x->shape());
  Block xb = x->block(), ab = a->block(), gb = g->block(), ob = out_tensor(out)->block();
  const Dtype dt = x->dtype();
  return run_work(env, flag(info[3]), objects({info[0], info[1], info[2], out}), out, [=] {
    cuda::splade_pool_backward(xb->ptr, dt, s.batch, s.len, s.vocab, static_cast<const int32_t*>(ab->ptr),
                               static_cast<const float*>(gb->ptr), static_cast<float*>(ob->ptr));
    cuda::sync("spladePoolBackward");
  });
}

// infoNce(q, p, pos, weights, temperature, cosine, grad, async) -> { loss, accuracy, rowLoss, rank, dQ?, dP? } on cuda
Napi::Value InfoNce(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaTensor* q = CudaTensor::From(env, info[0], "queries");
  CudaTensor* p = CudaTensor::From(env, info[1], "passages");
  const contract::InfoNceShape shape = contract::info_nce(q->dtype(), q->shape(), p->dtype(), p->shape());
  const size_t B = shape.batch, D = shape.dim, M = shape.passages;
  const std::vector<int32_t> pos = host_ints(env, info[2], "positives");
  Aux w = aux_operand(env, info[3], "weights", Dtype::F32);
  contract::info_nce_counts(pos.size(), w.numel, w.ptr != nullptr, shape);
  contract::info_nce_positives(pos.data(), shape);
  const float tau = float(number_arg(info[4], "temperature"));
  contract::temperature(tau);
  Aux posd = aux_operand(env, info[2], "positives", Dtype::I32);
  const bool cosine = flag(info[5]), grad = flag(info[6]);
  Napi::Object row_loss = CudaTensor::Create(env, Dtype::F32, {int64_t(B)});
  Napi::Object rank = CudaTensor::Create(env, Dtype::I32, {int64_t(B)});
  Napi::Object result = Napi::Object::New(env);
  result.Set("rowLoss", row_loss);
  result.Set("rank", rank);
  Block dq, dp;
  Napi::Value dqv = env.Undefined(), dpv = env.Undefined();
  if (grad) {
    Napi::Object a = CudaTensor::Create(env, Dtype::F32, q->shape());
    Napi::Object b = CudaTensor::Create(env, Dtype::F32, p->shape());
    dq = out_tensor(a)->block();
    dp = out_tensor(b)->block();
    result.Set("dQ", a);
    result.Set("dP", b);
    dqv = a;
    dpv = b;
  }
  Block qb = q->block(), pb = p->block(), lb = out_tensor(row_loss)->block(), rb = out_tensor(rank)->block();
  auto sums = std::make_shared<cuda::InfoNceResult>();
  return run_work(
      env, flag(info[7]), objects({info[0], info[1], row_loss, rank, dqv, dpv}), result,
      [=] {
        posd.upload();
        w.upload();
        *sums = cuda::info_nce(static_cast<const float*>(qb->ptr), static_cast<const float*>(pb->ptr), B, M, D,
                               static_cast<const int32_t*>(posd.ptr), static_cast<const float*>(w.ptr), tau, cosine,
                               static_cast<float*>(lb->ptr), static_cast<int32_t*>(rb->ptr),
                               dq ? static_cast<float*>(dq->ptr) : nullptr, dp ? static_cast<float*>(dp->ptr) : nullptr);
      },
      [sums](Napi::Env e, Napi::Object r) {
        r.Set("loss", Napi::Number::New(e, sums->loss));
        r.Set("accuracy", Napi::Number::New(e, sums->accuracy));
      });
}

// ensembleMI(z, lengths, temperature, epsMode, async) -> { mi, confidence } on cuda
Napi::Value EnsembleMI(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaTensor* z = CudaTensor::From(env, info[0], "scores");
  const contract::EnsembleShape shape = contract::ensemble_scores(z->dtype(), z->shape());
  const size_t B = shape.batch, K = shape.members, L = shape.len;
  Aux lengths;
  if (!info[1].IsNull() && !info[1].IsUndefined()) {
    const std::vector<int32_t> h = host_ints(env, info[1], "lengths");
    contract::ensemble_length_count(h.size(), shape);
    contract::ensemble_lengths(h.data(), shape);
    lengths = aux_operand(env, info[1], "lengths", Dtype::I32);
  }
  const float temperature = float(number_arg(info[2], "temperature"));
  contract::temperature(temperature);
  const bool eps = flag(info[3]);
  Napi::Object mi = CudaTensor::Create(env, Dtype::F32, {int64_t(B)});
  Napi::Object conf = CudaTensor::Create(env, Dtype::F32, {int64_t(B)});
  Napi::Object result = Napi::Object::New(env);
  result.Set("mi", mi);
  result.Set("confidence", conf);
  Block zb = z->block(), mb = out_tensor(mi)->block(), cb = out_tensor(conf)->block();
  return run_work(env, flag(info[4]), objects({info[0], mi, conf}), result, [=] {
    lengths.upload();
    cuda::ensemble_mi(static_cast<const float*>(zb->ptr), B, K, L, static_cast<const int32_t*>(lengths.ptr),
                      temperature, eps, static_cast<float*>(mb->ptr), static_cast<float*>(cb->ptr));
    cuda::sync("ensembleMI");
  });
}

// fillUniform(tensor, seed, lo, hi): benchmark data made on the device (kernels.h)
Napi::Value FillUniform(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaTensor* t = CudaTensor::From(env, info[0], "tensor");
  need_float(t, "tensor");
  const double seed = number_arg(info[1], "seed");
  cuda::fill_uniform(t->data(), t->dtype(), t->numel(), uint64_t(seed), float(number_arg(info[2], "lo")),
                     float(number_arg(info[3], "hi")));
  cuda::sync("fillUniform");
  return env.Undefined();
}

Napi::Value EmptyCache(const Napi::CallbackInfo& info) {
  cuda::empty_cache();
  return info.Env().Undefined();
}

Napi::Value MemoryStats(const Napi::CallbackInfo& info) {
  const cuda::MemoryStats m = cuda::memory_stats();
  Napi::Object r = Napi::Object::New(info.Env());
  r.Set("allocated", double(m.allocated));
  r.Set("cached", double(m.cached));
  r.Set("peak", double(m.peak));
  r.Set("mallocs", double(m.mallocs));
  return r;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* ctor = new Napi::FunctionReference();
  env.SetInstanceData(ctor);
  exports.Set("CudaTensor", CudaTensor::Init(env, ctor));
  exports.Set("available", Napi::Function::New<guarded<Available>>(env));
  exports.Set("upload", Napi::Function::New<guarded<Upload>>(env));
  exports.Set("download", Napi::Function::New<guarded<Download>>(env));
  exports.Set("convert", Napi::Function::New<guarded<Convert>>(env));
  exports.Set("scoreTopK", Napi::Function::New<guarded<ScoreTopK>>(env));
  exports.Set("maxSim", Napi::Function::New<guarded<MaxSim>>(env));
  exports.Set("spladePool", Napi::Function::New<guarded<SpladePool>>(env));
  exports.Set("spladePoolBackward", Napi::Function::New<guarded<SpladePoolBackward>>(env));
  exports.Set("infoNce", Napi::Function::New<guarded<InfoNce>>(env));
  exports.Set("ensembleMI", Napi::Function::New<guarded<EnsembleMI>>(env));
  exports.Set("fillUniform", Napi::Function::New<guarded<FillUniform>>(env));
  exports.Set("emptyCache", Napi::Function::New<guarded<EmptyCache>>(env));
  exports.Set("memoryStats", Napi::Function::New<guarded<MemoryStats>>(env));
  return exports;
}

}  // namespace
}  // namespace quorum::napi

static Napi::Object InitCuda(Napi::Env env, Napi::Object exports) { return quorum::napi::Init(env, exports); }

NODE_API_MODULE(quorum_cuda, InitCuda)
