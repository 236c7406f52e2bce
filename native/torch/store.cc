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
// Past this a request is refused (the client's call throws; the server drops a connection that sends one): Gloo's
// rendezvous values are addresses of a few hundred bytes, the heartbeats' counts a few digits.
constexpr size_t kMaxMessage = size_t(16) << 20;
constexpr size_t kMaxConnections = 4096;  // more are closed at once (poll's table stays within the fd limit)

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

// The length of the whole request at the front of `in`: 0 while incomplete, SIZE_MAX when malformed or too long.
// Reads the lengths only (a request arriving in many pieces is not copied once per piece).
size_t request_length(const Bytes& in) {
  size_t at = 0;
  auto u32 = [&](uint32_t& v) {
    if (in.size() - at < 4) return false;
    std::memcpy(&v, in.data() + at, 4);
    at += 4;
    return true;
  };
  if (in.empty()) return 0;
  at = 1;
  uint32_t n;
  if (!u32(n)) return 0;
  if (n > kMaxMessage / 4) return SIZE_MAX;
  for (uint32_t i = 0; i < n + 2; ++i) {  // the keys, then the two values
    uint32_t len;
    if (!u32(len)) return 0;
    at += len;
    if (at > kMaxMessage) return SIZE_MAX;
    if (at > in.size()) return 0;
  }
  at += 8;
  return at > in.size() ? 0 : at;
}

// The request of `used` bytes at the front of `in` (request_length's).
Request parse(const Bytes& in) {
  Request r;
  size_t at = 1;
  auto u32 = [&] {
    uint32_t v;
    std::memcpy(&v, in.data() + at, 4);
    at += 4;
    return v;
  };
  r.op = in[0];
  const uint32_t n = u32();
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t len = u32();
    r.keys.emplace_back(reinterpret_cast<const char*>(in.data() + at), len);
    at += len;
  }
  for (Bytes* v : {&r.a, &r.b}) {
    const uint32_t len = u32();
    v->assign(in.begin() + ptrdiff_t(at), in.begin() + ptrdiff_t(at + len));
    at += len;
  }
  std::memcpy(&r.num, in.data() + at, 8);
  return r;
}

std::string endpoint(const std::string& host, int port) { return host + ":" + std::to_string(port); }

// TCP's simultaneous open: a client retrying a loopback port that nothing listens on yet can be given that very port
// as its own and connect to itself (then it reads its own request as the reply, and the server cannot bind).
bool connected_to_itself(int fd) {
  sockaddr_in me{}, peer{};
  socklen_t a = sizeof me, b = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &a) != 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &b) != 0)
    return false;
  return me.sin_port == peer.sin_port && me.sin_addr.s_addr == peer.sin_addr.s_addr;
}

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
        if (__builtin_add_overflow(v, r.num, &v)) throw std::overflow_error("count overflows");
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
      const size_t used = request_length(c.in);
      if (used == SIZE_MAX) return false;
      if (used == 0) return true;
      Request r = parse(c.in);
      c.in.erase(c.in.begin(), c.in.begin() + ptrdiff_t(used));
      Bytes reply;
      bool done;
      try {
        done = serve(r, reply, changed);
      } catch (const std::exception&) {
        return false;  // an unknown request, an add on a key that holds no count or past int64: the client is dropped
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

  // A failure inside (memory, a table past the fd limit) ends the serving, never the process: the clients then find the
  // store gone, as when rank 0 dies.
  void run() {
    try {
      loop();
    } catch (...) {
    }
  }

  void loop() {
    for (;;) {
      std::vector<pollfd> fds{{wake[0], POLLIN, 0}, {listen_fd, POLLIN, 0}};
      for (auto& [fd, c] : conns) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[0].revents) return;
      if (fds[1].revents & POLLIN) {
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0 && conns.size() >= kMaxConnections) {
          ::close(fd);
        } else if (fd >= 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          conns[fd];
        } else if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));  // not a busy loop while the fds run out
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
        try {
          if (n > 0) c.in.insert(c.in.end(), buf, buf + n);
          if (c.in.size() > kMaxMessage + 64 || !pump(fd, c, changed)) dead.push_back(fd);
        } catch (const std::exception&) {
          dead.push_back(fd);  // out of memory for this one: drop it, serve the others
        }
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
          try {
            if (!send_all(fd, reply) || !pump(fd, c, changed)) dead.push_back(fd);
          } catch (const std::exception&) {
            dead.push_back(fd);
          }
        }
      }
      for (int fd : dead)
        if (conns.count(fd)) close_conn(fd);
    }
  }
};

StoreServer::StoreServer(int port) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
  if (::pipe2(s.wake, O_CLOEXEC) != 0) {
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
      const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
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
      if (rc == 0 && connected_to_itself(fd)) {
        rc = -1;
        errno = ECONNREFUSED;  // nothing listens yet: the port was free for this socket to take as its own
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
  const auto deadline = Clock::now() + limit;  // the wait for the lock and a reconnect count against it
  size_t bytes = a.size() + b.size();
  for (const auto& k : keys) bytes += k.size() + 4;
  if (bytes > kMaxMessage - 64) throw std::runtime_error("a store request of " + std::to_string(bytes) + " bytes is past its limit");
  std::lock_guard<std::mutex> lock(m_);
  if (fd_ < 0) connect_within(std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())));
  Bytes msg{op};
  put_u32(msg, uint32_t(keys.size()));
  for (const auto& k : keys) put_bytes(msg, reinterpret_cast<const uint8_t*>(k.data()), k.size());
  put_bytes(msg, a.data(), a.size());
  put_bytes(msg, b.data(), b.size());
  put_i64(msg, num);
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
