// Owned, 64-byte-aligned storage. Alignment to a cache line keeps SIMD loads from splitting lines.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

namespace quorum {

constexpr size_t kAlignment = 64;

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) { reset(bytes); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~AlignedBuffer() { release(); }

  // Throws std::bad_alloc when the allocation fails.
  void reset(size_t bytes) {
    release();
    if (bytes == 0) return;
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    ptr_ = std::aligned_alloc(kAlignment, rounded);
    if (!ptr_) throw std::bad_alloc();
    bytes_ = bytes;
  }
  void release() {
    std::free(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace quorum
