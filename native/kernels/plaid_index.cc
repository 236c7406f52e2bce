// docs/methods/colbert.md#the-compressed-index: ColBERTv2's residual codec and PLAID's stages (plaid_index.h).
#include "plaid_index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "../common/error.h"
#include "../common/tensor_file.h"
#include "../common/thread_pool.h"
#include "centroid_index.h"
#include "dense_search.h"
#include "maxsim.h"
#include "topk.h"

namespace quorum::kernels {

// ---- ResidualCodec ----

ResidualCodec::ResidualCodec(size_t dim, size_t nbits, const float* cutoffs, const float* weights)
    : dim_(dim), nbits_(nbits) {
  need(nbits == 1 || nbits == 2, "ERR_RANGE", "nbits must be 1 or 2, got " + std::to_string(nbits));
  need(dim > 0 && dim * nbits % 8 == 0, "ERR_SHAPE",
       "a residual of " + std::to_string(dim) + " dimensions at " + std::to_string(nbits) + " bits is not whole bytes");
  const size_t nb = size_t(1) << nbits;
  cutoffs_.assign(cutoffs, cutoffs + nb - 1);
  weights_.assign(weights, weights + nb);
  for (size_t i = 0; i < cutoffs_.size(); ++i)
    need(std::isfinite(cutoffs_[i]) && (i == 0 || cutoffs_[i - 1] <= cutoffs_[i]), "ERR_FORMAT",
         "the residual cut-offs must be finite and ascending");
  for (float w : weights_) need(std::isfinite(w), "ERR_FORMAT", "the residual bucket weights must be finite");
  const size_t per = 8 / nbits;
  lut_.resize(256 * per);
  for (size_t v = 0; v < 256; ++v)
    for (size_t k = 0; k < per; ++k) lut_[v * per + k] = weights_[(v >> (k * nbits)) & (nb - 1)];
}

ResidualCodec ResidualCodec::fit(size_t dim, size_t nbits, const float* residuals, size_t n) {
  need(n > 0, "ERR_ARG", "fitting the residual buckets needs at least one token");
  need(nbits == 1 || nbits == 2, "ERR_RANGE", "nbits must be 1 or 2, got " + std::to_string(nbits));
  std::vector<float> v(residuals, residuals + n * dim);
  std::sort(v.begin(), v.end());
  const auto quantile = [&](double q) {
    const double pos = q * double(v.size() - 1);
    const size_t lo = size_t(pos);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return float(double(v[lo]) + (pos - double(lo)) * (double(v[hi]) - double(v[lo])));
  };
  const size_t nb = size_t(1) << nbits;
  std::vector<float> cut(nb - 1), w(nb);
  for (size_t i = 1; i < nb; ++i) cut[i - 1] = quantile(double(i) / double(nb));
  for (size_t i = 0; i < nb; ++i) w[i] = quantile((double(i) + 0.5) / double(nb));
  return ResidualCodec(dim, nbits, cut.data(), w.data());
}

void ResidualCodec::encode(const float* x, const float* c, uint8_t* out) const {
  std::memset(out, 0, row_bytes());
  const size_t per = 8 / nbits_;
  for (size_t d = 0; d < dim_; ++d) {
    const float r = x[d] - c[d];
    const auto b = size_t(std::lower_bound(cutoffs_.begin(), cutoffs_.end(), r) - cutoffs_.begin());  // cut-offs < r
    out[d / per] = uint8_t(out[d / per] | (b << ((d % per) * nbits_)));
  }
}

void ResidualCodec::decode(const float* c, const uint8_t* in, float* out) const {
  const size_t per = 8 / nbits_;
  float ss = 0.f;
  for (size_t j = 0; j < row_bytes(); ++j) {
    const float* w = lut_.data() + size_t(in[j]) * per;
    for (size_t k = 0; k < per; ++k) {
      const float v = c[j * per + k] + w[k];
      out[j * per + k] = v;
      ss += v * v;
    }
  }
  const float inv = 1.f / std::max(std::sqrt(ss), 1e-12f);
  for (size_t d = 0; d < dim_; ++d) out[d] *= inv;
}

// ---- PlaidIndex ----

namespace {

constexpr float kEmptyLane = -9999.f;  // a question token that no kept token of a passage reaches (ColBERT's value)

void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(uint8_t(v | 0x80));
    v >>= 7;
  }
  out.push_back(uint8_t(v));
}

