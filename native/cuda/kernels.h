// The CUDA forms of the five kernels. Each has the contract of its CPU kernel (native/kernels/<name>.h): the same
// shapes, conventions and tie rules, f32 accumulation; only the pointers are device pointers and the work is
// queued on runtime.h's stream (the caller synchronises). The caller has checked the arguments against
// native/kernels/contract.h, the contract the CPU bindings check too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "../common/dtype.h"

namespace quorum::cuda {

// dense_search.h's score_topk: q [B, D] f32, corpus [N, D] f32 / bf16 / f16, ids / scores [B, k]. Scores are
// fused with the selection: each block keeps a running top-k per query, so only grid x B x k candidates reach
// memory, never the B x N matrix. k at most kMaxTopK.
constexpr size_t kMaxTopK = 1024;
void score_topk(const float* q, size_t batch, const void* corpus, Dtype dtype, size_t n, size_t dim, size_t k,
                int32_t* ids, float* scores);

// True when no element of the device array is NaN or +-Inf (f32, bf16, f16).
bool all_finite(const void* data, size_t count, Dtype dtype);

// maxsim.h's maxsim: q [nq, lq, dim] f32, q_mask [nq, lq] or null; docs [rows, dim] of dtype with doc n at rows
// start[n] .. start[n] + length[n] (int64, device), token_mask [rows] or null; scores [nq, n], argmax
// [nq, n, lq] or null.
void maxsim(const float* q, size_t nq, size_t lq, size_t dim, const uint8_t* q_mask, const void* docs, Dtype dtype,
            size_t n, const int64_t* start, const int64_t* length, const uint8_t* token_mask, bool clamp_zero,
            float* scores, int32_t* argmax);

// splade.h's splade_pool / splade_pool_backward: logits [batch, len, vocab] of dtype, mask [batch, len] or null.
void splade_pool(const void* logits, Dtype dtype, size_t batch, size_t len, size_t vocab, const uint8_t* mask,
                 float* w, int32_t* argmax);
void splade_pool_backward(const void* logits, Dtype dtype, size_t batch, size_t len, size_t vocab,
                          const int32_t* argmax, const float* grad, float* dlogits);

// infonce.h's info_nce: q [batch, dim], p [passages, dim] f32; pos [batch]; weights [batch] or null. row_loss
// [batch], rank [batch], dq / dp or null; returns the loss and the accuracy (the one host synchronisation).
struct InfoNceResult {
  double loss = 0, accuracy = 0;
};
InfoNceResult info_nce(const float* q, const float* p, size_t batch, size_t passages, size_t dim, const int32_t* pos,
                       const float* weights, float temperature, bool cosine, float* row_loss, int32_t* rank,
                       float* dq, float* dp);

// ensemble.h's ensemble_mi: z [batch, members, len] f32, lengths [batch] or null; mi and conf [batch]. len at most
// kMaxEnsembleLen.
constexpr size_t kMaxEnsembleLen = 1024;
void ensemble_mi(const float* z, size_t batch, size_t members, size_t len, const int32_t* lengths, float temperature,
                 bool eps_mode, float* mi, float* conf);

// Fills a float array with values uniform in [lo, hi) from a counter-based hash of (seed, index): benchmark data
// made on the device, so that a 15 GB corpus needs no host copy.
void fill_uniform(void* dst, Dtype dtype, size_t count, uint64_t seed, float lo, float hi);

// "" when this build has code for the current device, else why not (built for other architectures).
std::string kernel_image_problem();

// Element-wise f32 / bf16 / f16 conversion on the device (round to nearest even, NaN kept).
void convert(const void* src, Dtype from, void* dst, Dtype to, size_t count);

}  // namespace quorum::cuda
