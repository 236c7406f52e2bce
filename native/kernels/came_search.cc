#include "came_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../common/laps.h"
#include "maxsim.h"
#include "topk.h"

namespace quorum::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One question's best `K` of `n` scores of passages `rows` into its list slot, best first, ties to the lower row
// (topk.h's order); -inf (a passage with no tokens) is left out. Returns the count.
size_t write_top(const float* s, const int32_t* rows, size_t n, size_t K, int32_t* ids, float* scores) {
  std::vector<Hit> heap(std::min(K, n));
  TopKHeap top(heap.data(), heap.size());
  for (size_t i = 0; i < n; i++)
    if (s[i] != kNegInf) top.push({s[i], rows[i]});
  heap.resize(top.size());
  std::sort(heap.begin(), heap.end(), better);
  for (size_t i = 0; i < heap.size(); i++) {
    ids[i] = int32_t(heap[i].id);
    scores[i] = heap[i].score;
  }
  return heap.size();
}

void lexical(const CameExpert& x, const CameSearchPlan& p, int32_t* ids, float* scores, int32_t* counts) {
  const size_t K = p.expert_k;
  std::vector<int64_t> found(p.batch * K);
  std::vector<int64_t> allowed;
  SparseIndex::Filter filter{};
  if (p.rows) {
    allowed.assign(p.rows, p.rows + p.n_rows);
    filter = {allowed.data(), allowed.size()};
  }
  x.sparse->search(x.sparse_q, x.sparse_nnz, K, found.data(), scores, SparseAlgorithm::kAuto, p.rows ? &filter : nullptr);
  for (size_t b = 0; b < p.batch; b++) {
    size_t c = 0;
    // Slots past the documents reached hold -1 (the search's contract): they end the list.
    for (; c < K && found[b * K + c] >= 0; c++) {
      need(found[b * K + c] < int64_t(p.passages), "ERR_RANGE", [&] {
        return "the lexical index holds id " + std::to_string(found[b * K + c]) + ", not a row of the " + std::to_string(p.passages) + " passages";
      });
      ids[b * K + c] = int32_t(found[b * K + c]);
    }
    counts[b] = int32_t(c);
  }
}

void local(const CameExpert& x, const CameSearchPlan& p, int32_t* ids, float* scores, int32_t* counts) {
  const size_t K = p.expert_k;
  const size_t dim = x.centroids->dim();
  std::fill(counts, counts + p.batch, 0);
  // The passages `cand` (in its order) as MaxSim's documents: their token rows where they lie in the table.
  std::vector<int64_t> start, length;
  const auto docs = [&](const std::vector<int32_t>& cand) {
    start.resize(cand.size());
    length.resize(cand.size());
    for (size_t i = 0; i < cand.size(); i++) {
      start[i] = x.token_starts[cand[i]];
      length[i] = x.token_lengths[cand[i]];
    }
    return TokenDocs{reinterpret_cast<const uint8_t*>(x.tokens), Dtype::F32, x.token_rows, dim, cand.size(), start.data(), length.data(), nullptr};
  };
  std::vector<int32_t> cand;
  std::vector<float> s;
  // Brute force when asked, or when the filter allows no more passages than would be re-scored anyway: every
  // (allowed) passage for the whole batch in one MaxSim, the questions padded to the longest and masked, so that
  // the token table is read once.
  if (x.keep == 0 || (p.rows && p.n_rows <= x.keep)) {
    if (p.rows) {
      cand.assign(p.rows, p.rows + p.n_rows);
    } else {
      cand.resize(p.passages);
      for (size_t r = 0; r < p.passages; r++) cand[r] = int32_t(r);
    }
    const size_t lq = size_t(*std::max_element(x.q_lengths, x.q_lengths + p.batch));
    if (!lq || cand.empty()) return;
    std::vector<float> q(p.batch * lq * dim, 0.0f);
    std::vector<uint8_t> mask(p.batch * lq, 0);
    size_t at = 0;
    for (size_t b = 0; b < p.batch; b++) {
      const size_t n = size_t(x.q_lengths[b]);
      std::copy_n(x.q_tokens + at * dim, n * dim, q.data() + b * lq * dim);
      std::fill_n(mask.data() + b * lq, n, uint8_t(1));
      at += n;
    }
    s.resize(p.batch * cand.size());
    maxsim({q.data(), p.batch, lq, dim, mask.data()}, docs(cand), false, s.data(), nullptr);
    for (size_t b = 0; b < p.batch; b++)
      if (x.q_lengths[b] > 0)
        counts[b] = int32_t(write_top(s.data() + b * cand.size(), cand.data(), cand.size(), K, ids + b * K, scores + b * K));
    return;
  }
  std::vector<float> approx;
  size_t at = 0;
  for (size_t b = 0; b < p.batch; b++) {
    const size_t lq = size_t(x.q_lengths[b]);
    const float* q = x.q_tokens + at * dim;
    at += lq;
    if (!lq) continue;
    cand.resize(x.keep);
    approx.resize(x.keep);
    // A filter approximates every allowed passage (nprobe 0): its passages may be none of those the question's
    // nearest centroids name.
    cand.resize(x.centroids->candidates(q, lq, p.rows ? 0 : x.nprobe, p.rows, p.n_rows, x.keep, cand.data(), approx.data()));
    if (cand.empty()) continue;
    // Scored in corpus order: the token rows are read forwards.
    std::sort(cand.begin(), cand.end());
    s.resize(cand.size());
    maxsim({q, 1, lq, dim, nullptr}, docs(cand), false, s.data(), nullptr);
    counts[b] = int32_t(write_top(s.data(), cand.data(), cand.size(), K, ids + b * K, scores + b * K));
  }
}

