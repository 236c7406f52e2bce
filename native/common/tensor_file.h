// A tensor in a file that processes map instead of reading (docs/api.md#mapped-tensor-files): N workers serving one
// large corpus share one copy of it in the page cache, and opening it costs a header read and an mmap, whatever its
// size.
//
// Layout (little-endian): "QTNS", u32 version (1), u32 dtype code, u32 rank (at most 8), u64 dims[rank],
// u64 data offset (4096: mmap needs a page-aligned offset), u64 data bytes, u64 WordHash of the data, u64 FNV-1a of
// every header byte before it; zeros to the data offset; the data. Written atomically (persist.h's AtomicFile), so
// a file that is mapped is never rewritten in place: a new save replaces the name, and the old inode lives on until
// its last mapping is gone.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "aligned_buffer.h"
#include "dtype.h"

namespace quorum::tensor_file {

constexpr uint64_t kDataOffset = 4096;

// Writes `bytes` at `data` as a tensor of `dtype` and `shape`. ERR_IO on failure.
void write(const std::string& path, Dtype dtype, const std::vector<int64_t>& shape, const uint8_t* data, size_t bytes);

struct Mapped {
  Dtype dtype;
  std::vector<int64_t> shape;
  AlignedBuffer buffer;  // the mapping (empty for a tensor of 0 bytes)
  uint64_t checksum;     // the header's WordHash of the data (what a verify compares)
};

// Maps the file's data copy-on-write: pages are shared with every process that maps the file until one writes to
// them (a write stays private to its process; the file never changes). The header is checked (magic, version,
// checksum, dtype, rank, sizes against the file's length); the data is not read. ERR_IO when the file cannot be
// opened or mapped, ERR_FORMAT for anything else.
Mapped map(const std::string& path);

}  // namespace quorum::tensor_file
