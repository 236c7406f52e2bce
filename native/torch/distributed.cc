#include "distributed.h"

#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include "../common/error.h"
#include "store.h"

#if QUORUM_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

namespace quorum::torchx {

#if QUORUM_HAVE_GLOO

namespace {

// The first line of a collective's error: Gloo's and c10's messages carry source locations and backtraces below it.
std::string first_line(const std::exception& e) {
  std::string s;
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) s = c->what_without_backtrace();
  else s = e.what();
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// The float tensors of one collective, packed into one flat buffer.
torch::Tensor pack(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> flat;
  flat.reserve(tensors.size());
  for (const auto& t : tensors) {
    if (t.scalar_type() != torch::kFloat) throw Error("ERR_DTYPE", "collectives take float32 tensors");
    flat.push_back(t.detach().reshape({-1}));
  }
  return torch::cat(flat);
}

void unpack(const torch::Tensor& flat, const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  int64_t at = 0;
  for (const auto& t : tensors) {
    const int64_t n = t.numel();
    t.copy_(flat.slice(0, at, at + n).view(t.sizes()));
    at += n;
  }
}

}  // namespace

bool distributed_available() { return true; }

namespace {

// Heartbeats: each rank bumps its counter in rank 0's store every kBeat, from a thread with its own connection. When a
// collective fails, a survivor marks itself as having left, watches the counters for kWatch and names the ranks whose
// counters stood still: Gloo's error says only which peer address closed, or nothing (a timeout), and on several
// machines there is no launcher watching the processes (docs/guides/distributed.md#faults).
constexpr std::chrono::milliseconds kBeat{250};
// Long enough that a heartbeat thread starved for a second on a loaded machine is not taken for a dead rank.
constexpr std::chrono::milliseconds kWatch{2000};
// The heartbeat's connection: it opens right after the join, when the store is up; a short limit keeps a store that
// vanished meanwhile from holding the thread for the whole timeout.
constexpr std::chrono::milliseconds kBeatConnect{2000};

std::string beat_key(int rank) { return "quorum/beat/" + std::to_string(rank); }
std::string left_key(int rank) { return "quorum/left/" + std::to_string(rank); }

c10::intrusive_ptr<StoreClient> store_client(const GroupOptions& o, std::chrono::milliseconds timeout) {
  return c10::make_intrusive<StoreClient>(o.host, o.port, timeout);
}

// Runs `fn` (which must not throw) on a thread of its own and waits for it at most `limit`: a guard on the failure
// path's total time, whatever its store calls (each bounded by its client's timeout) add up to. Past the limit the
// thread is left to end on its own (its state is shared, not on this stack) and `fallback` is returned.
template <class T, class F>
T bounded(std::chrono::milliseconds limit, T fallback, F fn) {
  struct State {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    T value;
  };
  auto st = std::make_shared<State>();
  st->value = std::move(fallback);
  std::thread([st, fn]() mutable {
    T v = fn();
    std::lock_guard<std::mutex> lock(st->m);
    st->value = std::move(v);
    st->done = true;
    st->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(st->m);
  st->cv.wait_for(lock, limit, [&] { return st->done; });
  return st->value;
}

}  // namespace

struct ProcessGroup::Impl {
  // The heartbeat thread's state, shared with the thread so that a thread stuck in a reply can be left behind.
  struct Heart {
    std::mutex m;
    std::condition_variable cv;
    bool stopping = false, done = false;
  };

  // Beats until stopped. A beat that fails (a reply slower than kBeatConnect, a lost connection) is retried at the next
  // one, the client connecting again: one slow reply must not silence a live rank for good. When rank 0 is gone each
  // try fails within kBeatConnect, and nobody is left to read the beats anyway.
  static void beat(const std::shared_ptr<Heart>& h, const GroupOptions& o) {
    c10::intrusive_ptr<StoreClient> client;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(h->m);
        if (h->stopping) break;
      }
      try {  // outside the lock: stopping never waits on the network
        if (!client) client = store_client(o, kBeatConnect);
        client->add(beat_key(o.rank), 1);
      } catch (const std::exception&) {
        client.reset();
      }
      std::unique_lock<std::mutex> lock(h->m);
      if (h->cv.wait_for(lock, kBeat, [&] { return h->stopping; })) break;
    }
    std::lock_guard<std::mutex> lock(h->m);
    h->done = true;
    h->cv.notify_all();
  }

