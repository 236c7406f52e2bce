// faiss's flat storage with Quorum's SIMD kernels in its hot paths. Debian's faiss is built for generic x86-64
// and computes every distance with its scalar reference loop (87% of an HNSW build's time, by perf), so
// DenseIndex swaps its IndexFlat storage for this subclass:
//   - the distance computer HNSW uses for building and searching calls pair_distance (AVX-512 / AVX2);
//   - inner-product search over the flat storage itself runs the core's fused score + top-k kernel.
// It serializes as a plain IndexFlat (write_index sees an IndexFlat), and adopt() swaps one back in on load.
// A mapped one (DenseIndex::map) reads its vectors where a file mapping holds them instead of from `codes`.
#pragma once
#include <faiss/IndexFlat.h>
#include <faiss/IndexScalarQuantizer.h>

#include <memory>
#include <vector>

#include "../kernels/quant.h"

namespace quorum::index {

struct SimdFlat : faiss::IndexFlat {
  SimdFlat(idx_t d, faiss::MetricType metric) : faiss::IndexFlat(d, metric) {}

  faiss::FlatCodesDistanceComputer* get_FlatCodesDistanceComputer() const override;
  void search(idx_t n, const float* x, idx_t k, float* distances, idx_t* labels,
              const faiss::SearchParameters* params = nullptr) const override;

  void reconstruct(idx_t key, float* recons) const override;
  void reconstruct_n(idx_t i0, idx_t ni, float* recons) const override;

  // A SimdFlat holding `flat`'s vectors (moved out of it), or null when `flat` is not a plain IndexFlat.
  static std::unique_ptr<SimdFlat> adopt(faiss::Index* flat);

  // An inner-product SimdFlat over `n` vectors of `d` floats at `vectors`, which `keep` (a file mapping) holds
  // alive; `codes` stays empty, so it must never be added to, written or given to faiss's own flat code.
  static std::unique_ptr<SimdFlat> over(const float* vectors, idx_t n, idx_t d, std::shared_ptr<const void> keep);

  // The vectors: the mapping's, or codes'.
  const float* vectors() const { return external_ ? external_ : reinterpret_cast<const float*>(codes.data()); }
  bool mapped() const { return external_ != nullptr; }

 protected:
  const float* external_ = nullptr;
  std::shared_ptr<const void> keep_;
};

// faiss's 8-bit scalar-quantized storage (IndexScalarQuantizer, QT_8bit with per-dimension min / max: what the
// DenseIndex option `quantization: 'int8'` builds as factory "SQ8") searched by the core's int8 kernels
// (docs/methods/quantization.md): faiss decodes code c of dimension d linearly ((c + 0.5) / 255 of the dimension's
// range past its minimum), the core's offset + scale * c, so the same codes score the same values, 20x faster than
// faiss's own loop on this build. Serializes as a plain IndexScalarQuantizer.
//
// Under HNSW ("HNSW<M>,SQ8") it is the graph's storage, and its distance computer (building and searching) scores a
// code with the core's f32 x u8 kernel instead of faiss's scalar decode loop: HNSW32 over 20,000 x 768 built in 17.2 s
// and searched 582 questions/s at B = 1 with faiss's computer, 7.0 s and 3,126 with this one, against 2.8 s and
// 3,434 over f32 vectors (docs/results/quantization.md#hnsw-over-int8-codes).
struct SimdSQ8 : faiss::IndexScalarQuantizer {
  using faiss::IndexScalarQuantizer::IndexScalarQuantizer;
  faiss::FlatCodesDistanceComputer* get_FlatCodesDistanceComputer() const override;
  // The tables of faiss's decoding: value = offset[d] + scale[d] * code (read off its decode of the codes 0 and 255).
  void tables(std::vector<float>& offset, std::vector<float>& scale) const;
  void search(idx_t n, const float* x, idx_t k, float* distances, idx_t* labels,
              const faiss::SearchParameters* params = nullptr) const override;
  // A SimdSQ8 holding `index`'s codes and tables (moved out of it), or null when it is not an 8-bit min / max one.
  static std::unique_ptr<SimdSQ8> adopt(faiss::Index* index);
};

// DenseIndex's `quantization: 'binary'` (factory "BinaryFlat", docs/methods/quantization.md): the f32 vectors of a
// SimdFlat, which rescore, plus 1-bit codes of them (the corpus mean, fitted by train(), subtracted, then rotated:
// kernels::encode_binary) held beside them in RAM. A search scans the codes with 4-bit questions for kOversample x k
// candidates and returns their exact f32 scores (kernels::rescore_topk). Mapped (DenseIndex::map), the f32 vectors
// stay in the file's pages and only the codes (1/30 of their bytes at 768 dimensions) are the process's own memory.
// Serializes as a plain IndexFlat (the centre travels in the DenseIndex header); adopt() rebuilds the codes.
struct SimdBinary : SimdFlat {
  static constexpr size_t kOversample = 4;
  SimdBinary(idx_t d) : SimdFlat(d, faiss::METRIC_INNER_PRODUCT) { is_trained = false; }

  // The centre: the mean of the sample (ERR_STATE once trained: the codes are relative to it).
  void train(idx_t n, const float* x) override;
  void add(idx_t n, const float* x) override;
  size_t remove_ids(const faiss::IDSelector& sel) override;
  void reset() override;
  void search(idx_t n, const float* x, idx_t k, float* distances, idx_t* labels,
              const faiss::SearchParameters* params = nullptr) const override;

  const std::vector<float>& center() const { return center_; }
  // A SimdBinary holding `flat`'s vectors (moved out of it) coded around `center` (empty: untrained, and then it must
  // hold no vectors), or null when `flat` is not a plain IndexFlat.
  static std::unique_ptr<SimdBinary> adopt(faiss::Index* flat, std::vector<float> center);
  // SimdFlat::over, coded around `center` (one read of every vector).
  static std::unique_ptr<SimdBinary> over(const float* vectors, idx_t n, idx_t d, std::shared_ptr<const void> keep,
                                          std::vector<float> center);

 private:
  // Takes the centre (empty: stays untrained, which only an index of no vectors may), then codes every vector.
  // ERR_FORMAT for a missing centre or one of another width.
  void set_center(std::vector<float> center);
  void encode_from(idx_t first);  // codes for the vectors from `first` on
  std::vector<float> center_;
  std::shared_ptr<const kernels::Rotation> rotation_;
  std::vector<uint8_t> bits_;
};

}  // namespace quorum::index
