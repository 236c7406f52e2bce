#include "contract.h"

#include <cmath>
#include <string>

#include "../common/error.h"

namespace quorum::kernels::contract {
namespace {

std::string num(size_t v) { return std::to_string(v); }

void need_f32(Dtype d, const char* what) {
  if (d != Dtype::F32) throw Error("ERR_DTYPE", std::string(what) + " must be f32, got " + dtype_name(d));
}
void need_float(Dtype d, const char* what) {
  if (!dtype_is_float(d)) throw Error("ERR_DTYPE", std::string(what) + " must be f32, bf16 or f16, got " + dtype_name(d));
}
void need_count(size_t got, size_t want, const std::string& what) {
  if (got != want) throw Error("ERR_SHAPE", what + " must hold " + num(want) + " entries, got " + num(got));
}

}  // namespace

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

DenseQueries dense_queries(Dtype dtype, const Shape& s) {
  if (s.size() != 2) throw Error("ERR_SHAPE", "queries must be 2-D [rows, dim], got shape " + shape_str(s));
  need_f32(dtype, "queries");
  if (s[1] == 0) throw Error("ERR_SHAPE", "queries have dimension 0");
  return {size_t(s[0]), size_t(s[1])};
}

size_t dense_corpus(Dtype dtype, const Shape& s, size_t dim) {
  if (s.size() != 2) throw Error("ERR_SHAPE", "corpus must be 2-D [rows, dim], got shape " + shape_str(s));
  need_float(dtype, "corpus");
  if (size_t(s[1]) != dim)
    throw Error("ERR_SHAPE", "corpus dimension " + std::to_string(s[1]) + " differs from the queries' " + num(dim));
  return size_t(s[0]);
}

TokenQueryShape maxsim_queries(Dtype dtype, const Shape& s) {
  need_f32(dtype, "queries");
  if (s.size() != 2 && s.size() != 3)
    throw Error("ERR_SHAPE", "queries must be [Lq, dim] or [nq, Lq, dim], got " + shape_str(s));
  TokenQueryShape q{s.size() == 3 ? size_t(s[0]) : 1, size_t(s[s.size() - 2]), size_t(s.back())};
  if (q.dim == 0) throw Error("ERR_SHAPE", "query token vectors have dimension 0");
  return q;
}

void maxsim_query_mask(size_t count, const TokenQueryShape& q) {
  if (count != q.nq * q.lq)
    throw Error("ERR_SHAPE", "queryMask must hold nq * Lq = " + num(q.nq * q.lq) + " entries, got " + num(count));
}

size_t maxsim_documents(Dtype dtype, const Shape& s, size_t dim, const int32_t* len, size_t n, int64_t* start,
                        int64_t* length) {
  need_float(dtype, "documents");
  if (s.size() != 2 && s.size() != 3)
    throw Error("ERR_SHAPE", "documents must be packed [tokens, dim] or padded [N, Ld, dim], got " + shape_str(s));
  if (size_t(s.back()) != dim)
    throw Error("ERR_SHAPE", "document dimension " + std::to_string(s.back()) + " differs from the queries' " + num(dim));
  const bool padded = s.size() == 3;
  if (padded && n != size_t(s[0]))
    throw Error("ERR_SHAPE", "padded documents [N, Ld, dim] need N = " + std::to_string(s[0]) + " lengths, got " + num(n));
  const size_t rows = padded ? size_t(s[0]) * size_t(s[1]) : size_t(s[0]);
  int64_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    if (len[i] < 0) throw Error("ERR_RANGE", "length " + std::to_string(len[i]) + " of document " + num(i) + " is negative");
    if (padded && len[i] > s[1])
      throw Error("ERR_RANGE", "length " + std::to_string(len[i]) + " of document " + num(i) +
                                   " exceeds the padded length " + std::to_string(s[1]));
    start[i] = padded ? int64_t(i) * s[1] : at;
    length[i] = len[i];
    at += len[i];
  }
  if (!padded && size_t(at) != rows)
    throw Error("ERR_SHAPE", "document lengths sum to " + std::to_string(at) + " but the packed documents hold " +
                                 num(rows) + " token rows");
  return rows;
}