  std::unique_ptr<StoreServer> server;  // rank 0's; declared first, so it goes last
  c10::intrusive_ptr<StoreClient> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
  std::mutex run;  // one collective at a time: Gloo needs them in order, and a failure is handled once
  std::shared_ptr<Heart> heart = std::make_shared<Heart>();
  std::thread heart_thread;

  // Stops the heartbeat; a thread still in a reply after kBeatConnect is left to end on its own.
  void stop_heart() {
    if (!heart_thread.joinable()) return;
    std::unique_lock<std::mutex> lock(heart->m);
    heart->stopping = true;
    heart->cv.notify_all();
    const bool done = heart->cv.wait_for(lock, kBeatConnect, [&] { return heart->done; });
    lock.unlock();
    if (done) heart_thread.join();
    else heart_thread.detach();
  }

  ~Impl() { stop_heart(); }
};

namespace {

// Where Gloo listens: GLOO_SOCKET_IFNAME's interface when set (several machines: the one the others reach, as
// torch.distributed reads it), the loopback address for a group on 127.x / localhost, else the host name's address.
std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& host) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (host == "localhost" || host.rfind("127.", 0) == 0) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

ProcessGroup::ProcessGroup(const GroupOptions& o) : options_(o), impl_(std::make_unique<Impl>()) {
  if (o.size < 1) throw Error("ERR_RANGE", "a process group needs at least one rank");
  if (o.rank < 0 || o.rank >= o.size)
    throw Error("ERR_RANGE", "rank " + std::to_string(o.rank) + " outside a group of " + std::to_string(o.size));
  if (o.port < 1 || o.port > 65535) throw Error("ERR_RANGE", "port must be in [1, 65535]");
  if (o.timeout.count() <= 0) throw Error("ERR_RANGE", "the timeout must be positive");
  const std::string who = "rank " + std::to_string(o.rank) + " of " + std::to_string(o.size);
  try {
    const auto deadline = std::chrono::steady_clock::now() + o.timeout;
    if (o.rank == 0) impl_->server = std::make_unique<StoreServer>(o.port);
    impl_->store = store_client(o, o.timeout);
    // Every rank at the store before Gloo's rendezvous starts: the last to arrive opens the gate; the wait takes what
    // is left of the timeout.
    if (impl_->store->add("quorum/joined", 1) == o.size) impl_->store->set("quorum/all-joined", {1});
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    impl_->store->wait({"quorum/all-joined"}, std::max(std::chrono::milliseconds(1), left));
    auto go = c10d::ProcessGroupGloo::Options::create(o.timeout);
    go->devices.push_back(gloo_device(o.host));
    go->threads = 2;
    impl_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, o.rank, o.size, go);
    if (o.size > 1) impl_->heart_thread = std::thread([h = impl_->heart, o] { Impl::beat(h, o); });
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error("ERR_DISTRIBUTED", who + ": cannot join the group at " + o.host + ":" + std::to_string(o.port) +
                                       " within " + std::to_string(o.timeout.count()) + " ms: " + first_line(e));
  }
}

ProcessGroup::~ProcessGroup() = default;

