// The argument contracts of the kernels that run on both the CPU and a CUDA device (dense top-k, MaxSim, SPLADE
// pooling, InfoNCE, ensemble MI), written once: the core's bindings (native/napi/*_bindings.cc) and the CUDA
// module's (native/napi/cuda_addon.cc) call these, so an argument one backend refuses the other refuses with the
// same code and message. They see dtypes, shapes and, where the caller has them on the host, index contents; how
// an operand arrives (a tensor, a typed array, a device buffer) stays with each binding.
//
// Every failure is a quorum::Error (ERR_DTYPE, ERR_SHAPE or ERR_RANGE). Per-element checks build their message
// only on failure: a message per document cost more than the kernel.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../common/dtype.h"

namespace quorum::kernels::contract {

using Shape = std::vector<int64_t>;

// "[2, 3]": how every shape error writes a shape.
std::string shape_str(const Shape& s);

// ---- Dense scoring (dense_search.h, cuda score_topk)
struct DenseQueries {
  size_t rows, dim;
};
// Queries: f32 [rows, dim], dim > 0.
DenseQueries dense_queries(Dtype dtype, const Shape& shape);
// Corpus: f32, bf16 or f16 [rows, dim] with the queries' dim; returns its rows.
size_t dense_corpus(Dtype dtype, const Shape& shape, size_t dim);

// ---- MaxSim (maxsim.h)
struct TokenQueryShape {
  size_t nq, lq, dim;
};
// Queries: f32 [Lq, dim] (one query) or [nq, Lq, dim], dim > 0.
TokenQueryShape maxsim_queries(Dtype dtype, const Shape& shape);
// Query mask: nq * Lq entries.
void maxsim_query_mask(size_t count, const TokenQueryShape& q);
// Documents: f32, bf16 or f16, packed [rows, dim] or padded [N, Ld, dim], with the queries' dim, and n lengths
// (non-negative; N of them and each at most Ld when padded; summing to rows when packed). Writes each
// document's first token row and length to start[n] and length[n]; returns the token rows.
size_t maxsim_documents(Dtype dtype, const Shape& shape, size_t dim, const int32_t* lengths, size_t n, int64_t* start,
                        int64_t* length);
// Token mask: one entry per token row.
void maxsim_token_mask(size_t count, size_t rows);

// ---- SPLADE pooling (splade.h)
struct LogitsShape {
  size_t batch, len, vocab;
};
// Logits: f32, bf16 or f16 [B, L, V].
LogitsShape splade_logits(Dtype dtype, const Shape& shape);
// Mask: B * L entries.
void splade_mask(size_t count, const LogitsShape& x);
// The backward's operands: argmax i32 [B, V] and grad f32 [B, V].
void splade_backward(Dtype argmax, const Shape& argmax_shape, Dtype grad, const Shape& grad_shape, const LogitsShape& x);

// ---- InfoNCE (infonce.h)
struct InfoNceShape {
  size_t batch, passages, dim;
};
// Queries f32 [B, D] and passages f32 [M, D], M > 0, D > 0.
InfoNceShape info_nce(Dtype q, const Shape& q_shape, Dtype p, const Shape& p_shape);
// Positives and weights: one entry per query.
void info_nce_counts(size_t positives, size_t weights, bool has_weights, const InfoNceShape& s);
// Each positive in [0, M). Read where the values can no longer change (inside the work for borrowed arrays).
void info_nce_positives(const int32_t* pos, const InfoNceShape& s);

// ---- Ensemble mutual information (ensemble.h)
struct EnsembleShape {
  size_t batch, members, len;
};
// Scores: f32 [B, K, L], K >= 2, L >= 1.
EnsembleShape ensemble_scores(Dtype dtype, const Shape& shape);
// Lengths: B of them,
void ensemble_length_count(size_t count, const EnsembleShape& s);
// each in [1, L]. Read where the values can no longer change (inside the work for borrowed arrays).
void ensemble_lengths(const int32_t* lengths, const EnsembleShape& s);

// A softmax temperature (InfoNCE, ensemble MI): positive and finite.
void temperature(double t);

}  // namespace quorum::kernels::contract
