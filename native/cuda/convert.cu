// f32 / bf16 / f16 conversion on the device (kernels.h): CUDA's round-to-nearest-even intrinsics, which keep NaN a
// NaN as the CPU conversion does.
#include <algorithm>

#include "../common/error.h"
#include "device_math.cuh"
#include "kernels.h"
#include "runtime.h"

namespace quorum::cuda {
namespace {

template <class S, class D>
__global__ void convert_kernel(const S* src, D* dst, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = from_f32<D>(to_f32<S>(src[i]));
}

template <class S>
void launch_to(const S* src, void* dst, Dtype to, size_t n, cudaStream_t st, int grid) {
  switch (to) {
    case Dtype::F32: convert_kernel<S, float><<<grid, 256, 0, st>>>(src, static_cast<float*>(dst), n); break;
    case Dtype::BF16:
      convert_kernel<S, __nv_bfloat16><<<grid, 256, 0, st>>>(src, static_cast<__nv_bfloat16*>(dst), n);
      break;
    case Dtype::F16: convert_kernel<S, __half><<<grid, 256, 0, st>>>(src, static_cast<__half*>(dst), n); break;
    default: throw Error("ERR_DTYPE", "conversion on cuda is between f32, bf16 and f16");
  }
}

// splitmix64 of the element's index: independent values without a generator state.
__device__ __forceinline__ float uniform01(uint64_t seed, size_t i) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t(i) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return float(z >> 40) * (1.f / 16777216.f);
}

template <class D>
__global__ void fill_kernel(D* dst, size_t n, uint64_t seed, float lo, float hi) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = from_f32<D>(lo + (hi - lo) * uniform01(seed, i));
}

}  // namespace

std::string kernel_image_problem() {
  cudaFuncAttributes attr{};
  const cudaError_t err = cudaFuncGetAttributes(&attr, convert_kernel<float, float>);
  if (err == cudaSuccess) return "";
  cudaGetLastError();
  int dev = 0, major = 0, minor = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return "quorum_cuda.node has no code for this GPU (compute capability " + std::to_string(major) + "." +
         std::to_string(minor) + "; rebuild with -DQUORUM_CUDA_ARCHS including " + std::to_string(major * 10 + minor) +
         "): " + cudaGetErrorString(err);
}

void fill_uniform(void* dst, Dtype dtype, size_t count, uint64_t seed, float lo, float hi) {
  if (count == 0) return;
  cudaStream_t st = stream();
  const int grid = int(std::min<size_t>((count + 255) / 256, 65535));
  QUORUM_CUDA_FLOAT_TYPES(dtype, { fill_kernel<T><<<grid, 256, 0, st>>>(static_cast<T*>(dst), count, seed, lo, hi); });
  check(cudaGetLastError(), "fill_uniform");
}

void convert(const void* src, Dtype from, void* dst, Dtype to, size_t count) {
  if (count == 0) return;
  cudaStream_t st = stream();
  const int grid = int(std::min<size_t>((count + 255) / 256, 65535));
  QUORUM_CUDA_FLOAT_TYPES(from, { launch_to<T>(static_cast<const T*>(src), dst, to, count, st, grid); });
  check(cudaGetLastError(), "convert");
}

}  // namespace quorum::cuda
