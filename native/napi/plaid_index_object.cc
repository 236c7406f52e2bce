// The native object behind the ColBERT index (lib/methods/colbert/index.ts): a kernels::PlaidIndex held through a
// shared_ptr, so queued work keeps it alive if the JS object is disposed or collected meanwhile. Converts and checks
// arguments only; the index checks its own contract.
#include <napi.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../kernels/plaid_index.h"
#include "args.h"
#include "errors.h"
#include "kernel_call.h"

namespace quorum::napi {
namespace {

using kernels::PlaidIndex;

const float* floats(const TensorObject* t) { return reinterpret_cast<const float*>(t->data()); }
const int32_t* ints(const TensorObject* t) { return reinterpret_cast<const int32_t*>(t->data()); }

TensorObject* f32_arg(Napi::Env env, const Napi::Value& v, const char* what, const std::vector<int64_t>& shape) {
  TensorObject* t = TensorObject::From(env, v, what);
  require_dtype(t, Dtype::F32, what);
  require_shape(t, shape, what);
  return t;
}

TensorObject* i32_arg(Napi::Env env, const Napi::Value& v, const char* what) {
  TensorObject* t = TensorObject::From(env, v, what);
  require_dtype(t, Dtype::I32, what);
  require_shape(t, {-1}, what);
  return t;
}

class PlaidIndexObject : public Napi::ObjectWrap<PlaidIndexObject> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "PlaidIndex",
                       {InstanceMethod<&PlaidIndexObject::Add>("add"), InstanceMethod<&PlaidIndexObject::Remove>("remove"),
                        InstanceMethod<&PlaidIndexObject::Save>("save"), InstanceMethod<&PlaidIndexObject::Open>("open"),
                        InstanceMethod<&PlaidIndexObject::Search>("search"),
                        InstanceMethod<&PlaidIndexObject::Decode>("decode"), InstanceMethod<&PlaidIndexObject::Info>("info"),
                        InstanceMethod<&PlaidIndexObject::Dispose>("dispose"),
                        InstanceMethod<&PlaidIndexObject::IsDisposed>("isDisposed")});
  }

  // new PlaidIndex(centroids f32 [C, dim], nbits, cutoffs f32 [2^nbits - 1], weights f32 [2^nbits], full dtype code)
  //   full: f32 or f16 (the full token vectors kept for the exact stage), u8 for none
  explicit PlaidIndexObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<PlaidIndexObject>(info) {
    guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      TensorObject* c = f32_arg(env, info[0], "centroids", {-1, -1});
      const size_t nbits = count_arg(info[1], "nbits");
      need(nbits == 1 || nbits == 2, "ERR_RANGE", "nbits must be 1 or 2");
      TensorObject* cut = f32_arg(env, info[2], "cutoffs", {int64_t((1u << nbits) - 1)});
      TensorObject* w = f32_arg(env, info[3], "weights", {int64_t(1u << nbits)});
      index_ = std::make_shared<PlaidIndex>(floats(c), size_t(c->shape()[0]),
                                            kernels::ResidualCodec(size_t(c->shape()[1]), nbits, floats(cut), floats(w)),
                                            parse_dtype(info[4]));
      return env.Undefined();
    });
  }

 private:
  std::shared_ptr<PlaidIndex> held() const {
    if (!index_) throw Error("ERR_DISPOSED", "this ColBERT index was disposed");
    return index_;
  }

  // add(tokens f32 [T, dim], codes i32 [T], lengths i32 [P], async)
  Napi::Value Add(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto index = held();
      TensorObject* x = f32_arg(env, info[0], "token vectors", {-1, int64_t(index->dim())});
      TensorObject* codes = i32_arg(env, info[1], "codes");
      TensorObject* lengths = i32_arg(env, info[2], "lengths");
      need(codes->numel() == size_t(x->shape()[0]), "ERR_SHAPE", "one code a token vector");
      const float* xp = floats(x);
      const int32_t* cp = ints(codes);
      const int32_t* lp = ints(lengths);
      const size_t T = codes->numel(), P = lengths->numel();
      return run_kernel(env, flag(info[3]), operands({info[0], info[1], info[2]}), Napi::Object::New(env),
                        [=] { index->add(xp, cp, T, lp, P); });
    });
  }

  // remove(rows i32 [n]) -> how many were not removed before
  Napi::Value Remove(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto index = held();
      TensorObject* rows = i32_arg(info.Env(), info[0], "rows");
      return Napi::Number::New(info.Env(), double(index->remove(ints(rows), rows->numel())));
    });
  }

  // save(dir, async): the four array files into dir (which exists)
  Napi::Value Save(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto index = held();
      const std::string dir = path_arg(info[0]);
      return run_kernel(info.Env(), flag(info[1]), {}, Napi::Object::New(info.Env()), [=] { index->save(dir); });
    });
  }

  // open(dir, map, async)
  Napi::Value Open(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto index = held();
      const std::string dir = path_arg(info[0]);
      const bool map = flag(info[1]);
      return run_kernel(info.Env(), flag(info[2]), {}, Napi::Object::New(info.Env()), [=] { index->open(dir, map); });
    });
  }

  // search(questions f32 [sum lq, dim], lengths i32 [B], k, ncells, threshold, ndocs, exact, allowed i32 | null, async)
  //   -> { ids: i32 [B, k], scores: f32 [B, k], counts: i32 [B] }; past a count: -1 and -inf
  Napi::Value Search(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto index = held();
      TensorObject* q = f32_arg(env, info[0], "question tokens", {-1, int64_t(index->dim())});
      TensorObject* ql = i32_arg(env, info[1], "question lengths");
      kernels::PlaidParams prm;
      prm.k = k_arg(info[2]);
      prm.ncells = count_arg(info[3], "ncells");
      prm.threshold = float(number_arg(info[4], "threshold"));
      prm.ndocs = count_arg(info[5], "ndocs");
      prm.exact = count_arg(info[6], "exact", false);
      const TensorObject* a = optional_tensor(env, info[7], "allowed passages");
      std::shared_ptr<std::vector<int32_t>> allowed = a ? allowed_rows(a, index->passages()) : nullptr;
      const size_t B = ql->numel();
      auto starts = std::make_shared<std::vector<size_t>>(B + 1, 0);
      for (size_t b = 0; b < B; ++b) {
        need(ints(ql)[b] >= 0, "ERR_RANGE", "a question length is negative");
        (*starts)[b + 1] = (*starts)[b] + size_t(ints(ql)[b]);
      }
      need((*starts)[B] == size_t(q->shape()[0]), "ERR_SHAPE", "the question lengths do not add up to the question tokens");
      const size_t k = prm.k;
      Napi::Object ids = TensorObject::Create(env, Dtype::I32, {int64_t(B), int64_t(k)}, false);
      Napi::Object scores = TensorObject::Create(env, Dtype::F32, {int64_t(B), int64_t(k)}, false);
      Napi::Object counts = TensorObject::Create(env, Dtype::I32, {int64_t(B)}, false);
      Napi::Object result = Napi::Object::New(env);
      result.Set("ids", ids);
      result.Set("scores", scores);
      result.Set("counts", counts);
      auto* ip = data_of<int32_t>(ids);
      auto* sp = data_of<float>(scores);
      auto* cp = data_of<int32_t>(counts);
      const float* qp = floats(q);
      const size_t dim = index->dim();
      return run_kernel(env, flag(info[8]), operands({info[0], ids, scores, counts}), result, [=] {
        for (size_t b = 0; b < B; ++b) {
          const size_t n = index->search(qp + (*starts)[b] * dim, (*starts)[b + 1] - (*starts)[b], prm,
                                         allowed ? allowed->data() : nullptr, allowed ? allowed->size() : 0, ip + b * k,
                                         sp + b * k);
          cp[b] = int32_t(n);
          for (size_t i = n; i < k; ++i) ip[b * k + i] = -1, sp[b * k + i] = -INFINITY;
        }
      });
    });
  }

  // decode(row) -> f32 [length, dim]: the passage's tokens as the index stores them
  Napi::Value Decode(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto index = held();
      const size_t row = count_arg(info[0], "row", false);
      need(row < index->passages(), "ERR_RANGE", "row " + std::to_string(row) + " is not in the index");
      const size_t len = index->length(row);
      Napi::Object out = TensorObject::Create(info.Env(), Dtype::F32, {int64_t(len), int64_t(index->dim())}, false);
      index->decode(row, data_of<float>(out), len * index->dim());
      return out;
    });
  }

  Napi::Value Info(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto index = held();
      Napi::Env env = info.Env();
      Napi::Object o = Napi::Object::New(env);
      o.Set("passages", double(index->passages()));
      o.Set("tokens", double(index->tokens()));
      o.Set("removed", double(index->removed()));
      o.Set("storedBytes", double(index->stored_bytes()));
      o.Set("codeBytes", double(index->code_bytes()));
      o.Set("centroids", double(index->n_centroids()));
      o.Set("dim", double(index->dim()));
      o.Set("nbits", double(index->codec().nbits()));
      o.Set("vectors", index->keeps_vectors() ? double(int(index->full_dtype())) : -1.0);
      return o;
    });
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    index_.reset();
    return info.Env().Undefined();
  }
  Napi::Value IsDisposed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), !index_); }

  std::shared_ptr<PlaidIndex> index_;
};

