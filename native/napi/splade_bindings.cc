// N-API bindings of kernels/splade.h: argument checks and conversions only.
#include <napi.h>

#include <cstring>
#include <memory>
#include <string>

#include "../common/error.h"
#include "../kernels/contract.h"
#include "../kernels/splade.h"
#include "args.h"
#include "errors.h"
#include "kernel_call.h"

namespace quorum::napi {
namespace {

// Logits [B, L, V] with an optional u8 mask of B * L entries (kernels/contract.h, shared with the CUDA module).
kernels::Logits logits_arg(const TensorObject* x, const TensorObject* mask) {
  const auto s = kernels::contract::splade_logits(x->dtype(), x->shape());
  kernels::Logits l{x->data(), x->dtype(), s.batch, s.len, s.vocab, nullptr};
  if (mask) {
    require_dtype(mask, Dtype::U8, "mask");
    kernels::contract::splade_mask(mask->numel(), s);
    l.mask = mask->data();
  }
  return l;
}

// spladePool(logits, mask, wantArgmax, async) -> { weights: f32 [B, V], argmax?: i32 [B, V] }
Napi::Value SpladePool(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto x = logits_arg(TensorObject::From(env, info[0], "logits"), optional_tensor(env, info[1], "mask"));
  Napi::Object result = Napi::Object::New(env);
  Napi::Object w = TensorObject::Create(env, Dtype::F32, {int64_t(x.batch), int64_t(x.vocab)});
  result.Set("weights", w);
  auto pins = operands({info[0], info[1], w});
  int32_t* am = nullptr;
  if (flag(info[2])) {
    Napi::Object a = TensorObject::Create(env, Dtype::I32, {int64_t(x.batch), int64_t(x.vocab)});
    result.Set("argmax", a);
    pins.push_back(a);
    am = data_of<int32_t>(a);
  }
  float* wp = data_of<float>(w);
  return run_kernel(env, flag(info[3]), pins, result, [=] { kernels::splade_pool(x, wp, am); });
}

// spladePoolBackward(logits, argmax, grad, async) -> f32 [B, L, V]
Napi::Value SpladePoolBackward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto x = logits_arg(TensorObject::From(env, info[0], "logits"), nullptr);
  TensorObject* at = TensorObject::From(env, info[1], "argmax");
  TensorObject* gt = TensorObject::From(env, info[2], "grad");
  kernels::contract::splade_backward(at->dtype(), at->shape(), gt->dtype(), gt->shape(), {x.batch, x.len, x.vocab});
  // The backward kernel clears every row before scattering the gradient.
  Napi::Object out = TensorObject::Create(env, Dtype::F32, {int64_t(x.batch), int64_t(x.len), int64_t(x.vocab)}, false);
  const auto* ap = reinterpret_cast<const int32_t*>(at->data());
  const auto* gp = reinterpret_cast<const float*>(gt->data());
  float* op = data_of<float>(out);
  return run_kernel(env, flag(info[3]), operands({info[0], info[1], info[2], out}), out,
                    [=] { kernels::splade_pool_backward(x, ap, gp, op); });
}

// spladeRegularizer(weights, kind ('flops' | 'l1'), wantGrad, async) -> { value: number, grad?: f32 [B, V] }
Napi::Value SpladeRegularizer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorObject* wt = TensorObject::From(env, info[0], "weights");
  require_dtype(wt, Dtype::F32, "weights");
  if (wt->shape().size() != 2) throw Error("ERR_SHAPE", "weights must be [B, V], got " + shape_str(wt->shape()));
  std::string kind = info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
  if (kind != "flops" && kind != "l1") throw Error("ERR_ARG", "regularizer must be 'flops' or 'l1'");
  const size_t B = size_t(wt->shape()[0]), V = size_t(wt->shape()[1]);
  Napi::Object result = Napi::Object::New(env);
  auto pins = operands({info[0]});
  float* gp = nullptr;
  if (flag(info[2])) {
    Napi::Object g = TensorObject::Create(env, Dtype::F32, wt->shape());
    result.Set("grad", g);
    pins.push_back(g);
    gp = data_of<float>(g);
  }
  const auto* wp = reinterpret_cast<const float*>(wt->data());
  auto value = std::make_shared<double>(0);
  auto k = kind == "l1" ? kernels::SparseReg::L1 : kernels::SparseReg::Flops;
  return run_kernel(
      env, flag(info[3]), pins, result, [=] { *value = kernels::splade_regularizer(wp, B, V, k, gp); },
      [value](Napi::Env e, Napi::Object r) { r.Set("value", Napi::Number::New(e, *value)); });
}

