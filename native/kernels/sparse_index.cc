#include "sparse_index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_set>

#include "../common/error.h"
#include "../common/persist.h"
#include "../common/thread_pool.h"
#include "topk.h"

namespace quorum::kernels {
namespace {

void check_rows(const SparseView& r, size_t nnz, bool check_weights) {
  check_sparse_offsets(r, nnz);
  for (size_t e = 0; e < nnz; ++e) {
    if (r.indices[e] < 0) throw Error("ERR_RANGE", "term id " + std::to_string(r.indices[e]) + " is negative");
    if (check_weights && !std::isfinite(r.values[e]))
      throw Error("ERR_NONFINITE", "sparse weights must be finite");
  }
}

}  // namespace

void SparseIndex::add(const int64_t* ids, const SparseView& rows, size_t nnz) {
  check_rows(rows, nnz, true);
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (ids_.size() + rows.rows > size_t(std::numeric_limits<uint32_t>::max()))
    throw Error("ERR_RANGE", "a sparse index holds at most 2^32 - 1 documents");
  // As DenseIndex: -1 marks an empty result slot, and one id twice would fill two slots of one top-k.
  std::unordered_set<int64_t> batch;
  batch.reserve(rows.rows);
  for (size_t i = 0; i < rows.rows; ++i) {
    if (ids[i] < 0) throw Error("ERR_RANGE", "ids must be >= 0 (-1 marks an empty result slot), got " + std::to_string(ids[i]));
    if (!batch.insert(ids[i]).second || doc_of_.count(ids[i]))
      throw Error("ERR_DUPLICATE_ID", "id " + std::to_string(ids[i]) + " is already in the index or repeated in the batch");
  }
  if (n_dead_) dead_.resize(ids_.size() + rows.rows, 0);
  int32_t max_term = -1;
  for (size_t e = 0; e < nnz; ++e) max_term = std::max(max_term, rows.indices[e]);
  if (size_t(max_term + 1) > terms_.size()) terms_.resize(size_t(max_term) + 1);
  max_weight_.resize(terms_.size(), -std::numeric_limits<float>::infinity());
  min_weight_.resize(terms_.size(), std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < rows.rows; ++i) {
    const uint32_t doc = uint32_t(ids_.size());
    ids_.push_back(ids[i]);
    doc_of_[ids[i]] = doc;
    for (int64_t e = rows.offsets[i]; e < rows.offsets[i + 1]; ++e) {
      auto& list = terms_[size_t(rows.indices[e])];
      if (!list.empty() && list.back().doc == doc) {
        list.back().weight += rows.values[e];  // a repeated term within the document
      } else {
        list.push_back({doc, rows.values[e]});
        ++postings_;
      }
      const size_t t = size_t(rows.indices[e]);
      max_weight_[t] = std::max(max_weight_[t], list.back().weight);
      min_weight_[t] = std::min(min_weight_[t], list.back().weight);
    }
  }
}

size_t SparseIndex::remove(const int64_t* ids, size_t n) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  size_t removed = 0;
  for (size_t i = 0; i < n; ++i) {
    auto it = doc_of_.find(ids[i]);
    if (it == doc_of_.end()) continue;
    if (dead_.empty()) dead_.assign(ids_.size(), 0);
    dead_[it->second] = 1;
    doc_of_.erase(it);
    ++n_dead_;
    ++removed;
  }
  // Past a quarter dead, rebuild: a search walks dead postings, and they hold memory.
  if (n_dead_ * 4 > ids_.size()) {
    Live l = live();
    install(std::move(l.terms), std::move(l.ids), l.postings);
  }
  return removed;
}

void SparseIndex::install(std::vector<std::vector<Posting>> terms, std::vector<int64_t> ids, size_t postings) {
  terms_ = std::move(terms);
  ids_ = std::move(ids);
  postings_ = postings;
  doc_of_.clear();
  for (size_t d = 0; d < ids_.size(); ++d) doc_of_[ids_[d]] = uint32_t(d);
  dead_.clear();
  n_dead_ = 0;
  refresh_bounds();
}

void SparseIndex::relabel(const int64_t* from, const int64_t* to, size_t n) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  std::vector<int64_t> next(ids_);
  std::vector<uint8_t> named(ids_.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    const auto it = doc_of_.find(from[i]);
    if (it == doc_of_.end()) throw Error("ERR_ARG", "id " + std::to_string(from[i]) + " is not in the index");
    if (named[it->second]++) throw Error("ERR_ARG", "id " + std::to_string(from[i]) + " is listed twice");
    if (to[i] < 0) throw Error("ERR_RANGE", "ids must be >= 0 (-1 marks an empty result slot), got " + std::to_string(to[i]));
    next[it->second] = to[i];
  }
  std::unordered_map<int64_t, uint32_t> doc_of;
  doc_of.reserve(doc_of_.size());
  for (const auto& [id, doc] : doc_of_)
    if (!doc_of.emplace(next[doc], doc).second)
      throw Error("ERR_DUPLICATE_ID", "two documents would have id " + std::to_string(next[doc]));
  ids_ = std::move(next);
  doc_of_ = std::move(doc_of);
}