template <class F>
void each_varint(const std::vector<uint8_t>& in, F&& f) {
  int64_t at = -1;
  for (size_t i = 0; i < in.size();) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const uint8_t b = in[i++];
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    at += int64_t(v);
    f(at);
  }
}

size_t round_up(size_t a, size_t b) { return (a + b - 1) / b * b; }

}  // namespace

PlaidIndex::PlaidIndex(const float* centroids, size_t n_centroids, ResidualCodec codec, Dtype full)
    : n_centroids_(n_centroids), code_bytes_(n_centroids <= 65536 ? 2 : 4), full_(full),
      centroids_(centroids, centroids + n_centroids * codec.dim()), codec_(std::move(codec)) {
  need(n_centroids > 0, "ERR_SHAPE", "a ColBERT index needs at least one centroid");
  need(full == Dtype::F32 || full == Dtype::F16 || full == Dtype::U8, "ERR_DTYPE", "full token vectors are kept as f32 or f16");
  need(n_centroids <= size_t(std::numeric_limits<int32_t>::max()), "ERR_RANGE", "too many centroids");
  for (float v : centroids_) need(std::isfinite(v), "ERR_NONFINITE", "a centroid holds NaN or Infinity");
  lists_.assign(n_centroids, {});
  list_last_.assign(n_centroids, -1);
  list_count_.assign(n_centroids, 0);
}

size_t PlaidIndex::passages() const { return starts_.size() - 1; }
size_t PlaidIndex::tokens() const { return size_t(starts_.back()); }
size_t PlaidIndex::removed() const { return n_removed_; }
size_t PlaidIndex::length(size_t row) const { return size_t(starts_[row + 1] - starts_[row]); }

size_t PlaidIndex::stored_bytes() const {
  size_t lists = 0;
  for (const auto& l : lists_) lists += l.size();  // the full vectors (kept on disk, read for stage 4) not counted
  return tokens() * (code_bytes_ + codec_.row_bytes()) + passages() * sizeof(int32_t) + lists;
}

