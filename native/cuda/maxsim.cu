// MaxSim on the GPU (kernels.h): one block per (document, query). The query's token vectors sit in shared memory
// (rows padded by one float so that lanes reading different tokens hit different banks); document tokens stream
// through shared memory kTok at a time, converted to f32. Lane q of each warp owns query token q (32 at a time),
// each warp scans its share of the document's tokens, and the warps' maxima are combined with the lowest token
// index winning ties, as the CPU kernel's in-order strict > does.
#include <mma.h>

#include <algorithm>
#include <type_traits>

#include "../common/error.h"
#include "device_math.cuh"
#include "kernels.h"
#include "runtime.h"

namespace quorum::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTok = 32;  // document tokens staged at a time

// Warp 0, after the block's warps stored their maxima (best / barg [kWarps][32], lane = query token g0 + lane):
// combines them (the lowest token index on ties), applies the query mask and the zero clamp, writes the arg-maxes
// and returns the group's contributions summed in query-token order, as the CPU kernel sums them.
__device__ float combine_group(const float* best, const int* barg, int g0, int gq, int lq, const uint8_t* q_mask,
                               bool clamp_zero, size_t b, size_t n, size_t doc, int32_t* argmax) {
  const int lane = threadIdx.x & 31;
  float v = -INFINITY;
  int a = -1;
  for (int w = 0; w < kWarps; ++w) {
    const float bv = best[w * 32 + lane];
    const int ba = barg[w * 32 + lane];
    if (ba >= 0 && (a < 0 || bv > v || (bv == v && ba < a))) {
      v = bv;
      a = ba;
    }
  }
  const int qi = g0 + lane;
  float contrib = 0.f;
  if (lane < gq) {
    if (q_mask && !q_mask[b * lq + qi]) {
      v = 0.f;
      a = -1;
    } else if (clamp_zero && !(v > 0.f)) {
      v = 0.f;
      a = -1;
    }
    contrib = v;
    if (argmax) argmax[(b * n + doc) * lq + qi] = a;
  }
  float sum = 0.f;
  for (int i = 0; i < gq; ++i) sum += __shfl_sync(0xffffffffu, contrib, i);
  return sum;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    maxsim_kernel(const float* q, int lq, int dim, const uint8_t* q_mask, const T* docs, const int64_t* start,
                  const int64_t* length, const uint8_t* token_mask, bool clamp_zero, size_t n, float* scores,
                  int32_t* argmax) {
  extern __shared__ __align__(16) float sm[];
  const int ld = dim + 1;
  float* qs = sm;                          // [32][ld]: the current group of 32 query tokens
  float* ds = qs + 32 * ld;                // [kTok][dim]
  float* best = ds + size_t(kTok) * dim;   // [kWarps][32]
  int* barg = reinterpret_cast<int*>(best + kWarps * 32);  // [kWarps][32]
  float* total = reinterpret_cast<float*>(barg + kWarps * 32);
  const size_t doc = blockIdx.x, b = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t s0 = start[doc];
  const int len = int(length[doc]);
  if (threadIdx.x == 0) *total = 0.f;
  for (int g0 = 0; g0 < lq; g0 += 32) {
    const int gq = min(32, lq - g0);
    __syncthreads();
    for (int i = threadIdx.x; i < 32 * dim; i += kThreads) {
      const int r = i / dim, d = i % dim;
      qs[r * ld + d] = r < gq ? q[(b * lq + g0 + r) * size_t(dim) + d] : 0.f;
    }
    float mine = -INFINITY;
    int marg = -1;
    for (int t0 = 0; t0 < len; t0 += kTok) {
      const int nt = min(kTok, len - t0);
      __syncthreads();
      for (int i = threadIdx.x; i < nt * dim; i += kThreads)
        ds[i] = to_f32<T>(docs[(s0 + t0) * dim + i]);
      __syncthreads();
      for (int t = warp; t < nt; t += kWarps) {
        if (token_mask && !token_mask[s0 + t0 + t]) continue;
        const float* dr = ds + t * dim;
        const float* qr = qs + lane * ld;
        float acc = 0.f;
        for (int d = 0; d < dim; ++d) acc = fmaf(qr[d], dr[d], acc);
        if (acc > mine) {  // tokens reach a warp in increasing order: strict > keeps the lowest index
          mine = acc;
          marg = t0 + t;
        }
      }
    }
    best[warp * 32 + lane] = mine;
    barg[warp * 32 + lane] = marg;
    __syncthreads();
    if (warp == 0) {
      const float sum = combine_group(best, barg, g0, gq, lq, q_mask, clamp_zero, b, n, doc, argmax);
      if (lane == 0) *total += sum;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) scores[b * n + doc] = *total;
}

// Tensor-core MaxSim for f16 / bf16 documents with a dimension in whole 16-wide fragments (at most kMmaMaxDim). The
// f32 query tokens are split into hi + lo halves of the document type (dense_topk.cu explains why), padded to
// groups of 32 tokens. A persistent block walks documents; each document's tokens pass through shared memory
// kDocTokens at a time (a whole document of usual length: one load, three barriers; 16-byte coalesced loads, the rows
// of the last 16-token tile past the document zero); warp w takes the 16-token tiles w, w + 8, ... of the staged span:
// two 16 x 16 accumulators (32 query tokens) over the dimension, stored to its own tile, then each lane (one query
// token) scans the rows in order for its max. The warps' maxima combine with the lowest token index on ties.
constexpr int kMmaMaxDim = 256;
constexpr int kDocTokens = 256;

template <class T>
__global__ void __launch_bounds__(kThreads)
    maxsim_mma(const T* qhi, const T* qlo, int lq, int lqp, int dim, const uint8_t* q_mask, const T* docs,
               const int64_t* start, const int64_t* length, const uint8_t* token_mask, bool clamp_zero, size_t n,
               float* scores, int32_t* argmax) {
  using namespace nvcuda;
  extern __shared__ __align__(128) char smem_raw[];
  const int ld = dim + 8;  // padded rows: fragment loads spread over the banks
  T* dt = reinterpret_cast<T*>(smem_raw);                       // [kDocTokens][ld] document tokens
  T* sh = dt + kDocTokens * ld;                                  // [32][ld] query hi of the current group
  T* sl = sh + 32 * ld;                                          // [32][ld] query lo
  float* tiles = reinterpret_cast<float*>(sl + 32 * ld);         // [kWarps][16][32]
  float* best = tiles + kWarps * 512;                            // [kWarps][32]
  int* barg = reinterpret_cast<int*>(best + kWarps * 32);        // [kWarps][32]
  const size_t b = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float* tile = tiles + warp * 512;
  const int groups = dim / 8;  // 16-byte groups per token row
  for (int g0 = 0; g0 < lqp; g0 += 32) {
    const int gq = min(32, lq - g0);
    __syncthreads();
    for (int i = threadIdx.x; i < 32 * groups; i += kThreads) {
      const int r = i / groups, c = (i % groups) * 8;
      const size_t at = (b * lqp + g0 + r) * size_t(dim) + c;
      *reinterpret_cast<uint4*>(sh + r * ld + c) = *reinterpret_cast<const uint4*>(qhi + at);
      *reinterpret_cast<uint4*>(sl + r * ld + c) = *reinterpret_cast<const uint4*>(qlo + at);
    }
    for (size_t doc = blockIdx.x; doc < n; doc += gridDim.x) {
      const int64_t s0 = start[doc];
      const int len = int(length[doc]);
      float mine = -INFINITY;
      int marg = -1;
      for (int c0 = 0; c0 < len; c0 += kDocTokens) {
        const int span = min(kDocTokens, len - c0), staged = (span + 15) / 16 * 16;
        __syncthreads();  // the last span is no longer read (and, at first, the query group is stored)
        for (int i = threadIdx.x; i < staged * groups; i += kThreads) {
          const int r = i / groups, c = (i % groups) * 8;
          *reinterpret_cast<uint4*>(dt + r * ld + c) =
              r < span ? __ldg(reinterpret_cast<const uint4*>(docs + (s0 + c0 + r) * dim + c)) : make_uint4(0, 0, 0, 0);
        }
        __syncthreads();
        for (int t0 = c0 + warp * 16; t0 < c0 + span; t0 += kWarps * 16) {
          const int rows = min(16, len - t0);
          wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
          wmma::fill_fragment(acc[0], 0.f);
          wmma::fill_fragment(acc[1], 0.f);
          for (int d = 0; d < dim; d += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
            wmma::load_matrix_sync(a, dt + (t0 - c0) * ld + d, ld);
#pragma unroll
            for (int j = 0; j < 2; ++j) {
              wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> f;
              wmma::load_matrix_sync(f, sh + j * 16 * ld + d, ld);
              wmma::mma_sync(acc[j], a, f, acc[j]);
              wmma::load_matrix_sync(f, sl + j * 16 * ld + d, ld);
              wmma::mma_sync(acc[j], a, f, acc[j]);
            }
          }
          wmma::store_matrix_sync(tile, acc[0], 32, wmma::mem_row_major);
          wmma::store_matrix_sync(tile + 16, acc[1], 32, wmma::mem_row_major);
          __syncwarp();
          for (int t = 0; t < rows; ++t) {
            if (token_mask && !token_mask[s0 + t0 + t]) continue;
            const float v = tile[t * 32 + lane];
            if (v > mine) {  // a warp meets its tokens in increasing order: strict > keeps the lowest index
              mine = v;
              marg = t0 + t;
            }
          }
          __syncwarp();
        }
      }
      best[warp * 32 + lane] = mine;
      barg[warp * 32 + lane] = marg;
      __syncthreads();
      if (warp == 0) {
        const float sum = combine_group(best, barg, g0, gq, lq, q_mask, clamp_zero, b, n, doc, argmax);
        if (lane == 0) scores[b * n + doc] = g0 == 0 ? sum : scores[b * n + doc] + sum;
      }
      __syncthreads();
    }
  }
}

// q [nq, lq, dim] f32 -> hi / lo [nq, lqp, dim] of T, token rows past lq zero.
template <class T>
__global__ void split_query_tokens(const float* q, size_t nq, int lq, int lqp, int dim, T* hi, T* lo, int* overflow) {
  const size_t total = nq * size_t(lqp) * dim;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
    const size_t b = i / (size_t(lqp) * dim);
    const int t = int((i / dim) % lqp), d = int(i % dim);
    const float x = t < lq ? q[(b * lq + t) * dim + d] : 0.f;
    split_hi_lo<T>(x, hi[i], lo[i]);
    if (isfinite(x) && !isfinite(to_f32<T>(hi[i]))) *overflow = 1;  // f16 holds no |x| >= 65520: the f32 path
  }
}

// Runs the tensor-core kernel; false (nothing written) when it cannot: too little shared memory for the dimension,
// or f16 halves that cannot hold a query value.
template <class T>
bool run_mma(const float* q, size_t nq, size_t lq, size_t dim, const uint8_t* q_mask, const T* docs, size_t n,
             const int64_t* start, const int64_t* length, const uint8_t* token_mask, bool clamp_zero, float* scores,
             int32_t* argmax) {
  cudaStream_t st = stream();
  const size_t lqp = (lq + 31) / 32 * 32;
  const size_t smem = (kDocTokens + 64) * (dim + 8) * sizeof(T) + kWarps * 512 * 4 + 2 * kWarps * 32 * 4;
  if (smem > smem_budget()) return false;
  Buffer hi(nq * lqp * dim * sizeof(T)), lo(nq * lqp * dim * sizeof(T)), flag(4);
  check(cudaMemsetAsync(flag.get(), 0, 4, st), "cudaMemset");
  split_query_tokens<T><<<int(std::min<size_t>((nq * lqp * dim + 255) / 256, 8192)), 256, 0, st>>>(
      q, nq, int(lq), int(lqp), int(dim), hi.as<T>(), lo.as<T>(), flag.as<int>());
  if (std::is_same<T, __half>::value) {
    int overflow = 0;
    check(cudaMemcpyAsync(&overflow, flag.get(), 4, cudaMemcpyDeviceToHost, st), "cudaMemcpy");
    sync("maxsim");
    if (overflow) return false;
  }
  auto kernel = maxsim_mma<T>;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), "cudaFuncSetAttribute");
  int per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem), "occupancy");
  const unsigned gx = unsigned(std::max<size_t>(1, std::min<size_t>(n, size_t(std::max(per_sm, 1)) * sm_count())));
  const dim3 grid{gx, unsigned(nq)};
  ProfileScope prof("maxsim tensor-core kernel");
  kernel<<<grid, kThreads, smem, st>>>(hi.as<T>(), lo.as<T>(), int(lq), int(lqp), int(dim), q_mask, docs, start,
                                       length, token_mask, clamp_zero, n, scores, argmax);
  check(cudaGetLastError(), "maxsim");
  return true;
}

}  // namespace

