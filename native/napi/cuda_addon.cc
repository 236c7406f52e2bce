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
#include "../cuda/runtime.h"
#include "async_call.h"
#include "cuda_tensor.h"
#include "errors.h"
#include "scalar_args.h"

namespace quorum::napi {
namespace {

using Block = std::shared_ptr<DeviceBlock>;

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
void need_f32(const CudaTensor* t, const char* what) {
  need(t->dtype() == Dtype::F32, "ERR_DTYPE", std::string(what) + " must be f32, got " + dtype_name(t->dtype()));
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
  need(q->shape().size() == 2, "ERR_SHAPE", "queries must be 2-D [rows, dim], got " + shape_str(q->shape()));
  need(c->shape().size() == 2, "ERR_SHAPE", "corpus must be 2-D [rows, dim], got " + shape_str(c->shape()));
  need_f32(q, "queries");
  need_float(c, "corpus");
  const size_t B = size_t(q->shape()[0]), D = size_t(q->shape()[1]), N = size_t(c->shape()[0]);
  need(D > 0, "ERR_SHAPE", "queries have dimension 0");
  need(size_t(c->shape()[1]) == D, "ERR_SHAPE",
       "corpus dimension " + std::to_string(c->shape()[1]) + " differs from the queries' " + std::to_string(D));
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
  need_f32(q, "queries");
  const auto& qs = q->shape();
  need(qs.size() == 2 || qs.size() == 3, "ERR_SHAPE", "queries must be [Lq, dim] or [nq, Lq, dim], got " + shape_str(qs));
  const size_t nq = qs.size() == 3 ? size_t(qs[0]) : 1, lq = size_t(qs[qs.size() - 2]), dim = size_t(qs.back());
  need(dim > 0, "ERR_SHAPE", "query token vectors have dimension 0");
  CudaTensor* d = CudaTensor::From(env, info[2], "documents");
  need_float(d, "documents");
  const auto& ds = d->shape();
  need(ds.size() == 2 || ds.size() == 3, "ERR_SHAPE", "documents must be packed [tokens, dim] or padded [N, Ld, dim], got " + shape_str(ds));
  need(size_t(ds.back()) == dim, "ERR_SHAPE", "document dimension " + std::to_string(ds.back()) + " differs from the queries' " + std::to_string(dim));
  const std::vector<int32_t> len = host_ints(env, info[3], "lengths");
  const size_t n = len.size();
  const size_t rows = ds.size() == 2 ? size_t(ds[0]) : size_t(ds[0]) * size_t(ds[1]);
  // Document offsets, start[n] then length[n], written straight into the bytes the work copies to the device.
  Aux sl;
  sl.host = std::make_shared<std::vector<uint8_t>>(n * 16);
  int64_t* start = reinterpret_cast<int64_t*>(sl.host->data());
  int64_t* length = start + n;
  int64_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(len[i] >= 0)) throw Error("ERR_RANGE", "length " + std::to_string(len[i]) + " of document " + std::to_string(i) + " is negative");
    if (ds.size() == 3) {
      if (!(n == size_t(ds[0]))) throw Error("ERR_SHAPE", "padded documents [N, Ld, dim] need N = " + std::to_string(ds[0]) + " lengths, got " + std::to_string(n));
      if (!(len[i] <= ds[1])) throw Error("ERR_RANGE", "length " + std::to_string(len[i]) + " of document " + std::to_string(i) + " exceeds the padded length " + std::to_string(ds[1]));
      start[i] = int64_t(i) * ds[1];
    } else {
      start[i] = at;
    }
    length[i] = len[i];
    at += len[i];
  }
  if (ds.size() == 2)
    need(size_t(at) == rows, "ERR_SHAPE", "document lengths sum to " + std::to_string(at) + " but the packed documents hold " + std::to_string(rows) + " token rows");
  Aux qm = aux_operand(env, info[1], "queryMask", Dtype::U8);
  if (qm.ptr) need(qm.numel == nq * lq, "ERR_SHAPE", "queryMask must hold nq * Lq = " + std::to_string(nq * lq) + " entries, got " + std::to_string(qm.numel));
  Aux tm = aux_operand(env, info[4], "tokenMask", Dtype::U8);
  if (tm.ptr) need(tm.numel == rows, "ERR_SHAPE", "tokenMask must hold one entry per token row (" + std::to_string(rows) + "), got " + std::to_string(tm.numel));
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

struct LogitsShape {
  size_t b, l, v;
};
LogitsShape logits_shape(CudaTensor* x) {
  need_float(x, "logits");
  const auto& s = x->shape();
  need(s.size() == 3, "ERR_SHAPE", "logits must be [B, L, V], got " + shape_str(s));
  return {size_t(s[0]), size_t(s[1]), size_t(s[2])};
}

// spladePool(logits, mask, argmax, async) -> { weights, argmax? } on cuda
Napi::Value SpladePool(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaTensor* x = CudaTensor::From(env, info[0], "logits");
  const LogitsShape s = logits_shape(x);
  Aux mask = aux_operand(env, info[1], "mask", Dtype::U8);
  if (mask.ptr) need(mask.numel == s.b * s.l, "ERR_SHAPE", "mask must hold B * L = " + std::to_string(s.b * s.l) + " entries, got " + std::to_string(mask.numel));
  Napi::Object w = CudaTensor::Create(env, Dtype::F32, {int64_t(s.b), int64_t(s.v)});
  Napi::Object result = Napi::Object::New(env);
  result.Set("weights", w);
  Block arg;
  Napi::Value argv = env.Undefined();
  if (flag(info[2])) {
    Napi::Object a = CudaTensor::Create(env, Dtype::I32, {int64_t(s.b), int64_t(s.v)});
    arg = out_tensor(a)->block();
    result.Set("argmax", a);
    argv = a;
  }
  Block xb = x->block(), wb = out_tensor(w)->block();
  const Dtype dt = x->dtype();
  return run_work(env, flag(info[3]), objects({info[0], w, argv}), result, [=] {
    mask.upload();
    cuda::splade_pool(xb->ptr, dt, s.b, s.l, s.v, static_cast<const uint8_t*>(mask.ptr), static_cast<float*>(wb->ptr),
                      arg ? static_cast<int32_t*>(arg->ptr) : nullptr);
    cuda::sync("spladePool");
  });
}

// spladePoolBackward(logits, argmax, grad, async) -> f32 [B, L, V] on cuda
Napi::Value SpladePoolBackward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaTensor* x = CudaTensor::From(env, info[0], "logits");
  const LogitsShape s = logits_shape(x);
  CudaTensor* a = CudaTensor::From(env, info[1], "argmax");
  CudaTensor* g = CudaTensor::From(env, info[2], "grad");
  need(a->dtype() == Dtype::I32 && a->numel() == s.b * s.v, "ERR_SHAPE", "argmax must be i32 [B, V]");
  need_f32(g, "grad");
  need(g->numel() == s.b * s.v, "ERR_SHAPE", "grad must be [B, V]");
  Napi::Object out = CudaTensor::Create(env, Dtype::F32, x->shape());
  Block xb = x->block(), ab = a->block(), gb = g->block(), ob = out_tensor(out)->block();
  const Dtype dt = x->dtype();
  return run_work(env, flag(info[3]), objects({info[0], info[1], info[2], out}), out, [=] {
    cuda::splade_pool_backward(xb->ptr, dt, s.b, s.l, s.v, static_cast<const int32_t*>(ab->ptr),
                               static_cast<const float*>(gb->ptr), static_cast<float*>(ob->ptr));
    cuda::sync("spladePoolBackward");
  });
}

