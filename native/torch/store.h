// A process group's rendezvous store (docs/guides/distributed.md#faults): a key-value table that rank 0 serves over TCP
// and every rank (rank 0 too) reaches through a client, for Gloo's rendezvous and Quorum's heartbeats. It replaces
// c10d::TCPStore, whose 1.13 client runs a watcher thread that throws, uncaught, when the store's host goes away: the
// surviving ranks were aborted (SIGABRT) instead of naming rank 0 when it died. This client has no thread of its own,
// and every wait (the connect, each reply) ends within its timeout with an exception.
//
// What Gloo's rendezvous and the heartbeats use, with c10d::Store's semantics: set; get and wait block until the keys
// exist; add starts a missing key at 0 and stores the count as decimal text (get reads it as TCPStore's does). The
// rest of c10d::Store (deleteKey, check, getNumKeys, compareSet, watchKey) throws. IPv4; the server listens on every
// interface, as TCPStore's does.
#pragma once
#include "torch_includes.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace quorum::torchx {

class StoreServer {
 public:
  // Listens on `port` (every interface) and serves from a thread of its own until destroyed. Throws
  // std::runtime_error when the port cannot be bound (in use, or not allowed).
  explicit StoreServer(int port);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class StoreClient : public c10d::Store {
 public:
  // Connects to host:port, retrying while nothing listens there, for at most `timeout` (also every call's limit).
  // Throws std::runtime_error when it cannot.
  StoreClient(std::string host, int port, std::chrono::milliseconds timeout);
  ~StoreClient() override;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  // One request and its reply, within `limit`; on a timeout or a broken connection the socket is closed (a reply
  // still on its way must not be read as the next call's) and the next call connects again.
  std::vector<uint8_t> call(uint8_t op, const std::vector<std::string>& keys, const std::vector<uint8_t>& a,
                            const std::vector<uint8_t>& b, int64_t num, std::chrono::milliseconds limit);
  void connect_within(std::chrono::milliseconds limit);
  void drop();

  std::string host_;
  int port_;
  int fd_ = -1;
  std::mutex m_;  // one call at a time on the connection
};

}  // namespace quorum::torchx
