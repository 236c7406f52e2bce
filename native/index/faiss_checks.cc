#include "faiss_checks.h"

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIDMap.h>
#include <faiss/IndexIVF.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/IndexIVFPQ.h>
#include <faiss/IndexPQ.h>
#include <faiss/IndexPreTransform.h>
#include <faiss/IndexScalarQuantizer.h>
#include <faiss/VectorTransform.h>
#include <faiss/invlists/InvertedLists.h>

#include <cxxabi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <typeinfo>

#include "../common/error.h"
#include "simd_flat.h"

namespace quorum::index {
namespace {

using Idx = faiss::Index::idx_t;

// Generous bounds on what a parameter read from a file may ask for: past them, faiss would allocate without
// limit (an efSearch of 2^31 sizes a heap by it).
constexpr int kMaxNeighbours = 1 << 16;
constexpr int kMaxEf = 1 << 24;
constexpr size_t kMaxNlist = size_t(1) << 32;

// "IndexNSGFlat" for a faiss::IndexNSGFlat.
template <class T>
std::string type_name(const T& x) {
  const char* mangled = typeid(x).name();
  int status = 0;
  char* plain = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = status == 0 && plain ? plain : mangled;
  std::free(plain);
  if (out.rfind("faiss::", 0) == 0) out = out.substr(7);
  return out;
}

// A bool or enum field as the bytes faiss copied into it from the file: loading it as its own type before it is
// known to hold a valid value would be undefined behaviour (UBSan: "load of value 64 ... for type 'bool'").
template <class T>
int64_t raw(const T& field) {
  static_assert(sizeof(T) <= 8, "a scalar field");
  int64_t v = 0;
  if constexpr (sizeof(T) == 1) {
    uint8_t b;
    std::memcpy(&b, &field, 1);
    v = b;
  } else if constexpr (sizeof(T) == 4) {
    int32_t i;
    std::memcpy(&i, &field, 4);
    v = i;
  } else {
    std::memcpy(&v, &field, sizeof(T));
  }
  return v;
}

struct Checker {
  bool loaded;  // a file's contents (ERR_FORMAT, sizes checked) or a factory's product (ERR_ARG, parameters)

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(loaded ? "ERR_FORMAT" : "ERR_ARG", loaded ? "dense index payload is corrupt: " + why : why);
  }
  // Literal messages: no string is built unless the check fails (some run once per node or neighbour).
  void require(bool ok, const char* why) const {
    if (!ok) fail(why);
  }
  void require(bool ok, const std::string& why) const {
    if (!ok) fail(why);
  }
  [[noreturn]] void unsupported(const faiss::Index* ix, const char* role) const {
    const std::string what = "faiss " + (ix ? type_name(*ix) : std::string("null")) + " (as " + role + ")";
    if (loaded) throw Error("ERR_FORMAT", "dense index payload holds " + what + ", which DenseIndex does not write");
    throw Error("ERR_UNSUPPORTED", "DenseIndex does not support " + what +
                                       ": use Flat, HNSW, IVF (Flat, PQ or SQ codes), PQ or SQ, optionally behind PCA / OPQ");
  }

  void common(const faiss::Index* ix, const char* role) const {
    require(raw(ix->is_trained) <= 1, std::string(role) + " trained flag is not a boolean");
    require(raw(ix->metric_type) == faiss::METRIC_INNER_PRODUCT || raw(ix->metric_type) == faiss::METRIC_L2,
            std::string(role) + " metric is neither inner product nor L2");
    require(ix->d >= 1, std::string(role) + " dimension is not positive");
    require(ix->ntotal >= 0, std::string(role) + " vector count is negative");
  }

  // Storage whose vectors are ntotal codes of code_size bytes.
  void flat_codes(const faiss::IndexFlatCodes* ix, size_t code_size, const char* role) const {
    require(ix->code_size == code_size, std::string(role) + " code size does not match its parameters");
    if (loaded) require(ix->codes.size() == size_t(ix->ntotal) * ix->code_size, std::string(role) + " codes do not match its size");
  }