void maxsim(const float* q, size_t nq, size_t lq, size_t dim, const uint8_t* q_mask, const void* docs, Dtype dtype,
            size_t n, const int64_t* start, const int64_t* length, const uint8_t* token_mask, bool clamp_zero,
            float* scores, int32_t* argmax) {
  if (nq == 0 || n == 0) return;
  need(nq <= 65535, "ERR_UNSUPPORTED", "more than 65535 query sets in one MaxSim call on cuda");
  const size_t smem = (32 * (dim + 1) + kTok * dim + 2 * kWarps * 32 + 4) * 4;
  need(smem <= smem_budget(), "ERR_UNSUPPORTED", "token dimension too large for the MaxSim kernel on cuda");
  cudaStream_t st = stream();
  if (lq > 0 && dim % 16 == 0 && dim <= size_t(kMmaMaxDim) && dtype != Dtype::F32) {
    const bool done =
        dtype == Dtype::BF16
            ? run_mma<__nv_bfloat16>(q, nq, lq, dim, q_mask, static_cast<const __nv_bfloat16*>(docs), n, start,
                                     length, token_mask, clamp_zero, scores, argmax)
            : run_mma<__half>(q, nq, lq, dim, q_mask, static_cast<const __half*>(docs), n, start, length, token_mask,
                              clamp_zero, scores, argmax);
    if (done) return;
  }
  const dim3 grid{unsigned(n), unsigned(nq)};
  QUORUM_CUDA_FLOAT_TYPES(dtype, {
    auto kernel = maxsim_kernel<T>;
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), "cudaFuncSetAttribute");
    if (lq == 0) {
      check(cudaMemsetAsync(scores, 0, nq * n * 4, st), "cudaMemset");
    } else {
      kernel<<<grid, kThreads, smem, st>>>(q, int(lq), int(dim), q_mask, static_cast<const T*>(docs), start, length,
                                           token_mask, clamp_zero, n, scores, argmax);
    }
    check(cudaGetLastError(), "maxsim");
  });
}

}  // namespace quorum::cuda