// infoNce(q, p, pos, weights, temperature, cosine, grad, async) -> { loss, accuracy, rowLoss, rank, dQ?, dP? } on cuda
Napi::Value InfoNce(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CudaTensor* q = CudaTensor::From(env, info[0], "queries");
  CudaTensor* p = CudaTensor::From(env, info[1], "passages");
  need_f32(q, "queries");
  need_f32(p, "passages");
  need(q->shape().size() == 2 && p->shape().size() == 2, "ERR_SHAPE", "queries and passages must be 2-D");
  const size_t B = size_t(q->shape()[0]), D = size_t(q->shape()[1]), M = size_t(p->shape()[0]);
  need(size_t(p->shape()[1]) == D, "ERR_SHAPE", "passages' dimension differs from the queries'");
  need(M > 0, "ERR_SHAPE", "infoNce needs at least one passage");
  need(D > 0, "ERR_SHAPE", "infoNce needs vectors of dimension > 0");
  const std::vector<int32_t> pos = host_ints(env, info[2], "positives");
  need(pos.size() == B, "ERR_SHAPE", "positives must hold one index per query (" + std::to_string(B) + ")");
  for (size_t i = 0; i < B; ++i)
    if (!(pos[i] >= 0 && size_t(pos[i]) < M)) throw Error("ERR_RANGE", "positive index " + std::to_string(pos[i]) + " of row " + std::to_string(i) + " is outside [0, " + std::to_string(M) + ")");
  const float tau = float(number_arg(info[4], "temperature"));
  need(std::isfinite(tau) && tau > 0, "ERR_RANGE", "temperature must be positive and finite");
  Aux posd = aux_operand(env, info[2], "positives", Dtype::I32);
  Aux w = aux_operand(env, info[3], "weights", Dtype::F32);
  if (w.ptr) need(w.numel == B, "ERR_SHAPE", "weights must hold one value per query");
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
  need_f32(z, "scores");
  const auto& s = z->shape();
  need(s.size() == 3, "ERR_SHAPE", "scores must be [B, K, L], got " + shape_str(s));
  const size_t B = size_t(s[0]), K = size_t(s[1]), L = size_t(s[2]);
  need(K >= 2 && L >= 1, "ERR_SHAPE", "ensemble MI needs at least 2 members and 1 candidate");
  Aux lengths;
  if (!info[1].IsNull() && !info[1].IsUndefined()) {
    const std::vector<int32_t> h = host_ints(env, info[1], "lengths");
    need(h.size() == B, "ERR_SHAPE", "lengths must hold one value per query");
    for (size_t i = 0; i < B; ++i)
      if (!(h[i] >= 1 && size_t(h[i]) <= L)) throw Error("ERR_RANGE", "length " + std::to_string(h[i]) + " of query " + std::to_string(i) + " is outside [1, " + std::to_string(L) + "]");
    lengths = aux_operand(env, info[1], "lengths", Dtype::I32);
  }
  const float temperature = float(number_arg(info[2], "temperature"));
  need(std::isfinite(temperature) && temperature > 0, "ERR_RANGE", "temperature must be positive and finite");
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
