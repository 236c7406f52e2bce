#include "dense_index.h"

#include <faiss/Clustering.h>
#include <faiss/IVFlib.h>
#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIDMap.h>
#include <faiss/IndexIVF.h>
#include <faiss/IndexIVFPQ.h>
#include <faiss/IndexPQ.h>
#include <faiss/IndexPreTransform.h>
#include <faiss/impl/FaissException.h>
#include <faiss/impl/IDSelector.h>
#include <faiss/impl/io.h>
#include <faiss/index_factory.h>
#include <faiss/index_io.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "../common/error.h"
#include "../common/persist.h"
#include "../common/thread_pool.h"
#include "faiss_checks.h"
#include "simd_flat.h"

namespace quorum::index {
namespace {

constexpr char kMagic[8] = {'Q', 'D', 'N', 'I', 'D', 'X', '0', '1'};
constexpr uint32_t kVersion = 1;
// Version 2 adds, after the factory, a binary index's centre (u32 count, 0 or dim, then the floats); every other
// index is still written as version 1.
constexpr uint32_t kVersionCenter = 2;
// DenseIndexOptions.quantization 'binary' (simd_flat.h, SimdBinary): faiss's "Flat" underneath.
const std::string kBinaryFactory = "BinaryFlat";
constexpr size_t kMaxDim = size_t(1) << 16;
using Idx = faiss::Index::idx_t;

std::atomic<int> g_threads{int(std::max(1u, std::thread::hardware_concurrency()))};

// Runs a faiss call, turning its exceptions into typed ones: faiss reports bad use and internal failures alike.
template <class F>
auto faiss_call(const char* code, const std::string& what, F&& f) {
  try {
    return f();
  } catch (const faiss::FaissException& e) {
    throw Error(code, what + ": " + e.what());
  }
}

// OpenMP's thread count is per calling thread (libuv workers start with the default), so every call sets it.
void use_threads(size_t work_items) {
  omp_set_num_threads(int(std::max<size_t>(1, std::min<size_t>(size_t(g_threads.load()), work_items))));
}

void check_finite(const float* x, size_t count, const char* what) {
  for (size_t i = 0; i < count; ++i)
    if (!std::isfinite(x[i])) throw Error("ERR_NONFINITE", std::string(what) + " must be finite (NaN or infinity found)");
}

// faiss's reader over bytes we have already checked; a short read makes faiss throw, which becomes ERR_FORMAT.
//
// faiss sizes its allocations from counts in the payload before it reads what they count (a vector's length,
// then resize, then the data; an inverted-list table's sizes, then every list resized at once). A corrupt count
// would allocate and zero-fill gigabytes before the short read is noticed. So the reader refuses (as a short
// read) any count that the bytes left cannot hold:
//   - a single 8-byte field (every vector length, and the header's scalars) above max(bytes left, 2^20): the
//     only legitimate 8-byte field that may exceed what follows is the header's constant 2^20;
//   - the list sizes after an "ilar" (ArrayInvertedLists) tag, whose codes and ids must fit in the bytes left;
//   - a product quantizer's (d, M, nbits), which faiss divides by and shifts by before checking: after "IxPq"
//     (IndexPQ) they are the 4th to 6th 8-byte fields (the header has three); after "IwPQ" (IVF-PQ) they follow
//     code_size, the first run of four 8-byte fields after a 1-byte one (by_residual).
struct SpanReader : faiss::IOReader {
  const uint8_t* p;
  size_t n, at = 0;
  // After "ilar": 1 nlist, 2 code_size, 3 list type, 4 sizes length, 5 the sizes; 0 otherwise.
  int ilar_stage = 0;
  uint64_t ilar_code_size = 0;
  bool ilar_sparse = false;
  // 1 after "IxPq", 2 after "IwPQ" (waiting for the 1-byte by_residual), 3 counting after it; 0 otherwise.
  int pq_mode = 0;
  int pq_count = 0;
  uint64_t pq_fields[4] = {};
  SpanReader(const uint8_t* data, size_t size) : p(data), n(size) {}

  size_t operator()(void* ptr, size_t size, size_t nitems) override {
    if (size == 0) return 0;
    const size_t items = std::min(nitems, (n - at) / size);
    if (items > 0) std::memcpy(ptr, p + at, items * size);  // an empty vector's data() may be null
    at += items * size;
    if (items != nitems) return items;
    return plausible(ptr, size, nitems) ? items : 0;
  }

 private:
  // (d, M, nbits) of a product quantizer: faiss computes d / M and 1 << nbits, then sizes d << nbits centroids.
  bool pq_plausible(uint64_t d, uint64_t m, uint64_t nbits, size_t left) const {
    return m >= 1 && m <= d && d % m == 0 && nbits >= 1 && nbits <= 16 && d <= (left / 4) >> nbits;
  }

  // Tracks where a product quantizer's fields are (see above); false when they cannot be valid.
  bool pq_track(size_t size, size_t nitems, const void* ptr, size_t left) {
    if (pq_mode == 0) return true;
    const bool field8 = size == 8 && nitems == 1;
    uint64_t v = 0;
    if (field8) std::memcpy(&v, ptr, 8);
    if (pq_mode == 1) {
      if (!field8) return true;
      if (++pq_count >= 4) pq_fields[pq_count - 4] = v;
      if (pq_count < 6) return true;
      pq_mode = 0;
      return pq_plausible(pq_fields[0], pq_fields[1], pq_fields[2], left);
    }
    if (pq_mode == 2) {
      if (size == 1 && nitems == 1) pq_mode = 3, pq_count = 0;
      return true;
    }
    if (!field8) {  // the run was not by_residual's: wait for the next 1-byte field
      pq_mode = size == 1 && nitems == 1 ? 3 : 2;
      pq_count = 0;
      return true;
    }
    pq_fields[pq_count++] = v;
    if (pq_count < 4) return true;
    pq_mode = 0;
    return pq_plausible(pq_fields[1], pq_fields[2], pq_fields[3], left);
  }

