// What every saved index shares: checksums, bounds-checked reading of untrusted bytes, and atomic files.
// Formats themselves (headers, versions) belong to each index.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "error.h"

namespace quorum::persist {

// FNV-1a 64 over bytes (the sparse index's v1 checksum).
uint64_t fnv1a(const uint8_t* p, size_t n);

// FNV-1a 64 over little-endian 64-bit words (the tail bytes one by one): eight times fewer serial multiplies
// than fnv1a, so a checksum over hundreds of MB of vectors stays well under the disk's time. Fed in pieces, it
// gives the same value as over the concatenation.
class WordHash {
 public:
  void update(const uint8_t* p, size_t n);
  uint64_t digest() const;

 private:
  uint64_t h_ = 1469598103934665603ull;
  uint8_t carry_[8] = {};
  size_t carried_ = 0;
};
uint64_t word_hash(const uint8_t* p, size_t n);

template <class T>
void put(std::vector<uint8_t>& out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

// Reads fixed-size fields from untrusted bytes; anything past `n` is ERR_FORMAT naming `what`.
struct Reader {
  const uint8_t* p;
  size_t n;
  size_t at = 0;
  const char* what = "data";

  template <class T>
  T get() {
    if (n - at < sizeof(T)) throw Error("ERR_FORMAT", std::string(what) + " is truncated");
    T v;
    std::memcpy(&v, p + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  // Room for `count` items of `size` bytes, without overflow.
  void need(uint64_t count, size_t size) const {
    if (count > (n - at) / size) throw Error("ERR_FORMAT", std::string(what) + " is truncated or its sizes are corrupt");
  }
};

// Writes `path` so that a crash leaves either the old file or the complete new one: pieces go to a temporary
// file beside it (`<path>.tmp-<pid>-<n>`); commit() fsyncs it, renames it over `path` and fsyncs the directory.
// Opening one removes the temporary files that earlier, killed saves to the same path left (their process is
// gone). ERR_IO on failure.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();  // removes the temporary file unless commit() succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Buffered: many small pieces (a serializer's fields) cost one system call per MiB.
  void write(const uint8_t* p, size_t n);
  void commit();

 private:
  void flush();
  void write_raw(const uint8_t* p, size_t n);
  std::string path_, tmp_;
  std::vector<uint8_t> buffer_;
  int fd_ = -1;
  bool done_ = false;
};

// ERR_IO unless `path` names a regular file (through links): for readers outside this file (libtorch's archive), so
// that a FIFO cannot block their open and a device cannot feed them forever.
void check_regular_file(const std::string& path);

// The whole file; ERR_IO when it cannot be opened or read.
std::vector<uint8_t> read_file(const std::string& path);

// The whole file mapped read-only and shared (MAP_SHARED): its pages are the page cache's, one copy for every
// process that maps it; unmapped with the last reference. ERR_IO when it cannot be opened or mapped.
struct MappedFile {
  const uint8_t* data = nullptr;
  size_t size = 0;
  int guard = -1;  // its mapping_guard slot
  // ERR_IO when the file was truncated under the mapping (mapping_guard.h).
  void check() const;
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
};
std::shared_ptr<const MappedFile> map_file(const std::string& path);

}  // namespace quorum::persist
