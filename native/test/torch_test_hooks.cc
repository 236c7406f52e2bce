// Test-only hooks of quorum_torch's training pieces, built as quorum_torch_test.node (never shipped): the
// kernel-backed autograd functions (native/torch/kernel_autograd.h), one forward and backward through Quorum's kernels
// or through a pure-libtorch reference built from libtorch's own ops, so the two can be compared value for value and
// gradient for gradient; CAME's losses (native/torch/came_loss.h) with their gradients; and the Retriever's
// contrastive loss by autograd, which the tests compare with the InfoNCE kernel.
#include <napi.h>
#include "../torch/torch_includes.h"

#include "../napi/errors.h"
#include "../napi/scalar_args.h"
#include "../napi/torch_args.h"
#include "../napi/torch_batch_args.h"
#include "../torch/came_loss.h"
#include "../torch/kernel_autograd.h"
#include "../torch/retriever.h"

namespace quorum::napi {
namespace {

torch::Tensor floats(const Napi::Value& v, std::vector<int64_t> shape, const char* what) {
  auto a = typed_array<Napi::Float32Array>(v, what);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (int64_t(a.ElementLength()) != n) throw Error("ERR_SHAPE", std::string(what) + " has the wrong length");
  return torch::from_blob(a.Data(), shape, torch::kFloat).clone();
}

torch::Tensor ints(const Napi::Value& v, std::vector<int64_t> shape, const char* what) {
  auto a = typed_array<Napi::Int32Array>(v, what);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (int64_t(a.ElementLength()) != n) throw Error("ERR_SHAPE", std::string(what) + " has the wrong length");
  return torch::from_blob(a.Data(), shape, torch::kInt).to(torch::kLong);
}

int64_t dim_arg(const Napi::Value& v, const char* what) {
  const double d = number_arg(v, what);
  if (d < 1 || d != double(int64_t(d))) throw Error("ERR_RANGE", std::string(what) + " must be a positive integer");
  return int64_t(d);
}

// maxSimAutograd(q, qMask: Int32Array, d, dLengths: Int32Array, grad, B, Lq, N, Ld, dim, reference: bool)
//   -> { scores, dQ, dD }
Napi::Value MaxSimAutograd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int64_t B = dim_arg(info[5], "B"), Lq = dim_arg(info[6], "Lq"), N = dim_arg(info[7], "N"),
                Ld = dim_arg(info[8], "Ld"), D = dim_arg(info[9], "dim");
  torch::Tensor q = floats(info[0], {B, Lq, D}, "q").set_requires_grad(true);
  torch::Tensor qm = ints(info[1], {B, Lq}, "qMask");
  torch::Tensor d = floats(info[2], {N, Ld, D}, "d").set_requires_grad(true);
  torch::Tensor len = ints(info[3], {N}, "dLengths");
  torch::Tensor grad = floats(info[4], {B, N}, "grad");
  return torch_call([&] {
    torch::Tensor s = flag(info[10]) ? torchx::maxsim_scores_reference(q, qm, d, len) : torchx::maxsim_scores(q, qm, d, len);
    s.backward(grad);
    Napi::Object o = Napi::Object::New(env);
    o.Set("scores", float_array_of(env, s));
    o.Set("dQ", float_array_of(env, q.grad()));
    o.Set("dD", float_array_of(env, d.grad()));
    return Napi::Value(o);
  });
}

// spladePoolAutograd(logits, mask: Int32Array, grad, B, T, V, reference: bool) -> { w, dLogits }
Napi::Value SpladePoolAutograd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int64_t B = dim_arg(info[3], "B"), T = dim_arg(info[4], "T"), V = dim_arg(info[5], "V");
  torch::Tensor x = floats(info[0], {B, T, V}, "logits").set_requires_grad(true);
  torch::Tensor m = ints(info[1], {B, T}, "mask");
  torch::Tensor grad = floats(info[2], {B, V}, "grad");
  return torch_call([&] {
    torch::Tensor w = flag(info[6]) ? torchx::splade_pool_reference(x, m) : torchx::splade_pool(x, m);
    w.backward(grad);
    Napi::Object o = Napi::Object::New(env);
    o.Set("w", float_array_of(env, w));
    o.Set("dLogits", float_array_of(env, x.grad()));
    return Napi::Value(o);
  });
}

