#include "persist.h"

#include "mapping_guard.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace quorum::persist {
namespace {

constexpr uint64_t kPrime = 1099511628211ull;

std::string errno_text() { return std::strerror(errno); }

std::pair<std::string, std::string> split_path(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// Removes `<name>.tmp-<pid>-<n>` files beside `path` whose writer process is gone: a save killed mid-write
// (kill -9, power loss) cannot run its destructor, and each such file can be as large as the index. Files of a
// live process (another save in progress, in this process or another) are left alone. Best effort: errors are
// ignored, since the save itself does not depend on it.
void remove_stale_temporaries(const std::string& path) {
  const auto [dir, name] = split_path(path);
  const std::string prefix = name + ".tmp-";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string f = e->d_name;
    if (f.compare(0, prefix.size(), prefix) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(f.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || !end || *end != '-') continue;
    if (pid == long(::getpid())) continue;
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge (EPERM)
    ::unlink((dir + "/" + f).c_str());
  }
  ::closedir(d);
}

// Makes a rename durable: the directory entry itself must reach the disk.
void sync_directory(const std::string& path) {
  const int fd = ::open(split_path(path).first.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // some file systems do not let a directory be opened; the rename still happened
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kPrime;
  return h;
}

void WordHash::update(const uint8_t* p, size_t n) {
  while (carried_ > 0 && carried_ < 8 && n > 0) {
    carry_[carried_++] = *p++;
    --n;
  }
  if (carried_ == 8) {
    uint64_t w;
    std::memcpy(&w, carry_, 8);
    h_ = (h_ ^ w) * kPrime;
    carried_ = 0;
  }
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h_ = (h_ ^ w) * kPrime;
  }
  while (n-- > 0) carry_[carried_++] = *p++;
}

uint64_t WordHash::digest() const {
  uint64_t h = h_;
  for (size_t i = 0; i < carried_; ++i) h = (h ^ carry_[i]) * kPrime;
  return (h ^ carried_) * kPrime;  // the tail length, so that trailing zero bytes change the digest
}

uint64_t word_hash(const uint8_t* p, size_t n) {
  WordHash h;
  h.update(p, n);
  return h.digest();
}

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  // The rename below would replace whatever `path` names: a directory, a FIFO or a device node is the user's, not a
  // save of ours (issue 65).
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error("ERR_IO", "cannot write " + path + ": it exists and is not a regular file");
  remove_stale_temporaries(path);
  std::random_device rd;
  tmp_ = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("ERR_IO", "cannot create " + tmp_ + ": " + errno_text());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!done_) ::unlink(tmp_.c_str());
}

constexpr size_t kFileBuffer = size_t(1) << 20;

void AtomicFile::write(const uint8_t* p, size_t n) {
  if (buffer_.size() + n > kFileBuffer) flush();
  if (n >= kFileBuffer) {
    write_raw(p, n);
    return;
  }
  buffer_.insert(buffer_.end(), p, p + n);
}

void AtomicFile::flush() {
  write_raw(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFile::write_raw(const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error("ERR_IO", "cannot write " + tmp_ + ": " + errno_text());
    p += w;
    n -= size_t(w);
  }
}

void AtomicFile::commit() {
  flush();
  // The data must be on disk before the rename makes it visible under `path`.
  if (::fsync(fd_) != 0) throw Error("ERR_IO", "cannot sync " + tmp_ + ": " + errno_text());
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw Error("ERR_IO", "cannot close " + tmp_ + ": " + errno_text());
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw Error("ERR_IO", "cannot rename " + tmp_ + " to " + path_ + ": " + errno_text());
  done_ = true;
  sync_directory(path_);
}

namespace {

// An open descriptor of a regular file and its size (ERR_IO otherwise): what read_file and map_file start from.
int open_regular(const std::string& path, size_t* size) {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer (forever, in a worker the caller awaits); a
  // regular file ignores the flag.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error("ERR_IO", "cannot open " + path + ": " + errno_text());
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("ERR_IO", "cannot read " + path + ": not a regular file");
  }
  *size = size_t(st.st_size);
  return fd;
}

}  // namespace

void check_regular_file(const std::string& path) {
  size_t size = 0;
  ::close(open_regular(path, &size));
}

std::vector<uint8_t> read_file(const std::string& path) {
  size_t size = 0;
  const int fd = open_regular(path, &size);
  std::vector<uint8_t> out;
  try {
    out.resize(size);
  } catch (...) {
    ::close(fd);
    throw;
  }
  size_t off = 0;
  while (off < out.size()) {
    ssize_t r = ::read(fd, out.data() + off, out.size() - off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      std::string why = errno_text();
      ::close(fd);
      throw Error("ERR_IO", "cannot read " + path + ": " + why);
    }
    if (r == 0) break;  // shrank meanwhile: the checksum will tell
    off += size_t(r);
  }
  ::close(fd);
  out.resize(off);
  return out;
}

MappedFile::~MappedFile() {
  mapping_guard::remove(guard);
  if (data) ::munmap(const_cast<uint8_t*>(data), size);
}

void MappedFile::check() const { mapping_guard::check(guard); }

std::shared_ptr<const MappedFile> map_file(const std::string& path) {
  auto m = std::make_shared<MappedFile>();
  const int fd = open_regular(path, &m->size);
  if (m->size > 0) {
    void* p = ::mmap(nullptr, m->size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const std::string why = errno_text();
      ::close(fd);
      throw Error("ERR_IO", "cannot map " + path + ": " + why);
    }
    m->data = static_cast<const uint8_t*>(p);
    m->guard = mapping_guard::add(p, m->size, path, m->size, false);
  }
  ::close(fd);
  return m;
}

}  // namespace quorum::persist
