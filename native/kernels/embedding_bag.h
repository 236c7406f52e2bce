// The forward pass of a 0-layer encoder (docs/methods/kernels.md#0-layer-encoder): BertEncoder::forward
// (native/torch/encoder.cc) with no Transformer block, for serving without libtorch. Per token t of a row:
//   x_t = LayerNorm(word'[id_t] + position[t] + type[type_t])    word' = F word[id] + f when factorized (E != H)
// pooled = mean of x_t (weights exp(w[id_t]) when token weights are on) or the elementwise max; then, in order:
//   centre:  y = pooled / max(|pooled|, 1e-12) - c
//   head:    y = W2 gelu(W1 y + b1) + b2 (MLP head), or W y + b (linear head)
//   normalize: y / max(|y|, 1e-12)
// A few hundred multiply-adds per token: memory-light, so one plain body (the dot products of the head go through
// softmax_ops().dot, which has the ISA variants); rows run in parallel on the process pool.
#pragma once
#include <cstddef>
#include <cstdint>

namespace quorum::kernels {

struct Linear {
  const float* w = nullptr;  // [out, in], row-major (PyTorch's nn.Linear layout)
  const float* b = nullptr;  // [out]
  size_t in = 0, out = 0;
};

struct EmbeddingBagModel {
  const float* word;        // [vocab, embed]
  size_t vocab, embed;
  Linear factor;            // embed -> hidden when factorized (w == nullptr: embed == hidden, none)
  const float* position;    // [positions, hidden]
  size_t positions;
  const float* type;        // [types, hidden]
  size_t types;
  const float* ln_weight;   // [hidden]
  const float* ln_bias;     // [hidden]
  float ln_eps;
  size_t hidden;
  const float* token_weights;  // [vocab] log weights of mean pooling, or nullptr
  bool max_pool;
  const float* centre;      // [hidden] or nullptr
  Linear head_hidden;       // hidden -> h with exact GELU, or none (w == nullptr)
  Linear head;              // -> out, or none (w == nullptr: out = hidden)
  bool normalize;
};

// Output width of the model: head.out when there is a head, else hidden.
size_t embedding_bag_dim(const EmbeddingBagModel& m);

// out [rows, embedding_bag_dim(m)] from ids and type ids [rows, seq_len] (row r uses its first lengths[r] tokens).
// Throws ERR_RANGE, before computing anything, for a length outside [1, min(seq_len, positions)] or an id or type
// outside the model's tables.
void embedding_bag(const EmbeddingBagModel& m, const int32_t* ids, const int32_t* type_ids, const int32_t* lengths,
                   size_t rows, size_t seq_len, float* out);

// As embedding_bag, on the calling thread: a task of the caller's own parallel region (mufSearch embeds every expert's
// questions in one). Error messages count rows from first_row (the chunk's place in the caller's rows).
void embedding_bag_serial(const EmbeddingBagModel& m, const int32_t* ids, const int32_t* type_ids, const int32_t* lengths,
                          size_t rows, size_t seq_len, float* out, size_t first_row = 0);

}  // namespace quorum::kernels