  bool plausible(const void* ptr, size_t size, size_t nitems) {
    const size_t left = n - at;
    if (!pq_track(size, nitems, ptr, left)) return false;
    // A single 4-byte field may be a type tag (fourcc).
    uint32_t tag = 0;
    const bool field4 = size == 4 && nitems == 1;
    if (field4) std::memcpy(&tag, ptr, 4);
    if (size == 8 && nitems == 1) {
      uint64_t v;
      std::memcpy(&v, ptr, 8);
      if (v > std::max<uint64_t>(left, uint64_t(1) << 20)) return false;
      if (ilar_stage == 2) ilar_code_size = v;
    }
    if (field4) {
      // Types faiss itself crashes on while reading a corrupt payload, and that DenseIndex never nests: an id
      // map (rebuilds its reverse map from ntotal ids without checking there are that many; DenseIndex reads its
      // own top-level one, see read_payload), and HNSW over PQ (computes a table through a cast it does not check).
      if (tag == faiss::fourcc("IxM2") || tag == faiss::fourcc("IxMp") || tag == faiss::fourcc("IHNp")) return false;
      // Legacy and refined PQ layouts, which DenseIndex never writes and whose fields the tracking above does not know.
      if (tag == faiss::fourcc("IxPQ") || tag == faiss::fourcc("IxPo") || tag == faiss::fourcc("IvPQ") ||
          tag == faiss::fourcc("IvQR") || tag == faiss::fourcc("IwQR"))
        return false;
      if (tag == faiss::fourcc("IxPq")) pq_mode = 1, pq_count = 0;
      if (tag == faiss::fourcc("IwPQ")) pq_mode = 2, pq_count = 0;
    }
    if (ilar_stage == 3 && field4) ilar_sparse = tag == faiss::fourcc("sprs");
    if (ilar_stage == 5) {
      // Every list's codes and ids follow: they must fit in what is left.
      const auto* sizes = static_cast<const uint64_t*>(ptr);
      uint64_t total = 0;
      for (size_t i = ilar_sparse ? 1 : 0; i < nitems; i += ilar_sparse ? 2 : 1) {
        if (sizes[i] > left) return false;
        total += sizes[i];
        if (total > left) return false;
      }
      if (total > 0 && (ilar_code_size + 8) > left / total) return false;
      ilar_stage = 0;
    } else if (ilar_stage > 0) {
      ++ilar_stage;
    }
    if (field4 && tag == faiss::fourcc("ilar")) ilar_stage = 1;  // after the stage step above: it counts from here
    return true;
  }
};

// faiss's read_index over exactly these bytes (ERR_FORMAT for anything else).
std::unique_ptr<faiss::Index> read_faiss(const uint8_t* p, size_t n) {
  SpanReader reader(p, n);
  std::unique_ptr<faiss::Index> out;
  try {
    // IVF-PQ's precomputed table is built from the coarse centroids and codebooks: only after they are checked.
    out.reset(faiss::read_index(&reader, faiss::IO_FLAG_SKIP_PRECOMPUTE_TABLE));
  } catch (const std::exception& e) {
    // faiss's own checks, and allocations sized by a corrupt field (bad_alloc, length_error)
    throw Error("ERR_FORMAT", std::string("dense index payload is corrupt: ") + e.what());
  }
  if (reader.at != n) throw Error("ERR_FORMAT", "dense index payload has trailing bytes");
  return out;
}

// An IndexIDMap2 owning `sub` (its d and ntotal) with the `sub->ntotal` ids at `ids` (copied, unaligned), its reverse
// map built: ERR_FORMAT, prefixed by `where`, for a negative or repeated id.
std::unique_ptr<faiss::IndexIDMap2> id_map_over(std::unique_ptr<faiss::Index> sub, bool is_trained, faiss::MetricType metric,
                                                const uint8_t* ids, const std::string& where) {
  auto map = std::make_unique<faiss::IndexIDMap2>();
  map->d = sub->d;
  map->ntotal = sub->ntotal;
  map->is_trained = is_trained;
  map->metric_type = metric;
  map->id_map.resize(size_t(sub->ntotal));
  if (sub->ntotal > 0) std::memcpy(map->id_map.data(), ids, 8 * size_t(sub->ntotal));
  map->rev_map.reserve(size_t(sub->ntotal));
  for (size_t i = 0; i < map->id_map.size(); ++i)
    if (map->id_map[i] < 0 || !map->rev_map.emplace(map->id_map[i], Idx(i)).second)
      throw Error("ERR_FORMAT", where + "dense index payload is corrupt: negative or repeated ids");
  map->index = sub.release();
  map->own_fields = true;
  return map;
}

// The payload. faiss's IndexIDMap2 reader rebuilds the reverse map from the header's ntotal without checking
// that the id vector holds that many (an out-of-bounds read on a corrupt file), so DenseIndex reads the
// top-level id map itself: fourcc "IxM2", faiss's index header, the wrapped index, then the ids (a u64 count
// and the ids), which end the payload.
std::unique_ptr<faiss::Index> read_payload(const uint8_t* p, size_t n) {
  if (n < 4 || std::memcmp(p, "IxM2", 4) != 0) return read_faiss(p, n);
  persist::Reader r{p, n, 4, "dense index payload"};
  const int32_t d = r.get<int32_t>();
  const int64_t ntotal = r.get<int64_t>();
  r.get<int64_t>();
  r.get<int64_t>();
  const bool is_trained = r.get<uint8_t>() != 0;
  const int32_t metric = r.get<int32_t>();
  if (metric != faiss::METRIC_INNER_PRODUCT && metric != faiss::METRIC_L2)
    throw Error("ERR_FORMAT", "dense index payload is corrupt: id map metric");
  if (ntotal < 0 || n - r.at < 8 || uint64_t(ntotal) > (n - r.at - 8) / 8) throw Error("ERR_FORMAT", "dense index payload is corrupt: id count");
  const size_t ids_at = n - 8 * size_t(ntotal);
  uint64_t count;
  std::memcpy(&count, p + ids_at - 8, 8);
  if (count != uint64_t(ntotal) || ids_at - 8 < r.at) throw Error("ERR_FORMAT", "dense index payload is corrupt: id map size");
  std::unique_ptr<faiss::Index> sub = read_faiss(p + r.at, ids_at - 8 - r.at);
  if (sub->d != d || sub->ntotal != ntotal || sub->metric_type != faiss::MetricType(metric))
    throw Error("ERR_FORMAT", "dense index payload is corrupt: the id map does not match the index below it");
  return id_map_over(std::move(sub), is_trained, faiss::MetricType(metric), p + ids_at, "");
}

// faiss's writer into one of our sinks, hashing as it goes.
template <class Sink>
struct HashingWriter : faiss::IOWriter {
  Sink& sink;
  persist::WordHash& hash;
  size_t written = 0;
  HashingWriter(Sink& s, persist::WordHash& h) : sink(s), hash(h) {}
  size_t operator()(const void* ptr, size_t size, size_t nitems) override {
    const auto* b = static_cast<const uint8_t*>(ptr);
    sink(b, size * nitems);
    hash.update(b, size * nitems);
    written += size * nitems;
    return nitems;
  }
};

}  // namespace

std::vector<float> kmeans(const float* x, size_t n, size_t dim, size_t k, int niter, int seed, bool spherical) {
  need(dim > 0 && dim <= kMaxDim, "ERR_RANGE", "k-means needs a dimension in [1, 2^16]");
  need(k >= 1 && k <= n, "ERR_RANGE", "k-means of " + std::to_string(n) + " vectors into " + std::to_string(k) + " centroids: need 1 <= k <= n");
  need(niter >= 1, "ERR_RANGE", "k-means needs at least one iteration");
  check_finite(x, n * dim, "k-means vectors");
  faiss::ClusteringParameters cp;
  cp.niter = niter;
  cp.seed = seed;
  cp.spherical = spherical;
  // faiss samples max_points_per_centroid * k vectors: 256 (its default) keeps every vector of a corpus whose
  // lists average fewer; quieter than its warnings about too few points, which print to stderr.
  cp.min_points_per_centroid = 1;
  faiss::Clustering clustering(int(dim), k, cp);
  faiss::IndexFlatL2 assign{Idx(dim)};
  use_threads(n);
  faiss_call("ERR_ARG", "k-means failed", [&] { clustering.train(Idx(n), x, assign); });
  return std::move(clustering.centroids);
}

void set_threads(int n) {
  g_threads.store(std::max(1, n));
  ThreadPool::global().set_threads(std::max(1, n));  // this module's own pool (Flat search)
}
int threads() { return g_threads.load(); }

DenseIndex::DenseIndex(const DenseIndexOptions& options) : options_(options) {
  if (options_.dim == 0 || options_.dim > kMaxDim)
    throw Error("ERR_RANGE", "dim must be in [1, " + std::to_string(kMaxDim) + "]");
  if (options_.factory.empty()) throw Error("ERR_ARG", "factory string is empty");
  if (options_.factory.find("IDMap") != std::string::npos)
    throw Error("ERR_ARG", "leave IDMap out of the factory string: every DenseIndex takes 64-bit ids");
  if (options_.mips != Mips::kInnerProduct && options_.mips != Mips::kL2Transform) throw Error("ERR_ARG", "unknown mips mode");
  if (!(options_.phi >= 0) || !std::isfinite(options_.phi)) throw Error("ERR_RANGE", "phi must be a finite number >= 0");
  if (options_.ef_construction < 0 || options_.ef_search < 0 || options_.nprobe < 0)
    throw Error("ERR_RANGE", "efConstruction, efSearch and nprobe must be >= 0");
  const faiss::MetricType metric =
      options_.mips == Mips::kInnerProduct ? faiss::METRIC_INNER_PRODUCT : faiss::METRIC_L2;
  const bool binary = options_.factory == kBinaryFactory;
  if (binary && options_.mips != Mips::kInnerProduct) throw Error("ERR_ARG", "binary vectors rank by inner product: leave mips 'inner-product'");
  const std::string faiss_factory = binary ? "Flat" : options_.factory;
  std::unique_ptr<faiss::Index> made(faiss_call("ERR_ARG", "faiss cannot build '" + options_.factory + "'", [&] {
    return faiss::index_factory(int(stored_dim()), faiss_factory.c_str(), metric);
  }));
  check_built(made.get());
  if (faiss::IndexIVF* ivf = faiss::ivflib::try_extract_index_ivf(made.get())) {
    // IVF keeps ids itself; the hash-table direct map makes remove and reconstruct by id work.
    ivf->set_direct_map_type(faiss::DirectMap::Hashtable);
    top_ = std::move(made);
  } else {
    auto idmap = std::make_unique<faiss::IndexIDMap2>(made.get());
    made.release();
    idmap->own_fields = true;
    top_ = std::move(idmap);
  }
  const DenseIndexOptions asked = options_;
  bind();
  // The factory turns on polysemous training for PQ codes: a Hamming-order optimisation that only serves
  // polysemous (Hamming-filtered) search, which we never run, and took 25 s for 600 vectors of PQ4 here.
  if (auto* pq = dynamic_cast<faiss::IndexPQ*>(core_)) pq->do_polysemous_training = false;
  if (auto* ivfpq = dynamic_cast<faiss::IndexIVFPQ*>(core_)) ivfpq->do_polysemous_training = false;
  if (hnsw_) {
    if (asked.ef_construction > 0) hnsw_->hnsw.efConstruction = asked.ef_construction;
    if (asked.ef_search > 0) hnsw_->hnsw.efSearch = asked.ef_search;
  } else if (asked.ef_construction > 0 || asked.ef_search > 0) {
    throw Error("ERR_ARG", "efConstruction and efSearch apply to HNSW indexes only");
  }
  if (ivf_) {
    if (asked.nprobe > 0) ivf_->nprobe = std::min<size_t>(size_t(asked.nprobe), ivf_->nlist);
  } else if (asked.nprobe > 0) {
    throw Error("ERR_ARG", "nprobe applies to IVF indexes only");
  }
  if (options_.phi > 0 && options_.mips != Mips::kL2Transform) throw Error("ERR_ARG", "phi applies to mips 'l2' only");
  phi_ = options_.phi;
  phi_fixed_ = phi_ > 0;
}

DenseIndex::~DenseIndex() = default;

void DenseIndex::bind() {
  idmap_ = dynamic_cast<faiss::IndexIDMap2*>(top_.get());
  faiss::Index* inner = idmap_ ? idmap_->index : top_.get();
  pre_ = dynamic_cast<faiss::IndexPreTransform*>(inner);
  core_ = pre_ ? pre_->index : inner;
  // Flat storage, on its own or under HNSW, gets the SIMD kernels (simd_flat.h). The owners delete what they
  // hold (own_fields), so the swapped-out object is deleted here.
  std::unique_ptr<faiss::Index> simd;
  if (options_.factory == kBinaryFactory) {
    simd = SimdBinary::adopt(core_, std::move(center_at_load_));
    if (!simd && !dynamic_cast<SimdBinary*>(core_)) throw Error("ERR_FORMAT", "binary dense index without its flat storage");
  } else {
    simd = SimdFlat::adopt(core_);
    if (!simd) simd = SimdSQ8::adopt(core_);
  }
  if (simd) {
    std::unique_ptr<faiss::Index> old(core_);
    core_ = simd.release();
    if (pre_) {
      pre_->index = core_;
    } else if (idmap_) {
      idmap_->index = core_;
    } else {
      top_.release();  // == old
      top_.reset(core_);
    }
  }
  if (auto* h = dynamic_cast<faiss::IndexHNSW*>(core_)) {
    std::unique_ptr<faiss::Index> storage = SimdFlat::adopt(h->storage);
    if (!storage) storage = SimdSQ8::adopt(h->storage);
    if (storage) {
      std::unique_ptr<faiss::Index> old(h->storage);
      h->storage = storage.release();
    }
  }
  // The id map copied its sub-index's state when it was made; a binary storage is untrained until it has a centre.
  if (dynamic_cast<SimdBinary*>(core_)) top_->is_trained = core_->is_trained;
  ivf_ = dynamic_cast<faiss::IndexIVF*>(core_);
  hnsw_ = dynamic_cast<faiss::IndexHNSW*>(core_);
  if (!core_ || (!idmap_ && !ivf_)) throw Error("ERR_FORMAT", "index structure is not one DenseIndex writes");
  if (ivf_ && ivf_->direct_map.type != faiss::DirectMap::Hashtable)
    throw Error("ERR_FORMAT", "IVF index without its id map");
  if (size_t(top_->d) != stored_dim()) throw Error("ERR_FORMAT", "index dimension does not match its header");
}

size_t DenseIndex::stored_dim() const { return options_.dim + (options_.mips == Mips::kL2Transform ? 1 : 0); }

bool DenseIndex::contains(int64_t id) const {
  return idmap_ ? idmap_->rev_map.count(id) > 0 : ivf_->direct_map.hashtable.count(id) > 0;
}

std::vector<float> DenseIndex::augment(const float* x, size_t n, bool fix_phi, double& phi) const {
  const size_t d = options_.dim;
  phi = phi_;
  check_finite(x, n * d, "vectors");
  if (options_.mips != Mips::kL2Transform) return {};
  std::vector<double> norms(n);
  double largest = 0;
  for (size_t i = 0; i < n; ++i) {
    double s = 0;
    for (size_t j = 0; j < d; ++j) s += double(x[i * d + j]) * x[i * d + j];
    norms[i] = s;
    largest = std::max(largest, s);
  }
  phi = phi_;
  if (!phi_fixed_ && fix_phi) phi = largest;
  // A hair of slack for rounding in the caller's own norm computations.
  if (largest > phi * (1 + 1e-6) + 1e-30)
    throw Error("ERR_RANGE", "a vector's squared norm " + std::to_string(largest) + " exceeds phi = " + std::to_string(phi) +
                                 ", fixed when the index first saw data: the L2 transform would rank it wrong (set phi up front, "
                                 "or use mips 'inner-product')");
  std::vector<float> out(n * (d + 1));
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(&out[i * (d + 1)], x + i * d, d * sizeof(float));
    out[i * (d + 1) + d] = float(std::sqrt(std::max(0.0, phi - norms[i])));
  }
  return out;
}

