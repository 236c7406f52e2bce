// The native object behind lib/sparse-index.ts: a kernels::SparseIndex owned through a shared_ptr, so that
// async work keeps the index alive even if the JS object is collected meanwhile.
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../kernels/sparse_index.h"
#include "addon_data.h"
#include "args.h"
#include "errors.h"
#include "index_args.h"
#include "kernel_call.h"

namespace quorum::napi {
namespace {

class SparseIndexObject : public Napi::ObjectWrap<SparseIndexObject> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "SparseIndex",
                       {InstanceMethod<&SparseIndexObject::Add>("add"),
                        InstanceMethod<&SparseIndexObject::Remove>("remove"),
                        InstanceMethod<&SparseIndexObject::Relabel>("relabel"),
                        InstanceMethod<&SparseIndexObject::Search>("search"),
                        InstanceMethod<&SparseIndexObject::Save>("save"),
                        InstanceMethod<&SparseIndexObject::Load>("load"),
                        InstanceMethod<&SparseIndexObject::ToBuffer>("toBuffer"),
                        InstanceMethod<&SparseIndexObject::FromBuffer>("fromBuffer"),
                        InstanceMethod<&SparseIndexObject::Dispose>("dispose"),
                        InstanceMethod<&SparseIndexObject::IsDisposed>("isDisposed"),
                        InstanceAccessor<&SparseIndexObject::Size>("size"),
                        InstanceAccessor<&SparseIndexObject::Postings>("postings"),
                        InstanceAccessor<&SparseIndexObject::Vocab>("vocab")});
  }
  explicit SparseIndexObject(const Napi::CallbackInfo& info)
      : Napi::ObjectWrap<SparseIndexObject>(info), index_(std::make_shared<kernels::SparseIndex>()) {}

  // The index, or ERR_DISPOSED after dispose(). Queued work holds its own reference, so dispose() during an async
  // call frees the postings when that call ends, not under it.
  std::shared_ptr<kernels::SparseIndex> held() const {
    if (!index_) throw Error("ERR_DISPOSED", "this SparseIndex was disposed");
    return index_;
  }

 private:
  // add(ids i64 [rows], offsets, indices, values, async) -> {} (or a Promise of it)
  Napi::Value Add(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      TensorObject* it = TensorObject::From(env, info[0], "ids");
      require_dtype(it, Dtype::I64, "ids");
      SparseArg rows = sparse_arg(env, info, 1);
      if (it->numel() != rows.view.rows)
        throw Error("ERR_SHAPE", std::to_string(it->numel()) + " ids for " + std::to_string(rows.view.rows) + " rows");
      const auto* ids = reinterpret_cast<const int64_t*>(it->data());
      auto index = held();
      return run_kernel(env, flag(info[4]), operands({info[0], info[1], info[2], info[3]}), Napi::Object::New(env),
                        [=] { index->add(ids, rows.view, rows.nnz); });
    });
  }

  // remove(ids i64 [n], async) -> { removed }
  Napi::Value Remove(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      TensorObject* it = TensorObject::From(env, info[0], "ids");
      require_dtype(it, Dtype::I64, "ids");
      const auto* ids = reinterpret_cast<const int64_t*>(it->data());
      const size_t n = it->numel();
      auto index = held();
      auto removed = std::make_shared<size_t>(0);
      return run_kernel(
          env, flag(info[1]), operands({info[0]}), Napi::Object::New(env), [=] { *removed = index->remove(ids, n); },
          [removed](Napi::Env e, Napi::Object r) { r.Set("removed", Napi::Number::New(e, double(*removed))); });
    });
  }

  // relabel(from i64 [n], to i64 [n]): now (a pass over the id map).
  Napi::Value Relabel(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      TensorObject* f = TensorObject::From(env, info[0], "from");
      TensorObject* t = TensorObject::From(env, info[1], "to");
      require_dtype(f, Dtype::I64, "from");
      require_dtype(t, Dtype::I64, "to");
      if (f->numel() != t->numel()) throw Error("ERR_SHAPE", std::to_string(f->numel()) + " ids to relabel, " + std::to_string(t->numel()) + " new ids");
      held()->relabel(reinterpret_cast<const int64_t*>(f->data()), reinterpret_cast<const int64_t*>(t->data()), f->numel());
      return env.Undefined();
    });
  }

  // search(offsets, indices, values, k, async, algorithm "taat" | "maxscore" | "auto", allowed?) -> { ids: i64 [rows, k], scores: f32 [rows, k] }
  //   allowed: i64 tensor of the only ids the search may return (a filter inside the search), copied
  Napi::Value Search(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Env env = info.Env();
      SparseArg q = sparse_arg(env, info, 0);
      const size_t k = k_arg(info[3]);
      const std::string algo = info[5].IsString() ? info[5].As<Napi::String>().Utf8Value() : "auto";
      if (algo != "taat" && algo != "maxscore" && algo != "auto")
        throw Error("ERR_ARG", "algorithm must be 'taat', 'maxscore' or 'auto'");
      const auto algorithm = algo == "maxscore" ? kernels::SparseAlgorithm::kMaxScore
                             : algo == "taat"   ? kernels::SparseAlgorithm::kTaat
                                                : kernels::SparseAlgorithm::kAuto;
      Napi::Object ids = TensorObject::Create(env, Dtype::I64, {int64_t(q.view.rows), int64_t(k)}, false);
      Napi::Object scores = TensorObject::Create(env, Dtype::F32, {int64_t(q.view.rows), int64_t(k)}, false);
      Napi::Object result = Napi::Object::New(env);
      result.Set("ids", ids);
      result.Set("scores", scores);
      int64_t* ip = data_of<int64_t>(ids);
      float* sp = data_of<float>(scores);
      std::shared_ptr<std::vector<int64_t>> allowed;
      if (const TensorObject* at = optional_tensor(env, info[6], "allowed ids")) {
        require_dtype(at, Dtype::I64, "allowed ids");
        const auto* a = reinterpret_cast<const int64_t*>(at->data());
        allowed = std::make_shared<std::vector<int64_t>>(a, a + at->numel());
      }
      auto index = held();
      return run_kernel(env, flag(info[4]), operands({info[0], info[1], info[2], ids, scores}), result, [=] {
        const kernels::SparseIndex::Filter filter{allowed ? allowed->data() : nullptr, allowed ? allowed->size() : 0};
        index->search(q.view, q.nnz, k, ip, sp, algorithm, allowed ? &filter : nullptr);
      });
    });
  }

  // save(path, async): atomic write (temporary file, fsync, rename).
  Napi::Value Save(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      std::string path = path_arg(info[0]);
      auto index = held();
      return run_kernel(info.Env(), flag(info[1]), {}, Napi::Object::New(info.Env()), [=] { index->save(path); });
    });
  }

  // load(path, async): replaces this index's contents; on any error the old contents stay.
  Napi::Value Load(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      std::string path = path_arg(info[0]);
      auto index = held();
      return run_kernel(info.Env(), flag(info[1]), {}, Napi::Object::New(info.Env()), [=] { index->load(path); });
    });
  }

  Napi::Value ToBuffer(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] { return buffer_of(info.Env(), held()->to_bytes()); });
  }

  Napi::Value FromBuffer(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Bytes b = bytes_arg(info[0]);
      held()->from_bytes(b.data, b.size);
      return info.Env().Undefined();
    });
  }

  Napi::Value Size(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] { return Napi::Number::New(info.Env(), double(held()->size())); });
  }
  Napi::Value Postings(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] { return Napi::Number::New(info.Env(), double(held()->postings())); });
  }
  Napi::Value Vocab(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] { return Napi::Number::New(info.Env(), double(held()->vocab())); });
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    index_.reset();
    return info.Env().Undefined();
  }

  Napi::Value IsDisposed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), !index_); }

  std::shared_ptr<kernels::SparseIndex> index_;
};

}  // namespace

void register_sparse_index(Napi::Env env, Napi::Object exports) {
  Napi::Function ctor = SparseIndexObject::Init(env);
  addon_data(env).sparse_index_ctor = Napi::Persistent(ctor);
  exports.Set("SparseIndex", ctor);
}

std::shared_ptr<kernels::SparseIndex> sparse_index_arg(Napi::Env env, const Napi::Value& v, const char* what) {
  return wrapped_arg<SparseIndexObject>(v, addon_data(env).sparse_index_ctor, what, "SparseIndex");
}

}  // namespace quorum::napi
