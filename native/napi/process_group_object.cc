// ProcessGroup: join (the rendezvous, on the libuv pool: it blocks until every rank has joined), the collectives the
// TypeScript side needs for its own numbers (all-reduce, broadcast, barrier), leave. The training collectives run
// inside the models' calls (Retriever.accumulate / step with a group).
#include "process_group_object.h"

#include <chrono>
#include <mutex>
#include <string>

#include "../common/error.h"
#include "async_call.h"
#include "errors.h"
#include "scalar_args.h"
#include "torch_args.h"

namespace quorum::napi {
namespace {

class ProcessGroupObject : public Napi::ObjectWrap<ProcessGroupObject> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "ProcessGroup",
                       {InstanceMethod<&ProcessGroupObject::Join>("join"), InstanceMethod<&ProcessGroupObject::Info>("info"),
                        InstanceMethod<&ProcessGroupObject::AllReduce>("allReduce"),
                        InstanceMethod<&ProcessGroupObject::Broadcast>("broadcast"),
                        InstanceMethod<&ProcessGroupObject::GatherRows>("gatherRows"),
                        InstanceMethod<&ProcessGroupObject::Barrier>("barrier"),
                        InstanceMethod<&ProcessGroupObject::Dispose>("dispose"),
                        StaticMethod<&ProcessGroupObject::Available>("available")});
  }

  explicit ProcessGroupObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ProcessGroupObject>(info) {}

  std::shared_ptr<torchx::ProcessGroup> joined() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!state_->group)
      throw Error("ERR_STATE", state_->left ? "this process group was left (dispose)" : "join the process group first");
    return state_->group;
  }

 private:
  // join({ rank, size, host, port, timeoutMs }, async)
  Napi::Value Join(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      Napi::Object o = object_arg(info[0], "group options");
      torchx::GroupOptions g;
      g.rank = int(int_field(o, "rank", -1));
      g.size = int(int_field(o, "size", 0));
      g.host = string_field(o, "host");
      g.port = int(int_field(o, "port", 0));
      g.timeout = std::chrono::milliseconds(int_field(o, "timeoutMs", 60000));
      {
        std::lock_guard<std::mutex> lock(state_->mutex);
        if (state_->group || state_->joining) throw Error("ERR_STATE", "this process group has already joined");
        if (state_->left) throw Error("ERR_STATE", "this process group was left (dispose)");
        state_->joining = true;
      }
      auto state = state_;
      return run_work(info.Env(), flag(info[1]), {info.This().As<Napi::Object>()}, Napi::Object::New(info.Env()), [g, state] {
        std::shared_ptr<torchx::ProcessGroup> made;
        try {
          made = std::make_shared<torchx::ProcessGroup>(g);
        } catch (...) {
          std::lock_guard<std::mutex> lock(state->mutex);
          state->joining = false;
          throw;
        }
        std::lock_guard<std::mutex> lock(state->mutex);
        state->joining = false;
        if (!state->left) state->group = std::move(made);
      });
    });
  }

  Napi::Value Info(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto g = joined();
      Napi::Object o = Napi::Object::New(info.Env());
      o.Set("rank", g->rank());
      o.Set("size", g->size());
      return Napi::Value(o);
    });
  }

  // allReduce(Float32Array, async): sums it across the ranks, in place.
  Napi::Value AllReduce(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      return in_place(info, flag(info[1]), [](torchx::ProcessGroup& g, torch::Tensor t) {
        g.check_same_size(t.numel(), "allReduce");
        g.all_reduce_sum({t});
      });
    });
  }

  // broadcast(Float32Array, root, async): overwrites it with rank `root`'s values.
  Napi::Value Broadcast(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      const double root = number_arg(info[1], "root");
      if (root != double(int(root))) throw Error("ERR_RANGE", "root must be a rank");
      return in_place(info, flag(info[2]), [root](torchx::ProcessGroup& g, torch::Tensor t) {
        g.check_same_size(t.numel(), "broadcast");
        g.broadcast({t}, int(root));
      });
    });
  }

  // A collective over the Float32Array in info[0], in place (inside the caller's guard): the array is kept alive
  // and is what the call resolves to.
  template <class Collective>
  Napi::Value in_place(const Napi::CallbackInfo& info, bool async, Collective collective) {
    auto g = joined();
    Napi::Float32Array a = typed_array<Napi::Float32Array>(info[0], "values");
    float* p = a.Data();
    const int64_t n = int64_t(a.ElementLength());
    Napi::Object keep = a;
    return run_work(info.Env(), async, {keep}, keep, [g, p, n, collective] {
      torch_call([&] { collective(*g, torch::from_blob(p, {n}, torch::kFloat)); });
    });
  }

  // gatherRows(Float32Array [rows, width], width, async) -> { values: every rank's rows in rank order }
  Napi::Value GatherRows(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto g = joined();
      Napi::Float32Array a = typed_array<Napi::Float32Array>(info[0], "values");
      const double width = number_arg(info[1], "width");
      if (width < 1 || width != double(int64_t(width))) throw Error("ERR_RANGE", "width must be a positive integer");
      const int64_t w = int64_t(width), n = int64_t(a.ElementLength());
      if (n % w != 0) throw Error("ERR_SHAPE", std::to_string(n) + " values are not rows of " + std::to_string(w));
      float* p = a.Data();
      auto all = std::make_shared<torch::Tensor>();
      Napi::Object keep = a;
      return run_work(
          info.Env(), flag(info[2]), {keep}, Napi::Object::New(info.Env()),
          [g, p, n, w, all] {
            int64_t offset = 0;
            torch_call([&] { *all = g->all_gather_rows(torch::from_blob(p, {n / w, w}, torch::kFloat), &offset); });
          },
          [all](Napi::Env env, Napi::Object result) { result.Set("values", float_array_of(env, *all)); });
    });
  }

  Napi::Value Barrier(const Napi::CallbackInfo& info) {
    return guard(info.Env(), [&] {
      auto g = joined();
      return run_work(info.Env(), flag(info[0]), {}, Napi::Object::New(info.Env()), [g] { torch_call([&] { g->barrier(); }); });
    });
  }

  // dispose(): leaves the group (the connections close when the last call using them ends).
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->group.reset();
    state_->left = true;
    return info.Env().Undefined();
  }

  static Napi::Value Available(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), torchx::distributed_available());
  }

  // Shared with a join in flight, which may end after this object is collected.
  struct State {
    std::mutex mutex;
    std::shared_ptr<torchx::ProcessGroup> group;
    bool joining = false, left = false;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace

Napi::Function ProcessGroupClass(Napi::Env env) {
  Napi::Function ctor = ProcessGroupObject::Init(env);
  // quorum_torch keeps no other per-environment data: the slot holds this constructor alone.
  env.SetInstanceData(new Napi::FunctionReference(Napi::Persistent(ctor)));
  return ctor;
}

std::shared_ptr<torchx::ProcessGroup> group_arg(const Napi::Value& v) {
  if (v.IsUndefined() || v.IsNull()) return nullptr;
  auto* ctor = v.Env().GetInstanceData<Napi::FunctionReference>();
  if (!v.IsObject() || !ctor || !v.As<Napi::Object>().InstanceOf(ctor->Value()))
    throw Error("ERR_ARG", "group must be a ProcessGroup");
  return ProcessGroupObject::Unwrap(v.As<Napi::Object>())->joined();
}

}  // namespace quorum::napi