  void pq(const faiss::ProductQuantizer& q, size_t d, const char* role) const {
    require(q.M >= 1 && q.nbits >= 1 && q.nbits <= 16,
            std::string(role) + " product quantizer needs at least 1 sub-quantizer of 1 to 16 bits (got " +
                std::to_string(q.M) + "x" + std::to_string(q.nbits) + ")");
    require(q.d == d && q.dsub * q.M == d && q.ksub == (size_t(1) << q.nbits),
            std::string(role) + " product quantizer does not divide the dimension");
    require(q.code_size == (q.M * q.nbits + 7) / 8, std::string(role) + " product quantizer code size is inconsistent");
    if (loaded) require(q.centroids.size() == q.d * q.ksub, std::string(role) + " product quantizer centroids do not match");
  }

  void sq(const faiss::ScalarQuantizer& q, size_t d, bool trained, const char* role) const {
    require(raw(q.qtype) >= faiss::ScalarQuantizer::QT_8bit && raw(q.qtype) <= faiss::ScalarQuantizer::QT_6bit,
            std::string(role) + " scalar quantizer type is unknown");
    require(raw(q.rangestat) >= faiss::ScalarQuantizer::RS_minmax && raw(q.rangestat) <= faiss::ScalarQuantizer::RS_optim,
            std::string(role) + " scalar quantizer range statistic is unknown");
    require(q.d == d, std::string(role) + " scalar quantizer dimension does not match");
    const faiss::ScalarQuantizer fresh(d, q.qtype);
    require(q.code_size == fresh.code_size, std::string(role) + " scalar quantizer code size is inconsistent");
    if (loaded && trained) {
      size_t want = 0;
      switch (q.qtype) {
        case faiss::ScalarQuantizer::QT_8bit: case faiss::ScalarQuantizer::QT_4bit: case faiss::ScalarQuantizer::QT_6bit:
          want = 2 * d;
          break;
        case faiss::ScalarQuantizer::QT_8bit_uniform: case faiss::ScalarQuantizer::QT_4bit_uniform:
          want = 2;
          break;
        default:
          want = q.trained.size();  // fp16 and direct codes keep no table
      }
      require(q.trained.size() == want, std::string(role) + " scalar quantizer table does not match");
    }
  }

  // Flat, SQ or PQ storage (HNSW's storage, a standalone core, an IVF's coarse quantizer).
  bool storage(const faiss::Index* ix, const char* role) const {
    const std::type_info& t = typeid(*ix);
    if (t == typeid(faiss::IndexFlat) || t == typeid(faiss::IndexFlatIP) || t == typeid(faiss::IndexFlatL2) ||
        t == typeid(SimdFlat)) {
      common(ix, role);
      flat_codes(static_cast<const faiss::IndexFlatCodes*>(ix), size_t(ix->d) * sizeof(float), role);
      return true;
    }
    if (t == typeid(faiss::IndexPQ)) {
      common(ix, role);
      auto* p = static_cast<const faiss::IndexPQ*>(ix);
      pq(p->pq, size_t(ix->d), role);
      flat_codes(p, p->pq.code_size, role);
      require(raw(p->search_type) == faiss::IndexPQ::ST_PQ && raw(p->encode_signs) <= 1, std::string(role) + " uses a polysemous search DenseIndex does not set");
      return true;
    }
    if (t == typeid(faiss::IndexScalarQuantizer)) {
      common(ix, role);
      auto* s = static_cast<const faiss::IndexScalarQuantizer*>(ix);
      sq(s->sq, size_t(ix->d), ix->is_trained, role);
      flat_codes(s, s->sq.code_size, role);
      return true;
    }
    return false;
  }