size_t PlaidIndex::code(size_t t) const {
  const uint8_t* p = t < base_.tokens ? base_.codes.as<uint8_t>() + t * code_bytes_ : tail_codes_.data() + (t - base_.tokens) * code_bytes_;
  if (code_bytes_ == 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

const uint8_t* PlaidIndex::full_row(size_t t) const {
  const size_t rb = codec_.dim() * dtype_size(full_);
  return t < base_.tokens ? base_.vectors.as<uint8_t>() + t * rb : tail_vectors_.data() + (t - base_.tokens) * rb;
}

const uint8_t* PlaidIndex::residual(size_t t) const {
  const size_t rb = codec_.row_bytes();
  return t < base_.tokens ? base_.residuals.as<uint8_t>() + t * rb : tail_residuals_.data() + (t - base_.tokens) * rb;
}

void PlaidIndex::index_codes(size_t first) {
  for (size_t p = first; p < passages(); ++p)
    for (auto t = size_t(starts_[p]); t < size_t(starts_[p + 1]); ++t) {
      const size_t c = code(t);
      if (list_last_[c] == int64_t(p)) continue;
      put_varint(lists_[c], uint64_t(int64_t(p) - list_last_[c]));
      list_last_[c] = int64_t(p);
      ++list_count_[c];
    }
}

void PlaidIndex::add(const float* x, const int32_t* codes, size_t n_tokens, const int32_t* lengths, size_t n) {
  int64_t total = 0;
  for (size_t p = 0; p < n; ++p) {
    need(lengths[p] >= 0, "ERR_RANGE", [&] { return "passage " + std::to_string(p) + " has a negative length"; });
    total += lengths[p];
  }
  need(size_t(total) == n_tokens, "ERR_SHAPE",
       "the passage lengths add up to " + std::to_string(total) + " tokens, the vectors are " + std::to_string(n_tokens));
  for (size_t t = 0; t < n_tokens; ++t)
    need(codes[t] >= 0 && size_t(codes[t]) < n_centroids_, "ERR_RANGE", [&] {
      return "token " + std::to_string(t) + " has centroid " + std::to_string(codes[t]) + " outside the " +
             std::to_string(n_centroids_) + " centroids";
    });
  std::unique_lock lock(mutex_);
  need(passages() + n <= size_t(std::numeric_limits<int32_t>::max()), "ERR_RANGE", "a ColBERT index holds at most 2^31 - 1 passages");
  const size_t dim = codec_.dim(), rb = codec_.row_bytes();
  const size_t at = tail_codes_.size() / code_bytes_;
  tail_codes_.resize((at + n_tokens) * code_bytes_);
  tail_residuals_.resize((at + n_tokens) * rb);
  for (size_t t = 0; t < n_tokens; ++t) {
    const auto c = uint32_t(codes[t]);
    if (code_bytes_ == 2) {
      const auto v = uint16_t(c);
      std::memcpy(tail_codes_.data() + (at + t) * 2, &v, 2);
    } else {
      std::memcpy(tail_codes_.data() + (at + t) * 4, &c, 4);
    }
    codec_.encode(x + t * dim, centroids_.data() + size_t(c) * dim, tail_residuals_.data() + (at + t) * rb);
  }
  if (full_ == Dtype::F32) {
    tail_vectors_.resize((at + n_tokens) * dim * 4);
    std::memcpy(tail_vectors_.data() + at * dim * 4, x, n_tokens * dim * 4);
  } else if (full_ == Dtype::F16) {
    tail_vectors_.resize((at + n_tokens) * dim * 2);
    auto* h = reinterpret_cast<uint16_t*>(tail_vectors_.data() + at * dim * 2);
    for (size_t i = 0; i < n_tokens * dim; ++i) h[i] = f32_to_f16(x[i]);
  }
  const size_t first = passages();
  for (size_t p = 0; p < n; ++p) starts_.push_back(starts_.back() + lengths[p]);
  removed_.resize(passages(), 0);
  index_codes(first);
}

size_t PlaidIndex::remove(const int32_t* rows, size_t n) {
  std::unique_lock lock(mutex_);
  for (size_t i = 0; i < n; ++i)
    need(rows[i] >= 0 && size_t(rows[i]) < passages(), "ERR_RANGE", [&] {
      return "row " + std::to_string(rows[i]) + " is not in the index (" + std::to_string(passages()) + " passages)";
    });
  size_t done = 0;
  for (size_t i = 0; i < n; ++i)
    if (!removed_[size_t(rows[i])]) removed_[size_t(rows[i])] = 1, ++done;
  n_removed_ += done;
  return done;
}

void PlaidIndex::save(const std::string& dir) const {
  std::shared_lock lock(mutex_);
  const size_t T = tokens(), P = passages(), rb = codec_.row_bytes();
  const auto joined = [&](const AlignedBuffer& base, const std::vector<uint8_t>& tail, size_t row) {
    std::vector<uint8_t> all(T * row);
    if (base_.tokens) std::memcpy(all.data(), base.data(), base_.tokens * row);
    if (!tail.empty()) std::memcpy(all.data() + base_.tokens * row, tail.data(), tail.size());
    return all;
  };
  {
    const auto codes = joined(base_.codes, tail_codes_, code_bytes_);
    tensor_file::write(dir + "/codes.qtns", Dtype::U8, {int64_t(T), int64_t(code_bytes_)}, codes.data(), codes.size());
  }
  {
    const auto res = joined(base_.residuals, tail_residuals_, rb);
    tensor_file::write(dir + "/residuals.qtns", Dtype::U8, {int64_t(T), int64_t(rb)}, res.data(), res.size());
  }
  if (keeps_vectors()) {
    const size_t row = codec_.dim() * dtype_size(full_);
    const auto v = joined(base_.vectors, tail_vectors_, row);
    tensor_file::write(dir + "/vectors.qtns", full_, {int64_t(T), int64_t(codec_.dim())}, v.data(), v.size());
  }
  std::vector<int32_t> lengths(P);
  for (size_t p = 0; p < P; ++p) lengths[p] = int32_t(starts_[p + 1] - starts_[p]);
  tensor_file::write(dir + "/lengths.qtns", Dtype::I32, {int64_t(P)}, reinterpret_cast<const uint8_t*>(lengths.data()),
                     P * sizeof(int32_t));
  tensor_file::write(dir + "/removed.qtns", Dtype::U8, {int64_t(P)}, removed_.data(), P);
}

void PlaidIndex::open(const std::string& dir, bool map) {
  const auto load = [&](const char* name, Dtype dtype, size_t cols) {
    tensor_file::Mapped m = tensor_file::map(dir + "/" + name);
    const bool ok = m.dtype == dtype && m.shape.size() == (cols ? 2u : 1u) && (!cols || m.shape[1] == int64_t(cols));
    need(ok, "ERR_FORMAT", [&] {
      return dir + "/" + name + " does not hold what this index stores (" + (cols ? std::to_string(cols) + " values a row" : "one value a passage") + ")";
    });
    if (!map && m.buffer.bytes()) {
      AlignedBuffer own;
      own.reset(m.buffer.bytes());
      std::memcpy(own.data(), m.buffer.data(), m.buffer.bytes());
      m.buffer = std::move(own);
    }
    return m;
  };
  tensor_file::Mapped codes = load("codes.qtns", Dtype::U8, code_bytes_);
  tensor_file::Mapped res = load("residuals.qtns", Dtype::U8, codec_.row_bytes());
  tensor_file::Mapped lengths = load("lengths.qtns", Dtype::I32, 0);
  tensor_file::Mapped removed = load("removed.qtns", Dtype::U8, 0);
  tensor_file::Mapped vectors;
  if (keeps_vectors()) vectors = load("vectors.qtns", full_, codec_.dim());
  const auto T = size_t(codes.shape[0]), P = size_t(lengths.shape[0]);
  need(size_t(res.shape[0]) == T && size_t(removed.shape[0]) == P && (!keeps_vectors() || size_t(vectors.shape[0]) == T),
       "ERR_FORMAT", dir + ": the codes, residuals, vectors, lengths and removed flags disagree on their counts");
  std::vector<int64_t> starts(P + 1, 0);
  const auto* len = lengths.buffer.as<const int32_t>();
  for (size_t p = 0; p < P; ++p) {
    need(len[p] >= 0, "ERR_FORMAT", dir + "/lengths.qtns: a negative passage length");
    starts[p + 1] = starts[p] + len[p];
  }
  need(size_t(starts[P]) == T, "ERR_FORMAT",
       dir + ": the passage lengths add up to " + std::to_string(starts[P]) + " tokens, the codes are " + std::to_string(T));
  const auto* fl = removed.buffer.as<const uint8_t>();
  for (size_t p = 0; p < P; ++p) need(fl[p] <= 1, "ERR_FORMAT", dir + "/removed.qtns: a flag that is neither 0 nor 1");
  const uint8_t* cb = codes.buffer.as<const uint8_t>();
  for (size_t t = 0; t < T; ++t) {
    uint32_t c = 0;
    std::memcpy(&c, cb + t * code_bytes_, code_bytes_);  // little-endian hosts only (x86-64, AArch64)
    need(c < n_centroids_, "ERR_FORMAT", [&] {
      return dir + "/codes.qtns: token " + std::to_string(t) + " has centroid " + std::to_string(c) + ", the index has " +
             std::to_string(n_centroids_);
    });
  }
  std::unique_lock lock(mutex_);
  base_.codes = std::move(codes.buffer);
  base_.residuals = std::move(res.buffer);
  base_.vectors = std::move(vectors.buffer);
  base_.tokens = T;
  tail_codes_.clear();
  tail_residuals_.clear();
  tail_vectors_.clear();
  starts_ = std::move(starts);
  removed_.assign(fl, fl + P);
  n_removed_ = size_t(std::count(removed_.begin(), removed_.end(), uint8_t(1)));
  for (auto& l : lists_) l.clear();
  std::fill(list_last_.begin(), list_last_.end(), -1);
  std::fill(list_count_.begin(), list_count_.end(), 0u);
  index_codes(0);
}

size_t PlaidIndex::decode(size_t row, float* out, size_t room) const {
  std::shared_lock lock(mutex_);
  need(row < passages(), "ERR_RANGE", "row " + std::to_string(row) + " is not in the index");
  const size_t len = length(row), dim = codec_.dim();
  need(room >= len * dim, "ERR_SHAPE", "no room for the passage's tokens");
  for (size_t i = 0; i < len; ++i) {
    const size_t t = size_t(starts_[row]) + i;
    codec_.decode(centroids_.data() + code(t) * dim, residual(t), out + i * dim);
  }
  return len;
}

size_t PlaidIndex::search(const float* q, size_t lq, const PlaidParams& prm, const int32_t* allowed, size_t n_allowed,
                          int32_t* ids, float* scores) const {
  std::shared_lock lock(mutex_);
  const auto check_mappings = [&] {
    base_.codes.check_mapping();
    base_.residuals.check_mapping();
    base_.vectors.check_mapping();
  };
  check_mappings();
  const size_t P = passages(), K = n_centroids_, dim = codec_.dim();
  if (lq == 0 || prm.k == 0 || P == 0) return 0;

  // S as Cᵀ [centroids, lanes]: a centroid's scores against every question token are one contiguous row, what the
  // approximate MaxSim reads per passage token; padding lanes stay 0 (they add nothing).
  const size_t lanes = round_up(lq, kCentroidLanes);
  std::vector<float> s(lq * K);
  score_matrix({q, lq, dim}, {reinterpret_cast<const uint8_t*>(centroids_.data()), K, dim, Dtype::F32}, s.data());
  std::vector<float> ct(K * lanes, 0.f);
  std::vector<uint32_t> kept;  // centroids that score at least the threshold against some question token
  for (size_t c = 0; c < K; ++c) {
    float best = -std::numeric_limits<float>::infinity();
    for (size_t j = 0; j < lq; ++j) {
      const float v = s[j * K + c];
      ct[c * lanes + j] = v;
      best = std::max(best, v);
    }
    if (best >= prm.threshold) kept.push_back(uint32_t(c));
  }

  // Candidates: with a filter, every allowed passage (a filter that the probed lists miss must still answer); else
  // the lists of each question token's `ncells` best centroids.
  std::vector<int32_t> cand;
  const auto usable = [&](size_t p) { return !removed_[p] && starts_[p + 1] > starts_[p]; };
  if (allowed) {
    for (size_t i = 0; i < n_allowed; ++i)
      if (usable(size_t(allowed[i]))) cand.push_back(allowed[i]);
  } else {
    std::vector<uint8_t> seen(P, 0);
    const size_t cells = std::min(std::max<size_t>(prm.ncells, 1), K);
    std::vector<Hit> heap(cells);
    for (size_t j = 0; j < lq; ++j) {
      TopKHeap best(heap.data(), cells);
      const float* sj = s.data() + j * K;
      for (size_t c = 0; c < K; ++c)
        if (sj[c] >= best.threshold()) best.push({sj[c], int64_t(c)});  // the heap's own test, without the call
      for (size_t h = 0; h < best.size(); ++h)
        each_varint(lists_[size_t(best.data()[h].id)], [&](int64_t p) {
          if (!seen[size_t(p)] && usable(size_t(p))) seen[size_t(p)] = 1, cand.push_back(int32_t(p));
        });
    }
  }
  if (cand.empty()) return 0;

  const CentroidOps& cops = centroid_ops();
  const ThreadPool::Lease lease = ThreadPool::lease();
  ThreadPool& pool = lease.pool();
  const auto T = size_t(lease.threads());
  size_t longest = 0;
  for (int32_t p : cand) longest = std::max(longest, length(size_t(p)));
  const auto codes_of = [&](size_t p) {
    const auto t = size_t(starts_[p]);
    return t < base_.tokens ? base_.codes.as<const uint8_t>() + t * code_bytes_ : tail_codes_.data() + (t - base_.tokens) * code_bytes_;
  };
  const auto approx = [&](const std::vector<float>& table, const uint8_t* codes, size_t len) {
    return code_bytes_ == 2 ? cops.approx16(table.data(), lanes, reinterpret_cast<const uint16_t*>(codes), len)
                            : cops.approx(table.data(), lanes, reinterpret_cast<const int32_t*>(codes), len);
  };
  // Scores every entry of `ps` with `score(p, worker)` in blocks over the pool, then keeps the best `n` (by
  // `better`: score descending, row ascending).
  constexpr size_t kBlock = 32;
  const auto best_of = [&](const std::vector<int32_t>& ps, size_t n, auto&& score) {
    std::vector<float> v(ps.size());
    pool.parallel_for((ps.size() + kBlock - 1) / kBlock, [&](size_t b, int w) {
      for (size_t i = b * kBlock, end = std::min(ps.size(), i + kBlock); i < end; ++i) v[i] = score(size_t(ps[i]), w);
    });
    std::vector<Hit> heap(std::min(n, ps.size()));
    TopKHeap top(heap.data(), heap.size());
    for (size_t i = 0; i < ps.size(); ++i) top.push({v[i], int64_t(ps[i])});
    heap.resize(top.size());
    std::sort(heap.begin(), heap.end(), better);
    return heap;
  };
  const auto rows_of = [](const std::vector<Hit>& h) {
    std::vector<int32_t> r(h.size());
    for (size_t i = 0; i < h.size(); ++i) r[i] = int32_t(h[i].id);
    return r;
  };

  // Stage 1 in whichever order reads less. Centroid by centroid: a passage's tokens that share a centroid share its
  // scores, so the max over its kept tokens is the max over the kept centroids whose list holds it; walking the kept
  // centroids' lists costs their length. Passage by passage: every candidate token's row of a pruned table (a
  // centroid below the threshold scores -9999 in every question lane), with no branch per token. A lane no kept
  // centroid reaches keeps ColBERTv2's -9999 floor either way; padding lanes stay 0. (The walk holds a row of lanes
  // per candidate and worker: not past 64 MB, for a filter that allows millions of passages.)
  size_t walk = 0, scan = 0;
  for (uint32_t c : kept) walk += list_count_[c];
  for (int32_t p : cand) scan += length(size_t(p));
  std::vector<Hit> stage1;
  const size_t n1 = std::max(prm.ndocs, prm.k);
  if (walk <= scan && cand.size() * lanes * T <= (size_t(1) << 24)) {
    std::vector<int32_t> slot(P, -1);
    for (size_t i = 0; i < cand.size(); ++i) slot[size_t(cand[i])] = int32_t(i);
    // Each worker walks every T-th kept centroid into rows of its own; the rows are then merged by max.
    std::vector<std::vector<float>> acc(T);
    pool.parallel_for(T, [&](size_t part, int) {
      std::vector<float>& a = acc[part];
      a.assign(cand.size() * lanes, 0.f);
      for (size_t i = 0; i < cand.size(); ++i) std::fill_n(a.data() + i * lanes, lq, kEmptyLane);
      for (size_t n = part; n < kept.size(); n += T) {
        const float* row = ct.data() + size_t(kept[n]) * lanes;
        each_varint(lists_[kept[n]], [&](int64_t p) {
          const int32_t i = slot[size_t(p)];
          if (i < 0) return;
          float* x = a.data() + size_t(i) * lanes;
          for (size_t j = 0; j < lanes; ++j) x[j] = std::max(x[j], row[j]);
        });
      }
    });
    stage1 = best_of(cand, n1, [&](size_t p, int) {
      const size_t at = size_t(slot[p]) * lanes;
      float total = 0.f;
      for (size_t j = 0; j < lanes; ++j) {
        float m = acc[0][at + j];
        for (size_t w = 1; w < T; ++w) m = std::max(m, acc[w][at + j]);
        total += m;
      }
      return total;
    });
  } else {
    std::vector<float> pruned(K * lanes, 0.f);
    std::vector<uint8_t> keep(K, 0);
    for (uint32_t c : kept) keep[c] = 1;
    for (size_t c = 0; c < K; ++c)
      for (size_t j = 0; j < lq; ++j) pruned[c * lanes + j] = keep[c] ? ct[c * lanes + j] : kEmptyLane;
    stage1 = best_of(cand, n1, [&](size_t p, int) { return approx(pruned, codes_of(p), length(p)); });
  }
  const auto stage2 = best_of(rows_of(stage1), std::max(prm.ndocs / 4, prm.k),
                              [&](size_t p, int) { return approx(ct, codes_of(p), length(p)); });

  // Stage 3: MaxSim over the decoded tokens.
  const MaxSimOps& mops = maxsim_ops();
  const size_t lqp = round_up(lq, mops.lanes);
  std::vector<float> qt(dim * lqp, 0.f);
  for (size_t i = 0; i < lq; ++i)
    for (size_t j = 0; j < dim; ++j) qt[j * lqp + i] = q[i * dim + j];
  struct Scratch {
    std::vector<float> tokens, best, arg;
  };
  std::vector<Scratch> scratch(T);
  for (auto& sc : scratch) sc.tokens.resize(std::max<size_t>(longest, 1) * dim), sc.best.resize(lqp), sc.arg.resize(lqp);
  const auto maxsim = [&](Scratch& sc, const float* tokens, size_t len) {
    std::fill(sc.best.begin(), sc.best.end(), -std::numeric_limits<float>::infinity());
    mops.update(qt.data(), lqp, dim, tokens, len, 0.f, nullptr, 0, sc.best.data(), sc.arg.data());
    float total = 0.f;
    for (size_t i = 0; i < lq; ++i) total += sc.best[i];
    return total;
  };
  const bool exact = keeps_vectors() && prm.exact > 0;
  std::vector<Hit> final = best_of(rows_of(stage2), exact ? std::max(prm.exact, prm.k) : prm.k, [&](size_t p, int w) {
    Scratch& sc = scratch[size_t(w)];
    const size_t len = length(p);
    for (size_t i = 0; i < len; ++i) {
      const size_t t = size_t(starts_[p]) + i;
      codec_.decode(centroids_.data() + code(t) * dim, residual(t), sc.tokens.data() + i * dim);
    }
    return maxsim(sc, sc.tokens.data(), len);
  });
  // Stage 4: the full vectors (a passage's rows are contiguous in one segment).
  if (exact)
    final = best_of(rows_of(final), prm.k, [&](size_t p, int w) {
      Scratch& sc = scratch[size_t(w)];
      const size_t len = length(p);
      const uint8_t* rows = full_row(size_t(starts_[p]));
      if (full_ == Dtype::F32) return maxsim(sc, reinterpret_cast<const float*>(rows), len);
      mops.to_f32(rows, full_, len * dim, sc.tokens.data());
      return maxsim(sc, sc.tokens.data(), len);
    });
  check_mappings();  // a file truncated during the search: its result is not trusted
  for (size_t i = 0; i < final.size(); ++i) {
    ids[i] = int32_t(final[i].id);
    scores[i] = final[i].score;
  }
  return final.size();
}

}  // namespace quorum::kernels