void maxsim_token_mask(size_t count, size_t rows) {
  if (count != rows)
    throw Error("ERR_SHAPE", "tokenMask must hold one entry per token row (" + num(rows) + "), got " + num(count));
}

LogitsShape splade_logits(Dtype dtype, const Shape& s) {
  need_float(dtype, "logits");
  if (s.size() != 3) throw Error("ERR_SHAPE", "logits must be [B, L, V], got " + shape_str(s));
  return {size_t(s[0]), size_t(s[1]), size_t(s[2])};
}

void splade_mask(size_t count, const LogitsShape& x) {
  if (count != x.batch * x.len)
    throw Error("ERR_SHAPE", "mask must hold B * L = " + num(x.batch * x.len) + " entries, got " + num(count));
}

void splade_backward(Dtype argmax, const Shape& as, Dtype grad, const Shape& gs, const LogitsShape& x) {
  const Shape want{int64_t(x.batch), int64_t(x.vocab)};
  if (argmax != Dtype::I32) throw Error("ERR_DTYPE", std::string("argmax must be i32, got ") + dtype_name(argmax));
  if (as != want) throw Error("ERR_SHAPE", "argmax must have shape " + shape_str(want) + ", got " + shape_str(as));
  need_f32(grad, "grad");
  if (gs != want) throw Error("ERR_SHAPE", "grad must have shape " + shape_str(want) + ", got " + shape_str(gs));
}

InfoNceShape info_nce(Dtype q, const Shape& qs, Dtype p, const Shape& ps) {
  need_f32(q, "queries");
  need_f32(p, "passages");
  if (qs.size() != 2) throw Error("ERR_SHAPE", "queries must be 2-D [B, D], got " + shape_str(qs));
  if (ps.size() != 2) throw Error("ERR_SHAPE", "passages must be 2-D [M, D], got " + shape_str(ps));
  const InfoNceShape s{size_t(qs[0]), size_t(ps[0]), size_t(qs[1])};
  if (size_t(ps[1]) != s.dim)
    throw Error("ERR_SHAPE", "passage dimension " + std::to_string(ps[1]) + " differs from the queries' " + num(s.dim));
  if (s.passages == 0) throw Error("ERR_SHAPE", "infoNce needs at least one passage");
  if (s.dim == 0) throw Error("ERR_SHAPE", "infoNce needs vectors of dimension > 0");
  return s;
}

void info_nce_counts(size_t positives, size_t weights, bool has_weights, const InfoNceShape& s) {
  need_count(positives, s.batch, "positives (one per query)");
  if (has_weights) need_count(weights, s.batch, "weights (one per query)");
}

void info_nce_positives(const int32_t* pos, const InfoNceShape& s) {
  for (size_t i = 0; i < s.batch; ++i)
    if (pos[i] < 0 || size_t(pos[i]) >= s.passages)
      throw Error("ERR_RANGE", "positive index " + std::to_string(pos[i]) + " of row " + num(i) + " is outside [0, " +
                                   num(s.passages) + ")");
}

EnsembleShape ensemble_scores(Dtype dtype, const Shape& s) {
  need_f32(dtype, "scores");
  if (s.size() != 3) throw Error("ERR_SHAPE", "scores must be [B, K, L], got " + shape_str(s));
  const EnsembleShape e{size_t(s[0]), size_t(s[1]), size_t(s[2])};
  if (e.members < 2) throw Error("ERR_SHAPE", "ensembleMI needs at least 2 members, got " + num(e.members));
  if (e.len == 0) throw Error("ERR_SHAPE", "ensembleMI needs at least 1 candidate per query");
  return e;
}

void ensemble_length_count(size_t count, const EnsembleShape& s) { need_count(count, s.batch, "lengths (one per query)"); }

void ensemble_lengths(const int32_t* lengths, const EnsembleShape& s) {
  for (size_t b = 0; b < s.batch; ++b)
    if (lengths[b] < 1 || size_t(lengths[b]) > s.len)
      throw Error("ERR_RANGE", "length " + std::to_string(lengths[b]) + " of query " + num(b) + " is outside [1, " +
                                   num(s.len) + "]");
}

void temperature(double t) {
  if (!(t > 0) || !std::isfinite(t)) throw Error("ERR_RANGE", "temperature must be positive and finite");
}

}  // namespace quorum::kernels::contract
