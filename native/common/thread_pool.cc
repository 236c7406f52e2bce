#include "thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace quorum {

int default_thread_count() {
  if (const char* env = std::getenv("QUORUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return std::min(n, 256);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : int(std::min(hw, 256u));
}

ThreadPool& ThreadPool::global() {
  // Leaked on purpose: joining threads from a static destructor at process exit can deadlock.
  static ThreadPool* pool = new ThreadPool();
  return *pool;
}

ThreadPool::ThreadPool() { start(default_thread_count()); }

ThreadPool::~ThreadPool() { stop(); }

int ThreadPool::threads() const { return threads_; }

void ThreadPool::set_threads(int n) {
  n = std::clamp(n, 1, kMaxThreads);
  std::lock_guard<std::recursive_mutex> run(run_mutex_);
  if (n == threads_) return;
  stop();
  start(n);
}

void ThreadPool::start(int n) {
  threads_ = n;
  // More threads than cores: a polling thread would take the core of one that has work.
  const unsigned hw = std::thread::hardware_concurrency();
  spin_ = hw == 0 || unsigned(n) <= hw;
  stopping_ = false;
  for (int w = 1; w < n; ++w) workers_.emplace_back([this, w] { worker_loop(w); });
}

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

namespace {

// How long an idle thread polls before it blocks: long enough to bridge the serial gaps between the parallel
// regions of one kernel call, short enough not to matter to anything else (QUORUM_SPIN_US, 0 disables).
double spin_us() {
  static const double us = [] {
    const char* env = std::getenv("QUORUM_SPIN_US");
    return env ? std::max(0.0, std::atof(env)) : 50.0;
  }();
  return us;
}

// Polls `done()` for up to spin_us() when `allowed`; the caller then blocks on its condition variable.
template <class Done>
void spin_until(bool allowed, Done done) {
  const double limit = allowed ? spin_us() : 0.0;
  if (limit <= 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  for (unsigned i = 0;; ++i) {
    if (done()) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if ((i & 63) == 63 &&
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() > limit)
      return;
  }
}

}  // namespace

void ThreadPool::run_tasks(int worker, size_t n_tasks) {
  for (;;) {
    const size_t task = next_.fetch_add(1, std::memory_order_relaxed);
    if (task >= n_tasks || failed_.load(std::memory_order_relaxed)) return;
    try {
      (*job_)(task, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
      failed_ = true;
    }
  }
}

void ThreadPool::worker_loop(int worker) {
  size_t seen = 0;
  for (;;) {
    const size_t rests = rests_.load(std::memory_order_relaxed);
    spin_until(spin_, [&] { return generation_.load(std::memory_order_acquire) != seen || rests_.load(std::memory_order_relaxed) != rests; });
    size_t n_tasks;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      n_tasks = n_tasks_;
      ++busy_;
    }
    // n_tasks is 0 when this thread woke between the end of a job and the start of the next: it must not touch
    // next_, which the next job may already have reset. A nonzero count belongs to a job that cannot end
    // before busy_ drops.
    if (n_tasks > 0) run_tasks(worker, n_tasks);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
    }
    done_.notify_all();
  }
}

void ThreadPool::rest() { rests_.fetch_add(1, std::memory_order_relaxed); }

void ThreadPool::parallel_for(size_t n_tasks, const Task& fn) {
  if (n_tasks == 0) return;
  std::lock_guard<std::recursive_mutex> run(run_mutex_);
  if (threads_ == 1 || n_tasks == 1) {
    for (size_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    n_tasks_ = n_tasks;
    next_ = 0;
    error_ = nullptr;
    failed_ = false;
    ++generation_;
  }
  wake_.notify_all();
  run_tasks(0, n_tasks);
  // Every task has been claimed once run_tasks returns; wait for the ones still running elsewhere.
  spin_until(spin_, [&] { return busy_.load(std::memory_order_acquire) == 0; });
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return busy_ == 0; });
    job_ = nullptr;
    n_tasks_ = 0;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace quorum
