// quorum_faiss.node: the DenseIndex object (native/index/dense_index.h) and the faiss thread setting. A separate
// module, built by CMake only, so the core stays free of system libraries. Core tensors cannot cross addons, so
// arguments are plain typed arrays (lib/dense-index.ts passes a tensor's zero-copy view); the async forms keep
// them referenced until the work ends.
#include <napi.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../index/dense_index.h"
#include "async_call.h"
#include "errors.h"
#include "scalar_args.h"

namespace quorum::napi {
namespace {

using index::DenseIndex;

template <class T, napi_typedarray_type kType>
struct ArrayArg {
  Napi::Object object;
  T* data;
  size_t length;
};

template <class T, napi_typedarray_type kType>
ArrayArg<T, kType> array_arg(const Napi::Value& v, const char* what, const char* type_name) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != kType)
    throw Error("ERR_DTYPE", std::string(what) + " must be a " + type_name);
  auto a = v.As<Napi::TypedArrayOf<T>>();
  return {a, a.Data(), a.ElementLength()};
}

ArrayArg<float, napi_float32_array> f32_arg(const Napi::Value& v, const char* what) {
  return array_arg<float, napi_float32_array>(v, what, "Float32Array");
}
ArrayArg<int64_t, napi_bigint64_array> i64_arg(const Napi::Value& v, const char* what) {
  return array_arg<int64_t, napi_bigint64_array>(v, what, "BigInt64Array");
}

// The most result slots (rows x k, or ids x dim) one call returns: 2^31 elements is 16 GiB of ids already, and
// past V8's typed-array limits on some builds.
constexpr size_t kMaxResultSlots = size_t(1) << 31;

// Results up to this size are copied into V8's own memory, which GC frees directly; Node runs the finalizers
// of external buffers only when the event loop turns, so a loop of Sync searches that never yields would hold
// every result until it did. Larger results stay external (no copy, and no V8 allocation that could fail fatally).
constexpr size_t kCopyResultBytes = size_t(64) << 20;

// A JS ArrayBuffer holding a vector's contents: a V8 copy when small, else the vector's own memory, freed with
// the buffer, with V8 told of its size so that GC runs as often as the memory warrants.
template <class T>
Napi::ArrayBuffer external_buffer(Napi::Env env, std::vector<T>&& v) {
  if (v.empty()) return Napi::ArrayBuffer::New(env, 0);
  if (v.size() * sizeof(T) <= kCopyResultBytes) {
    Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, v.size() * sizeof(T));
    std::memcpy(ab.Data(), v.data(), v.size() * sizeof(T));
    return ab;
  }
  auto* held = new std::vector<T>(std::move(v));
  const int64_t bytes = int64_t(held->size() * sizeof(T));
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(
      env, held->data(), size_t(bytes),
      [bytes](Napi::Env env, void*, std::vector<T>* h) {
        Napi::MemoryManagement::AdjustExternalMemory(env, -bytes);
        delete h;
      },
      held);
  Napi::MemoryManagement::AdjustExternalMemory(env, bytes);
  return ab;
}

// An optional count (undefined -> 0).
int count_arg(const Napi::Value& v, const char* key) {
  if (v.IsUndefined() || v.IsNull()) return 0;
  double d = number_arg(v, key);
  if (d < 0 || d > 1 << 24 || d != double(int64_t(d))) throw Error("ERR_RANGE", std::string(key) + " must be an integer in [0, 2^24]");
  return int(d);
}

int int_option(const Napi::Object& o, const char* key) { return count_arg(o.Get(key), key); }

index::Mips mips_arg(const Napi::Value& v) {
  if (v.IsUndefined() || v.IsNull()) return index::Mips::kInnerProduct;
  const std::string s = v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
  if (s == "inner-product") return index::Mips::kInnerProduct;
  if (s == "l2") return index::Mips::kL2Transform;
  throw Error("ERR_ARG", "mips must be 'inner-product' or 'l2'");
}