void DenseIndex::train(const float* x, size_t n) {
  refuse_mapped("train");
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (top_->is_trained) throw Error("ERR_STATE", "index is already trained");
  if (n == 0) throw Error("ERR_RANGE", "train needs at least one vector");
  double phi;
  std::vector<float> aug = augment(x, n, true, phi);
  use_threads(n);
  faiss_call("ERR_ARG", "faiss training failed", [&] { top_->train(Idx(n), aug.empty() ? x : aug.data()); });
  phi_ = phi;
  phi_fixed_ = true;
}

void DenseIndex::add(const float* x, const int64_t* ids, size_t n) {
  refuse_mapped("add vectors to");
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (!top_->is_trained) throw Error("ERR_STATE", "index '" + options_.factory + "' needs train() before add()");
  if (n == 0) return;
  std::unordered_set<int64_t> batch;
  batch.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0) throw Error("ERR_RANGE", "ids must be >= 0 (-1 marks an empty result slot), got " + std::to_string(ids[i]));
    if (!batch.insert(ids[i]).second || contains(ids[i]))
      throw Error("ERR_DUPLICATE_ID", "id " + std::to_string(ids[i]) + " is already in the index or repeated in the batch");
  }
  double phi;
  std::vector<float> aug = augment(x, n, true, phi);
  use_threads(n);
  faiss_call("ERR_NATIVE", "faiss add failed", [&] { top_->add_with_ids(Idx(n), aug.empty() ? x : aug.data(), ids); });
  phi_ = phi;
  phi_fixed_ = true;
}

