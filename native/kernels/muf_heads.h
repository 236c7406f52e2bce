// DPR-MUF's confidence stage for every expert of a search in one call (docs/methods/muf.md, Serving): each
// expert's K heads (small ReLU MLPs from the question vector back to the expert's passage space), the K members'
// scores of the expert's top-L candidates, and their mutual information:
//   h_0 = q,  h_{i+1} = relu(h_i W_{k,i} + b_{k,i}) for hidden layers, the last layer linear   -> m_k [dim]
//   z[k, l] = m_k . p_{ids[l]}            (ensemble.h: MI and conf = clamp(1 - MI / ln K, 0, 1))
// Weights are member-major and transposed, one row per output unit: Wt_i [K, out_i, in_i], b_i [K, out_i], in_0 =
// out_last = dim. The weights stream from memory once per call whatever the batch, every expert's and member's part
// of a layer in one parallel region: up to kHeadsStreamBatch questions as dot products of each contiguous weight row
// with the questions' activations (the dense_dot kernels, as scoreTopK streams a corpus: at B = 1 the heads are
// bound by memory bandwidth, not arithmetic), larger batches as one gemm_batch (gemm.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "dense_search.h"

namespace quorum::kernels {

struct HeadsLayer {
  const void* w;  // [members, out, in] of `dtype`: row o of member k holds the weights into output o
  Dtype dtype;     // F32, or BF16 (half the bytes to stream; always the streaming path)
  const float* b;  // [members, out]
  size_t in, out;
};

struct HeadsExpert {
  size_t members;            // K; 1 gives confidence 1 (one member cannot disagree with itself) and MI 0
  const HeadsLayer* layers;  // hidden layers then the output layer: layers[0].in = layers[last].out = dim
  size_t n_layers;           // >= 1
  const float* queries;      // [batch, dim]
  CorpusMatrix passages;     // [N, dim]
  const int32_t* ids;        // [batch, len] candidate rows of passages
  size_t len;                // L >= 1
  float temperature;         // divides the scores (ensemble.h)
  float* mi;                 // [batch]
  float* conf;               // [batch]
};

// Batches up to this size stream f32 weight rows (dense_dot); larger ones run as GEMMs (bf16 weights always stream). Measured on 2 AVX2 cores
// (mufConfidence alone, 512-wide heads): streaming is 1.6-2.3x faster up to B = 16 (5 experts, K = 20) or 32 (2
// experts, K = 10); at B = 64 the GEMMs are 1.4x faster.
constexpr size_t kHeadsStreamBatch = 16;

// Runs the experts' heads over `batch` questions and writes each expert's mi and conf. Throws ERR_SHAPE for layers
// that do not chain from dim to dim or passages of another width, ERR_RANGE for a candidate id outside the corpus
// or a temperature that is not positive and finite, before computing anything.
void muf_confidence(const HeadsExpert* experts, size_t count, size_t batch, bool eps_mode);

}  // namespace quorum::kernels
