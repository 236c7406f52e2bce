#include "store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>
#include <thread>

namespace quorum::torchx {

namespace store_wire {  // named, not anonymous: StoreServer::Impl holds a Request

// Requests: op u8, key count u32, keys (u32 length, bytes), two values (u32 length, bytes), a number i64.
// Replies: u32 length, bytes. A connection carries one request at a time (the client waits for each reply).
enum Op : uint8_t { kSet = 1, kGet, kAdd, kWait };
constexpr size_t kMaxMessage = size_t(1) << 30;  // past this a connection is dropped as broken

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<uint8_t>;

void put_u32(Bytes& b, uint32_t v) { b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4); }
void put_i64(Bytes& b, int64_t v) { b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 8); }
void put_bytes(Bytes& b, const uint8_t* p, size_t n) {
  put_u32(b, uint32_t(n));
  b.insert(b.end(), p, p + n);
}

struct Request {
  uint8_t op = 0;
  std::vector<std::string> keys;
  Bytes a, b;
  int64_t num = 0;
};

// One whole request from the front of `in`: its length, 0 while incomplete, SIZE_MAX when malformed.
size_t parse(const Bytes& in, Request& r) {
  size_t at = 0;
  auto need = [&](size_t n) { return in.size() - at >= n; };
  auto u32 = [&] {
    uint32_t v;
    std::memcpy(&v, in.data() + at, 4);
    at += 4;
    return v;
  };
  if (!need(5)) return 0;
  r.op = in[at++];
  const uint32_t n = u32();
  if (n > 1u << 20) return SIZE_MAX;
  r.keys.clear();
  for (uint32_t i = 0; i < n; ++i) {
    if (!need(4)) return 0;
    const uint32_t len = u32();
    if (len > kMaxMessage) return SIZE_MAX;
    if (!need(len)) return 0;
    r.keys.emplace_back(reinterpret_cast<const char*>(in.data() + at), len);
    at += len;
  }
  for (Bytes* v : {&r.a, &r.b}) {
    if (!need(4)) return 0;
    const uint32_t len = u32();
    if (len > kMaxMessage) return SIZE_MAX;
    if (!need(len)) return 0;
    v->assign(in.begin() + ptrdiff_t(at), in.begin() + ptrdiff_t(at + len));
    at += len;
  }
  if (!need(8)) return 0;
  std::memcpy(&r.num, in.data() + at, 8);
  return at + 8;
}

std::string endpoint(const std::string& host, int port) { return host + ":" + std::to_string(port); }

}  // namespace store_wire

using namespace store_wire;

struct StoreServer::Impl {
  struct Conn {
    Bytes in;
    bool parked = false;  // its request (get, wait) waits for keys
    Request pending;
  };
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  std::thread thread;
  std::map<std::string, Bytes> table;
  std::map<int, Conn> conns;

  bool has_all(const std::vector<std::string>& keys) const {
    for (const auto& k : keys)
      if (!table.count(k)) return false;
    return true;
  }

  // The reply to r, or false when it must wait for keys.
  bool serve(const Request& r, Bytes& reply, bool& changed) {
    Bytes payload;
    const std::string& key = r.keys.empty() ? std::string() : r.keys[0];
    switch (r.op) {
      case kSet:
        table[key] = r.a;
        changed = true;
        break;
      case kGet: {
        auto it = table.find(key);
        if (it == table.end()) return false;
        payload = it->second;
        break;
      }
      case kAdd: {
        int64_t v = 0;
        if (auto it = table.find(key); it != table.end()) v = std::stoll(std::string(it->second.begin(), it->second.end()));
        v += r.num;
        const std::string s = std::to_string(v);
        table[key] = Bytes(s.begin(), s.end());
        put_i64(payload, v);
        changed = true;
        break;
      }
      case kWait:
        if (!has_all(r.keys)) return false;
        break;
      default:
        throw std::runtime_error("unknown request");
    }
    put_bytes(reply, payload.data(), payload.size());
    return true;
  }