// plaidFitCodec(residuals f32 [n, dim], nbits) -> { cutoffs: f32 [2^nbits - 1], weights: f32 [2^nbits] }
Napi::Value FitCodec(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&] {
    Napi::Env env = info.Env();
    TensorObject* r = f32_arg(env, info[0], "residuals", {-1, -1});
    const size_t nbits = count_arg(info[1], "nbits");
    const kernels::ResidualCodec codec =
        kernels::ResidualCodec::fit(size_t(r->shape()[1]), nbits, floats(r), size_t(r->shape()[0]));
    Napi::Object cut = TensorObject::Create(env, Dtype::F32, {int64_t(codec.cutoffs().size())}, false);
    Napi::Object w = TensorObject::Create(env, Dtype::F32, {int64_t(codec.weights().size())}, false);
    std::copy(codec.cutoffs().begin(), codec.cutoffs().end(), data_of<float>(cut));
    std::copy(codec.weights().begin(), codec.weights().end(), data_of<float>(w));
    Napi::Object o = Napi::Object::New(env);
    o.Set("cutoffs", cut);
    o.Set("weights", w);
    return o;
  });
}

}  // namespace

void register_plaid_index(Napi::Env env, Napi::Object exports) {
  exports.Set("PlaidIndex", PlaidIndexObject::Init(env));
  exports.Set("plaidFitCodec", Napi::Function::New(env, FitCodec, "plaidFitCodec"));
}

}  // namespace quorum::napi
