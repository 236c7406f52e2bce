// Data-parallel training over c10d (docs/guides/distributed.md): `size` ranks meet at a store that rank 0 hosts (store.h),
// then run Gloo's collectives on CPU tensors. libtorch's C++ frontend has no DistributedDataParallel, so the training
// steps call these directly: parameters broadcast from rank 0, embeddings gathered so that every rank scores the
// global batch, gradients summed. Every collective ends within the group's timeout: a rank that died or stalled makes
// the others' calls fail with ERR_DISTRIBUTED naming this rank, the collective and, from the ranks' heartbeats in
// rank 0's store, the rank lost (docs/guides/distributed.md#faults), never hang: a survivor about 2 s after the failure
// shows, rank 0 (which holds the store the others need for that) up to one more timeout later.
#pragma once
#include "torch_includes.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace quorum::torchx {

struct GroupOptions {
  int rank = 0, size = 1;
  std::string host = "127.0.0.1";  // rank 0's address (MASTER_ADDR)
  int port = 29500;                // its store's port (MASTER_PORT)
  std::chrono::milliseconds timeout{60000};
};

// Whether this build has Gloo (libgloo-dev's headers at build time); without it ProcessGroup's constructor throws
// ERR_BACKEND_UNAVAILABLE.
bool distributed_available();

class ProcessGroup {
 public:
  // Meets the other ranks: blocks until all `size` have joined, else ERR_DISTRIBUTED after the timeout.
  explicit ProcessGroup(const GroupOptions& o);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return options_.rank; }
  int size() const { return options_.size; }
  const GroupOptions& options() const { return options_; }

  // Sums every tensor across ranks, in place (packed into one buffer per call: one collective, not one per tensor).
  // Float tensors only.
  void all_reduce_sum(const std::vector<torch::Tensor>& tensors);
  // Overwrites every tensor with rank `root`'s values, in place (float tensors, packed as above).
  void broadcast(const std::vector<torch::Tensor>& tensors, int root);
  // Every rank's `t` concatenated along dim 0 in rank order; the ranks' row counts may differ (trailing dims and
  // dtype must not). `offset` receives this rank's first row.
  torch::Tensor all_gather_rows(const torch::Tensor& t, int64_t* offset);
  // Returns once every rank has called it.
  void barrier();
  // ERR_SHAPE on every rank unless every rank gives the same `n` (one small all-gather first): a collective over
  // buffers of different sizes fails inside Gloo's own threads, which aborts the process (issue 65).
  void check_same_size(int64_t n, const char* what);

 private:
  struct Impl;
  template <class F>
  void collective(const char* what, F start);
  GroupOptions options_;
  std::unique_ptr<Impl> impl_;
};

// Data-parallel training (docs/guides/distributed.md) of a model's parameter table (name, tensor), for every model the
// torch module holds (Trainable, MlpEnsemble): every rank starts from rank `root`'s values (in place), and the ranks'
// gradients are summed before each optimizer step (a parameter no rank has a gradient for keeps none, so the step
// skips it on every rank alike).
void broadcast_parameters(ProcessGroup& g, const std::vector<std::pair<std::string, torch::Tensor>>& params, int root);
void all_reduce_gradients(ProcessGroup& g, const std::vector<std::pair<std::string, torch::Tensor>>& params);

// Each of `ts` zero-padded along `dim` to the largest size any rank has there (collective: every rank calls it), so
// that tensors whose padding differs by rank (token positions) gather into one. The tensors share that size on this
// rank (a batch's token vectors and its mask): one collective finds the length for all of them.
std::vector<torch::Tensor> pad_to_ranks(ProcessGroup& g, std::vector<torch::Tensor> ts, int64_t dim);

// All ranks' rows of `t` (as all_gather_rows) with this rank's rows being `t` itself, so that a loss over the
// gathered batch sends gradient into this rank's encoders only; summing the ranks' gradients then gives the
// gradient of the global batch's loss (docs/guides/distributed.md#the-gradient).
torch::Tensor gather_keeping_own(ProcessGroup& g, const torch::Tensor& t, int64_t* offset);

// A contrastive batch made global: questions `q` and passages `p` gathered (this rank's rows keep their gradient),
// `positives` ([B] passage rows) and `ignore` ([K, 2] pairs, or undefined) gathered and moved by this rank's offsets, so
// that each question keeps its own positive. Four collectives, the same on every rank whatever the batch holds.
void gather_batch(ProcessGroup& g, torch::Tensor& q, torch::Tensor& p, torch::Tensor& positives, torch::Tensor& ignore);
// gather_batch's second half, for callers that gather their own representations (CAME's three experts): `qo` and `po`
// are this rank's first question and passage rows in the global batch.
void gather_targets(ProcessGroup& g, int64_t qo, int64_t po, torch::Tensor& positives, torch::Tensor& ignore);

}  // namespace quorum::torchx