  static bool send_all(int fd, const Bytes& b) {
    size_t at = 0;
    while (at < b.size()) {
      const ssize_t n = ::send(fd, b.data() + at, b.size() - at, MSG_NOSIGNAL);
      if (n > 0) {
        at += size_t(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{fd, POLLOUT, 0};
        if (::poll(&p, 1, 1000) <= 0) return false;  // a client that reads nothing for a second is dropped
      } else if (!(n < 0 && errno == EINTR)) {
        return false;
      }
    }
    return true;
  }

  void close_conn(int fd) {
    ::close(fd);
    conns.erase(fd);
  }

  // Parses and serves what a connection sent; false when it must be closed.
  bool pump(int fd, Conn& c, bool& changed) {
    while (!c.parked) {
      Request r;
      const size_t used = parse(c.in, r);
      if (used == SIZE_MAX) return false;
      if (used == 0) return true;
      c.in.erase(c.in.begin(), c.in.begin() + ptrdiff_t(used));
      Bytes reply;
      bool done;
      try {
        done = serve(r, reply, changed);
      } catch (const std::exception&) {
        return false;  // an unknown request, or add on a key that holds no count: the client is dropped
      }
      if (!done) {
        c.parked = true;
        c.pending = std::move(r);
        return true;
      }
      if (!send_all(fd, reply)) return false;
    }
    return true;
  }

  void run() {
    for (;;) {
      std::vector<pollfd> fds{{wake[0], POLLIN, 0}, {listen_fd, POLLIN, 0}};
      for (auto& [fd, c] : conns) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[0].revents) return;
      if (fds[1].revents & POLLIN) {
        const int fd = ::accept(listen_fd, nullptr, nullptr);
        if (fd >= 0) {
          ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          conns[fd];
        }
      }
      bool changed = false;
      std::vector<int> dead;
      for (size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        const int fd = fds[i].fd;
        Conn& c = conns[fd];
        uint8_t buf[65536];
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          dead.push_back(fd);  // the client left; a request it had parked goes with it
          continue;
        }
        if (n > 0) c.in.insert(c.in.end(), buf, buf + n);
        if (c.in.size() > kMaxMessage || !pump(fd, c, changed)) dead.push_back(fd);
      }
      // A change may complete parked requests, whose replies may let their connections go on.
      while (changed) {
        changed = false;
        for (auto& [fd, c] : conns) {
          if (!c.parked || std::find(dead.begin(), dead.end(), fd) != dead.end()) continue;
          Bytes reply;
          bool done = false;
          try {
            done = serve(c.pending, reply, changed);  // get and wait only: they do not throw
          } catch (const std::exception&) {
            dead.push_back(fd);
            continue;
          }
          if (!done) continue;
          c.parked = false;
          if (!send_all(fd, reply) || !pump(fd, c, changed)) dead.push_back(fd);
        }
      }
      for (int fd : dead)
        if (conns.count(fd)) close_conn(fd);
    }
  }
};

