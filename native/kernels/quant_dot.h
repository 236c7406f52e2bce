// Contract of the quantized-corpus kernel family (docs/methods/quantization.md): the two scorers of int8 and binary
// corpora that are not f32 arithmetic. (f32 queries against int8 codes are dense_dot.h with a u8 corpus.)
//
// score_s8: int8 x int8. Query rows are signed codes (zero-padded to a multiple of kS8Pad bytes) followed by one f32,
// the query's scale; corpus rows are `dim` unsigned codes (0..255). out[i * ldo + j] = scale_i * dot_i,j, the dot
// exact in int32 (every variant gives the same bits; dim * 255 * 127 must fit: dim <= 66,000).
//
// score_bits: 1-bit corpus rows against a query of `planes` bit planes. A corpus row is `words` u64 of sign bits
// (dimension d is bit d % 64 of word d / 64; bits past dim are 0), then f32 alpha (the row's scale) and u32 pop (its
// count of set bits). A query row is planes * words u64 (plane p holds bit p of each dimension's level u_d in
// [0, 2^planes)), then f32 lo2, delta2 and sum. With A = sum_p 2^p popcount(plane_p & row):
//   out[i * ldo + j] = alpha_j * (lo2_i * pop_j + delta2_i * A_i,j - sum_i)
// which is alpha_j * sum_d q~_d (2 b_d - 1) for the query levels q~_d = lo + delta * u_d (lo2 = 2 lo, delta2 =
// 2 delta, sum = sum_d q~_d). One plane with lo = -1, delta = 2 is the Hamming score of sign bits.
// Variants differ only by the rounding of that last expression (a fused multiply-add or not).
//
// s8_tile: the many-query form of score_s8, a GEMM register tile of kS8TileRows corpus rows x kS8TileQueries queries
// with no horizontal sums: each 4 bytes of a row are broadcast against a panel of the queries packed four dimensions
// to a 32-bit lane (pack_s8_panel). c[i * ldc + j] = scales[j] * dot_i,j for i < m_used, j < n_used, the dot exact
// in int32 as score_s8's (the same bits); all kS8TileRows row pointers are valid and each is read within its `dim`
// bytes. With thr: bit j of hits[i] is set when c[i * ldc + j] >= thr[j] (NaN never), and it returns whether any bit
// is; without (null), it returns false. (The tile of GemmOps::tile_rows_hits, in int8.)
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace quorum::kernels {

constexpr size_t kS8Pad = 64;

struct BitsQueryTail {
  float lo2, delta2, sum, pad;
};
struct BitsRowTail {
  float alpha;
  uint32_t pop;
};

constexpr size_t kS8TileRows = 12, kS8TileQueries = 32;

// Bytes of one s8_tile panel over `dim` dimensions.
inline size_t s8_panel_bytes(size_t dim) { return (dim + 3) / 4 * 4 * kS8TileQueries; }

// Packs nq <= kS8TileQueries of score_s8's query rows (q, qstride) into one s8_tile panel and its scales: query j's
// dimensions 4g .. 4g + 3 at panel[g * 4 * kS8TileQueries + 4 * j ...], zero past `dim` and for j >= nq.
inline void pack_s8_panel(const uint8_t* q, size_t qstride, size_t nq, size_t dim, int8_t* panel, float* scales) {
  const size_t pad = (dim + kS8Pad - 1) / kS8Pad * kS8Pad;
  std::memset(panel, 0, s8_panel_bytes(dim));
  for (size_t j = 0; j < kS8TileQueries; ++j) {
    scales[j] = 0.f;
    if (j >= nq) continue;
    const uint8_t* qj = q + j * qstride;
    for (size_t d = 0; d < dim; ++d) panel[(d / 4) * 4 * kS8TileQueries + 4 * j + d % 4] = int8_t(qj[d]);
    std::memcpy(&scales[j], qj + pad, 4);
  }
}

struct QuantDotOps {
  const char* isa;
  // True where score_s8 is measured faster than f32 queries over u8 codes (VNNI): the search picks it by this.
  bool fast_s8;
  void (*score_s8)(const uint8_t* q, size_t qstride, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim,
                   float* out, size_t ldo);
  void (*score_bits)(const uint8_t* q, size_t qstride, size_t planes, size_t nq, const uint8_t* const* rows,
                     size_t nrows, size_t words, float* out, size_t ldo);
  bool (*s8_tile)(size_t dim, const uint8_t* const* rows, const int8_t* panel, const float* scales, float* c, size_t ldc,
                  size_t m_used, size_t n_used, const float* thr, uint32_t* hits);
};

// The row's score from its integer parts: one expression shared by every variant.
inline float bits_score(const BitsQueryTail& t, const BitsRowTail& r, uint32_t a) {
  return r.alpha * (t.lo2 * float(r.pop) + t.delta2 * float(a) - t.sum);
}

const QuantDotOps& quant_dot_scalar();
const QuantDotOps* quant_dot_avx2();
const QuantDotOps* quant_dot_avx512();
const QuantDotOps* quant_dot_neon();  // AArch64 builds only (else nullptr)
const QuantDotOps& quant_dot();  // the active ISA's (dispatch.h)

}  // namespace quorum::kernels
