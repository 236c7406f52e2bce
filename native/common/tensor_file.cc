#include "tensor_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.h"
#include "persist.h"

namespace quorum::tensor_file {
namespace {

constexpr char kMagic[4] = {'Q', 'T', 'N', 'S'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxRank = 8;

std::vector<uint8_t> header(Dtype dtype, const std::vector<int64_t>& shape, size_t bytes, uint64_t checksum) {
  std::vector<uint8_t> h(kMagic, kMagic + 4);
  persist::put(h, kVersion);
  persist::put(h, uint32_t(dtype));
  persist::put(h, uint32_t(shape.size()));
  for (int64_t d : shape) persist::put(h, uint64_t(d));
  persist::put(h, kDataOffset);
  persist::put(h, uint64_t(bytes));
  persist::put(h, checksum);
  persist::put(h, persist::fnv1a(h.data(), h.size()));
  return h;
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

void write(const std::string& path, Dtype dtype, const std::vector<int64_t>& shape, const uint8_t* data, size_t bytes) {
  if (shape.size() > kMaxRank) throw Error("ERR_SHAPE", "a tensor file holds at most " + std::to_string(kMaxRank) + " dimensions");
  std::vector<uint8_t> h = header(dtype, shape, bytes, persist::word_hash(data, bytes));
  h.resize(kDataOffset, 0);
  persist::AtomicFile f(path);
  f.write(h.data(), h.size());
  f.write(data, bytes);
  f.commit();
}

Mapped map(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};  // a FIFO must not block the open (persist.cc)
  if (f.fd < 0) throw Error("ERR_IO", "cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(f.fd, &st) != 0) throw Error("ERR_IO", "cannot stat " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error("ERR_IO", path + " is not a regular file");
  uint8_t h[kDataOffset];
  const ssize_t got = ::pread(f.fd, h, sizeof h, 0);
  if (got < 0) throw Error("ERR_IO", "cannot read " + path + ": " + std::strerror(errno));
  const std::string what = path + ": tensor file header";
  persist::Reader r{h, size_t(got), 0, what.c_str()};
  if (size_t(got) < 4 || std::memcmp(h, kMagic, 4) != 0) throw Error("ERR_FORMAT", path + " is not a Quorum tensor file");
  r.at = 4;
  if (r.get<uint32_t>() != kVersion) throw Error("ERR_FORMAT", path + ": unsupported tensor file version");
  const uint32_t code = r.get<uint32_t>();
  const uint32_t rank = r.get<uint32_t>();
  if (rank > kMaxRank) throw Error("ERR_FORMAT", what + " is corrupt: rank " + std::to_string(rank));
  std::vector<int64_t> shape(rank);
  uint64_t numel = 1;
  for (auto& d : shape) {
    const uint64_t v = r.get<uint64_t>();
    if (v > (uint64_t(1) << 46)) throw Error("ERR_FORMAT", what + " is corrupt: a dimension of " + std::to_string(v));
    d = int64_t(v);
    numel = v == 0 || numel == 0 ? 0 : numel * v;
    if (numel > (uint64_t(1) << 46)) throw Error("ERR_FORMAT", what + " is corrupt: too many elements");
  }
  const uint64_t offset = r.get<uint64_t>();
  const uint64_t bytes = r.get<uint64_t>();
  const uint64_t checksum = r.get<uint64_t>();
  const size_t header_end = r.at;
  const uint64_t stored = r.get<uint64_t>();
  if (persist::fnv1a(h, header_end) != stored) throw Error("ERR_FORMAT", what + " fails its checksum");
  Dtype dtype;
  switch (code) {
    case uint32_t(Dtype::F32): case uint32_t(Dtype::BF16): case uint32_t(Dtype::F16):
    case uint32_t(Dtype::I32): case uint32_t(Dtype::I64): case uint32_t(Dtype::U8):
      dtype = Dtype(code);
      break;
    default:
      throw Error("ERR_FORMAT", what + " is corrupt: dtype code " + std::to_string(code));
  }
  if (offset != kDataOffset || bytes != numel * dtype_size(dtype))
    throw Error("ERR_FORMAT", what + " is corrupt: its sizes do not match its shape");
  if (uint64_t(st.st_size) != offset + bytes)
    throw Error("ERR_FORMAT", path + " holds " + std::to_string(st.st_size) + " bytes, its header says " +
                                  std::to_string(offset + bytes) + " (truncated or appended to)");
  Mapped m{dtype, std::move(shape), AlignedBuffer(), checksum};
  if (bytes == 0) return m;
  void* p = ::mmap(nullptr, size_t(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE, f.fd, off_t(offset));
  if (p == MAP_FAILED) throw Error("ERR_IO", "cannot map " + path + ": " + std::strerror(errno));
  m.buffer = AlignedBuffer::adopt_mapping(p, size_t(bytes), mapping_guard::add(p, size_t(bytes), path, offset + bytes, true));
  return m;
}

}  // namespace quorum::tensor_file