// Tombstones past this share of an HNSW graph's nodes trigger a compaction (searches walk through tombstones, so
// many of them cost time and recall; the rebuild costs one graph build over the live vectors).
constexpr size_t kCompactShare = 4;  // 1 / 4

size_t DenseIndex::remove(const int64_t* ids, size_t n) {
  refuse_mapped("remove vectors from");
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (hnsw_) {
    if (!supports_remove_locked())
      throw Error("ERR_UNSUPPORTED", "HNSW over PQ or SQ codes cannot remove vectors: rebuild the index without them");
    // Tombstones: the id leaves the id map (so it can be added again), its node stays until compaction.
    size_t removed = 0;
    for (size_t i = 0; i < n; ++i) {
      auto it = idmap_->rev_map.find(Idx(ids[i]));
      if (it == idmap_->rev_map.end()) continue;
      const size_t pos = size_t(it->second);
      if (dead_.size() < size_t(core_->ntotal + 7) / 8) dead_.resize(size_t(core_->ntotal + 7) / 8, 0);
      dead_[pos / 8] |= uint8_t(1u << (pos % 8));
      idmap_->rev_map.erase(it);
      ++n_dead_;
      ++removed;
    }
    if (n_dead_ * kCompactShare > size_t(core_->ntotal)) compact_locked();
    return removed;
  }
  std::vector<Idx> held;
  std::unordered_set<int64_t> seen;
  for (size_t i = 0; i < n; ++i)
    if (contains(ids[i]) && seen.insert(ids[i]).second) held.push_back(ids[i]);
  if (held.empty()) return 0;
  use_threads(held.size());
  return faiss_call("ERR_UNSUPPORTED", "faiss cannot remove from '" + options_.factory + "'", [&]() -> size_t {
    if (idmap_) return top_->remove_ids(faiss::IDSelectorBatch(held.size(), held.data()));
    // The hash-table direct map removes only by an explicit array.
    return top_->remove_ids(faiss::IDSelectorArray(held.size(), held.data()));
  });
}

