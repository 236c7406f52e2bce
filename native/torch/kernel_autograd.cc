#include "kernel_autograd.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <limits>
#include <string>

#include "../common/error.h"
#include "../kernels/maxsim.h"
#include "../kernels/splade.h"

namespace quorum::torchx {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

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

// dst += k * src over n floats.
inline void add_scaled(float* dst, float k, const float* src, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dst[j] += k * src[j];
}

// Rows of h whose [rows, T, V] logits are computed at once in the fused forward pass (16 x 192 x 42k floats =
// 0.5 GB).
constexpr int64_t kDecoderChunk = 16;

struct SpladeDecoderFunction : torch::autograd::Function<SpladeDecoderFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& h_in, const torch::Tensor& mask_in,
                               const torch::Tensor& emb_in, const torch::Tensor& bias_in) {
    torch::Tensor h = f32(h_in, "token states"), emb = f32(emb_in, "embeddings"), bias = f32(bias_in, "decoder bias");
    need(h.dim() == 3 && emb.dim() == 2 && h.size(2) == emb.size(1) && bias.dim() == 1 && bias.size(0) == emb.size(0),
         "ERR_SHAPE", "the decoder pooling needs states [B, T, dim], embeddings [V, dim] and a bias [V]");
    const int64_t B = h.size(0), T = h.size(1), V = emb.size(0), D = h.size(2);
    torch::Tensor mask = mask_u8(mask_in, B, T, "token mask");
    torch::Tensor w = torch::empty({B, V}), argmax = torch::empty({B, V}, torch::kInt);
    const torch::Tensor emb_t = emb.t();
    for (int64_t r = 0; r < B; r += kDecoderChunk) {
      const int64_t n = std::min(kDecoderChunk, B - r);
      const torch::Tensor logits = torch::addmm(bias, h.narrow(0, r, n).reshape({n * T, D}), emb_t).contiguous();
      const kernels::Logits view{logits.data_ptr<float>(), Dtype::F32, size_t(n), size_t(T), size_t(V),
                                 mask.data_ptr<uint8_t>() + r * T};
      kernels::splade_pool(view, w.data_ptr<float>() + r * V, argmax.data_ptr<int32_t>() + r * V);
    }
    ctx->save_for_backward({h, emb, w, argmax});
    return w;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &h = saved[0], &emb = saved[1], &w = saved[2], &argmax = saved[3];
    const int64_t B = h.size(0), T = h.size(1), V = emb.size(0), D = h.size(2);
    // d w / d logit at the arg-max = 1 / (1 + logit) = exp(-w); 0 where nothing was positive (arg-max -1).
    const torch::Tensor coef = (grads[0].to(torch::kFloat) * torch::exp(-w)).masked_fill(argmax.lt(0), 0.0).contiguous();
    torch::Tensor dh = torch::zeros_like(h), demb = torch::zeros_like(emb);
    const float *c = coef.data_ptr<float>(), *hp = h.data_ptr<float>(), *ep = emb.data_ptr<float>();
    const int32_t* am = argmax.data_ptr<int32_t>();
    float *dhp = dh.data_ptr<float>(), *dep = demb.data_ptr<float>();
    // Each thread owns whole rows of its output: questions b for dh, vocabulary entries v for demb.
    at::parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b)
        for (int64_t v = 0; v < V; ++v) {
          const int32_t t = am[b * V + v];
          const float k = c[b * V + v];
          if (t >= 0 && k != 0.0f) add_scaled(dhp + (b * T + t) * D, k, ep + v * D, D);
        }
    });
    at::parallel_for(0, V, 1024, [&](int64_t v0, int64_t v1) {
      for (int64_t v = v0; v < v1; ++v)
        for (int64_t b = 0; b < B; ++b) {
          const int32_t t = am[b * V + v];
          const float k = c[b * V + v];
          if (t >= 0 && k != 0.0f) add_scaled(dep + v * D, k, hp + (b * T + t) * D, D);
        }
    });
    return {dh, torch::Tensor(), demb, coef.sum(0)};
  }
};

}  // namespace

torch::Tensor maxsim_scores_reference(const torch::Tensor& q, const torch::Tensor& q_mask, const torch::Tensor& d,
                                      const torch::Tensor& lengths) {
  torch::Tensor sim = torch::einsum("bqe,nte->bnqt", {q, d});
  torch::Tensor pad = torch::arange(d.size(1), torch::kLong).unsqueeze(0).ge(lengths.unsqueeze(1));  // [N, Ld]
  sim = sim.masked_fill(pad.view({1, d.size(0), 1, d.size(1)}), -std::numeric_limits<float>::infinity());
  torch::Tensor best = std::get<0>(sim.max(3));  // [B, N, Lq]
  return torch::where(q_mask.ne(0).unsqueeze(1), best, torch::zeros_like(best)).sum(2);
}

torch::Tensor splade_pool_reference(const torch::Tensor& x, const torch::Tensor& mask) {
  torch::Tensor y = torch::log1p(torch::relu(x)).masked_fill(mask.eq(0).unsqueeze(2), 0.0);
  return std::get<0>(y.max(1));
}

torch::Tensor splade_decoder_pool_reference(const torch::Tensor& h, const torch::Tensor& mask, const torch::Tensor& emb,
                                            const torch::Tensor& bias) {
  return splade_pool_reference(torch::linear(h, emb, bias), mask);
}

torch::Tensor splade_decoder_pool(const torch::Tensor& h, const torch::Tensor& mask, const torch::Tensor& emb,
                                  const torch::Tensor& bias) {
  return SpladeDecoderFunction::apply(h, mask, emb, bias);
}

torch::Tensor maxsim_scores(const torch::Tensor& q, const torch::Tensor& q_mask, const torch::Tensor& d,
                            const torch::Tensor& d_lengths) {
  return MaxSimFunction::apply(q, q_mask, d, d_lengths);
}

torch::Tensor splade_pool(const torch::Tensor& logits, const torch::Tensor& mask) {
  return SpladePoolFunction::apply(logits, mask);
}

}  // namespace quorum::torchx
