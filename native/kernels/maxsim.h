// MaxSim (ColBERT late interaction), docs/methods/kernels.md#maxsim:
//   S[b, n] = sum over query tokens q of  max over document tokens t of  dot(Q[b, q], D_n[t])
// Documents are runs of token rows in one matrix (packed [sum Ld, dim] or padded [N, Ld, dim]), stored as
// f32, bf16 or f16; accumulation is f32.
//
// Conventions (they differ from ColBERT's CPU path on purpose, see docs/methods/kernels.md#maxsim):
// - A masked document token, or a padding token past a document's length, never wins the max: it is -inf.
// - No zero clamp, unless clamp_zero (then each query token contributes max(0, best), as ColBERT's CPU
//   segmented kernel does, and a clamped token reports arg-max -1).
// - A masked query token contributes nothing and reports arg-max -1.
// - A document with no unmasked token scores -inf (every query token's max is empty), never NaN; with
//   clamp_zero it scores 0.
// - Ties go to the lowest token index (strict > while scanning in order).
#pragma once
#include <cstddef>
#include <cstdint>

#include "../common/dtype.h"

namespace quorum::kernels {

// Hot loops of one ISA variant.
struct MaxSimOps {
  const char* isa;
  size_t lanes;        // query tokens are padded to a multiple of this
  size_t tile_tokens;  // document tokens per register tile
  // Query token vectors transposed: qt[j * lqp + q] for j < dim, q < lqp. For each f32 token row
  // tokens[t * dim .. +dim), t < len, and each q: if dot > best[q] then best[q] = dot, arg[q] = base + t
  // (arg holds token indices as floats: exact below 2^24).
  // While it computes the tile of tokens [t, t + tile), the loop fetches the bytes [t, t + tile) x prefetch_row
  // of `prefetch` into cache: the stored rows that come next (the tokens one tile ahead when they are read in
  // place, or the next document's stored rows while this one's converted copy is scored).
  void (*update)(const float* qt, size_t lqp, size_t dim, const float* tokens, size_t len, float base,
                 const void* prefetch, size_t prefetch_row, float* best, float* arg);
  // dst[i] = float(src[i]) for f32, bf16 or f16 src.
  void (*to_f32)(const void* src, Dtype t, size_t n, float* dst);
};

const MaxSimOps& maxsim_scalar();
const MaxSimOps* maxsim_avx2();
const MaxSimOps* maxsim_avx512();
const MaxSimOps* maxsim_neon();  // AArch64 builds only (else nullptr)
const MaxSimOps& maxsim_ops();    // the active variant

// Query token sets: nq queries of lq tokens each, [nq, lq, dim] f32; mask [nq, lq] (nonzero = use) or null.
struct TokenQueries {
  const float* data;
  size_t nq, lq, dim;
  const uint8_t* mask;
};

// Documents: doc n is token rows start[n] .. start[n] + length[n] of `data` ([rows, dim] of `dtype`).
// token_mask [rows] (nonzero = use) or null.
struct TokenDocs {
  const uint8_t* data;
  Dtype dtype;
  size_t rows, dim, n;
  const int64_t* start;
  const int64_t* length;
  const uint8_t* token_mask;
};

// scores [nq, n]; argmax [nq, n, lq] (token index within the document, -1 when none) or null.
void maxsim(const TokenQueries& q, const TokenDocs& d, bool clamp_zero, float* scores, int32_t* argmax);

// Gradients of sum_{b,n} grad[b, n] * S[b, n] given the forward's argmax: each query token's gradient goes to
// its arg-max document token and back. dq [nq, lq, dim] and dd [rows, dim] are overwritten.
void maxsim_backward(const TokenQueries& q, const TokenDocs& d, const int32_t* argmax, const float* grad, float* dq,
                     float* dd);

}  // namespace quorum::kernels