SparseIndex::Live SparseIndex::live() const {
  Live l;
  std::vector<uint32_t> renumber(ids_.size());
  for (size_t d = 0; d < ids_.size(); ++d) {
    if (n_dead_ && dead_[d]) continue;
    renumber[d] = uint32_t(l.ids.size());
    l.ids.push_back(ids_[d]);
  }
  l.terms.resize(terms_.size());
  for (size_t t = 0; t < terms_.size(); ++t)
    for (const Posting& p : terms_[t])
      if (!n_dead_ || !dead_[p.doc]) l.terms[t].push_back({renumber[p.doc], p.weight});
  // Trailing terms no live document has any more are dropped (vocab() is 1 + the largest term held).
  while (!l.terms.empty() && l.terms.back().empty()) l.terms.pop_back();
  for (const auto& list : l.terms) l.postings += list.size();
  return l;
}

void SparseIndex::refresh_bounds() {
  max_weight_.assign(terms_.size(), -std::numeric_limits<float>::infinity());
  min_weight_.assign(terms_.size(), std::numeric_limits<float>::infinity());
  for (size_t t = 0; t < terms_.size(); ++t)
    for (const Posting& p : terms_[t]) {
      max_weight_[t] = std::max(max_weight_[t], p.weight);
      min_weight_[t] = std::min(min_weight_[t], p.weight);
    }
}

// Per-worker state of one search call.
struct SparseSearchScratch {
  std::vector<float> acc;
  std::vector<uint32_t> stamp;
  std::vector<uint32_t> touched;
  std::vector<Hit> heap;
  uint32_t generation = 0;
  // MaxScore
  struct Cursor {
    const SparseIndex::Posting* at;
    const SparseIndex::Posting* end;
    float qw;
    float bound;  // the most this term can add to any document's score (>= 0)
  };
  std::vector<Cursor> cursors;
  std::vector<std::pair<int32_t, float>> terms;
  std::vector<float> prefix;
};

void SparseIndex::search_taat(const SparseView& q, size_t r, SparseSearchScratch& s, TopKHeap& heap, const uint8_t* ok) const {
  const size_t n = ids_.size();
  if (s.acc.size() != n) {
    s.acc.assign(n, 0.f);
    s.stamp.assign(n, 0);
  }
  if (++s.generation == 0) {  // stamps wrapped: clear them once
    std::fill(s.stamp.begin(), s.stamp.end(), 0);
    s.generation = 1;
  }
  s.touched.clear();
  for (int64_t e = q.offsets[r]; e < q.offsets[r + 1]; ++e) {
    const size_t term = size_t(q.indices[e]);
    if (term >= terms_.size()) continue;  // a term no document has
    const float w = q.values[e];
    for (const Posting& p : terms_[term]) {
      if (s.stamp[p.doc] != s.generation) {
        s.stamp[p.doc] = s.generation;
        s.acc[p.doc] = 0.f;
        s.touched.push_back(p.doc);
      }
      s.acc[p.doc] += w * p.weight;
    }
  }
  for (uint32_t d : s.touched)
    if (!std::isnan(s.acc[d]) && (!ok || ok[d])) heap.push(Hit{s.acc[d], ids_[d]});
}

