#include "thread_pool.h"

#include <algorithm>
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

void ThreadPool::run_tasks(int worker) {
  for (;;) {
    size_t task;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (next_ >= n_tasks_ || error_) return;
      task = next_++;
    }
    try {
      (*job_)(task, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void ThreadPool::worker_loop(int worker) {
  size_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      ++busy_;
    }
    run_tasks(worker);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
    }
    done_.notify_all();
  }
}

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
    ++generation_;
  }
  wake_.notify_all();
  run_tasks(0);
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // Every task has been claimed once run_tasks returns; wait for the ones still running elsewhere.
    done_.wait(lock, [&] { return busy_ == 0; });
    job_ = nullptr;
    n_tasks_ = 0;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace quorum
