// A dense vector index over faiss, ranked by inner product, holding 64-bit ids of the caller's choosing.
//
// Built from a faiss factory string ("Flat", "HNSW32", "IVF256,Flat", "IVF256,PQ32", "PCA128,IVF64,Flat", ...).
// Ids: IVF indexes keep them natively (with a hash-table direct map, so remove and reconstruct work); every
// other type sits under an IndexIDMap2. Two ways to rank by inner product (`Mips`):
//   kInnerProduct  faiss's own METRIC_INNER_PRODUCT;
//   kL2Transform   DPR's reduction (docs/methods/kernels.md#mips-as-l2-search): passages become
//                  [c, sqrt(phi - |c|^2)], queries [q, 0], and L2 ranking equals inner-product ranking. phi is the
//                  largest squared norm, fixed by the first train() or add() unless given; a later vector with a
//                  larger norm is ERR_RANGE (the reduction would silently rank it wrong). Scores come back as inner
//                  products.
//
// Results: per query row, ids and scores by score descending, ties by id ascending (faiss itself does not
// order ties); slots beyond what the index can return hold id -1 and score -inf.
//
// Thread safety: search, reconstruct and the accessors share a reader lock and may run at once; train, add,
// remove and loading take the writer lock, and so does an HNSW search whose efSearch (or k) differs from
// the index's own (see search()). OpenMP threads follow set_threads().
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

namespace quorum::persist {
struct MappedFile;
}

namespace faiss {
struct Index;
template <typename IndexT>
struct IndexIDMap2Template;
using IndexIDMap2 = IndexIDMap2Template<Index>;
struct IndexIVF;
struct IndexHNSW;
struct IndexPreTransform;
}  // namespace faiss

namespace quorum::index {

enum class Mips : uint32_t { kInnerProduct = 0, kL2Transform = 1 };

struct DenseIndexOptions {
  size_t dim = 0;
  std::string factory = "Flat";
  Mips mips = Mips::kInnerProduct;
  // kL2Transform only: the largest squared norm to expect; 0 takes it from the first train() or add().
  double phi = 0;
  // HNSW only (0 keeps faiss's defaults: efConstruction 40, efSearch 16).
  int ef_construction = 0;
  int ef_search = 0;
  // IVF only (0 keeps faiss's default of 1).
  int nprobe = 0;
};

// Per-call search settings; 0 keeps the index's own.
struct SearchOptions {
  int ef_search = 0;
  int nprobe = 0;
  // A filter inside the search: only these ids (any order; ids not in the index are ignored) can be returned
  // (faiss's ID selectors; the flat storage scans the allowed rows only). Exact indexes give exactly the filtered
  // top-k; HNSW and IVF search the graph or lists as usual and skip what is not allowed.
  bool filtered = false;
  const int64_t* allowed = nullptr;
  size_t n_allowed = 0;
  // HNSW with a filter: scan the allowed vectors exactly when at most this many are held (-1: the default rule,
  // at most 50,000 or under a tenth of the index; 0: always walk the graph).
  int64_t scan_below = -1;
};

class DenseIndex {
 public:
  // ERR_ARG for a factory string faiss rejects, one that asks for IDMap itself, or parameters that cannot work
  // (faiss_checks.h), ERR_UNSUPPORTED for an index type outside faiss_checks.h's list, ERR_RANGE for dim 0.
  explicit DenseIndex(const DenseIndexOptions& options);
  ~DenseIndex();

  // Trains IVF / PQ / PCA stages on n vectors (ERR_STATE if already trained; a no-op need for Flat and HNSW).
  void train(const float* x, size_t n);
  // Adds n vectors with their ids. ERR_STATE before training where it is needed, ERR_DUPLICATE_ID for an id
  // already held or repeated in the batch, ERR_NONFINITE for NaN or infinity; a failed batch adds nothing.
  void add(const float* x, const int64_t* ids, size_t n);
  // Removes the given ids (unknown ones are skipped) and returns how many went; the ids can be added again.
  // HNSW (flat storage): a removed vector's node stays in the graph as a tombstone, skipped by every search and by
  // size(), until compaction rebuilds the graph from the live vectors: on its own once tombstones pass a quarter of
  // the nodes, before a save, or by compact(). HNSW over PQ / SQ codes: ERR_UNSUPPORTED.
  size_t remove(const int64_t* ids, size_t n);
  // Rebuilds an HNSW graph without its tombstones (a no-op otherwise); returns how many went.
  size_t compact();
  // Top-k of n queries into ids / scores [n, k].
  void search(const float* q, size_t n, size_t k, const SearchOptions& opt, int64_t* ids, float* scores) const;
  // The stored vectors of the given ids, [n, dim] (approximate for PQ / SQ / PCA). ERR_NOT_FOUND for an id not
  // held, checked before the result is allocated.
  std::vector<float> reconstruct(const int64_t* ids, size_t n) const;

