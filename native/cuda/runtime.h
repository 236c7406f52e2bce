// The CUDA runtime as Quorum uses it: one device (the current one), one non-blocking stream for every kernel
// and copy, and a caching allocator so that a server's repeated calls do not pay cudaMalloc / cudaFree each
// time. Every CUDA error becomes a quorum::Error: ERR_BACKEND_UNAVAILABLE where there is no driver or no
// device, ERR_NOMEM when the device is full (after the cache was given back once), ERR_NATIVE otherwise.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace quorum::cuda {

// Throws the typed error for `err` (a no-op for cudaSuccess); `what` names the call.
void check(cudaError_t err, const char* what);

// Number of usable devices; 0 (never an error) on a machine without a driver or a device.
int device_count();
// Name and memory of the current device, and why no device is usable ("" when one is).
struct DeviceInfo {
  std::string name;
  size_t total_bytes = 0;
  int sm_count = 0;
  int major = 0, minor = 0;
};
DeviceInfo device_info();
std::string unavailable_reason();
// Multiprocessors of the current device (read once; kernels size persistent grids by it).
int sm_count();
// Shared memory one block may use on the current device (opt-in maximum, read once), at most 200 KiB: the
// kernels size their query batches and tiles by it (Hopper 227 KiB, A100 163 KiB, sm_86 / 89 99 KiB).
size_t smem_budget();

// The stream every Quorum kernel and copy runs on (created on first use; throws when there is no device).
cudaStream_t stream();
// Waits for everything queued on stream() and throws the first error a kernel raised.
void sync(const char* what);

// Caching allocator: freed blocks go back to a per-size free list and are reused; a request that still cannot be
// met gives every cached block back to the driver once and tries again.
void* alloc(size_t bytes);
void release(void* ptr, size_t bytes) noexcept;
// Gives every cached (free) block back to the driver.
void empty_cache();
struct MemoryStats {
  size_t allocated = 0;  // bytes in live tensors and scratch
  size_t cached = 0;     // bytes held free in the cache
  size_t peak = 0;       // largest `allocated` so far
  size_t mallocs = 0;    // cudaMalloc calls (a cache hit makes none)
};
MemoryStats memory_stats();

// With QUORUM_CUDA_PROFILE set, prints the GPU time between its construction and destruction to stderr (CUDA
// events on stream()); otherwise does nothing. For measuring where a kernel call's time goes.
class ProfileScope {
 public:
  explicit ProfileScope(const char* name);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  const char* name_;
  cudaEvent_t begin_ = nullptr, end_ = nullptr;
};

// Device scratch that goes back to the cache when it leaves scope.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes) : ptr_(bytes ? alloc(bytes) : nullptr), bytes_(bytes) {}
  ~Buffer() { release(ptr_, bytes_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release(ptr_, bytes_);
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      o.ptr_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace quorum::cuda