namespace {

// Which ranks a failed collective lost, as a phrase: those whose heartbeat stood still for kWatch and that did not
// say they left after the failure themselves; rank 0 when its store cannot be reached (it holds the counters).
std::string lost_ranks(const GroupOptions& o) {
  try {
    auto client = store_client(o, kWatch);
    client->add(left_key(o.rank), 1);
    std::vector<int64_t> before(size_t(o.size));
    for (int r = 0; r < o.size; ++r) before[size_t(r)] = client->add(beat_key(r), 0);
    std::this_thread::sleep_for(kWatch);
    std::vector<int> still, left;
    for (int r = 0; r < o.size; ++r) {
      if (r == o.rank || client->add(beat_key(r), 0) != before[size_t(r)]) continue;
      (client->add(left_key(r), 0) > 0 ? left : still).push_back(r);
    }
    const auto list = [](const std::vector<int>& rs) {
      std::string s = rs.size() == 1 ? "rank " : "ranks ";
      for (size_t i = 0; i < rs.size(); ++i) s += (i ? ", " : "") + std::to_string(rs[i]);
      return s;
    };
    if (!still.empty()) return list(still) + " stopped answering";
    if (!left.empty()) return "no rank died; " + list(left) + " left after a failure of their own";
    return "every rank still answers: one stalled for longer than the timeout";
  } catch (const std::exception&) {
    return "rank 0 stopped answering (its store at " + o.host + ":" + std::to_string(o.port) + " is gone)";
  }
}

// Rank 0 holds the store: after a failure it stays until every other rank's heartbeat has stood still for kWatch (each
// has died, or diagnosed and left), at most the timeout: the others need the store to name the rank lost.
void outlive_the_others(const GroupOptions& o) {
  try {
    auto client = store_client(o, kWatch);
    const auto start = std::chrono::steady_clock::now();
    std::vector<int64_t> last(size_t(o.size), -1);
    std::vector<std::chrono::steady_clock::time_point> since(size_t(o.size), start);
    for (;;) {
      const auto now = std::chrono::steady_clock::now();
      bool quiet = true;
      for (int r = 1; r < o.size; ++r) {
        const int64_t b = client->add(beat_key(r), 0);
        if (b != last[size_t(r)]) last[size_t(r)] = b, since[size_t(r)] = now;
        quiet = quiet && now - since[size_t(r)] >= kWatch;
      }
      if (quiet || now - start >= o.timeout) return;
      std::this_thread::sleep_for(kBeat);
    }
  } catch (const std::exception&) {
  }
}

}  // namespace

// Waits for a collective. On failure (a peer gone, the timeout) this rank leaves the group: it releases its Gloo
// connections (so that ranks waiting on it fail now rather than at their timeout), names the rank lost from the
// heartbeats, and throws ERR_DISTRIBUTED naming both; the group takes no further collectives.
template <class F>
void ProcessGroup::collective(const char* what, F start) {
  const GroupOptions& o = options_;
  std::lock_guard<std::mutex> one_at_a_time(impl_->run);
  if (!impl_->pg)
    throw Error("ERR_DISTRIBUTED", "rank " + std::to_string(o.rank) + " of " + std::to_string(o.size) + ": the group failed earlier; join a new one");
  std::string cause;
  try {
    c10::intrusive_ptr<c10d::Work> w = start();
    w->wait();
    return;
  } catch (const std::exception& e) {
    cause = first_line(e);
  }
  impl_->pg.reset();
  const std::string lost = bounded<std::string>(kBeatConnect + kWatch + kBeatConnect, "rank 0 stopped answering (its store at " + o.host + ":" + std::to_string(o.port) + " does not reply)", [o] { return lost_ranks(o); });
  if (o.rank == 0) bounded<bool>(o.timeout + kWatch, false, [o] { return outlive_the_others(o), true; });
  impl_->stop_heart();
  throw Error("ERR_DISTRIBUTED", "rank " + std::to_string(o.rank) + " of " + std::to_string(o.size) + ": " + what +
                                     " failed: " + lost + " (a rank that exits or does not answer within " +
                                     std::to_string(o.timeout.count()) + " ms ends the group): " + cause);
}