  size_t size() const;
  size_t dim() const { return options_.dim; }
  bool trained() const;
  bool supports_remove() const;
  // Sets the index's own search settings (0 keeps one); ERR_ARG for a setting the index type does not have.
  void set_search_defaults(const SearchOptions& opt);
  // The index's own search settings (0 where they do not apply).
  int ef_search() const;
  int nprobe() const;
  const std::string& factory() const { return options_.factory; }
  Mips mips() const { return options_.mips; }
  double phi() const;

  // The index as bytes: magic "QDNIDX01", version, options, faiss's own serialization, checksum. from_bytes
  // and load throw ERR_FORMAT for anything that is not a complete, intact index and keep the old contents.
  // A save compacts first: tombstones are never written.
  std::vector<uint8_t> to_bytes();
  static std::unique_ptr<DenseIndex> from_bytes(const uint8_t* data, size_t n);
  // Atomic file save (temporary file, fsync, rename; ERR_IO on failure), streamed without a second copy.
  void save(const std::string& path);
  static std::unique_ptr<DenseIndex> load(const std::string& path);
  // The file `path` mapped read-only instead of read (docs/api.md#mapping-a-saved-index): N processes serving one
  // large Flat index share one copy of its vectors in the page cache, and opening it costs the header, the ids and an
  // mmap. Flat inner-product indexes only (factory "Flat", mips "inner-product"; ERR_UNSUPPORTED otherwise: load
  // them). The header, sizes and ids are checked, and with `verify` the checksum over the whole file (a read of
  // every page); ERR_IO when the file cannot be opened or mapped, ERR_FORMAT for damage. It searches (filters too),
  // reconstructs and answers info as a loaded index; add, remove, train, save and to_bytes are ERR_UNSUPPORTED.
  static std::unique_ptr<DenseIndex> map(const std::string& path, bool verify);
  bool mapped() const;

 private:
  DenseIndex() = default;
  void bind();  // finds the faiss sub-objects below top_
  bool contains(int64_t id) const;
  bool dead(size_t position) const { return position / 8 < dead_.size() && (dead_[position / 8] >> (position % 8)) & 1; }
  size_t compact_locked();  // compact() with the writer lock held
  bool supports_remove_locked() const;
  // search() with the lock held and HNSW's efSearch already set.
  void search_locked(const float* q, size_t n, size_t k, const SearchOptions& opt, int64_t* ids, float* scores) const;
  size_t stored_dim() const;  // dim, + 1 under the L2 transform
  // Checks x (n x dim) and returns the vectors faiss stores under the L2 transform (empty otherwise: x itself),
  // with the phi they assume (the batch's largest squared norm when phi is not fixed yet).
  std::vector<float> augment(const float* x, size_t n, bool fix_phi, double& phi) const;
  template <class Writer>
  void write(Writer& w) const;
  // The header's fields into a new index; returns the offset of faiss's bytes, whose count is *payload.
  static std::unique_ptr<DenseIndex> parse_header(const uint8_t* data, size_t n, size_t* payload_at, uint64_t* payload);
  void refuse_mapped(const char* what) const;

  DenseIndexOptions options_;
  mutable std::shared_mutex mutex_;
  std::unique_ptr<faiss::Index> top_;  // search() may set HNSW's efSearch under the writer lock
  faiss::IndexIDMap2* idmap_ = nullptr;       // null when ids live in an IVF
  faiss::IndexPreTransform* pre_ = nullptr;   // a PCA / OPQ / ... stage, if any
  faiss::Index* core_ = nullptr;              // what searches: below IDMap2 and the pre-transform
  faiss::IndexIVF* ivf_ = nullptr;
  faiss::IndexHNSW* hnsw_ = nullptr;
  // A mapped index's file (map()): checked before and after each search, so a file truncated under it is ERR_IO
  // rather than SIGBUS (common/mapping_guard.h).
  std::shared_ptr<const persist::MappedFile> mapping_;
  std::vector<uint8_t> dead_;  // HNSW: tombstones, a bitmap over the graph's positions
  size_t n_dead_ = 0;
  std::vector<float> center_at_load_;  // a binary index's centre, from its header to bind()
  double phi_ = 0;         // kL2Transform: the largest squared norm the stored vectors assume
  bool phi_fixed_ = false;  // set by options, or by the first train() / add()
};

// k centroids of n vectors [n, dim] by faiss's k-means (niter iterations, seeded; spherical: unit centroids, for
// inner-product search), [k, dim]. ERR_RANGE unless 1 <= k <= n; ERR_NONFINITE for NaN or infinity.
std::vector<float> kmeans(const float* x, size_t n, size_t dim, size_t k, int niter, int seed, bool spherical);

// OpenMP threads each faiss call uses (the library-wide thread setting).
void set_threads(int n);
int threads();

}  // namespace quorum::index
