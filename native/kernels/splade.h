// SPLADE max pooling and its regularizers, docs/methods/kernels.md#splade-pooling-and-regularizers:
//   w[b, v] = max over unmasked tokens t of log1p(relu(logits[b, t, v]))
// Because log1p(relu(.)) is monotone, the kernel takes the running max of the raw logits against 0 and applies
// log1p once per output: a single streaming pass over the logits, bound by memory bandwidth.
//
// Conventions: the arg-max is the lowest token index reaching the max (torch.max); where the max is 0
// (every unmasked logit <= 0, or no unmasked token) w is 0 and the arg-max is -1, so the gradient is 0.
// Logits are f32, bf16 or f16; arithmetic is f32; sums over the vocabulary are f64.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../common/dtype.h"

namespace quorum::kernels {

struct SpladeOps {
  const char* isa;
  // For each of nrows (1..4) token rows in token order and v < n: if rows[r][v] > best[v] then
  // best[v] = rows[r][v], arg[v] = tok[r] (token indices as floats, exact below 2^24). arg may be null
  // (values only).
  void (*max_update)(const void* const* rows, size_t nrows, Dtype t, size_t n, const float* tok, float* best,
                     float* arg);
  // x[v] = log1p(x[v]) for v < n, x >= 0.
  void (*log1p_inplace)(float* x, size_t n);
};

const SpladeOps& splade_scalar();
const SpladeOps* splade_avx2();
const SpladeOps* splade_avx512();
const SpladeOps* splade_neon();  // AArch64 builds only (else nullptr)

struct Logits {
  const void* data;
  Dtype dtype;
  size_t batch, len, vocab;
  const uint8_t* mask;  // [batch, len], nonzero = token used; null = all
};

// w [batch, vocab]; argmax [batch, vocab] or null.
void splade_pool(const Logits& x, float* w, int32_t* argmax);

// dlogits [batch, len, vocab] (f32, overwritten): grad[b, v] / (1 + x) at the arg-max token, 0 elsewhere.
void splade_pool_backward(const Logits& x, const int32_t* argmax, const float* grad, float* dlogits);

enum class SparseReg { Flops, L1 };
// FLOPS(W) = sum_v (mean_b |w_bv|)^2, or L1(W) = mean_b sum_v |w_bv|, over W [batch, vocab]; writes the
// gradient to grad (same shape) unless null.
double splade_regularizer(const float* w, size_t batch, size_t vocab, SparseReg kind, float* grad);

// Rows of sparse vectors: row r holds entries offsets[r] .. offsets[r + 1], term ids ascending.
struct SparseRows {
  std::vector<int64_t> offsets;
  std::vector<int32_t> indices;
  std::vector<float> values;
};

// Keeps the entries of each row of W [rows, vocab] with value > threshold, and of those the top_k largest
// (ties by lower term id) when top_k > 0.
SparseRows to_sparse(const float* w, size_t rows, size_t vocab, float threshold, size_t top_k);

// View of sparse rows held elsewhere (term ids ascending within each row).
struct SparseView {
  const int64_t* offsets;
  const int32_t* indices;
  const float* values;
  size_t rows;
};

// out [a.rows, b.rows]: dot products of sparse rows (merge of sorted term ids).
void sparse_sparse_scores(const SparseView& a, const SparseView& b, float* out);
// out [a.rows, n]: dot of each sparse row with each row of dense [n, vocab]; term ids must be < vocab.
void sparse_dense_scores(const SparseView& a, const float* dense, size_t n, size_t vocab, float* out);
// Throws ERR_RANGE unless offsets run from 0 to nnz without decreasing (every offset checked before any row
// is read through one).
void check_sparse_offsets(const SparseView& s, size_t nnz);
// Throws ERR_RANGE unless offsets are non-decreasing from 0, and term ids are strictly ascending per row and
// in [0, vocab) (vocab < 0: unbounded).
void check_sparse(const SparseView& s, size_t nnz, int64_t vocab);

}  // namespace quorum::kernels