void ProcessGroup::all_reduce_sum(const std::vector<torch::Tensor>& tensors) {
  if (tensors.empty() || options_.size == 1) return;
  std::vector<torch::Tensor> buf{pack(tensors)};
  collective("all-reduce", [&] { return impl_->pg->allreduce(buf); });
  unpack(buf[0], tensors);
}

void ProcessGroup::broadcast(const std::vector<torch::Tensor>& tensors, int root) {
  if (root < 0 || root >= options_.size) throw Error("ERR_RANGE", "broadcast root outside the group");
  if (tensors.empty() || options_.size == 1) return;
  std::vector<torch::Tensor> buf{pack(tensors)};
  c10d::BroadcastOptions bo;
  bo.rootRank = root;
  collective("broadcast", [&] { return impl_->pg->broadcast(buf, bo); });
  unpack(buf[0], tensors);
}

torch::Tensor ProcessGroup::all_gather_rows(const torch::Tensor& t, int64_t* offset) {
  torch::Tensor mine = t.detach().contiguous();
  if (options_.size == 1) {
    *offset = 0;
    return mine;
  }
  const int n = options_.size;
  // The row counts first (they may differ: a corpus's last batch), then the rows padded to the largest.
  std::vector<torch::Tensor> count{torch::tensor({mine.size(0)}, torch::kLong)};
  std::vector<std::vector<torch::Tensor>> counts(1);
  for (int r = 0; r < n; ++r) counts[0].push_back(torch::empty({1}, torch::kLong));
  collective("all-gather", [&] { return impl_->pg->allgather(counts, count); });
  int64_t most = 0;
  *offset = 0;
  for (int r = 0; r < n; ++r) {
    const int64_t c = counts[0][size_t(r)].item<int64_t>();
    most = std::max(most, c);
    if (r < options_.rank) *offset += c;
  }
  std::vector<int64_t> shape(mine.sizes().begin(), mine.sizes().end());
  // At least one row: Gloo's allgather divides by the element count (SIGFPE when every rank has no rows, e.g. a
  // batch without ignored pairs), and so must a trailing dimension.
  shape[0] = std::max<int64_t>(most, 1);
  for (size_t d = 1; d < shape.size(); ++d)
    if (shape[d] == 0) throw Error("ERR_SHAPE", "all_gather_rows needs rows of at least one element");
  std::vector<torch::Tensor> padded{torch::zeros(shape, mine.options())};
  padded[0].slice(0, 0, mine.size(0)).copy_(mine);
  std::vector<std::vector<torch::Tensor>> all(1);
  for (int r = 0; r < n; ++r) all[0].push_back(torch::empty(shape, mine.options()));
  collective("all-gather", [&] { return impl_->pg->allgather(all, padded); });
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < n; ++r) parts.push_back(all[0][size_t(r)].slice(0, 0, counts[0][size_t(r)].item<int64_t>()));
  return torch::cat(parts);
}

void ProcessGroup::check_same_size(int64_t n, const char* what) {
  if (options_.size == 1) return;
  std::vector<torch::Tensor> mine{torch::tensor({n}, torch::kLong)};
  std::vector<std::vector<torch::Tensor>> all(1);
  for (int r = 0; r < options_.size; ++r) all[0].push_back(torch::empty({1}, torch::kLong));
  collective("all-gather", [&] { return impl_->pg->allgather(all, mine); });
  std::string sizes;
  bool same = true;
  for (int r = 0; r < options_.size; ++r) {
    const int64_t v = all[0][size_t(r)].item<int64_t>();
    same = same && v == n;
    sizes += (r ? ", " : "") + std::to_string(v);
  }
  if (!same) throw Error("ERR_SHAPE", std::string(what) + ": the ranks gave different sizes (" + sizes + " values, in rank order)");
}

void ProcessGroup::barrier() {
  if (options_.size == 1) return;
  collective("barrier", [&] { return impl_->pg->barrier(); });
}

#else  // without Gloo's headers at build time

bool distributed_available() { return false; }

struct ProcessGroup::Impl {};

