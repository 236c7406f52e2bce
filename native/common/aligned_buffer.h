// Owned, 64-byte-aligned storage. Alignment to a cache line keeps SIMD loads from splitting lines.
//
// Blocks between 64 KiB and 32 MiB are recycled through a small process-wide cache (at most 64 MiB held,
// least recently freed evicted first). A training loop or server allocates the same shapes every step:
// fresh blocks of that size come from mmap, and their first touch costs a page fault and a page clear per
// 4 KiB, measured at about 10% of an InfoNCE step called from Node. Recycled blocks are not zeroed (nor
// are fresh ones).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sys/mman.h>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "mapping_guard.h"

namespace quorum {

constexpr size_t kAlignment = 64;

class BlockCache {
 public:
  static constexpr size_t kMinBytes = size_t(64) << 10;
  static constexpr size_t kMaxBytes = size_t(32) << 20;
  static constexpr size_t kCapacity = size_t(64) << 20;

  static BlockCache& global() {
    static BlockCache* cache = new BlockCache();  // leaked: buffers may be freed during static destruction
    return *cache;
  }
  static bool cacheable(size_t bytes) { return bytes >= kMinBytes && bytes <= kMaxBytes; }

  // A block of exactly `bytes` (a multiple of kAlignment) that was freed before, or nullptr.
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = blocks_.size(); i-- > 0;)
      if (blocks_[i].bytes == bytes) {
        void* p = blocks_[i].ptr;
        held_ -= bytes;
        blocks_.erase(blocks_.begin() + std::ptrdiff_t(i));
        return p;
      }
    return nullptr;
  }
  void give(void* p, size_t bytes) {
    std::vector<void*> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks_.push_back({p, bytes});
      held_ += bytes;
      size_t drop = 0;
      while (held_ > kCapacity) held_ -= blocks_[drop++].bytes;
      for (size_t i = 0; i < drop; ++i) evicted.push_back(blocks_[i].ptr);
      blocks_.erase(blocks_.begin(), blocks_.begin() + std::ptrdiff_t(drop));
    }
    for (void* e : evicted) std::free(e);
  }

 private:
  struct Block {
    void* ptr;
    size_t bytes;
  };
  std::mutex mutex_;
  std::vector<Block> blocks_;  // oldest first
  size_t held_ = 0;
};

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) { reset(bytes); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)),
        mapped_(std::exchange(o.mapped_, false)),
        guard_(std::exchange(o.guard_, -1)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      mapped_ = std::exchange(o.mapped_, false);
      guard_ = std::exchange(o.guard_, -1);
    }
    return *this;
  }
  // Takes over a file mapping of `bytes` at `p` (page-aligned, from mmap) and its mapping_guard slot: release()
  // unregisters and unmaps it (tensor_file.h).
  static AlignedBuffer adopt_mapping(void* p, size_t bytes, int guard = -1) {
    AlignedBuffer b;
    b.ptr_ = p;
    b.bytes_ = bytes;
    b.mapped_ = true;
    b.guard_ = guard;
    return b;
  }
  ~AlignedBuffer() { release(); }

  // Throws std::bad_alloc when the allocation fails.
  void reset(size_t bytes) {
    release();
    if (bytes == 0) return;
    const size_t rounded = round(bytes);
    if (BlockCache::cacheable(rounded)) ptr_ = BlockCache::global().take(rounded);
    if (!ptr_) ptr_ = std::aligned_alloc(kAlignment, rounded);
    if (!ptr_) throw std::bad_alloc();
    bytes_ = bytes;
  }
  void release() {
    if (ptr_ && mapped_) {
      mapping_guard::remove(guard_);
      ::munmap(ptr_, bytes_);
    } else if (ptr_) {
      const size_t rounded = round(bytes_);
      if (BlockCache::cacheable(rounded)) BlockCache::global().give(ptr_, rounded);
      else std::free(ptr_);
    }
    ptr_ = nullptr;
    bytes_ = 0;
    mapped_ = false;
    guard_ = -1;
  }
  // ERR_IO when this is a file mapping whose file was truncated (mapping_guard.h); nothing for memory.
  void check_mapping() const {
    if (mapped_) mapping_guard::check(guard_);
  }
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }

 private:
  static size_t round(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  bool mapped_ = false;
  int guard_ = -1;
};

// Scratch for one kernel call, kept by the calling thread for its next call: a step of a training loop or a
// search asks for the same sizes every time, and a kept block is already mapped. Each slot holds one
// buffer (a caller that nests kernels uses distinct slots). Requests above kMaxBytes get a fresh block in
// `fallback`, so no thread keeps more than kSlots x 32 MiB.
struct ThreadScratch {
  enum Slot : unsigned { kGemmPack, kLossScores, kSlots };
  static float* floats(Slot slot, size_t count, AlignedBuffer& fallback) {
    const size_t bytes = count * sizeof(float);
    if (bytes > BlockCache::kMaxBytes) {
      fallback.reset(bytes);
      return fallback.as<float>();
    }
    thread_local AlignedBuffer slots[kSlots];
    AlignedBuffer& s = slots[slot];
    if (s.bytes() < bytes) s.reset(bytes);
    return s.as<float>();
  }
};

}  // namespace quorum