class DenseIndexObject : public Napi::ObjectWrap<DenseIndexObject> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "DenseIndex",
                       {InstanceMethod<&DenseIndexObject::Train>("train"),
                        InstanceMethod<&DenseIndexObject::Add>("add"),
                        InstanceMethod<&DenseIndexObject::Remove>("remove"),
                        InstanceMethod<&DenseIndexObject::Compact>("compact"),
                        InstanceMethod<&DenseIndexObject::Search>("search"),
                        InstanceMethod<&DenseIndexObject::Reconstruct>("reconstruct"),
                        InstanceMethod<&DenseIndexObject::Save>("save"),
                        InstanceMethod<&DenseIndexObject::Load>("load"),
                        InstanceMethod<&DenseIndexObject::Map>("map"),
                        InstanceMethod<&DenseIndexObject::ToBuffer>("toBuffer"),
                        InstanceMethod<&DenseIndexObject::FromBuffer>("fromBuffer"),
                        InstanceMethod<&DenseIndexObject::Info>("info"),
                        InstanceMethod<&DenseIndexObject::SetSearchDefaults>("setSearchDefaults"),
                        InstanceMethod<&DenseIndexObject::Dispose>("dispose"),
                        InstanceMethod<&DenseIndexObject::IsDisposed>("isDisposed")});
  }

  // new DenseIndex({dim, factory, mips, phi, efConstruction, efSearch, nprobe}), or new DenseIndex() for an empty
  // shell that load() / fromBuffer() fills.
  explicit DenseIndexObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DenseIndexObject>(info) {
    guard(info.Env(), [&] {
      if (info.Length() == 0 || info[0].IsUndefined()) return info.Env().Undefined();
      if (!info[0].IsObject()) throw Error("ERR_ARG", "DenseIndex options must be an object");
      Napi::Object o = info[0].As<Napi::Object>();
      index::DenseIndexOptions opt;
      const double dim = number_arg(o.Get("dim"), "dim");
      if (dim < 1 || dim != double(int64_t(dim))) throw Error("ERR_RANGE", "dim must be a positive integer");
      opt.dim = size_t(dim);
      if (!o.Get("factory").IsUndefined()) {
        if (!o.Get("factory").IsString()) throw Error("ERR_ARG", "factory must be a string");
        opt.factory = o.Get("factory").As<Napi::String>().Utf8Value();
      }
      opt.mips = mips_arg(o.Get("mips"));
      if (!o.Get("phi").IsUndefined()) opt.phi = number_arg(o.Get("phi"), "phi");
      opt.ef_construction = int_option(o, "efConstruction");
      opt.ef_search = int_option(o, "efSearch");
      opt.nprobe = int_option(o, "nprobe");
      index_ = std::make_shared<DenseIndex>(opt);
      return info.Env().Undefined();
    });
  }

 private:
  std::shared_ptr<DenseIndex> held() const {
    if (disposed_) throw Error("ERR_DISPOSED", "this DenseIndex was disposed");
    if (!index_) throw Error("ERR_STATE", "DenseIndex is empty (load() did not complete)");
    return index_;
  }

  // dispose(): drops the faiss index now, or when the last queued call (which holds its own reference) ends.
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    disposed_ = true;
    index_.reset();
    return info.Env().Undefined();
  }

  Napi::Value IsDisposed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), disposed_); }

  // rows in a [rows, dim] Float32Array, or ERR_SHAPE.
  static size_t rows_of(size_t length, size_t dim, const char* what) {
    if (length % dim != 0)
      throw Error("ERR_SHAPE", std::string(what) + " holds " + std::to_string(length) + " floats, not a multiple of dim " +
                                   std::to_string(dim));
    return length / dim;
  }

  // train(x, async)
  Napi::Value Train(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto index = held();
      auto x = f32_arg(info[0], "vectors");
      const size_t n = rows_of(x.length, index->dim(), "vectors");
      const float* p = x.data;
      return run_work(info.Env(), flag(info[1]), {x.object}, Napi::Object::New(info.Env()), [=] { index->train(p, n); });
    });
  }

  // add(x, ids, async)
  Napi::Value Add(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto index = held();
      auto x = f32_arg(info[0], "vectors");
      auto ids = i64_arg(info[1], "ids");
      const size_t n = rows_of(x.length, index->dim(), "vectors");
      if (ids.length != n) throw Error("ERR_SHAPE", std::to_string(ids.length) + " ids for " + std::to_string(n) + " vectors");
      const float* p = x.data;
      const int64_t* ip = ids.data;
      return run_work(info.Env(), flag(info[2]), {x.object, ids.object}, Napi::Object::New(info.Env()),
                      [=] { index->add(p, ip, n); });
    });
  }

  // remove(ids, async) -> { removed }
  Napi::Value Remove(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto index = held();
      auto ids = i64_arg(info[0], "ids");
      const int64_t* ip = ids.data;
      const size_t n = ids.length;
      auto removed = std::make_shared<size_t>(0);
      return run_work(
          info.Env(), flag(info[1]), {ids.object}, Napi::Object::New(info.Env()), [=] { *removed = index->remove(ip, n); },
          [removed](Napi::Env env, Napi::Object result) { result.Set("removed", Napi::Number::New(env, double(*removed))); });
    });
  }

  // compact(async) -> { removed }: an HNSW graph rebuilt without its tombstones
  Napi::Value Compact(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto index = held();
      auto removed = std::make_shared<size_t>(0);
      return run_work(
          info.Env(), flag(info[0]), {}, Napi::Object::New(info.Env()), [=] { *removed = index->compact(); },
          [removed](Napi::Env env, Napi::Object result) { result.Set("removed", Napi::Number::New(env, double(*removed))); });
    });
  }

  // search(q, k, efSearch, nprobe, async, allowed?, filterScanBelow?) -> { ids: BigInt64Array [rows * k], scores, rows, k }
  //   allowed: BigInt64Array of the only ids the search may return (a filter inside the search); filterScanBelow:
  //   HNSW scans the allowed vectors exactly when at most this many are held (0: always walks the graph)
  // The results are allocated natively by the work (a size V8 cannot hold is ERR_RANGE / ERR_NOMEM, never
  // V8's fatal allocation failure) and handed to JS as external buffers without a copy.
  Napi::Value Search(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto index = held();
      auto q = f32_arg(info[0], "queries");
      const size_t n = rows_of(q.length, index->dim(), "queries");
      const size_t k = k_arg(info[1]);
      if (n > kMaxResultSlots / k)
        throw Error("ERR_RANGE", std::to_string(n) + " queries x k " + std::to_string(k) + " result slots exceed 2^31: search in batches");
      index::SearchOptions opt;
      opt.ef_search = count_arg(info[2], "efSearch");
      opt.nprobe = count_arg(info[3], "nprobe");
      // The allowed ids, copied: the caller's array may change while an async call waits.
      std::shared_ptr<std::vector<int64_t>> allowed;
      if (!info[5].IsUndefined() && !info[5].IsNull()) {
        auto a = i64_arg(info[5], "allowed ids");
        allowed = std::make_shared<std::vector<int64_t>>(a.data, a.data + a.length);
        opt.filtered = true;
        opt.allowed = allowed->data();
        opt.n_allowed = allowed->size();
        if (!info[6].IsUndefined() && !info[6].IsNull()) opt.scan_below = int64_t(count_arg(info[6], "filterScanBelow"));
      }
      Napi::Object result = Napi::Object::New(env);
      result.Set("rows", Napi::Number::New(env, double(n)));
      result.Set("k", Napi::Number::New(env, double(k)));
      const float* qp = q.data;
      auto ids = std::make_shared<std::vector<int64_t>>();
      auto scores = std::make_shared<std::vector<float>>();
      return run_work(
          env, flag(info[4]), {q.object}, result,
          [=] {
            (void)allowed;  // keeps opt.allowed alive until the work has run
            ids->resize(n * k);
            scores->resize(n * k);
            index->search(qp, n, k, opt, ids->data(), scores->data());
          },
          [ids, scores, n, k](Napi::Env env, Napi::Object result) {
            result.Set("ids", Napi::BigInt64Array::New(env, n * k, external_buffer(env, std::move(*ids)), 0));
            result.Set("scores", Napi::Float32Array::New(env, n * k, external_buffer(env, std::move(*scores)), 0));
          });
    });
  }

  // reconstruct(ids, async) -> { vectors: Float32Array [n * dim] }; the ids are checked before anything is
  // allocated, and the vectors allocated natively (see search).
  Napi::Value Reconstruct(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto index = held();
      auto ids = i64_arg(info[0], "ids");
      const int64_t* ip = ids.data;
      const size_t n = ids.length;
      if (n > kMaxResultSlots / index->dim())
        throw Error("ERR_RANGE", std::to_string(n) + " ids x dim " + std::to_string(index->dim()) + " floats exceed 2^31: reconstruct in batches");
      auto out = std::make_shared<std::vector<float>>();
      return run_work(
          env, flag(info[1]), {ids.object}, Napi::Object::New(env), [=] { *out = index->reconstruct(ip, n); },
          [out](Napi::Env env, Napi::Object result) {
            const size_t len = out->size();
            result.Set("vectors", Napi::Float32Array::New(env, len, external_buffer(env, std::move(*out)), 0));
          });
    });
  }

  // save(path, async)
  Napi::Value Save(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto index = held();
      std::string path = path_arg(info[0]);
      return run_work(info.Env(), flag(info[1]), {}, Napi::Object::New(info.Env()), [=] { index->save(path); });
    });
  }

  // load(path, async): fills this (empty) object; on any error it stays as it was.
  Napi::Value Load(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      std::string path = path_arg(info[0]);
      auto slot = std::make_shared<std::unique_ptr<DenseIndex>>();
      return run_work(
          info.Env(), flag(info[1]), {info.This().As<Napi::Object>()}, Napi::Object::New(info.Env()),
          [=] { *slot = DenseIndex::load(path); }, [this, slot](Napi::Env, Napi::Object) {
            if (!disposed_) index_ = std::move(*slot);
          });
    });
  }

  // map(path, verify, async): fills this (empty) object with the file mapped read-only (DenseIndex::map).
  Napi::Value Map(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      std::string path = path_arg(info[0]);
      const bool verify = flag(info[1]);
      auto slot = std::make_shared<std::unique_ptr<DenseIndex>>();
      return run_work(
          info.Env(), flag(info[2]), {info.This().As<Napi::Object>()}, Napi::Object::New(info.Env()),
          [=] { *slot = DenseIndex::map(path, verify); }, [this, slot](Napi::Env, Napi::Object) {
            if (!disposed_) index_ = std::move(*slot);
          });
    });
  }

  Napi::Value ToBuffer(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] { return buffer_of(info.Env(), held()->to_bytes()); });
  }

  Napi::Value FromBuffer(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      if (disposed_) throw Error("ERR_DISPOSED", "this DenseIndex was disposed");
      Bytes b = bytes_arg(info[0]);
      index_ = DenseIndex::from_bytes(b.data, b.size);
      return info.Env().Undefined();
    });
  }

  // setSearchDefaults(efSearch, nprobe)
  Napi::Value SetSearchDefaults(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      index::SearchOptions opt;
      opt.ef_search = count_arg(info[0], "efSearch");
      opt.nprobe = count_arg(info[1], "nprobe");
      held()->set_search_defaults(opt);
      return info.Env().Undefined();
    });
  }

  // info() -> { dim, size, trained, factory, mips, phi, supportsRemove, efSearch, nprobe }
  Napi::Value Info(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      auto index = held();
      Napi::Object o = Napi::Object::New(env);
      o.Set("dim", Napi::Number::New(env, double(index->dim())));
      o.Set("size", Napi::Number::New(env, double(index->size())));
      o.Set("trained", Napi::Boolean::New(env, index->trained()));
      o.Set("factory", Napi::String::New(env, index->factory()));
      o.Set("mips", Napi::String::New(env, index->mips() == index::Mips::kL2Transform ? "l2" : "inner-product"));
      o.Set("phi", Napi::Number::New(env, index->phi()));
      o.Set("supportsRemove", Napi::Boolean::New(env, index->supports_remove() && !index->mapped()));
      o.Set("mapped", Napi::Boolean::New(env, index->mapped()));
      if (index->ef_search() > 0) o.Set("efSearch", Napi::Number::New(env, index->ef_search()));
      if (index->nprobe() > 0) o.Set("nprobe", Napi::Number::New(env, index->nprobe()));
      return o.As<Napi::Value>();
    });
  }

  std::shared_ptr<DenseIndex> index_;
  bool disposed_ = false;
};

