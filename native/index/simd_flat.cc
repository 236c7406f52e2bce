#include "simd_flat.h"

#include <faiss/impl/DistanceComputer.h>
#include <faiss/impl/IDSelector.h>

#include <faiss/impl/FaissAssert.h>

#include <algorithm>
#include <typeinfo>
#include <vector>

#include "../common/error.h"
#include "../kernels/dense_dot.h"
#include "../kernels/dense_search.h"
#include "../kernels/dispatch.h"
#include "../kernels/quant.h"
#include "../kernels/pair_distance.h"

namespace quorum::index {
namespace {

// A faiss selector's allowed positions as the kernels take a filter (docs/methods/kernels.md#filtered-search): an
// ascending list the scan reads instead of every row. Without a selector, rows() is null (every row); with one that
// allows nothing, a pointer to no element, never null.
struct AllowedRows {
  const faiss::IDSelector* sel;
  std::vector<int32_t> list;
  AllowedRows(const faiss::IDSelector* s, faiss::Index::idx_t ntotal) : sel(s) {
    if (sel)
      for (faiss::Index::idx_t i = 0; i < ntotal; ++i)
        if (sel->is_member(i)) list.push_back(int32_t(i));
  }
  const int32_t* rows() const {
    static const int32_t kNoRow = 0;
    return sel ? (list.empty() ? &kNoRow : list.data()) : nullptr;
  }
  size_t count(faiss::Index::idx_t ntotal) const { return sel ? list.size() : size_t(ntotal); }
};

// The kernels' int32 row ids as faiss's labels.
void to_labels(const std::vector<int32_t>& ids, faiss::Index::idx_t* labels) {
  for (size_t i = 0; i < ids.size(); ++i) labels[i] = ids[i];
}

struct SimdDistance : faiss::FlatCodesDistanceComputer {
  const float* base;
  size_t d;
  bool ip;
  const kernels::PairDistanceOps& ops;
  const float* q = nullptr;

  explicit SimdDistance(const SimdFlat& s)
      : faiss::FlatCodesDistanceComputer(reinterpret_cast<const uint8_t*>(s.vectors()), s.code_size),
        base(s.vectors()),
        d(size_t(s.d)),
        ip(s.metric_type == faiss::METRIC_INNER_PRODUCT),
        ops(kernels::pair_distance()) {}

  void set_query(const float* x) override { q = x; }
  // The raw metric: faiss's HNSW negates inner products itself (NegativeDistanceComputer).
  float distance_to_code(const uint8_t* code) override {
    const auto* c = reinterpret_cast<const float*>(code);
    return ip ? ops.dot(q, c, d) : ops.l2sq(q, c, d);
  }
  float symmetric_dis(idx_t i, idx_t j) override {
    const float* a = base + size_t(i) * d;
    const float* b = base + size_t(j) * d;
    return ip ? ops.dot(a, b, d) : ops.l2sq(a, b, d);
  }
};

}  // namespace

faiss::FlatCodesDistanceComputer* SimdFlat::get_FlatCodesDistanceComputer() const { return new SimdDistance(*this); }

void SimdFlat::search(idx_t n, const float* x, idx_t k, float* distances, idx_t* labels,
                      const faiss::SearchParameters* params) const {
  const faiss::IDSelector* sel = params ? params->sel : nullptr;
  // A mapped flat has no codes for faiss's loop; flat search takes no parameters but a selector anyway.
  if (!mapped() && (metric_type != faiss::METRIC_INNER_PRODUCT || (params && !sel))) {
    faiss::IndexFlat::search(n, x, k, distances, labels, params);
    return;
  }
  const AllowedRows allowed(sel, ntotal);
  std::vector<int32_t> ids(size_t(n) * size_t(k));
  kernels::score_topk({x, size_t(n), size_t(d)}, {reinterpret_cast<const uint8_t*>(vectors()), size_t(ntotal), size_t(d), Dtype::F32}, size_t(k),
                      ids.data(), distances, allowed.rows(), allowed.list.size());
  to_labels(ids, labels);
}

void SimdFlat::reconstruct(idx_t key, float* recons) const {
  FAISS_THROW_IF_NOT(key >= 0 && key < ntotal);
  std::copy_n(vectors() + size_t(key) * size_t(d), size_t(d), recons);
}

void SimdFlat::reconstruct_n(idx_t i0, idx_t ni, float* recons) const {
  FAISS_THROW_IF_NOT(i0 >= 0 && ni >= 0 && i0 + ni <= ntotal);
  std::copy_n(vectors() + size_t(i0) * size_t(d), size_t(ni) * size_t(d), recons);
}

std::unique_ptr<SimdFlat> SimdFlat::over(const float* vectors, idx_t n, idx_t d, std::shared_ptr<const void> keep) {
  auto out = std::make_unique<SimdFlat>(d, faiss::METRIC_INNER_PRODUCT);
  out->ntotal = n;
  out->external_ = vectors;
  out->keep_ = std::move(keep);
  return out;
}

// The tables from faiss's own decoding of the codes 0 and 255: its decode is linear in the code (offset + scale * c),
// whatever its version does inside (the half-step bias, the range statistic).
void SimdSQ8::tables(std::vector<float>& offset, std::vector<float>& scale) const {
  const size_t D = size_t(d);
  std::vector<uint8_t> lo(D, 0), hi(D, 255);
  std::vector<float> top(D);
  offset.assign(D, 0.f);
  scale.assign(D, 0.f);
  sq.decode(lo.data(), offset.data(), 1);
  sq.decode(hi.data(), top.data(), 1);
  for (size_t j = 0; j < D; ++j) scale[j] = (top[j] - offset[j]) / 255.f;
}

namespace {

// q . decode(code) = sum_d (q_d scale_d) code_d + q . offset: the first term by dense_dot's u8 scorer (the f32 x u8
// form of an int8 corpus, docs/methods/quantization.md), the second once per query.
struct Sq8Distance : faiss::FlatCodesDistanceComputer {
  const kernels::DenseDotOps& ops;
  size_t d;
  std::vector<float> offset, scale, scaled, prepared, decoded;
  float bias = 0;