void global(const CameExpert& x, const CameSearchPlan& p, int32_t* ids, float* scores, int32_t* counts) {
  const size_t K = p.expert_k;
  const size_t kk = std::min(K, p.passages);
  std::vector<int32_t> found(p.batch * kk);
  std::vector<float> fs(p.batch * kk);
  score_topk({x.q, p.batch, x.corpus.dim}, x.corpus, kk, found.data(), fs.data(), p.rows, p.n_rows);
  for (size_t b = 0; b < p.batch; b++) {
    size_t c = 0;
    for (; c < kk && found[b * kk + c] >= 0; c++) {
      ids[b * K + c] = found[b * kk + c];
      scores[b * K + c] = fs[b * kk + c];
    }
    counts[b] = int32_t(c);
  }
}

void check(const CameSearchPlan& p) {
  need(p.n_experts >= 1 && p.n_experts <= 3, "ERR_ARG", "CAME searches one to three experts");
  need(p.expert_k >= 1 && p.k >= 1, "ERR_RANGE", "k and expertK must be positive");
  need(p.fusion != CameFusion::kLinear || p.weights, "ERR_ARG", "linear fusion needs one weight per expert");
  for (size_t i = 0; i < p.n_rows; i++)
    need(p.rows[i] >= 0 && size_t(p.rows[i]) < p.passages && (i == 0 || p.rows[i] > p.rows[i - 1]), "ERR_RANGE", [&] {
      return "allowed rows must be distinct corpus rows (0.." + std::to_string(p.passages - 1) + ") in ascending order";
    });
  size_t seen = 0;
  for (size_t e = 0; e < p.n_experts; e++) {
    const CameExpert& x = p.experts[e];
    const size_t bit = size_t(1) << int(x.kind);
    need(!(seen & bit), "ERR_ARG", "an expert is listed twice");
    seen |= bit;
    switch (x.kind) {
      case CameExpert::kLexical:
        need(x.sparse && x.sparse_q.rows == p.batch, "ERR_SHAPE", "the lexical expert needs one sparse row per question");
        break;
      case CameExpert::kLocal: {
        need(x.centroids && x.centroids->passages() == p.passages, "ERR_SHAPE", "the token index's passages are not the corpus's");
        need(x.keep == 0 || x.keep >= p.expert_k, "ERR_RANGE", "the local expert re-scores fewer candidates than expertK");
        for (size_t b = 0; b < p.batch; b++)
          if (x.q_lengths[b] < 0) throw Error("ERR_RANGE", "a question's token count is negative");
        break;
      }
      case CameExpert::kGlobal:
        need(x.corpus.rows == p.passages && x.q, "ERR_SHAPE", "the global expert's vectors are not the corpus's");
        break;
      default:
        throw Error("ERR_ARG", "unknown CAME expert");
    }
  }
}

// The min-max normalised scores of one list (lib/fusion/normalize.ts's 'min-max').
void min_max(const CameList& l, std::vector<double>& out) {
  out.resize(l.len);
  if (!l.len) return;
  double lo = l.scores[0], hi = l.scores[0];
  for (size_t i = 1; i < l.len; i++) {
    lo = std::min(lo, double(l.scores[i]));
    hi = std::max(hi, double(l.scores[i]));
  }
  const double span = std::max(hi - lo, 1e-9);
  for (size_t i = 0; i < l.len; i++) out[i] = (double(l.scores[i]) - lo) / span;
}

}  // namespace

