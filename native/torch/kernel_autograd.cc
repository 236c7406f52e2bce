#include "kernel_autograd.h"

#include <string>

#include "../common/error.h"
#include "../kernels/maxsim.h"
#include "../kernels/splade.h"

namespace quorum::torchx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

void need(bool ok, const char* code, const std::string& message) {
  if (!ok) throw Error(code, message);
}

torch::Tensor f32(const torch::Tensor& t, const char* what) {
  need(t.device().is_cpu(), "ERR_ARG", std::string(what) + " must be on the CPU");
  need(t.scalar_type() == torch::kFloat, "ERR_DTYPE", std::string(what) + " must be float32");
  return t.contiguous();
}

torch::Tensor mask_u8(const torch::Tensor& m, int64_t rows, int64_t len, const char* what) {
  need(m.dim() == 2 && m.size(0) == rows && m.size(1) == len, "ERR_SHAPE",
       std::string(what) + " must be [" + std::to_string(rows) + ", " + std::to_string(len) + "]");
  return m.ne(0).to(torch::kUInt8).contiguous();
}

struct Docs {
  torch::Tensor starts;
  kernels::TokenDocs view;
};

Docs token_docs(const torch::Tensor& d, const torch::Tensor& lengths) {
  const int64_t N = d.size(0), Ld = d.size(1);
  Docs out;
  out.starts = torch::arange(N, torch::kLong).mul(Ld).contiguous();
  out.view = kernels::TokenDocs{reinterpret_cast<const uint8_t*>(d.data_ptr<float>()), Dtype::F32, size_t(N * Ld),
                                size_t(d.size(2)), size_t(N), out.starts.data_ptr<int64_t>(),
                                lengths.data_ptr<int64_t>(), nullptr};
  return out;
}

struct MaxSimFunction : torch::autograd::Function<MaxSimFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q_in, const torch::Tensor& q_mask_in,
                               const torch::Tensor& d_in, const torch::Tensor& d_lengths_in) {
    torch::Tensor q = f32(q_in, "query tokens"), d = f32(d_in, "document tokens");
    need(q.dim() == 3 && d.dim() == 3 && q.size(2) == d.size(2), "ERR_SHAPE",
         "maxsim needs query tokens [B, Lq, dim] and document tokens [N, Ld, dim] of one dim");
    const int64_t B = q.size(0), Lq = q.size(1), N = d.size(0), Ld = d.size(1);
    torch::Tensor mask = mask_u8(q_mask_in, B, Lq, "query mask");
    need(d_lengths_in.dim() == 1 && d_lengths_in.size(0) == N, "ERR_SHAPE", "document lengths must be [N]");
    torch::Tensor lengths = d_lengths_in.to(torch::kLong).contiguous();
    if (N > 0)
      need(lengths.min().item<int64_t>() >= 1 && lengths.max().item<int64_t>() <= Ld, "ERR_RANGE",
           "document lengths must be in [1, Ld]");
    Docs docs = token_docs(d, lengths);
    const kernels::TokenQueries tq{q.data_ptr<float>(), size_t(B), size_t(Lq), size_t(q.size(2)), mask.data_ptr<uint8_t>()};
    torch::Tensor scores = torch::empty({B, N});
    torch::Tensor argmax = torch::empty({B, N, Lq}, torch::kInt);
    kernels::maxsim(tq, docs.view, false, scores.data_ptr<float>(), argmax.data_ptr<int32_t>());
    ctx->save_for_backward({q, mask, d, lengths, argmax});
    return scores;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &q = saved[0], &mask = saved[1], &d = saved[2], &lengths = saved[3], &argmax = saved[4];
    torch::Tensor grad = grads[0].to(torch::kFloat).contiguous();
    Docs docs = token_docs(d, lengths);
    const kernels::TokenQueries tq{q.data_ptr<float>(), size_t(q.size(0)), size_t(q.size(1)), size_t(q.size(2)),
                                   mask.data_ptr<uint8_t>()};
    torch::Tensor dq = torch::empty_like(q), dd = torch::empty_like(d);
    kernels::maxsim_backward(tq, docs.view, argmax.data_ptr<int32_t>(), grad.data_ptr<float>(), dq.data_ptr<float>(),
                             dd.data_ptr<float>());
    return {dq, torch::Tensor(), dd, torch::Tensor()};
  }
};

struct SpladePoolFunction : torch::autograd::Function<SpladePoolFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits_in, const torch::Tensor& mask_in) {
    torch::Tensor x = f32(logits_in, "logits");
    need(x.dim() == 3, "ERR_SHAPE", "splade pooling needs logits [B, T, V]");
    const int64_t B = x.size(0), T = x.size(1), V = x.size(2);
    torch::Tensor mask = mask_u8(mask_in, B, T, "token mask");
    const kernels::Logits view{x.data_ptr<float>(), Dtype::F32, size_t(B), size_t(T), size_t(V), mask.data_ptr<uint8_t>()};
    torch::Tensor w = torch::empty({B, V});
    torch::Tensor argmax = torch::empty({B, V}, torch::kInt);
    kernels::splade_pool(view, w.data_ptr<float>(), argmax.data_ptr<int32_t>());
    ctx->save_for_backward({x, mask, argmax});
    return w;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &mask = saved[1], &argmax = saved[2];
    torch::Tensor grad = grads[0].to(torch::kFloat).contiguous();
    const kernels::Logits view{x.data_ptr<float>(), Dtype::F32, size_t(x.size(0)), size_t(x.size(1)), size_t(x.size(2)),
                               mask.data_ptr<uint8_t>()};
    torch::Tensor dx = torch::empty_like(x);
    kernels::splade_pool_backward(view, argmax.data_ptr<int32_t>(), grad.data_ptr<float>(), dx.data_ptr<float>());
    return {dx, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor maxsim_scores(const torch::Tensor& q, const torch::Tensor& q_mask, const torch::Tensor& d,
                            const torch::Tensor& d_lengths) {
  return MaxSimFunction::apply(q, q_mask, d, d_lengths);
}

torch::Tensor splade_pool(const torch::Tensor& logits, const torch::Tensor& mask) {
  return SpladePoolFunction::apply(logits, mask);
}

}  // namespace quorum::torchx