  explicit Sq8Distance(const SimdSQ8& s)
      : faiss::FlatCodesDistanceComputer(s.codes.data(), s.code_size), ops(kernels::dense_dot()), d(size_t(s.d)) {
    s.tables(offset, scale);
    scaled.resize(d);
    decoded.resize(d);
    prepared.resize(ops.prepared_stride(d, Dtype::U8));
  }
  void prepare(const float* x) {
    double b = 0;
    for (size_t j = 0; j < d; ++j) {
      scaled[j] = x[j] * scale[j];
      b += double(x[j]) * double(offset[j]);
    }
    bias = float(b);
    ops.prepare(scaled.data(), d, Dtype::U8, prepared.data());
  }
  void set_query(const float* x) override { prepare(x); }
  float distance_to_code(const uint8_t* code) override {
    float s;
    ops.score(prepared.data(), prepared.size(), 1, &code, 1, d, Dtype::U8, &s, 1);
    return s + bias;
  }
  // Between two stored vectors (the graph's build): row i decoded, then scored as a query against row j.
  float symmetric_dis(idx_t i, idx_t j) override {
    for (size_t t = 0; t < d; ++t) decoded[t] = offset[t] + scale[t] * float(codes[size_t(i) * code_size + t]);
    prepare(decoded.data());
    return distance_to_code(codes + size_t(j) * code_size);
  }
};

}  // namespace

faiss::FlatCodesDistanceComputer* SimdSQ8::get_FlatCodesDistanceComputer() const {
  // L2 (not a DenseIndex storage: its quantization is inner product only) keeps faiss's own.
  if (metric_type != faiss::METRIC_INNER_PRODUCT) return faiss::IndexScalarQuantizer::get_FlatCodesDistanceComputer();
  return new Sq8Distance(*this);
}

void SimdSQ8::search(idx_t n, const float* x, idx_t k, float* distances, idx_t* labels,
                     const faiss::SearchParameters* params) const {
  const faiss::IDSelector* sel = params ? params->sel : nullptr;
  if (metric_type != faiss::METRIC_INNER_PRODUCT || (params && !sel) || !is_trained || ntotal == 0) {
    faiss::IndexScalarQuantizer::search(n, x, k, distances, labels, params);
    return;
  }
  const size_t D = size_t(d);
  std::vector<float> offset, scale;
  tables(offset, scale);
  const AllowedRows allowed(sel, ntotal);
  kernels::CorpusMatrix c{codes.data(), size_t(ntotal), D, Dtype::U8};
  c.coding = kernels::Coding::Int8;
  c.scale = scale.data();
  c.offset = offset.data();
  c.query_bits = 32;  // f32 queries: the scores of faiss's decoding, up to f32 rounding (int8 queries round them)
  std::vector<int32_t> ids(size_t(n) * size_t(k));
  kernels::score_topk({x, size_t(n), D}, c, size_t(k), ids.data(), distances, allowed.rows(), allowed.list.size());
  to_labels(ids, labels);
}

std::unique_ptr<SimdSQ8> SimdSQ8::adopt(faiss::Index* index) {
  if (!index || typeid(*index) != typeid(faiss::IndexScalarQuantizer)) return nullptr;
  auto* from = static_cast<faiss::IndexScalarQuantizer*>(index);
  if (from->sq.qtype != faiss::ScalarQuantizer::QT_8bit || from->sq.rangestat != faiss::ScalarQuantizer::RS_minmax) return nullptr;
  auto out = std::make_unique<SimdSQ8>(from->d, from->sq.qtype, from->metric_type);
  out->sq = from->sq;
  out->codes = std::move(from->codes);
  out->ntotal = from->ntotal;
  out->is_trained = from->is_trained;
  out->metric_arg = from->metric_arg;
  from->codes.clear();
  from->ntotal = 0;
  return out;
}

std::unique_ptr<SimdFlat> SimdFlat::adopt(faiss::Index* index) {
  if (!index) return nullptr;
  const std::type_info& t = typeid(*index);
  if (t != typeid(faiss::IndexFlat) && t != typeid(faiss::IndexFlatIP) && t != typeid(faiss::IndexFlatL2)) return nullptr;
  auto* flat = static_cast<faiss::IndexFlat*>(index);
  auto out = std::make_unique<SimdFlat>(flat->d, flat->metric_type);
  out->codes = std::move(flat->codes);
  out->ntotal = flat->ntotal;
  out->metric_arg = flat->metric_arg;
  flat->codes.clear();
  flat->ntotal = 0;
  return out;
}

void SimdBinary::train(idx_t n, const float* x) {
  if (is_trained) throw Error("ERR_STATE", "a binary index is trained once: its codes are relative to that sample's mean");
  FAISS_THROW_IF_NOT(n > 0);
  std::vector<float> center(static_cast<size_t>(d));
  kernels::fit_center(x, Dtype::F32, size_t(n), size_t(d), center.data());
  set_center(std::move(center));
}

void SimdBinary::set_center(std::vector<float> center) {
  if (center.empty() ? ntotal > 0 : center.size() != size_t(d))
    throw Error("ERR_FORMAT", "binary dense index: its centre is missing or of another width");
  if (center.empty()) return;  // untrained, and empty
  center_ = std::move(center);
  rotation_ = kernels::shared_rotation(size_t(d), kernels::kRotationSeed);
  is_trained = true;
  encode_from(0);
}

void SimdBinary::encode_from(idx_t first) {
  const size_t rb = kernels::coded_row_bytes(kernels::Coding::Binary, size_t(d), Dtype::U8);
  bits_.resize(size_t(ntotal) * rb);
  if (ntotal > first)
    kernels::encode_binary(vectors() + size_t(first) * size_t(d), Dtype::F32, size_t(ntotal - first), size_t(d), center_.data(),
                           rotation_.get(), bits_.data() + size_t(first) * rb);
}

void SimdBinary::add(idx_t n, const float* x) {
  FAISS_THROW_IF_NOT(is_trained && !mapped());
  const idx_t first = ntotal;
  SimdFlat::add(n, x);
  encode_from(first);
}

size_t SimdBinary::remove_ids(const faiss::IDSelector& sel) {
  // faiss's flat storage keeps the survivors in order (IndexFlatCodes::remove_ids): the codes move the same way.
  std::vector<bool> gone(static_cast<size_t>(ntotal));
  for (idx_t i = 0; i < ntotal; ++i) gone[size_t(i)] = sel.is_member(i);
  const size_t removed = SimdFlat::remove_ids(sel);
  const size_t rb = kernels::coded_row_bytes(kernels::Coding::Binary, size_t(d), Dtype::U8);
  size_t j = 0;
  for (size_t i = 0; i < gone.size(); ++i)
    if (!gone[i]) {
      if (i != j) std::copy_n(bits_.data() + i * rb, rb, bits_.data() + j * rb);
      ++j;
    }
  bits_.resize(j * rb);
  return removed;
}

void SimdBinary::reset() {
  SimdFlat::reset();
  bits_.clear();
}

void SimdBinary::search(idx_t n, const float* x, idx_t k, float* distances, idx_t* labels,
                        const faiss::SearchParameters* params) const {
  const faiss::IDSelector* sel = params ? params->sel : nullptr;
  const AllowedRows allowed(sel, ntotal);
  const size_t avail = allowed.count(ntotal);
  if (!is_trained || avail == 0 || (params && !sel)) {
    SimdFlat::search(n, x, k, distances, labels, params);
    return;
  }
  const size_t D = size_t(d), B = size_t(n);
  kernels::CorpusMatrix bits{bits_.data(), size_t(ntotal), D, Dtype::U8};
  bits.coding = kernels::Coding::Binary;
  bits.center = center_.data();
  bits.rotation = rotation_;
  bits.query_bits = 4;
  std::vector<int32_t> ids(B * size_t(k));
  kernels::score_topk_rescored({x, B, D}, bits, {reinterpret_cast<const uint8_t*>(vectors()), size_t(ntotal), D, Dtype::F32},
                               std::min(avail, kOversample * size_t(k)), size_t(k), ids.data(), distances, allowed.rows(),
                               allowed.list.size());
  to_labels(ids, labels);
}

std::unique_ptr<SimdBinary> SimdBinary::adopt(faiss::Index* index, std::vector<float> center) {
  std::unique_ptr<SimdFlat> flat = SimdFlat::adopt(index);
  if (!flat || flat->metric_type != faiss::METRIC_INNER_PRODUCT) return nullptr;
  auto out = std::make_unique<SimdBinary>(flat->d);
  out->codes = std::move(flat->codes);
  out->ntotal = flat->ntotal;
  out->set_center(std::move(center));
  return out;
}

std::unique_ptr<SimdBinary> SimdBinary::over(const float* vectors, idx_t n, idx_t d, std::shared_ptr<const void> keep,
                                             std::vector<float> center) {
  auto out = std::make_unique<SimdBinary>(d);
  out->ntotal = n;
  out->external_ = vectors;
  out->keep_ = std::move(keep);
  out->set_center(std::move(center));
  return out;
}

}  // namespace quorum::index