size_t DenseIndex::compact() {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  return compact_locked();
}

size_t DenseIndex::compact_locked() {
  if (!hnsw_ || n_dead_ == 0) return 0;
  // The live vectors, as the graph stores them (after any pre-transform and the L2 augmentation), in position order.
  const size_t total = size_t(core_->ntotal), d = size_t(core_->d), live = total - n_dead_;
  std::vector<float> x(live * d);
  std::vector<Idx> ids(live);
  for (size_t pos = 0, j = 0; pos < total; ++pos) {
    if (dead(pos)) continue;
    hnsw_->storage->reconstruct(Idx(pos), &x[j * d]);
    ids[j++] = idmap_->id_map[pos];
  }
  auto fresh = std::make_unique<faiss::IndexHNSWFlat>(int(d), hnsw_->hnsw.nb_neighbors(1), core_->metric_type);
  fresh->hnsw.efConstruction = hnsw_->hnsw.efConstruction;
  fresh->hnsw.efSearch = hnsw_->hnsw.efSearch;
  use_threads(live);
  faiss_call("ERR_NATIVE", "faiss could not rebuild the HNSW graph", [&] { fresh->add(Idx(live), x.data()); });
  // Into the chain in the old graph's place (its owner deletes what it holds).
  faiss::Index* old = core_;
  if (pre_) {
    pre_->index = fresh.release();
    pre_->ntotal = Idx(live);
  } else {
    idmap_->index = fresh.release();
  }
  delete old;
  idmap_->ntotal = Idx(live);
  idmap_->id_map.assign(ids.begin(), ids.end());
  idmap_->rev_map.clear();
  for (size_t i = 0; i < live; ++i) idmap_->rev_map[ids[i]] = Idx(i);
  const size_t gone = n_dead_;
  dead_.clear();
  n_dead_ = 0;
  bind();  // the new graph's storage gets the SIMD kernels
  return gone;
}

void DenseIndex::search(const float* q, size_t n, size_t k, const SearchOptions& opt, int64_t* ids, float* scores) const {
  if (opt.ef_search < 0 || opt.nprobe < 0) throw Error("ERR_RANGE", "efSearch and nprobe must be >= 0");
  // faiss 1.7.3 sizes HNSW's candidate heap from the index's own efSearch and reads SearchParametersHNSW only
  // for the stopping rule: measured recall@10 stayed at the efSearch-16 level with efSearch 600 passed per call.
  // So a per-call efSearch is set on the index itself, under the writer lock; searches at the index's own
  // efSearch share the reader lock.
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    const int want = hnsw_ ? std::max<int>(opt.ef_search > 0 ? opt.ef_search : hnsw_->hnsw.efSearch, int(k)) : 0;
    if (!hnsw_ || want == hnsw_->hnsw.efSearch) {
      if (mapping_) mapping_->check();
      search_locked(q, n, k, opt, ids, scores);
      if (mapping_) mapping_->check();  // truncated during the search: its pages read as zeros, the result is refused
      return;
    }
  }
  std::unique_lock<std::shared_mutex> lock(mutex_);
  const int saved = hnsw_->hnsw.efSearch;
  hnsw_->hnsw.efSearch = std::max<int>(opt.ef_search > 0 ? opt.ef_search : saved, int(k));
  try {
    search_locked(q, n, k, opt, ids, scores);
  } catch (...) {
    hnsw_->hnsw.efSearch = saved;
    throw;
  }
  hnsw_->hnsw.efSearch = saved;
}

// A filtered HNSW search scans the allowed vectors exactly when there are at most this many (or under a tenth of the
// index): on 100k x 128, 10,000 allowed vectors scan in about the time of an efSearch 128 walk, at recall 1.
constexpr size_t kExactFilterRows = 50000;