  void hnsw(const faiss::IndexHNSW* ix) const {
    common(ix, "HNSW index");
    const faiss::HNSW& g = ix->hnsw;
    require(ix->storage != nullptr, "HNSW index has no storage");
    require(ix->reconstruct_from_neighbors == nullptr, "HNSW index reconstructs from neighbours (2-level), unsupported");
    if (!storage(ix->storage, "HNSW storage")) unsupported(ix->storage, "HNSW storage");
    require(ix->storage->d == ix->d && ix->storage->ntotal == ix->ntotal, "HNSW storage does not match the graph's size");
    const auto& cum = g.cum_nneighbor_per_level;
    // level 0 holds 2M links; faiss's level table is empty for M = 1 and meaningless for M = 0
    require(cum.size() >= 2 && cum[0] == 0 && cum[1] >= 4 && !g.assign_probas.empty() &&
                cum.size() == g.assign_probas.size() + 1,
            "HNSW needs M >= 2");
    for (double p : g.assign_probas) require(std::isfinite(p) && p >= 0 && p <= 1, "HNSW level probabilities are not in [0, 1]");
    for (size_t l = 1; l < cum.size(); ++l)
      require(cum[l] - cum[l - 1] >= 1 && cum[l] - cum[l - 1] <= kMaxNeighbours, "HNSW neighbour counts are out of range");
    require(g.efConstruction >= 1 && g.efConstruction <= kMaxEf && g.efSearch >= 1 && g.efSearch <= kMaxEf,
            "HNSW efConstruction and efSearch must be in [1, 2^24]");
    // upper_beam sizes a heap per search (DenseIndex leaves it at faiss's 1)
    require(g.upper_beam >= 1 && g.upper_beam <= 1024, "HNSW upper beam out of range");
    if (!loaded) return;
    const size_t n = size_t(ix->ntotal);
    require(g.levels.size() == n && g.offsets.size() == n + 1 && g.offsets[0] == 0, "HNSW level and offset tables do not match its size");
    const int top_level = int(cum.size()) - 1;
    for (size_t i = 0; i < n; ++i) {
      if (!(g.levels[i] >= 1 && g.levels[i] <= top_level)) fail("HNSW node " + std::to_string(i) + " has an impossible level");
      if (!(g.offsets[i + 1] >= g.offsets[i] && g.offsets[i + 1] - g.offsets[i] == size_t(cum[size_t(g.levels[i])])))
        fail("HNSW node " + std::to_string(i) + " has an inconsistent neighbour range");
    }
    require(g.neighbors.size() == g.offsets[n], "HNSW neighbour table does not match its offsets");
    for (const auto v : g.neighbors) require(v >= -1 && size_t(int64_t(v) + 1) <= n, "HNSW neighbour id out of range");
    if (n == 0) {
      require(g.entry_point == -1, "empty HNSW graph has an entry point");
    } else {
      require(g.entry_point >= 0 && size_t(g.entry_point) < n, "HNSW entry point out of range");
      require(g.max_level == g.levels[size_t(g.entry_point)] - 1, "HNSW entry point is not on the top level");
    }
  }