// toSparse(weights, threshold, topK, async) -> { offsets: i64 [B + 1], indices: i32 [nnz], values: f32 [nnz] }
Napi::Value ToSparse(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorObject* wt = TensorObject::From(env, info[0], "weights");
  require_dtype(wt, Dtype::F32, "weights");
  if (wt->shape().size() != 2) throw Error("ERR_SHAPE", "weights must be [B, V], got " + shape_str(wt->shape()));
  const float threshold = float(number_arg(info[1], "threshold"));
  const double topk = number_arg(info[2], "topK");
  if (topk < 0 || topk != double(int64_t(topk))) throw Error("ERR_RANGE", "topK must be a non-negative integer");
  const size_t B = size_t(wt->shape()[0]), V = size_t(wt->shape()[1]);
  if (V > size_t(INT32_MAX)) throw Error("ERR_RANGE", "term ids are i32: the vocabulary must be below 2^31");
  const auto* wp = reinterpret_cast<const float*>(wt->data());
  auto rows = std::make_shared<kernels::SparseRows>();
  return run_kernel(
      env, flag(info[3]), operands({info[0]}), Napi::Object::New(env),
      [=] { *rows = kernels::to_sparse(wp, B, V, threshold, size_t(topk)); },
      [rows](Napi::Env e, Napi::Object r) {
        const int64_t nnz = int64_t(rows->indices.size());
        Napi::Object off = TensorObject::Create(e, Dtype::I64, {int64_t(rows->offsets.size())});
        Napi::Object idx = TensorObject::Create(e, Dtype::I32, {nnz});
        Napi::Object val = TensorObject::Create(e, Dtype::F32, {nnz});
        std::memcpy(data_of<int64_t>(off), rows->offsets.data(), rows->offsets.size() * sizeof(int64_t));
        if (nnz) {
          std::memcpy(data_of<int32_t>(idx), rows->indices.data(), size_t(nnz) * sizeof(int32_t));
          std::memcpy(data_of<float>(val), rows->values.data(), size_t(nnz) * sizeof(float));
        }
        r.Set("offsets", off);
        r.Set("indices", idx);
        r.Set("values", val);
      });
}

// sparseScores(aOffsets, aIndices, aValues, bOffsets, bIndices, bValues, async) -> f32 [A, B]
Napi::Value SparseScores(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const SparseArg sa = sparse_arg(env, info, 0), sb = sparse_arg(env, info, 3);
  const kernels::SparseView a = sa.view, b = sb.view;
  const size_t na = sa.nnz, nb = sb.nnz;
  Napi::Object out = TensorObject::Create(env, Dtype::F32, {int64_t(a.rows), int64_t(b.rows)});
  float* op = data_of<float>(out);
  // Validated inside the work: JS can still write to the (pinned) index arrays until it runs.
  return run_kernel(env, flag(info[6]), operands({info[0], info[1], info[2], info[3], info[4], info[5], out}), out,
                    [=] {
                      kernels::check_sparse(a, na, -1);
                      kernels::check_sparse(b, nb, -1);
                      kernels::sparse_sparse_scores(a, b, op);
                    });
}

// sparseDenseScores(offsets, indices, values, dense [N, V], async) -> f32 [A, N]
Napi::Value SparseDenseScores(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorObject* dt = TensorObject::From(env, info[3], "dense");
  require_dtype(dt, Dtype::F32, "dense");
  if (dt->shape().size() != 2) throw Error("ERR_SHAPE", "dense must be [N, V], got " + shape_str(dt->shape()));
  const size_t n = size_t(dt->shape()[0]), vocab = size_t(dt->shape()[1]);
  const SparseArg sa = sparse_arg(env, info, 0);
  const kernels::SparseView a = sa.view;
  const size_t na = sa.nnz;
  Napi::Object out = TensorObject::Create(env, Dtype::F32, {int64_t(a.rows), int64_t(n)});
  float* op = data_of<float>(out);
  const auto* dp = reinterpret_cast<const float*>(dt->data());
  return run_kernel(env, flag(info[4]), operands({info[0], info[1], info[2], info[3], out}), out,
                    [=] {
                      kernels::check_sparse(a, na, int64_t(vocab));
                      kernels::sparse_dense_scores(a, dp, n, vocab, op);
                    });
}

}  // namespace

void register_splade(Napi::Env env, Napi::Object exports) {
  exports.Set("spladePool", Napi::Function::New<guarded<SpladePool>>(env, "spladePool"));
  exports.Set("spladePoolBackward", Napi::Function::New<guarded<SpladePoolBackward>>(env, "spladePoolBackward"));
  exports.Set("spladeRegularizer", Napi::Function::New<guarded<SpladeRegularizer>>(env, "spladeRegularizer"));
  exports.Set("toSparse", Napi::Function::New<guarded<ToSparse>>(env, "toSparse"));
  exports.Set("sparseScores", Napi::Function::New<guarded<SparseScores>>(env, "sparseScores"));
  exports.Set("sparseDenseScores", Napi::Function::New<guarded<SparseDenseScores>>(env, "sparseDenseScores"));
}

}  // namespace quorum::napi
