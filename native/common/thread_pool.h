// One process-wide pool runs every parallel kernel, so the `threads` setting is the single knob and two
// libraries never oversubscribe the cores. Idle workers sleep on a condition variable. Before sleeping they
// spin for a few tens of microseconds only: a kernel such as the contrastive loss runs several short parallel
// regions back to back, and waking a sleeping thread costs about 20 us on a VM; spinning longer would steal the
// core the event loop or BLAS needs.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace quorum {

class ThreadPool {
 public:
  using Task = std::function<void(size_t task, int worker)>;

  static ThreadPool& global();
  static constexpr int kMaxThreads = 256;

  // Holds the pool for one kernel call: set_threads() waits until it is released, so per-worker scratch
  // sized from threads() stays valid for every parallel_for the call makes. Calls from one thread nest.
  class Lease {
   public:
    explicit Lease(ThreadPool& pool) : pool_(pool), lock_(pool.run_mutex_), threads_(pool.threads_.load()) {}
    int threads() const { return threads_; }
    ThreadPool& pool() const { return pool_; }

   private:
    ThreadPool& pool_;
    std::unique_lock<std::recursive_mutex> lock_;
    int threads_;
  };
  static Lease lease() { return Lease(global()); }

  ~ThreadPool();
  // Total threads a parallel_for uses, the calling thread included. Clamped to [1, kMaxThreads]. Waits for
  // running kernels (leases) to finish.
  void set_threads(int n);
  int threads() const;

  // Runs fn(task, worker) for every task in [0, n_tasks) and returns when all are done. `worker` is in
  // [0, threads()) and unique among threads running at once, so it can index per-thread scratch.
  // Calls from several threads at once are serialized. The first exception a task throws is rethrown here
  // after the other tasks have finished.
  void parallel_for(size_t n_tasks, const Task& fn);

  // The caller's parallel work is over for now (a kernel call has finished): idle threads stop polling for the next
  // region and sleep. Their polling bridges the regions of one call; after the last one it only takes the core that
  // a Node server's event loop needs next (bench/muf-event-loop.ts). Pool-wide: a call running concurrently on
  // another thread pays a wake-up (about 20 us on a VM) at its next region instead.
  void rest();

 private:
  ThreadPool();
  void start(int n);
  void stop();
  void worker_loop(int worker);
  void run_tasks(int worker, size_t n_tasks);

  std::recursive_mutex run_mutex_;  // one parallel_for (or lease) at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  std::atomic<int> threads_{1};
  bool stopping_ = false;
  bool spin_ = true;  // set by start(): poll before sleeping only when every thread has a core
  // Current job, guarded by mutex_. Tasks are claimed from next_ without the lock; a thread reads n_tasks_
  // under the lock when it joins the job. generation_ and busy_ are also read without the lock by threads
  // spinning briefly before they sleep (see thread_pool.cc).
  const Task* job_ = nullptr;
  size_t n_tasks_ = 0;
  std::atomic<size_t> next_{0};
  std::atomic<size_t> generation_{0};
  std::atomic<int> busy_{0};
  std::atomic<bool> failed_{false};
  std::atomic<size_t> rests_{0};  // rest() calls: a polling thread that sees it move stops polling
  std::exception_ptr error_;
};

// Default thread count: QUORUM_THREADS if set, else the number of online cores.
int default_thread_count();

}  // namespace quorum