// MaxScore (Turtle & Flood), document at a time. Terms are ordered by their score bound; the longest prefix of
// them whose bounds sum below the current k-th score is "non-essential": a document only they reach cannot enter
// the top-k, so candidates come from the other (essential) lists only, and the non-essential lists are probed
// by binary search, stopping as soon as the bound says the candidate cannot make it. Ties with the k-th score are
// still scored (bounds are compared strictly), so the result equals the exhaustive one up to f32 summation order.
void SparseIndex::search_maxscore(const SparseView& q, size_t r, SparseSearchScratch& s, TopKHeap& heap, const uint8_t* ok) const {
  s.terms.clear();
  for (int64_t e = q.offsets[r]; e < q.offsets[r + 1]; ++e)
    if (size_t(q.indices[e]) < terms_.size() && !terms_[size_t(q.indices[e])].empty())
      s.terms.push_back({q.indices[e], q.values[e]});
  std::sort(s.terms.begin(), s.terms.end());
  s.cursors.clear();
  for (size_t i = 0; i < s.terms.size(); ++i) {
    float qw = s.terms[i].second;
    while (i + 1 < s.terms.size() && s.terms[i + 1].first == s.terms[i].first) qw += s.terms[++i].second;
    const size_t t = size_t(s.terms[i].first);
    const float bound = std::max({0.f, qw * max_weight_[t], qw * min_weight_[t]});
    s.cursors.push_back({terms_[t].data(), terms_[t].data() + terms_[t].size(), qw, bound});
  }
  std::sort(s.cursors.begin(), s.cursors.end(), [](const auto& a, const auto& b) { return a.bound < b.bound; });
  const size_t m = s.cursors.size();
  s.prefix.resize(m);
  // Bounds get a hair of slack, so that f32 rounding (sums taken in another order) never prunes a document
  // whose score ties the k-th.
  float sum = 0;
  for (size_t i = 0; i < m; ++i) s.prefix[i] = (sum += s.cursors[i].bound) * (1 + 1e-5f);

  size_t first = 0;  // cursors [0, first) are non-essential
  for (;;) {
    const float theta = heap.threshold();
    while (first < m && s.prefix[first] < theta) ++first;
    uint32_t doc = std::numeric_limits<uint32_t>::max();
    for (size_t i = first; i < m; ++i)
      if (s.cursors[i].at != s.cursors[i].end) doc = std::min(doc, s.cursors[i].at->doc);
    if (doc == std::numeric_limits<uint32_t>::max()) break;
    float score = 0;
    for (size_t i = first; i < m; ++i) {
      auto& c = s.cursors[i];
      if (c.at != c.end && c.at->doc == doc) {
        score += c.qw * c.at->weight;
        ++c.at;
      }
    }
    bool pruned = false;
    for (size_t i = first; i-- > 0;) {
      if (score + s.prefix[i] < theta) {
        pruned = true;
        break;
      }
      auto& c = s.cursors[i];
      c.at = std::lower_bound(c.at, c.end, doc, [](const Posting& p, uint32_t d) { return p.doc < d; });
      if (c.at != c.end && c.at->doc == doc) score += c.qw * c.at->weight;
    }
    if (!pruned && !std::isnan(score) && (!ok || ok[doc])) heap.push(Hit{score, ids_[doc]});
  }
}

void SparseIndex::search(const SparseView& q, size_t nnz, size_t k, int64_t* ids, float* scores,
                         SparseAlgorithm algorithm, const Filter* filter) const {
  check_rows(q, nnz, false);
  std::shared_lock<std::shared_mutex> lock(mutex_);
  const size_t n = ids_.size();
  std::vector<uint8_t> ok;
  if (filter) {
    const std::unordered_set<int64_t> allowed(filter->ids, filter->ids + filter->n);
    ok.resize(n);
    for (size_t d = 0; d < n; ++d) ok[d] = allowed.count(ids_[d]) && !(n_dead_ && dead_[d]) ? 1 : 0;
  } else if (n_dead_) {
    ok.resize(n);
    for (size_t d = 0; d < n; ++d) ok[d] = dead_[d] ? 0 : 1;
  }
  const uint8_t* okp = ok.empty() ? nullptr : ok.data();
  const ThreadPool::Lease lease = ThreadPool::lease();
  std::vector<SparseSearchScratch> scratch(size_t(lease.threads()));
  const size_t kk = std::min(k, n);
  lease.pool().parallel_for(q.rows, [&](size_t r, int worker) {
    SparseSearchScratch& s = scratch[size_t(worker)];
    s.heap.resize(kk);
    TopKHeap heap(s.heap.data(), kk);
    bool maxscore = algorithm == SparseAlgorithm::kMaxScore;
    if (algorithm == SparseAlgorithm::kAuto)
      maxscore = kk <= 100 && n >= 50000 && q.offsets[r + 1] - q.offsets[r] <= 8;
    if (maxscore)
      search_maxscore(q, r, s, heap, okp);
    else
      search_taat(q, r, s, heap, okp);
    std::vector<Hit> best(heap.data(), heap.data() + heap.size());
    std::sort(best.begin(), best.end(), better);
    for (size_t j = 0; j < k; ++j) {
      ids[r * k + j] = j < best.size() ? best[j].id : -1;
      scores[r * k + j] = j < best.size() ? best[j].score : -std::numeric_limits<float>::infinity();
    }
  });
}