// spladeDecoderAutograd(h, mask: Int32Array, emb, bias, grad, B, T, V, dim, reference: bool)
//   -> { w, dH, dEmb, dBias }
Napi::Value SpladeDecoderAutograd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int64_t B = dim_arg(info[5], "B"), T = dim_arg(info[6], "T"), V = dim_arg(info[7], "V"), D = dim_arg(info[8], "dim");
  torch::Tensor h = floats(info[0], {B, T, D}, "h").set_requires_grad(true);
  torch::Tensor m = ints(info[1], {B, T}, "mask");
  torch::Tensor emb = floats(info[2], {V, D}, "emb").set_requires_grad(true);
  torch::Tensor bias = floats(info[3], {V}, "bias").set_requires_grad(true);
  torch::Tensor grad = floats(info[4], {B, V}, "grad");
  return torch_call([&] {
    torch::Tensor w = flag(info[9]) ? torchx::splade_decoder_pool_reference(h, m, emb, bias)
                                    : torchx::splade_decoder_pool(h, m, emb, bias);
    w.backward(grad);
    Napi::Object o = Napi::Object::New(env);
    o.Set("w", float_array_of(env, w));
    o.Set("dH", float_array_of(env, h.grad()));
    o.Set("dEmb", float_array_of(env, emb.grad()));
    o.Set("dBias", float_array_of(env, bias.grad()));
    return Napi::Value(o);
  });
}

// cameLoss(scores: Float32Array [E, B, P], E, B, P, positives: Int32Array [B], tau, competitive: bool)
//   -> { loss, weights: Float32Array [B, E], dScores: Float32Array [E, B, P] }
Napi::Value CameLoss(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int64_t E = dim_arg(info[1], "E"), B = dim_arg(info[2], "B"), P = dim_arg(info[3], "P");
  torch::Tensor all = floats(info[0], {E, B, P}, "scores").set_requires_grad(true);
  torch::Tensor pos = ints(info[4], {B}, "positives");
  const double tau = number_arg(info[5], "tau");
  return torch_call([&] {
    std::vector<torch::Tensor> scores;
    for (int64_t e = 0; e < E; ++e) scores.push_back(all.select(0, e));
    torch::Tensor loss = torchx::came_loss(scores, pos, tau, flag(info[6]));
    loss.backward();
    Napi::Object o = Napi::Object::New(env);
    o.Set("loss", loss.item<double>());
    o.Set("weights", float_array_of(env, torchx::competitive_weights(scores, pos, tau)));
    o.Set("dScores", float_array_of(env, all.grad()));
    return Napi::Value(o);
  });
}

// contrastiveLoss(q, p: Float32Array, rows, passages, dim, positives: Int32Array, ignore: Int32Array | null)
//   -> { loss, dQ, dP }: the training step's loss and its gradients by autograd (tests compare it to infoNce).
Napi::Value ContrastiveLoss(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto qa = typed_array<Napi::Float32Array>(info[0], "q");
  auto pa = typed_array<Napi::Float32Array>(info[1], "p");
  const int64_t nq = int64_t(number_arg(info[2], "rows")), np = int64_t(number_arg(info[3], "passages")),
                d = int64_t(number_arg(info[4], "dim"));
  if (nq < 1 || np < 1 || d < 1 || int64_t(qa.ElementLength()) != nq * d || int64_t(pa.ElementLength()) != np * d)
    throw Error("ERR_SHAPE", "q must be rows x dim and p passages x dim");
  auto pos_arr = typed_array<Napi::Int32Array>(info[5], "positives");
  if (int64_t(pos_arr.ElementLength()) != nq) throw Error("ERR_SHAPE", "one positive per row");
  torch::Tensor pos = long_tensor(pos_arr, {nq}, 0, np, "positives");
  torch::Tensor ignore = ignore_arg(info[6], nq, np);
  return torch_call([&] {
    torch::Tensor q = torch::from_blob(qa.Data(), {nq, d}, torch::kFloat).clone().set_requires_grad(true);
    torch::Tensor p = torch::from_blob(pa.Data(), {np, d}, torch::kFloat).clone().set_requires_grad(true);
    torch::Tensor loss = torchx::Retriever::contrastive_loss(q, p, pos, ignore);
    loss.backward();
    Napi::Object o = Napi::Object::New(env);
    o.Set("loss", loss.item<double>());
    o.Set("dQ", float_array_of(env, q.grad()));
    o.Set("dP", float_array_of(env, p.grad()));
    return Napi::Value(o);
  });
}

}  // namespace
}  // namespace quorum::napi

// Entry point of quorum_torch_test.node.
static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  using namespace quorum::napi;
  exports.Set("maxSimAutograd", Napi::Function::New<guarded<MaxSimAutograd>>(env));
  exports.Set("spladePoolAutograd", Napi::Function::New<guarded<SpladePoolAutograd>>(env));
  exports.Set("spladeDecoderAutograd", Napi::Function::New<guarded<SpladeDecoderAutograd>>(env));
  exports.Set("cameLoss", Napi::Function::New<guarded<CameLoss>>(env));
  exports.Set("contrastiveLoss", Napi::Function::New<guarded<ContrastiveLoss>>(env));
  return exports;
}

NODE_API_MODULE(quorum_torch_test, Init)
