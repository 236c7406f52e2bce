#include "muf_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../common/error.h"
#include "../common/laps.h"
#include "muf_fuse.h"

namespace quorum::kernels {
namespace {

void check(const MufSearchPlan& p) {
  need(p.n_experts >= 1, "ERR_ARG", "give at least one expert");
  need(p.k >= 1, "ERR_RANGE", "k must be at least 1");
  const size_t N = p.experts[0].passages.rows;
  const size_t searched = p.rows ? p.n_rows : N;
  need(p.top_l >= 1 && p.top_l <= searched, "ERR_RANGE",
       "topL must be in [1, " + std::to_string(searched) + "] (the rows searched), got " + std::to_string(p.top_l));
  for (size_t i = 0; p.rows && i < p.n_rows; ++i) {
    need(p.rows[i] >= 0 && size_t(p.rows[i]) < N, "ERR_RANGE", [&] { return "rows must be corpus rows in [0, " + std::to_string(N) + ")"; });
    if (i > 0 && p.rows[i] <= p.rows[i - 1]) throw Error("ERR_ARG", "rows must be strictly ascending");
  }
  for (size_t x = 0; x < p.n_experts; ++x) {
    const MufSearchExpert& e = p.experts[x];
    const std::string who = "expert " + std::to_string(x);
    need(e.passages.rows == N, "ERR_SHAPE", who + ": fusion needs every expert over the same corpus rows");
    need(e.passages.dim >= 1, "ERR_SHAPE", who + ": passages have dimension 0");
    if (p.mode == MufConfidenceMode::kFamiliarity) {
      for (const CorpusMatrix* bank : {&e.own, &e.other})
        need(bank->rows >= 1 && bank->dim == e.passages.dim, "ERR_SHAPE",
             who + ": familiarity banks must be non-empty [n, " + std::to_string(e.passages.dim) + "]");
      need(e.fam_k >= 1, "ERR_RANGE", who + ": familiarity k must be at least 1");
      need(std::isfinite(e.platt_bias) && std::isfinite(e.platt_weight), "ERR_RANGE", who + ": Platt scaling must be finite");
    }
    if (p.mode == MufConfidenceMode::kHeads) need(e.layers && e.n_layers >= 1 && e.members >= 1, "ERR_ARG", who + ": no heads");
  }
}

// The question as a unit row, as familiarity.ts's unitRows rounds it.
void unit_rows(const float* q, size_t batch, size_t dim, float* out) {
  for (size_t b = 0; b < batch; ++b) {
    double s = 0;
    for (size_t j = 0; j < dim; ++j) s += double(q[b * dim + j]) * double(q[b * dim + j]);
    const double inv = 1 / std::max(std::sqrt(s), 1e-12);
    for (size_t j = 0; j < dim; ++j) out[b * dim + j] = float(double(q[b * dim + j]) * inv);
  }
}

double mean_row(const float* s, size_t n) {
  double t = 0;
  for (size_t j = 0; j < n; ++j) t += double(s[j]);
  return t / double(n);
}

}  // namespace

void fixed_confidence(size_t batch, const float* weights, float* mi, float* conf) {
  std::fill(mi, mi + batch, std::numeric_limits<float>::quiet_NaN());
  if (weights) std::copy(weights, weights + batch, conf);
  else std::fill(conf, conf + batch, 1.f);
}

void muf_search(const MufSearchPlan& p, const MufSearchOut& out) {
  check(p);
  const size_t E = p.n_experts, B = p.batch, L = p.top_l;
  const bool familiar = p.mode == MufConfidenceMode::kFamiliarity;
  Laps laps(out.ms);
  // Every scan of every expert in one region: the corpus's top-L, and with familiarity the two banks' top fam_k.
  std::vector<int32_t> cand(E * B * L);
  std::vector<float> cand_scores(E * B * L);
  // Each expert's questions as unit rows, at its own offset: experts may differ in width.
  std::vector<size_t> unit_at(E + 1, 0);
  for (size_t x = 0; x < E; ++x) unit_at[x + 1] = unit_at[x] + (familiar ? B * p.experts[x].passages.dim : 0);
  std::vector<float> unit(unit_at[E]);
  struct Bank {
    size_t k;
    std::vector<int32_t> ids;
    std::vector<float> scores;
  };
  std::vector<Bank> banks(familiar ? 2 * E : 0);
  // Experts whose scan is rescored: their candidates' ids and scores before the rescoring (m a question).
  std::vector<std::vector<int32_t>> wide_ids(E);
  std::vector<std::vector<float>> wide_scores(E);
  std::vector<size_t> wide_m(E, 0);
  const size_t searched = p.rows ? p.n_rows : p.experts[0].passages.rows;
  std::vector<TopKSearch> searches;
  for (size_t x = 0; x < E; ++x) {
    const MufSearchExpert& e = p.experts[x];
    const size_t D = e.passages.dim;
    // The fusion takes each list as a set; the heads read them in rank order.
    if (e.rescore.data) {
      const size_t m = std::max(L, std::min(e.candidates, searched));
      wide_m[x] = m;
      wide_ids[x].resize(B * m);
      wide_scores[x].resize(B * m);
      searches.push_back({{e.queries, B, D}, e.passages, m, wide_ids[x].data(), wide_scores[x].data(), p.rows, p.n_rows, false});
    } else {
      searches.push_back({{e.queries, B, D}, e.passages, L, cand.data() + x * B * L, cand_scores.data() + x * B * L, p.rows, p.n_rows,
                          p.mode == MufConfidenceMode::kHeads});
    }
    if (!familiar) continue;
    float* u = unit.data() + unit_at[x];
    unit_rows(e.queries, B, D, u);
    for (size_t side = 0; side < 2; ++side) {
      const CorpusMatrix& c = side == 0 ? e.own : e.other;
      Bank& bank = banks[2 * x + side];
      bank.k = std::min(e.fam_k, c.rows);
      bank.ids.resize(B * bank.k);
      bank.scores.resize(B * bank.k);
      searches.push_back({{u, B, D}, c, bank.k, bank.ids.data(), bank.scores.data()});
    }
  }
  score_topk_many(searches.data(), searches.size());
  for (size_t x = 0; x < E; ++x)
    if (wide_m[x])
      rescore_topk({p.experts[x].queries, B, p.experts[x].passages.dim}, p.experts[x].rescore, wide_ids[x].data(), wide_m[x], L,
                   cand.data() + x * B * L, cand_scores.data() + x * B * L);
  laps.lap(0);

  if (p.mode != MufConfidenceMode::kHeads) {
    std::vector<float> familiarity(familiar ? B : 0);
    for (size_t x = 0; x < E; ++x) {
      const MufSearchExpert& e = p.experts[x];
      for (size_t b = 0; familiar && b < B; ++b) {
        const Bank& own = banks[2 * x];
        const Bank& other = banks[2 * x + 1];
        const float margin = float(mean_row(own.scores.data() + b * own.k, own.k) - mean_row(other.scores.data() + b * other.k, other.k));
        const double z = e.platt_bias + e.platt_weight * double(margin);
        familiarity[b] = float(1 / (1 + std::exp(-z)));
      }
      fixed_confidence(B, familiar ? familiarity.data() : nullptr, out.mi + x * B, out.confidence + x * B);
    }
  }
  if (p.mode == MufConfidenceMode::kHeads) {
    std::vector<HeadsExpert> heads(E);
    for (size_t x = 0; x < E; ++x) {
      const MufSearchExpert& e = p.experts[x];
      heads[x] = {e.members, e.layers, e.n_layers, e.queries, e.rescore.data ? e.rescore : e.passages, cand.data() + x * B * L, L, e.temperature,
                  out.mi + x * B, out.confidence + x * B};
    }
    muf_confidence(heads.data(), E, B, false);
  }
  laps.lap(1);

  std::vector<FuseList> lists(E);
  for (size_t x = 0; x < E; ++x) lists[x] = {cand.data() + x * B * L, cand_scores.data() + x * B * L, L, out.confidence + x * B};
  muf_fuse(lists.data(), E, B, p.tie_rank, p.experts[0].passages.rows, p.k, out.ids, out.scores);
  laps.lap(2);
}

}  // namespace quorum::kernels
