#include "runtime.h"

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "../common/error.h"

namespace quorum::cuda {
namespace {

bool is_unavailable(cudaError_t err) {
  return err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || err == cudaErrorInitializationError ||
         err == cudaErrorInvalidDevice || err == cudaErrorSystemDriverMismatch ||
         err == cudaErrorCompatNotSupportedOnDevice || err == cudaErrorSystemNotReady ||
         err == cudaErrorNoKernelImageForDevice || err == cudaErrorUnsupportedPtxVersion;
}

std::mutex mu;  // guards the stream, the cache and the stats

// Sizes are rounded up so that near-equal requests share free lists: 512 bytes below 1 MiB, 2 MiB above.
size_t rounded(size_t bytes) {
  const size_t step = bytes < (size_t(1) << 20) ? 512 : (size_t(2) << 20);
  return (bytes + step - 1) / step * step;
}

std::multimap<size_t, void*> free_blocks;  // rounded size -> block
MemoryStats stats;
cudaStream_t the_stream = nullptr;

void empty_cache_locked() {
  for (auto& [size, p] : free_blocks) cudaFree(p);
  free_blocks.clear();
  stats.cached = 0;
}

}  // namespace

void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clears a sticky-free error so the next call starts clean
  const std::string msg = std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  if (is_unavailable(err)) throw Error("ERR_BACKEND_UNAVAILABLE", "CUDA is not usable here: " + msg);
  if (err == cudaErrorMemoryAllocation) throw Error("ERR_NOMEM", "out of GPU memory: " + msg);
  throw Error("ERR_NATIVE", "CUDA error in " + msg);
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::string unavailable_reason() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
  }
  return n > 0 ? "" : "no CUDA device";
}

DeviceInfo device_info() {
  DeviceInfo info;
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
  info.name = p.name;
  info.total_bytes = p.totalGlobalMem;
  info.sm_count = p.multiProcessorCount;
  info.major = p.major;
  info.minor = p.minor;
  return info;
}

int sm_count() {
  static const int n = [] {
    int dev = 0, v = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute");
    return v;
  }();
  return n;
}

size_t smem_budget() {
  static const size_t bytes = [] {
    int dev = 0, v = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "cudaDeviceGetAttribute");
    return std::min<size_t>(size_t(v), 200 * 1024);
  }();
  return bytes;
}

cudaStream_t stream() {
  std::lock_guard<std::mutex> lock(mu);
  if (!the_stream) {
    if (device_count() == 0) throw Error("ERR_BACKEND_UNAVAILABLE", "CUDA is not usable here: " + unavailable_reason());
    check(cudaStreamCreateWithFlags(&the_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  return the_stream;
}

void sync(const char* what) {
  check(cudaGetLastError(), what);  // a launch that failed to start
  check(cudaStreamSynchronize(stream()), what);
}

void* alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t size = rounded(bytes);
  std::lock_guard<std::mutex> lock(mu);
  auto it = free_blocks.find(size);
  void* p = nullptr;
  if (it != free_blocks.end()) {
    p = it->second;
    free_blocks.erase(it);
    stats.cached -= size;
  } else {
    cudaError_t err = cudaMalloc(&p, size);
    if (err == cudaErrorMemoryAllocation && !free_blocks.empty()) {
      cudaGetLastError();
      empty_cache_locked();
      err = cudaMalloc(&p, size);
    }
    check(err, "cudaMalloc");
    ++stats.mallocs;
  }
  stats.allocated += size;
  if (stats.allocated > stats.peak) stats.peak = stats.allocated;
  return p;
}

void release(void* ptr, size_t bytes) noexcept {
  if (!ptr) return;
  const size_t size = rounded(bytes);
  std::lock_guard<std::mutex> lock(mu);
  // Kernels queued on the one stream run in order, so a block reused by a later call on the same stream is never
  // read by an earlier kernel after the later one wrote it.
  free_blocks.emplace(size, ptr);
  stats.allocated -= size;
  stats.cached += size;
}

void empty_cache() {
  std::lock_guard<std::mutex> lock(mu);
  if (the_stream) cudaStreamSynchronize(the_stream);
  empty_cache_locked();
}

ProfileScope::ProfileScope(const char* name) : name_(name) {
  static const bool on = std::getenv("QUORUM_CUDA_PROFILE") != nullptr;
  if (!on) return;
  cudaEventCreate(&begin_);
  cudaEventCreate(&end_);
  cudaEventRecord(begin_, stream());
}

ProfileScope::~ProfileScope() {
  if (!begin_) return;
  cudaEventRecord(end_, stream());
  cudaEventSynchronize(end_);
  float ms = 0;
  cudaEventElapsedTime(&ms, begin_, end_);
  std::fprintf(stderr, "[quorum cuda] %s %.3f ms\n", name_, ms);
  cudaEventDestroy(begin_);
  cudaEventDestroy(end_);
}

MemoryStats memory_stats() {
  std::lock_guard<std::mutex> lock(mu);
  return stats;
}

}  // namespace quorum::cuda