void DenseIndex::search_locked(const float* q, size_t n, size_t k, const SearchOptions& opt, int64_t* ids,
                               float* scores) const {
  if (opt.ef_search > 0 && !hnsw_) throw Error("ERR_ARG", "efSearch applies to HNSW indexes only");
  if (opt.nprobe > 0 && !ivf_) throw Error("ERR_ARG", "nprobe applies to IVF indexes only");
  const size_t d = options_.dim;
  check_finite(q, n * d, "queries");
  constexpr float kNone = -std::numeric_limits<float>::infinity();
  if (n == 0) return;
  if (top_->ntotal == 0) {
    std::fill(ids, ids + n * k, int64_t(-1));
    std::fill(scores, scores + n * k, kNone);
    return;
  }
  // Queries as faiss sees them: [q, 0] under the L2 transform, then through any pre-transform.
  std::vector<float> xq;
  const float* x = q;
  if (options_.mips == Mips::kL2Transform) {
    xq.assign(n * (d + 1), 0.f);
    for (size_t i = 0; i < n; ++i) std::memcpy(&xq[i * (d + 1)], q + i * d, d * sizeof(float));
    x = xq.data();
  }
  std::unique_ptr<const float[]> transformed;
  if (pre_) {
    const float* t = pre_->apply_chain(Idx(n), x);
    if (t != x) transformed.reset(t);
    x = t;
  }
  // The filter as a selector over the ids core_ sees: positions under IDMap2 (a bitmap set through its reverse
  // map, so the cost is the allowed ids', not the index's), the user's ids where they live in an IVF.
  std::unique_ptr<faiss::IDSelector> sel;
  std::unique_ptr<faiss::IDSelector> dead_sel;
  std::vector<uint8_t> bitmap;
  size_t held = opt.n_allowed;  // allowed ids the index holds (an upper bound without IDMap2)
  if (opt.filtered) {
    if (idmap_) {
      bitmap.assign((size_t(core_->ntotal) + 7) / 8, 0);
      held = 0;
      for (size_t i = 0; i < opt.n_allowed; ++i) {
        auto it = idmap_->rev_map.find(Idx(opt.allowed[i]));
        if (it == idmap_->rev_map.end()) continue;
        uint8_t& byte = bitmap[size_t(it->second) >> 3];
        const uint8_t bit = uint8_t(1u << (size_t(it->second) & 7));
        held += (byte & bit) ? 0 : 1;
        byte |= bit;
      }
      sel = std::make_unique<faiss::IDSelectorBitmap>(bitmap.size(), bitmap.data());  // n: bytes
    } else {
      sel = std::make_unique<faiss::IDSelectorBatch>(opt.n_allowed, reinterpret_cast<const Idx*>(opt.allowed));
    }
  } else if (n_dead_ > 0) {
    // HNSW tombstones: the walk passes through them and never returns one. (A filter's bitmap above comes from the
    // id map, which no longer holds removed ids.)
    dead_sel = std::make_unique<faiss::IDSelectorBitmap>(dead_.size(), dead_.data());  // n: bytes
    sel = std::make_unique<faiss::IDSelectorNot>(dead_sel.get());
  }
  faiss::SearchParametersIVF ip;
  faiss::SearchParametersHNSW hp;
  faiss::SearchParameters sp;
  const faiss::SearchParameters* params = nullptr;
  if (ivf_) {
    ip.nprobe = std::min<size_t>(opt.nprobe > 0 ? size_t(opt.nprobe) : ivf_->nprobe, ivf_->nlist);
    ip.max_codes = ivf_->max_codes;
    ip.sel = sel.get();
    params = &ip;
  } else if (sel && hnsw_ && (!opt.filtered || (opt.scan_below >= 0 ? held > size_t(opt.scan_below)
                                                                     : held > kExactFilterRows && held * 10 > size_t(core_->ntotal)))) {
    // Many allowed vectors: the graph walk skips the others. Few (by default at most kExactFilterRows, or under a
    // tenth of the index): an exact scan of the allowed vectors in the HNSW's flat storage, below (a graph walk loses
    // most of its recall there, docs/results/indexes.md#filters-inside-the-search-28-nov).
    hp.efSearch = hnsw_->hnsw.efSearch;
    hp.sel = sel.get();
    params = &hp;
  } else if (sel) {
    sp.sel = sel.get();
    params = &sp;
  }
  use_threads(n);
  static_assert(sizeof(Idx) == sizeof(int64_t), "faiss ids are 64-bit");
  // A filtered HNSW search with few allowed vectors scans them exactly in the graph's flat storage (same positions).
  const faiss::Index* searcher = sel && hnsw_ && params == &sp && hnsw_->storage ? hnsw_->storage : core_;
  faiss_call("ERR_NATIVE", "faiss search failed",
             [&] { searcher->search(Idx(n), x, Idx(k), scores, reinterpret_cast<Idx*>(ids), params); });

  for (size_t i = 0; i < n; ++i) {
    int64_t* ri = ids + i * k;
    float* rs = scores + i * k;
    double qn = 0;
    if (options_.mips == Mips::kL2Transform)
      for (size_t j = 0; j < d; ++j) qn += double(q[i * d + j]) * q[i * d + j];
    for (size_t j = 0; j < k; ++j) {
      if (ri[j] < 0) {
        ri[j] = -1;
        rs[j] = kNone;
        continue;
      }
      if (idmap_) ri[j] = idmap_->id_map[size_t(ri[j])];
      // |q~ - c~|^2 = |q|^2 + phi - 2 q.c
      if (options_.mips == Mips::kL2Transform) rs[j] = float((qn + phi_ - double(rs[j])) / 2);
    }
    // Deterministic order: score descending, then id ascending; empty slots last.
    std::vector<std::pair<float, int64_t>> row(k);
    for (size_t j = 0; j < k; ++j) row[j] = {rs[j], ri[j]};
    std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& b) {
      if ((a.second < 0) != (b.second < 0)) return b.second < 0;
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (size_t j = 0; j < k; ++j) {
      rs[j] = row[j].first;
      ri[j] = row[j].second;
    }
  }
}

