// Loads of f32 / bf16 / f16 elements as f32, and the order every top-k kernel ranks by, for the .cu kernels.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "../common/dtype.h"

namespace quorum::cuda {

template <class T>
__device__ __forceinline__ float to_f32(T x);
template <>
__device__ __forceinline__ float to_f32<float>(float x) { return x; }
template <>
__device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <>
__device__ __forceinline__ float to_f32<__half>(__half x) { return __half2float(x); }

template <class T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }

// x as hi + lo in a 16-bit type: hi = x rounded, lo = the rounded remainder (exact in f32). Products with both keep
// about 16 bits of x's mantissa where one rounded copy keeps 8 (bf16) or 11 (f16).
template <class T>
__device__ __forceinline__ void split_hi_lo(float x, T& hi, T& lo) {
  hi = from_f32<T>(x);
  lo = from_f32<T>(x - to_f32<T>(hi));
}

template <class T>
__device__ __forceinline__ float load_f32(const T* p, size_t i) { return to_f32<T>(p[i]); }

// Ranking order of (score, id) pairs: higher score first, then lower id. NaN never enters a list.
__device__ __forceinline__ bool better(float s, int32_t id, float ts, int32_t tid) {
  return s > ts || (s == ts && id < tid);
}

constexpr int32_t kNoId = 0x7fffffff;  // an empty slot; it loses to every real row, -inf scores included

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace quorum::cuda

// Dispatches on a float dtype: F is a generic lambda taking a (T*)nullptr tag.
#define QUORUM_CUDA_FLOAT_TYPES(dtype, ...)                                 \
  switch (dtype) {                                                          \
    case ::quorum::Dtype::F32: { using T = float; __VA_ARGS__; break; }    \
    case ::quorum::Dtype::BF16: { using T = __nv_bfloat16; __VA_ARGS__; break; } \
    case ::quorum::Dtype::F16: { using T = __half; __VA_ARGS__; break; }   \
    default: throw ::quorum::Error("ERR_DTYPE", "expected f32, bf16 or f16");   \
  }