  void ivf(const faiss::IndexIVF* ix) const {
    common(ix, "IVF index");
    require(ix->nlist >= 1 && ix->nlist <= kMaxNlist, "IVF needs at least one list (nlist >= 1)");
    require(ix->quantizer != nullptr, "IVF index has no coarse quantizer");
    const faiss::Index* q = ix->quantizer;
    if (auto* h = dynamic_cast<const faiss::IndexHNSW*>(q); h && typeid(*q) == typeid(faiss::IndexHNSWFlat)) {
      hnsw(h);
    } else if (!storage(q, "IVF coarse quantizer") || typeid(*q) == typeid(faiss::IndexPQ) ||
               typeid(*q) == typeid(faiss::IndexScalarQuantizer)) {
      unsupported(q, "IVF coarse quantizer");
    }
    require(q->d == ix->d, "IVF coarse quantizer dimension does not match");
    require(raw(ix->own_fields) <= 1, "IVF flags are not booleans");
    if (loaded && ix->is_trained) require(size_t(q->ntotal) == ix->nlist, "IVF coarse quantizer does not hold nlist centroids");
    const std::type_info& t = typeid(*ix);
    if (t == typeid(faiss::IndexIVFFlat)) {
      require(ix->code_size == size_t(ix->d) * sizeof(float), "IVF-Flat code size is inconsistent");
    } else if (t == typeid(faiss::IndexIVFPQ)) {
      auto* p = static_cast<const faiss::IndexIVFPQ*>(ix);
      require(raw(p->by_residual) <= 1, "IVF-PQ residual flag is not a boolean");
      pq(p->pq, size_t(ix->d), "IVF-PQ");
      require(ix->code_size == p->pq.code_size, "IVF-PQ code size is inconsistent");
    } else if (t == typeid(faiss::IndexIVFScalarQuantizer)) {
      auto* s = static_cast<const faiss::IndexIVFScalarQuantizer*>(ix);
      require(raw(s->by_residual) <= 1, "IVF-SQ residual flag is not a boolean");
      sq(s->sq, size_t(ix->d), ix->is_trained, "IVF-SQ");
      require(ix->code_size == s->sq.code_size, "IVF-SQ code size is inconsistent");
    } else {
      unsupported(ix, "IVF index");
    }
    if (!loaded) return;
    require(ix->nprobe >= 1 && ix->nprobe <= ix->nlist, "IVF nprobe is outside [1, nlist]");
    auto* lists = dynamic_cast<const faiss::ArrayInvertedLists*>(ix->invlists);
    require(lists && typeid(*ix->invlists) == typeid(faiss::ArrayInvertedLists), "IVF inverted lists are not in memory");
    require(lists->nlist == ix->nlist && lists->code_size == ix->code_size && lists->ids.size() == ix->nlist &&
                lists->codes.size() == ix->nlist,
            "IVF inverted lists do not match the index");
    size_t total = 0;
    for (size_t l = 0; l < ix->nlist; ++l) {
      if (lists->codes[l].size() != lists->ids[l].size() * ix->code_size) fail("IVF list " + std::to_string(l) + " codes do not match its ids");
      for (Idx id : lists->ids[l]) require(id >= 0, "IVF list holds a negative id");
      total += lists->ids[l].size();
    }
    require(total == size_t(ix->ntotal), "IVF lists do not add up to the index size");
    require(raw(ix->direct_map.type) == faiss::DirectMap::Hashtable && ix->direct_map.hashtable.size() == total,
            "IVF id map does not match its lists");
    for (const auto& [id, lo] : ix->direct_map.hashtable) {
      const uint64_t list = uint64_t(lo) >> 32, offset = uint64_t(lo) & 0xffffffffu;
      require(lo >= 0 && list < ix->nlist && offset < lists->ids[list].size() && lists->ids[list][offset] == id,
              "IVF id map points outside its lists");
    }
  }