std::vector<float> DenseIndex::reconstruct(const int64_t* ids, size_t n) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  for (size_t i = 0; i < n; ++i)
    if (!contains(ids[i])) throw Error("ERR_NOT_FOUND", "id " + std::to_string(ids[i]) + " is not in the index");
  const size_t d = options_.dim, sd = stored_dim();
  std::vector<float> result(n * d);
  float* out = result.data();
  std::vector<float> buf(sd);
  faiss_call("ERR_UNSUPPORTED", "faiss cannot reconstruct from '" + options_.factory + "'", [&] {
    for (size_t i = 0; i < n; ++i) {
      top_->reconstruct(ids[i], buf.data());
      std::memcpy(out + i * d, buf.data(), d * sizeof(float));
    }
  });
  return result;
}

size_t DenseIndex::size() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return size_t(top_->ntotal) - n_dead_;
}

bool DenseIndex::trained() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return top_->is_trained;
}

void DenseIndex::set_search_defaults(const SearchOptions& opt) {
  if (opt.ef_search < 0 || opt.nprobe < 0) throw Error("ERR_RANGE", "efSearch and nprobe must be >= 0");
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (opt.ef_search > 0 && !hnsw_) throw Error("ERR_ARG", "efSearch applies to HNSW indexes only");
  if (opt.nprobe > 0 && !ivf_) throw Error("ERR_ARG", "nprobe applies to IVF indexes only");
  if (opt.ef_search > 0) hnsw_->hnsw.efSearch = opt.ef_search;
  if (opt.nprobe > 0) ivf_->nprobe = std::min<size_t>(size_t(opt.nprobe), ivf_->nlist);
}

int DenseIndex::ef_search() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return hnsw_ ? hnsw_->hnsw.efSearch : 0;
}

int DenseIndex::nprobe() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return ivf_ ? int(ivf_->nprobe) : 0;
}

bool DenseIndex::supports_remove() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return supports_remove_locked();
}

bool DenseIndex::supports_remove_locked() const {
  // Compaction rebuilds HNSW over exact vectors: flat storage only.
  return !hnsw_ || dynamic_cast<const faiss::IndexFlat*>(hnsw_->storage) != nullptr;
}

double DenseIndex::phi() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return phi_;
}

// Layout: magic[8] | u32 version | u32 mips | u64 dim | f64 phi | u32 phi fixed | u32 factory length | factory | faiss bytes |
// u64 faiss byte count | u64 checksum (persist::WordHash of everything before it).
template <class Sink>
void DenseIndex::write(Sink& sink) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  persist::WordHash hash;
  std::vector<uint8_t> head(kMagic, kMagic + 8);
  const auto* binary = dynamic_cast<const SimdBinary*>(core_);
  persist::put(head, binary ? kVersionCenter : kVersion);
  persist::put(head, uint32_t(options_.mips));
  persist::put(head, uint64_t(options_.dim));
  persist::put(head, phi_);
  persist::put(head, uint32_t(phi_fixed_));
  persist::put(head, uint32_t(options_.factory.size()));
  head.insert(head.end(), options_.factory.begin(), options_.factory.end());
  if (binary) {
    persist::put(head, uint32_t(binary->center().size()));
    for (float c : binary->center()) persist::put(head, c);
  }
  sink(head.data(), head.size());
  hash.update(head.data(), head.size());
  HashingWriter<Sink> writer(sink, hash);
  faiss_call("ERR_NATIVE", "faiss could not serialize the index", [&] { faiss::write_index(top_.get(), &writer); });
  std::vector<uint8_t> tail;
  persist::put(tail, uint64_t(writer.written));
  hash.update(tail.data(), tail.size());
  persist::put(tail, hash.digest());
  sink(tail.data(), tail.size());
}

std::vector<uint8_t> DenseIndex::to_bytes() {
  refuse_mapped("serialize");
  compact();
  std::vector<uint8_t> out;
  auto sink = [&](const uint8_t* p, size_t n) { out.insert(out.end(), p, p + n); };
  write(sink);
  return out;
}

void DenseIndex::save(const std::string& path) {
  refuse_mapped("save");
  compact();
  persist::AtomicFile file(path);
  auto sink = [&](const uint8_t* p, size_t n) { file.write(p, n); };
  write(sink);
  file.commit();
}

namespace {

// The file's frame around the header: the magic, a length that can hold header and tail, and (when `verify`) the
// checksum in the last 8 bytes over everything before it. ERR_FORMAT, prefixed by `where`.
void check_frame(const uint8_t* data, size_t n, bool verify, const std::string& where) {
  if (n < 8 || std::memcmp(data, kMagic, 8) != 0) throw Error("ERR_FORMAT", where + "not a Quorum dense index");
  if (n < 8 + 32 + 16) throw Error("ERR_FORMAT", where + "dense index data is truncated");
  if (!verify) return;
  uint64_t stored;
  std::memcpy(&stored, data + n - 8, 8);
  if (persist::word_hash(data, n - 8) != stored) throw Error("ERR_FORMAT", where + "dense index checksum mismatch (corrupt or truncated data)");
}

}  // namespace

std::unique_ptr<DenseIndex> DenseIndex::parse_header(const uint8_t* data, size_t n, size_t* payload_at, uint64_t* payload) {
  persist::Reader r{data, n - 16, 8, "dense index data"};
  const uint32_t version = r.get<uint32_t>();
  if (version != kVersion && version != kVersionCenter)
    throw Error("ERR_FORMAT", "dense index format version " + std::to_string(version) + " is not supported");
  std::unique_ptr<DenseIndex> out(new DenseIndex());
  const uint32_t mips = r.get<uint32_t>();
  if (mips > uint32_t(Mips::kL2Transform)) throw Error("ERR_FORMAT", "dense index header is corrupt (mips mode)");
  out->options_.mips = Mips(mips);
  out->options_.dim = size_t(r.get<uint64_t>());
  if (out->options_.dim == 0 || out->options_.dim > kMaxDim) throw Error("ERR_FORMAT", "dense index header is corrupt (dim)");
  out->phi_ = out->options_.phi = r.get<double>();
  out->phi_fixed_ = r.get<uint32_t>() != 0;
  if (!(out->phi_ >= 0) || !std::isfinite(out->phi_)) throw Error("ERR_FORMAT", "dense index header is corrupt (phi)");
  const uint32_t flen = r.get<uint32_t>();
  r.need(flen, 1);
  out->options_.factory.assign(reinterpret_cast<const char*>(data + r.at), flen);
  r.at += flen;
  if ((version == kVersionCenter) != (out->options_.factory == kBinaryFactory))
    throw Error("ERR_FORMAT", "dense index header is corrupt (version and factory disagree)");
  if (version == kVersionCenter) {
    const uint32_t nc = r.get<uint32_t>();
    if (nc != 0 && nc != out->options_.dim) throw Error("ERR_FORMAT", "dense index header is corrupt (centre)");
    out->center_at_load_.resize(nc);
    for (float& c : out->center_at_load_) {
      c = r.get<float>();
      if (!std::isfinite(c)) throw Error("ERR_FORMAT", "dense index header is corrupt (centre)");
    }
  }
  std::memcpy(payload, data + n - 16, 8);
  if (*payload != r.n - r.at) throw Error("ERR_FORMAT", "dense index sizes are corrupt");
  *payload_at = r.at;
  return out;
}