Napi::Value SetThreads(const Napi::CallbackInfo& info) {
  index::set_threads(threads_arg(info[0]));
  return info.Env().Undefined();
}

Napi::Value Threads(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), index::threads()); }

// kmeans(vectors Float32Array [n * dim], dim, k, niter, seed, spherical, async) -> { centroids: Float32Array [k * dim] }
Napi::Value Kmeans(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto x = f32_arg(info[0], "vectors");
  const int dim = count_arg(info[1], "dim");
  if (dim < 1) throw Error("ERR_RANGE", "dim must be a positive integer");
  const size_t n = x.length / size_t(dim);
  if (n * size_t(dim) != x.length) throw Error("ERR_SHAPE", std::to_string(x.length) + " floats are not rows of " + std::to_string(dim));
  const int k = count_arg(info[2], "k");
  const int niter = count_arg(info[3], "niter");
  const int seed = count_arg(info[4], "seed");
  const bool spherical = flag(info[5]);
  const float* p = x.data;
  auto out = std::make_shared<std::vector<float>>();
  return run_work(
      env, flag(info[6]), {x.object}, Napi::Object::New(env),
      [=] { *out = index::kmeans(p, n, size_t(dim), size_t(k), niter, seed, spherical); },
      [out](Napi::Env env, Napi::Object result) {
        const size_t len = out->size();
        result.Set("centroids", Napi::Float32Array::New(env, len, external_buffer(env, std::move(*out)), 0));
      });
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("kmeans", Napi::Function::New<guarded<Kmeans>>(env, "kmeans"));
  exports.Set("DenseIndex", DenseIndexObject::Init(env));
  exports.Set("setThreads", Napi::Function::New<guarded<SetThreads>>(env, "setThreads"));
  exports.Set("threads", Napi::Function::New<guarded<Threads>>(env, "threads"));
  return exports;
}

}  // namespace
}  // namespace quorum::napi

static Napi::Object InitFaiss(Napi::Env env, Napi::Object exports) { return quorum::napi::Init(env, exports); }
NODE_API_MODULE(quorum_faiss, InitFaiss)