  void transform(const faiss::VectorTransform* vt) const {
    require(vt != nullptr && vt->d_in >= 1 && vt->d_out >= 1, "vector transform dimensions are not positive");
    require(raw(vt->is_trained) <= 1, "vector transform trained flag is not a boolean");
    if (auto* lt = dynamic_cast<const faiss::LinearTransform*>(vt))
      require(raw(lt->have_bias) <= 1 && raw(lt->is_orthonormal) <= 1, "linear transform flags are not booleans");
    if (auto* pca = dynamic_cast<const faiss::PCAMatrix*>(vt)) require(raw(pca->random_rotation) <= 1, "PCA flags are not booleans");
    const std::type_info& t = typeid(*vt);
    if (auto* lt = dynamic_cast<const faiss::LinearTransform*>(vt);
        lt && (t == typeid(faiss::PCAMatrix) || t == typeid(faiss::OPQMatrix) || t == typeid(faiss::RandomRotationMatrix) ||
               t == typeid(faiss::LinearTransform))) {
      if (auto* opq = dynamic_cast<const faiss::OPQMatrix*>(vt)) require(opq->M >= 1, "OPQ needs M >= 1");
      if (loaded && vt->is_trained) {
        require(lt->A.size() == size_t(vt->d_in) * size_t(vt->d_out), "linear transform matrix does not match its dimensions");
        require(!lt->have_bias || lt->b.size() == size_t(vt->d_out), "linear transform bias does not match its dimensions");
      }
      return;
    }
    if (t == typeid(faiss::NormalizationTransform)) {
      require(vt->d_in == vt->d_out, "normalisation changes the dimension");
      return;
    }
    if (t == typeid(faiss::CenteringTransform)) {
      require(vt->d_in == vt->d_out, "centring changes the dimension");
      if (loaded && vt->is_trained)
        require(static_cast<const faiss::CenteringTransform*>(vt)->mean.size() == size_t(vt->d_in), "centring mean does not match");
      return;
    }
    throw Error(loaded ? "ERR_FORMAT" : "ERR_UNSUPPORTED",
                "DenseIndex does not support the vector transform " + type_name(*vt));
  }

  // What searches: below IndexIDMap2 and any pre-transform.
  void core(const faiss::Index* ix) const {
    if (storage(ix, "index")) return;
    if (auto* h = dynamic_cast<const faiss::IndexHNSW*>(ix)) {
      const std::type_info& t = typeid(*ix);
      // HNSW over PQ is left out: faiss's reader computes its distance table through an unchecked cast.
      if (t != typeid(faiss::IndexHNSWFlat) && t != typeid(faiss::IndexHNSWSQ))
        unsupported(ix, "HNSW index");
      return hnsw(h);
    }
    if (auto* v = dynamic_cast<const faiss::IndexIVF*>(ix)) return ivf(v);
    unsupported(ix, "index");
  }

  void top(const faiss::Index* ix) const {
    require(ix != nullptr, "no index");
    common(ix, "index");
    const faiss::Index* inner = ix;
    if (auto* m = dynamic_cast<const faiss::IndexIDMap2*>(ix)) {
      require(m->index != nullptr, "id map holds no index");
      inner = m->index;
      require(inner->d == ix->d && inner->ntotal == ix->ntotal, "id map does not match the index below it");
      // Its ids are checked where they are read (non-negative, unique: dense_index.cc's read_payload builds the
      // reverse map from them), so the sizes are all that is left to compare.
      if (loaded)
        require(m->id_map.size() == size_t(ix->ntotal) && m->rev_map.size() == m->id_map.size(),
                "id map is inconsistent (wrong size or repeated ids)");
    } else if (dynamic_cast<const faiss::IndexIDMap*>(ix)) {
      unsupported(ix, "id map");
    }
    if (auto* pre = dynamic_cast<const faiss::IndexPreTransform*>(inner)) {
      require(pre->index != nullptr && !pre->chain.empty(), "pre-transform holds no index or no transform");
      int d = pre->d;
      for (const faiss::VectorTransform* vt : pre->chain) {
        transform(vt);
        require(vt->d_in == d, "vector transform chain dimensions do not connect");
        d = vt->d_out;
      }
      require(pre->index->d == d && pre->index->ntotal == pre->ntotal, "pre-transform does not match the index below it");
      if (dynamic_cast<const faiss::IndexPreTransform*>(pre->index) || dynamic_cast<const faiss::IndexIDMap*>(pre->index))
        unsupported(pre->index, "nested index");
      inner = pre->index;
    }
    core(inner);
  }
};

}  // namespace

void check_built(const faiss::Index* top) { Checker{false}.top(top); }
void check_loaded(const faiss::Index* top) { Checker{true}.top(top); }

}  // namespace quorum::index