size_t came_fuse(const CameList* lists, size_t n, CameFusion fusion, const double* weights, double bias, size_t k,
                 int32_t* ids, double* scores) {
  const bool normalised = fusion == CameFusion::kNormSum || fusion == CameFusion::kNormMax;
  std::vector<std::vector<double>> norm(normalised ? n : 0);
  for (size_t e = 0; e < norm.size(); e++) min_max(lists[e], norm[e]);
  // Every (row, expert, position), grouped by row: the union in ascending rows with each expert's position.
  struct Entry {
    int32_t row;
    uint32_t expert, pos;
  };
  std::vector<Entry> entries;
  for (size_t e = 0; e < n; e++)
    for (size_t i = 0; i < lists[e].len; i++) entries.push_back({lists[e].ids[i], uint32_t(e), uint32_t(i)});
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.row < b.row || (a.row == b.row && a.expert < b.expert); });
  struct Fused {
    int32_t row;
    double score;
  };
  std::vector<Fused> fused;
  std::vector<int64_t> pos(n);
  for (size_t i = 0; i < entries.size();) {
    const int32_t row = entries[i].row;
    std::fill(pos.begin(), pos.end(), -1);
    for (; i < entries.size() && entries[i].row == row; i++) pos[entries[i].expert] = entries[i].pos;
    double s = 0;
    switch (fusion) {
      case CameFusion::kSum:
      case CameFusion::kLinear:
        // A missing row takes the expert's K-th score (its last: a list holds at most K); an empty list adds nothing.
        for (size_t e = 0; e < n; e++) {
          if (pos[e] < 0 && !lists[e].len) continue;
          const double v = lists[e].scores[pos[e] >= 0 ? size_t(pos[e]) : lists[e].len - 1];
          s += fusion == CameFusion::kLinear ? weights[e] * v : v;
        }
        break;
      case CameFusion::kNormSum:
        for (size_t e = 0; e < n; e++)
          if (pos[e] >= 0) s += norm[e][size_t(pos[e])];
        break;
      case CameFusion::kNormMax:
        s = -std::numeric_limits<double>::infinity();
        for (size_t e = 0; e < n; e++)
          if (pos[e] >= 0) s = std::max(s, norm[e][size_t(pos[e])]);
        break;
      case CameFusion::kSumRR:
        for (size_t e = 0; e < n; e++)
          if (pos[e] >= 0) s += 1 / double(pos[e] + 1);
        break;
      case CameFusion::kMaxRR:
        for (size_t e = 0; e < n; e++) s = std::max(s, pos[e] >= 0 ? 1 / double(pos[e] + 1) : 0.0);
        break;
    }
    fused.push_back({row, s});
  }
  const size_t c = std::min(k, fused.size());
  std::partial_sort(fused.begin(), fused.begin() + std::ptrdiff_t(c), fused.end(),
                    [](const Fused& a, const Fused& b) { return a.score > b.score || (a.score == b.score && a.row < b.row); });
  for (size_t i = 0; i < c; i++) {
    ids[i] = fused[i].row;
    // The bias shifts every row alike: added after the order is taken, as the reference does.
    scores[i] = fusion == CameFusion::kLinear ? fused[i].score + bias : fused[i].score;
  }
  return c;
}

void came_search(const CameSearchPlan& p, const CameSearchOut& out) {
  check(p);
  const size_t K = p.expert_k;
  const size_t E = p.n_experts;
  std::fill(out.expert_ids, out.expert_ids + E * p.batch * K, -1);
  std::fill(out.expert_scores, out.expert_scores + E * p.batch * K, kNegInf);
  std::fill(out.ids, out.ids + p.batch * p.k, -1);
  std::fill(out.scores, out.scores + p.batch * p.k, -std::numeric_limits<double>::infinity());
  Laps laps(out.ms);
  for (size_t e = 0; e < E; e++) {
    int32_t* ids = out.expert_ids + e * p.batch * K;
    float* scores = out.expert_scores + e * p.batch * K;
    int32_t* counts = out.expert_counts + e * p.batch;
    const CameExpert& x = p.experts[e];
    if (x.kind == CameExpert::kLexical) lexical(x, p, ids, scores, counts);
    else if (x.kind == CameExpert::kLocal) local(x, p, ids, scores, counts);
    else global(x, p, ids, scores, counts);
    laps.lap(e);
  }
  std::vector<CameList> lists(E);
  for (size_t b = 0; b < p.batch; b++) {
    for (size_t e = 0; e < E; e++)
      lists[e] = {out.expert_ids + (e * p.batch + b) * K, out.expert_scores + (e * p.batch + b) * K, size_t(out.expert_counts[e * p.batch + b])};
    out.counts[b] = int32_t(came_fuse(lists.data(), E, p.fusion, p.weights, p.bias, p.k, out.ids + b * p.k, out.scores + b * p.k));
  }
  laps.lap(E);
}

}  // namespace quorum::kernels