ProcessGroup::ProcessGroup(const GroupOptions& o) : options_(o) {
  throw Error("ERR_BACKEND_UNAVAILABLE",
              "this quorum_torch was built without Gloo: install libgloo-dev (Debian) and rebuild (npm run build)");
}
ProcessGroup::~ProcessGroup() = default;
void ProcessGroup::all_reduce_sum(const std::vector<torch::Tensor>&) {}
void ProcessGroup::broadcast(const std::vector<torch::Tensor>&, int) {}
torch::Tensor ProcessGroup::all_gather_rows(const torch::Tensor& t, int64_t* offset) {
  *offset = 0;
  return t.detach();
}
void ProcessGroup::barrier() {}
void ProcessGroup::check_same_size(int64_t, const char*) {}

#endif

void broadcast_parameters(ProcessGroup& g, const std::vector<std::pair<std::string, torch::Tensor>>& params, int root) {
  std::vector<torch::Tensor> values;
  for (const auto& [name, t] : params) values.push_back(t);
  g.broadcast(values, root);
}

void all_reduce_gradients(ProcessGroup& g, const std::vector<std::pair<std::string, torch::Tensor>>& params) {
  if (g.size() == 1) return;
  torch::NoGradGuard no_grad;
  // One buffer: every gradient (zeros where this rank has none) and, last, which ranks had one.
  std::vector<torch::Tensor> grads;
  torch::Tensor had = torch::zeros({int64_t(params.size())}, torch::kFloat);
  auto h = had.accessor<float, 1>();
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& p = params[i].second;
    if (p.grad().defined()) h[int64_t(i)] = 1;
    else p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.mutable_grad());
  }
  grads.push_back(had);
  g.all_reduce_sum(grads);
  for (size_t i = 0; i < params.size(); ++i)
    if (h[int64_t(i)] == 0) params[i].second.mutable_grad() = torch::Tensor();
}

std::vector<torch::Tensor> pad_to_ranks(ProcessGroup& g, std::vector<torch::Tensor> ts, int64_t dim) {
  if (g.size() == 1 || ts.empty()) return ts;
  const int64_t own = ts.front().size(dim);
  for (const torch::Tensor& t : ts)
    if (t.size(dim) != own) throw Error("ERR_SHAPE", "pad_to_ranks: the tensors differ in size along the padded dimension");
  int64_t unused = 0;
  const int64_t most = g.all_gather_rows(torch::tensor({own}, torch::kLong), &unused).max().item<int64_t>();
  if (most == own) return ts;
  for (torch::Tensor& t : ts) {
    std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
    shape[size_t(dim)] = most - own;
    t = torch::cat({t, torch::zeros(shape, t.options())}, dim);
  }
  return ts;
}

torch::Tensor gather_keeping_own(ProcessGroup& g, const torch::Tensor& t, int64_t* offset) {
  if (g.size() == 1) {
    *offset = 0;
    return t;
  }
  torch::Tensor all = g.all_gather_rows(t, offset);
  return torch::cat({all.slice(0, 0, *offset), t, all.slice(0, *offset + t.size(0))});
}

void gather_targets(ProcessGroup& g, int64_t qo, int64_t po, torch::Tensor& positives, torch::Tensor& ignore) {
  int64_t unused = 0;
  positives = g.all_gather_rows(positives + po, &unused);
  const torch::Tensor own = ignore.defined() && ignore.numel() > 0 ? ignore + torch::tensor({qo, po}, torch::kLong)
                                                                   : torch::zeros({0, 2}, torch::kLong);
  ignore = g.all_gather_rows(own, &unused);
}

void gather_batch(ProcessGroup& g, torch::Tensor& q, torch::Tensor& p, torch::Tensor& positives, torch::Tensor& ignore) {
  int64_t qo = 0, po = 0;
  q = gather_keeping_own(g, q, &qo);
  p = gather_keeping_own(g, p, &po);
  gather_targets(g, qo, po, positives, ignore);
}

}  // namespace quorum::torchx