namespace {

constexpr char kMagic[8] = {'Q', 'S', 'P', 'I', 'D', 'X', '0', '1'};
constexpr uint32_t kVersion = 1;

using persist::fnv1a;
using persist::put;

}  // namespace

std::vector<uint8_t> SparseIndex::to_bytes() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  // Removed documents are not written: the live ones, renumbered, when there are any dead.
  Live compacted;
  if (n_dead_) compacted = live();
  const auto& ids = n_dead_ ? compacted.ids : ids_;
  const auto& terms = n_dead_ ? compacted.terms : terms_;
  std::vector<uint8_t> out(kMagic, kMagic + 8);
  put(out, kVersion);
  put(out, uint32_t(0));
  put(out, uint64_t(ids.size()));
  put(out, uint64_t(terms.size()));
  put(out, uint64_t(n_dead_ ? compacted.postings : postings_));
  for (int64_t id : ids) put(out, id);
  for (const auto& list : terms) put(out, uint64_t(list.size()));
  for (const auto& list : terms)
    for (const Posting& p : list) {
      put(out, p.doc);
      put(out, p.weight);
    }
  put(out, fnv1a(out.data(), out.size()));
  return out;
}

void SparseIndex::from_bytes(const uint8_t* data, size_t n) {
  if (n < 8 + 8 || std::memcmp(data, kMagic, 8) != 0) throw Error("ERR_FORMAT", "not a Quorum sparse index");
  if (n < 8 + 8 + 24 + 8) throw Error("ERR_FORMAT", "sparse index data is truncated");
  uint64_t stored;
  std::memcpy(&stored, data + n - 8, 8);
  if (fnv1a(data, n - 8) != stored) throw Error("ERR_FORMAT", "sparse index checksum mismatch (corrupt data)");
  persist::Reader r{data, n - 8, 8, "sparse index data"};
  const uint32_t version = r.get<uint32_t>();
  if (version != kVersion)
    throw Error("ERR_FORMAT", "sparse index format version " + std::to_string(version) + " is not supported");
  r.get<uint32_t>();
  const uint64_t ndocs = r.get<uint64_t>(), nterms = r.get<uint64_t>(), npost = r.get<uint64_t>();
  if (ndocs > std::numeric_limits<uint32_t>::max()) throw Error("ERR_FORMAT", "sparse index document count is corrupt");
  r.need(ndocs, 8);
  std::vector<int64_t> ids(ndocs);
  std::unordered_set<int64_t> id_set;
  id_set.reserve(ndocs);
  for (auto& id : ids) {
    id = r.get<int64_t>();
    if (id < 0 || !id_set.insert(id).second) throw Error("ERR_FORMAT", "sparse index ids are corrupt (negative or repeated)");
  }
  r.need(nterms, 8);
  std::vector<uint64_t> counts(nterms);
  uint64_t total = 0;
  for (auto& c : counts) {
    c = r.get<uint64_t>();
    total += c;
    if (total > npost) throw Error("ERR_FORMAT", "sparse index posting counts are corrupt");
  }
  if (total != npost) throw Error("ERR_FORMAT", "sparse index posting counts are corrupt");
  r.need(npost, 8);
  std::vector<std::vector<Posting>> terms(nterms);
  for (size_t t = 0; t < nterms; ++t) {
    terms[t].resize(counts[t]);
    int64_t previous = -1;
    for (auto& p : terms[t]) {
      p.doc = r.get<uint32_t>();
      p.weight = r.get<float>();
      if (p.doc >= ndocs) throw Error("ERR_FORMAT", "sparse index posting points past the documents");
      // add() keeps a term's postings in increasing document order, which the searches rely on.
      if (int64_t(p.doc) <= previous) throw Error("ERR_FORMAT", "sparse index postings are out of order");
      if (!std::isfinite(p.weight)) throw Error("ERR_FORMAT", "sparse index holds a non-finite weight");
      previous = p.doc;
    }
  }
  if (r.at != r.n) throw Error("ERR_FORMAT", "sparse index data has trailing bytes");
  std::unique_lock<std::shared_mutex> lock(mutex_);
  install(std::move(terms), std::move(ids), npost);
}

void SparseIndex::save(const std::string& path) const {
  const std::vector<uint8_t> bytes = to_bytes();
  persist::AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

void SparseIndex::load(const std::string& path) {
  const std::vector<uint8_t> bytes = persist::read_file(path);
  from_bytes(bytes.data(), bytes.size());
}

size_t SparseIndex::size() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return ids_.size() - n_dead_;
}

size_t SparseIndex::postings() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return postings_;
}

size_t SparseIndex::vocab() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return terms_.size();
}

}  // namespace quorum::kernels
