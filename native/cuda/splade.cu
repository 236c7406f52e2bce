// SPLADE max pooling on the GPU (kernels.h): a streaming pass over the logits. Each thread owns two adjacent
// vocabulary entries of one batch row (one 4-byte load of a bf16 / f16 pair, or two f32), so a warp reads 128 or
// 256 contiguous bytes per token, and walks the row's tokens in order: the strict > keeps the lowest token index
// at the max, as torch.max and the CPU kernel do.
#include <algorithm>

#include "../common/error.h"
#include "device_math.cuh"
#include "kernels.h"
#include "runtime.h"

namespace quorum::cuda {
namespace {

template <class T>
__global__ void pool_kernel(const T* x, size_t len, size_t vocab, const uint8_t* mask, float* w, int32_t* argmax) {
  const size_t b = blockIdx.y;
  const size_t v0 = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) * 2;
  if (v0 >= vocab) return;
  const bool pair = v0 + 1 < vocab;
  float best0 = 0.f, best1 = 0.f;
  int a0 = -1, a1 = -1;
  const T* row = x + b * len * vocab + v0;
  const uint8_t* m = mask ? mask + b * len : nullptr;
#pragma unroll 4
  for (size_t t = 0; t < len; ++t) {
    if (m && !m[t]) continue;
    const T* p = row + t * vocab;
    const float x0 = to_f32<T>(p[0]);
    const float x1 = pair ? to_f32<T>(p[1]) : 0.f;
    if (x0 > best0) { best0 = x0; a0 = int(t); }
    if (x1 > best1) { best1 = x1; a1 = int(t); }
  }
  w[b * vocab + v0] = log1pf(best0);
  if (argmax) argmax[b * vocab + v0] = a0;
  if (pair) {
    w[b * vocab + v0 + 1] = log1pf(best1);
    if (argmax) argmax[b * vocab + v0 + 1] = a1;
  }
}

// As the CPU kernel: a gradient only where the arg-max logit is positive (the weight is 0 elsewhere); an arg-max
// past the row's length raises *bad (ERR_RANGE for the call).
template <class T>
__global__ void pool_backward_kernel(const T* x, size_t len, size_t vocab, const int32_t* argmax, const float* grad,
                                     float* dx, size_t total, int* bad) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
    const int a = argmax[i];
    if (a < 0) continue;
    if (size_t(a) >= len) {
      *bad = 1;
      continue;
    }
    const size_t b = i / vocab, v = i % vocab;
    const size_t at = (b * len + size_t(a)) * vocab + v;
    const float xv = to_f32<T>(x[at]);
    if (xv > 0.f) dx[at] = grad[i] / (1.f + xv);
  }
}

}  // namespace

void splade_pool(const void* logits, Dtype dtype, size_t batch, size_t len, size_t vocab, const uint8_t* mask,
                 float* w, int32_t* argmax) {
  if (batch == 0 || vocab == 0) return;
  need(batch <= 65535, "ERR_UNSUPPORTED", "more than 65535 rows in one SPLADE pooling call on cuda");
  cudaStream_t st = stream();
  const dim3 grid(unsigned((vocab + 511) / 512), unsigned(batch));
  QUORUM_CUDA_FLOAT_TYPES(dtype, {
    pool_kernel<T><<<grid, 256, 0, st>>>(static_cast<const T*>(logits), len, vocab, mask, w, argmax);
  });
  check(cudaGetLastError(), "splade_pool");
}

void splade_pool_backward(const void* logits, Dtype dtype, size_t batch, size_t len, size_t vocab,
                          const int32_t* argmax, const float* grad, float* dlogits) {
  cudaStream_t st = stream();
  check(cudaMemsetAsync(dlogits, 0, batch * len * vocab * 4, st), "cudaMemset");
  const size_t total = batch * vocab;
  if (total == 0) return;
  const int grid = int(std::min<size_t>((total + 255) / 256, 65535));
  Buffer flag(4);
  check(cudaMemsetAsync(flag.get(), 0, 4, st), "cudaMemset");
  QUORUM_CUDA_FLOAT_TYPES(dtype, {
    pool_backward_kernel<T><<<grid, 256, 0, st>>>(static_cast<const T*>(logits), len, vocab, argmax, grad, dlogits,
                                                  total, flag.as<int>());
  });
  check(cudaGetLastError(), "splade_pool_backward");
  int bad = 0;
  check(cudaMemcpyAsync(&bad, flag.get(), 4, cudaMemcpyDeviceToHost, st), "cudaMemcpy");
  sync("splade_pool_backward");
  need(bad == 0, "ERR_RANGE", "an arg-max token index is outside the logits' length");
}

}  // namespace quorum::cuda
