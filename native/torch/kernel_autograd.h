// Quorum's MaxSim and SPLADE pooling kernels (native/kernels) as libtorch autograd functions, for CAME's local and
// lexical experts: forward and backward run through the same kernels that search uses, not libtorch's ops. Inputs
// are f32 on the CPU; gradients flow to the token vectors (MaxSim) and the logits (SPLADE).
#pragma once
#include "torch_includes.h"

namespace quorum::torchx {

// ColBERT's late interaction (docs/methods/kernels.md#maxsim): S[b, n] = sum over unmasked query tokens q of max
// over document n's tokens t < d_lengths[n] of <Q[b, q], D[n, t]>. q [B, Lq, dim], q_mask [B, Lq] (bool or uint8;
// nonzero = use), d [N, Ld, dim] padded, d_lengths [N] int64 in [1, Ld]. Returns [B, N]. The gradient of each query
// token goes to its arg-max document token (ties: the lowest index).
torch::Tensor maxsim_scores(const torch::Tensor& q, const torch::Tensor& q_mask, const torch::Tensor& d,
                            const torch::Tensor& d_lengths);

// SPLADE max pooling (docs/methods/kernels.md#splade-pooling-and-regularizers):
// w[b, v] = max over unmasked tokens t of log(1 + relu(logits[b, t, v])). logits [B, T, V], mask [B, T] (nonzero =
// use). Returns [B, V]; the gradient goes to the arg-max token, 0 where the max is 0.
torch::Tensor splade_pool(const torch::Tensor& logits, const torch::Tensor& mask);

// SPLADE pooling fused with the MLM decoder that produces its logits (CAME's lexical head):
//   w[b, v] = max over unmasked t of log(1 + relu(<h[b, t], emb[v]> + bias[v]))
// h [B, T, dim], mask [B, T], emb [V, dim] (the tied word embeddings), bias [V]. The forward pass computes the logits
// a few rows at a time and pools each slice with Quorum's SPLADE kernel, so [B, T, V] never exists at once; the
// backward pass sends each (b, v)'s gradient grad[b, v] / (1 + max logit) = grad[b, v] exp(-w[b, v]) to its arg-max
// token only: O(B V dim) work instead of the O(B T V dim) of the decoder's dense backward.
torch::Tensor splade_decoder_pool(const torch::Tensor& h, const torch::Tensor& mask, const torch::Tensor& emb,
                                  const torch::Tensor& bias);

// The same three functions from libtorch's own ops (einsum, relu, log1p, max, masked_fill): the references the
// tests compare against, and the "pure libtorch" side of bench/came-kernels.ts.
torch::Tensor maxsim_scores_reference(const torch::Tensor& q, const torch::Tensor& q_mask, const torch::Tensor& d,
                                      const torch::Tensor& d_lengths);
torch::Tensor splade_pool_reference(const torch::Tensor& logits, const torch::Tensor& mask);
torch::Tensor splade_decoder_pool_reference(const torch::Tensor& h, const torch::Tensor& mask, const torch::Tensor& emb,
                                            const torch::Tensor& bias);

}  // namespace quorum::torchx