std::unique_ptr<DenseIndex> DenseIndex::from_bytes(const uint8_t* data, size_t n) {
  check_frame(data, n, true, "");
  size_t at = 0;
  uint64_t payload = 0;
  std::unique_ptr<DenseIndex> out = parse_header(data, n, &at, &payload);
  out->top_ = read_payload(data + at, payload);
  // faiss trusts the sizes and links inside the payload: check them before anything searches it.
  check_loaded(out->top_.get());
  out->bind();
  if (auto* ivfpq = dynamic_cast<faiss::IndexIVFPQ*>(out->core_); ivfpq && ivfpq->is_trained && ivfpq->by_residual)
    faiss_call("ERR_FORMAT", "dense index payload is corrupt", [&] { ivfpq->precompute_table(); });
  return out;
}

std::unique_ptr<DenseIndex> DenseIndex::map(const std::string& path, bool verify) {
  std::shared_ptr<const persist::MappedFile> m = persist::map_file(path);
  const uint8_t* data = m->data;
  const size_t n = m->size;
  check_frame(data, n, verify, path + ": ");
  size_t at = 0;
  uint64_t len = 0;
  std::unique_ptr<DenseIndex> out = parse_header(data, n, &at, &len);
  const bool binary = out->options_.factory == kBinaryFactory;
  if ((out->options_.factory != "Flat" && !binary) || out->options_.mips != Mips::kInnerProduct)
    throw Error("ERR_UNSUPPORTED", path + ": only Flat (or BinaryFlat) inner-product indexes map (this one is '" + out->options_.factory +
                                       "'" + (out->options_.mips != Mips::kInnerProduct ? ", mips l2" : "") + "): load it instead");
  // The payload: "IxM2", the id map's index header, "IxFI", the flat index's header, u64 count of floats, the
  // vectors, u64 count of ids, the ids (faiss's index_write.cpp layout for IndexIDMap2 over IndexFlatIP).
  const uint8_t* p = data + at;
  persist::Reader r{p, size_t(len), 0, "dense index payload"};
  const auto header = [&](const char* tag) {
    r.need(4, 1);
    if (std::memcmp(p + r.at, tag, 4) != 0) throw Error("ERR_FORMAT", path + ": dense index payload is corrupt (expected " + tag + ")");
    r.at += 4;
    const int32_t d = r.get<int32_t>();
    const int64_t ntotal = r.get<int64_t>();
    r.get<int64_t>();
    r.get<int64_t>();
    r.get<uint8_t>();
    if (r.get<int32_t>() != faiss::METRIC_INNER_PRODUCT) throw Error("ERR_FORMAT", path + ": dense index payload is corrupt (metric)");
    if (d != int32_t(out->options_.dim) || ntotal < 0) throw Error("ERR_FORMAT", path + ": dense index payload is corrupt (sizes)");
    return ntotal;
  };
  const int64_t ntotal = header("IxM2");
  if (header("IxFI") != ntotal) throw Error("ERR_FORMAT", path + ": dense index payload is corrupt (the id map and its index differ)");
  const uint64_t floats = r.get<uint64_t>();
  const size_t d = out->options_.dim;
  if (floats != uint64_t(ntotal) * d) throw Error("ERR_FORMAT", path + ": dense index payload is corrupt (vector count)");
  r.need(floats, 4);
  // faiss's layout puts the vectors at a file offset that is not a multiple of 4 (130 for "Flat"): the kernels that
  // read a corpus load it unaligned (simd/vec_*.h: loadu), and reconstruct copies bytes.
  const auto* vectors = reinterpret_cast<const float*>(p + r.at);
  r.at += floats * 4;
  if (r.get<uint64_t>() != uint64_t(ntotal) || r.n - r.at != 8 * uint64_t(ntotal))
    throw Error("ERR_FORMAT", path + ": dense index payload is corrupt (id count)");
  std::unique_ptr<faiss::Index> storage;
  if (binary) storage = SimdBinary::over(vectors, ntotal, faiss::Index::idx_t(d), m, std::move(out->center_at_load_));
  else storage = SimdFlat::over(vectors, ntotal, faiss::Index::idx_t(d), m);
  out->top_ = id_map_over(std::move(storage), true, faiss::METRIC_INNER_PRODUCT, p + r.at, path + ": ");
  out->mapping_ = m;
  out->bind();
  return out;
}

bool DenseIndex::mapped() const {
  const auto* flat = dynamic_cast<const SimdFlat*>(core_);
  return flat && flat->mapped();
}

void DenseIndex::refuse_mapped(const char* what) const {
  if (mapped()) throw Error("ERR_UNSUPPORTED", std::string("a mapped index is read-only: ") + what + " a loaded copy (DenseIndex.load)");
}

std::unique_ptr<DenseIndex> DenseIndex::load(const std::string& path) {
  const std::vector<uint8_t> bytes = persist::read_file(path);
  return from_bytes(bytes.data(), bytes.size());
}

}  // namespace quorum::index