StoreServer::StoreServer(int port) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.listen_fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s.listen_fd < 0) throw std::runtime_error(std::string("cannot open a socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(s.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(uint16_t(port));
  if (::bind(s.listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s.listen_fd, 128) != 0) {
    const std::string why = std::strerror(errno);
    ::close(s.listen_fd);
    throw std::runtime_error("cannot listen on port " + std::to_string(port) + ": " + why);
  }
  if (::pipe(s.wake) != 0) {
    ::close(s.listen_fd);
    throw std::runtime_error("cannot make the store's wake-up pipe");
  }
  s.thread = std::thread([&s] { s.run(); });
}

StoreServer::~StoreServer() {
  Impl& s = *impl_;
  const uint8_t x = 1;
  if (::write(s.wake[1], &x, 1) < 0) {
  }
  s.thread.join();
  for (auto& [fd, c] : s.conns) ::close(fd);
  ::close(s.listen_fd);
  ::close(s.wake[0]);
  ::close(s.wake[1]);
}

StoreClient::StoreClient(std::string host, int port, std::chrono::milliseconds timeout)
    : c10d::Store(timeout), host_(std::move(host)), port_(port) {
  connect_within(timeout);
}

StoreClient::~StoreClient() { drop(); }

void StoreClient::drop() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void StoreClient::connect_within(std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &found); rc != 0)
    throw std::runtime_error("cannot resolve " + host_ + ": " + ::gai_strerror(rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> hold(found, ::freeaddrinfo);
  std::string why = "nothing listens there";
  for (;;) {
    for (addrinfo* ai = found; ai; ai = ai->ai_next) {
      const int fd = ::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
      if (fd < 0) continue;
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        pollfd p{fd, POLLOUT, 0};
        if (left > 0 && ::poll(&p, 1, int(left)) == 1) {
          int err = 0;
          socklen_t len = sizeof err;
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
          rc = err == 0 ? 0 : -1;
          errno = err;
        } else {
          errno = ETIMEDOUT;
        }
      }
      if (rc == 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fd_ = fd;
        return;
      }
      why = std::strerror(errno);
      ::close(fd);
    }
    if (Clock::now() + std::chrono::milliseconds(50) >= deadline)
      throw std::runtime_error("cannot reach the store at " + endpoint(host_, port_) + " within " + std::to_string(limit.count()) + " ms (" + why + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // its host may not listen yet
  }
}

std::vector<uint8_t> StoreClient::call(uint8_t op, const std::vector<std::string>& keys, const std::vector<uint8_t>& a,
                                       const std::vector<uint8_t>& b, int64_t num, std::chrono::milliseconds limit) {
  std::lock_guard<std::mutex> lock(m_);
  if (fd_ < 0) connect_within(timeout_);
  Bytes msg{op};
  put_u32(msg, uint32_t(keys.size()));
  for (const auto& k : keys) put_bytes(msg, reinterpret_cast<const uint8_t*>(k.data()), k.size());
  put_bytes(msg, a.data(), a.size());
  put_bytes(msg, b.data(), b.size());
  put_i64(msg, num);
  const auto deadline = Clock::now() + limit;
  // Waits for the socket within the deadline; throws after closing it on a timeout or an error.
  auto ready = [&](short events) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd_, events, 0};
      const int rc = left > 0 ? ::poll(&p, 1, int(left)) : 0;
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) {
        drop();
        throw std::runtime_error("the store at " + endpoint(host_, port_) + " did not reply within " + std::to_string(limit.count()) + " ms");
      }
      return;
    }
  };
  auto broken = [&](const char* what) {
    const std::string why = errno ? std::strerror(errno) : "closed";
    drop();
    return std::runtime_error("the store at " + endpoint(host_, port_) + " is gone (" + what + ": " + why + ")");
  };
  for (size_t at = 0; at < msg.size();) {
    ready(POLLOUT);
    errno = 0;
    const ssize_t n = ::send(fd_, msg.data() + at, msg.size() - at, MSG_NOSIGNAL);
    if (n > 0) at += size_t(n);
    else if (!(n < 0 && (errno == EAGAIN || errno == EINTR))) throw broken("send");
  }
  Bytes in;
  size_t want = 4;
  while (in.size() < want) {
    ready(POLLIN);
    uint8_t buf[65536];
    errno = 0;
    const ssize_t n = ::recv(fd_, buf, std::min(sizeof buf, want - in.size()), 0);
    if (n > 0) in.insert(in.end(), buf, buf + n);
    else if (!(n < 0 && (errno == EAGAIN || errno == EINTR))) throw broken("receive");
    if (want == 4 && in.size() == 4) {
      uint32_t len;
      std::memcpy(&len, in.data(), 4);
      want = 4 + size_t(len);
    }
  }
  return Bytes(in.begin() + 4, in.end());
}

void StoreClient::set(const std::string& key, const std::vector<uint8_t>& value) { call(kSet, {key}, value, {}, 0, timeout_); }

std::vector<uint8_t> StoreClient::get(const std::string& key) { return call(kGet, {key}, {}, {}, 0, timeout_); }

int64_t StoreClient::add(const std::string& key, int64_t value) {
  const Bytes r = call(kAdd, {key}, {}, {}, value, timeout_);
  int64_t v = 0;
  if (r.size() == 8) std::memcpy(&v, r.data(), 8);
  return v;
}

// Not used by Gloo's rendezvous (set, get, wait) nor by the heartbeats (add): left out rather than left untested.
bool StoreClient::deleteKey(const std::string&) { throw std::logic_error("the group's store has no deleteKey"); }
bool StoreClient::check(const std::vector<std::string>&) { throw std::logic_error("the group's store has no check"); }
int64_t StoreClient::getNumKeys() { throw std::logic_error("the group's store has no getNumKeys"); }

void StoreClient::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

// Never longer than the client's own timeout (the group's): Gloo's rendezvous asks for c10d's default of 300 s.
void StoreClient::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  call(kWait, keys, {}, {}, 0, timeout == kNoTimeout ? timeout_ : std::min(timeout, timeout_));
}

}  // namespace quorum::torchx
