#include "mapping_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <atomic>
#include <mutex>

#include "error.h"

namespace quorum::mapping_guard {
namespace {

constexpr int kSlots = 1024;

// What the signal handler reads: only lock-free atomics (a handler may not take a lock).
struct Range {
  std::atomic<uintptr_t> start{0};
  std::atomic<size_t> bytes{0};
  std::atomic<bool> writable{false};
  std::atomic<bool> damaged{false};
};
Range g_ranges[kSlots];

// What check() reads, under the mutex.
struct File {
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  uint64_t needed = 0;
  bool used = false;
};
File g_files[kSlots];
std::mutex g_mutex;
struct sigaction g_previous;
std::once_flag g_installed;

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const auto at = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Range& r : g_ranges) {
    const uintptr_t start = r.start.load(std::memory_order_acquire);
    const size_t bytes = r.bytes.load(std::memory_order_acquire);
    if (start == 0 || at < start || at >= start + bytes) continue;
    // Zero pages in place of the file's: the faulting read returns 0 and the call finishes; its result is refused.
    const int prot = PROT_READ | (r.writable.load() ? PROT_WRITE : 0);
    if (::mmap(reinterpret_cast<void*>(start), bytes, prot, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED) {
      r.damaged.store(true, std::memory_order_release);
      return;
    }
    break;
  }
  // Not ours (or the zero pages could not be had): what was there before decides.
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) return g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    return g_previous.sa_handler(sig);
  }
  ::sigaction(SIGBUS, &g_previous, nullptr);  // the default: the fault repeats on return and ends the process
}

void install() {
  struct sigaction sa = {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, &g_previous);
}

}  // namespace

int add(const void* p, size_t bytes, const std::string& path, uint64_t needed, bool writable) {
  std::call_once(g_installed, install);
  struct stat st;
  const bool known = ::stat(path.c_str(), &st) == 0;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (int i = 0; i < kSlots; ++i) {
    if (g_files[i].used) continue;
    g_files[i] = File{path, known ? st.st_dev : 0, known ? st.st_ino : 0, needed, true};
    g_ranges[i].damaged.store(false);
    g_ranges[i].writable.store(writable);
    g_ranges[i].bytes.store(bytes, std::memory_order_release);
    g_ranges[i].start.store(reinterpret_cast<uintptr_t>(p), std::memory_order_release);
    return i;
  }
  return -1;
}

void remove(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_ranges[slot].start.store(0, std::memory_order_release);
  g_ranges[slot].bytes.store(0, std::memory_order_release);
  g_files[slot] = File{};
}

void check(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  const File& f = g_files[slot];
  if (!f.used) return;
  if (g_ranges[slot].damaged.load(std::memory_order_acquire))
    throw Error("ERR_IO", f.path + " was truncated while mapped (its pages read as zeros): map or load it again");
  struct stat st;
  // Only the mapped file itself counts: a file saved over it (a rename) leaves the mapped one whole.
  if (::stat(f.path.c_str(), &st) == 0 && st.st_dev == f.dev && st.st_ino == f.ino && uint64_t(st.st_size) < f.needed)
    throw Error("ERR_IO", f.path + " was truncated to " + std::to_string(st.st_size) + " bytes while mapped (" +
                              std::to_string(f.needed) + " needed): map or load it again");
}

}  // namespace quorum::mapping_guard
