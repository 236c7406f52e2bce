// AArch64 NEON variant of quant_dot.h (docs/methods/quantization.md). score_bits is the portable body, whose 64-bit
// popcount AArch64 compiles to CNT on a vector register. score_s8 has two forms, picked once from the CPU's hwcaps:
//
// - plain NEON: bytes widened to 16 bits and multiply-accumulated into 32-bit lanes; a byte product then costs what an
//   f32 one does, so fast_s8 is false and int8 corpora take f32 queries, and there is no s8_tile.
// - dotprod (SDOT, ARMv8.2+: Neoverse N1 / V1 / N2 / V2, Graviton 2-4, Ampere Altra, Cobalt): 16 byte products
//   into four 32-bit lanes per instruction, as VNNI's vpdpbusd on x86, so fast_s8 is true and s8_tile is in. SDOT
//   multiplies signed by signed bytes and the corpus codes are unsigned (0..255), so a row is read as c ^ 0x80 =
//   c - 128 and each query adds back 128 * (sum of its codes): dot(q, c) = dot(q, c - 128) + 128 * sum(q), exact in
//   int32, the same bits as the scalar reference. (USDOT, the mixed-sign form, needs FEAT_I8MM: fewer cores.)
#include "quant_dot.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstring>

#include "../common/cpu_features.h"

namespace quorum::kernels {
namespace {

void score_s8(const uint8_t* q, size_t qstride, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim,
              float* out, size_t ldo) {
  const size_t pad = (dim + kS8Pad - 1) / kS8Pad * kS8Pad;
  for (size_t i = 0; i < nq; ++i) {
    const uint8_t* qi = q + i * qstride;
    float scale;
    std::memcpy(&scale, qi + pad, 4);
    for (size_t j = 0; j < nrows; ++j) {
      const uint8_t* r = rows[j];
      int32x4_t acc = vdupq_n_s32(0);
      size_t d = 0;
      for (; d + 16 <= dim; d += 16) {
        const int16x8_t ql = vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(qi + d)));
        const int16x8_t qh = vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(qi + d + 8)));
        const int16x8_t cl = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(r + d)));
        const int16x8_t ch = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(r + d + 8)));
        acc = vmlal_s16(acc, vget_low_s16(ql), vget_low_s16(cl));
        acc = vmlal_high_s16(acc, ql, cl);
        acc = vmlal_s16(acc, vget_low_s16(qh), vget_low_s16(ch));
        acc = vmlal_high_s16(acc, qh, ch);
      }
      int32_t sum = vaddvq_s32(acc);
      for (; d < dim; ++d) sum += int32_t(int8_t(qi[d])) * int32_t(r[d]);
      out[i * ldo + j] = scale * float(sum);
    }
  }
}

#include "quant_dot_body.h"

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

// 16 bytes of a corpus row from r, as signed codes c - 128. Past `dim` the bytes are whatever the zeroed tail gives:
// the query's codes there are 0 (score_s8's padding; s8_tile's panel), so they add nothing.
inline int8x16_t row16(const uint8_t* r) { return vreinterpretq_s8_u8(veorq_u8(vld1q_u8(r), vdupq_n_u8(0x80))); }
inline int8x16_t row_tail(const uint8_t* r, size_t n) {
  uint8_t t[16] = {};
  std::memcpy(t, r, n);
  return row16(t);
}

// [sum a, sum b, sum c, sum d]
inline int32x4_t reduce4(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) {
  return vpaddq_s32(vpaddq_s32(a, b), vpaddq_s32(c, d));
}

// MR queries x 4 rows: 4 * MR accumulators of 4 lanes, one SDOT per query and row for each 16 bytes, then one
// pairwise reduction per query (MR = 4: 16 of the 32 vector registers, the dense tile's shape).
template <int MR>
void sdot_tile(const uint8_t* q, size_t qstride, const uint8_t* const (&r)[4], size_t dim, size_t pad, float* o,
               size_t ldo, size_t nr) {
  int32x4_t acc[MR][4];
  for (auto& row : acc)
    for (auto& a : row) a = vdupq_n_s32(0);
  int32x4_t qsum[MR];
  for (auto& s : qsum) s = vdupq_n_s32(0);
  const int8x16_t ones = vdupq_n_s8(1);
  size_t d = 0;
  for (; d + 16 <= dim; d += 16) {
    int8x16_t c[4];
    for (int j = 0; j < 4; ++j) c[j] = row16(r[j] + d);
    for (int i = 0; i < MR; ++i) {
      const int8x16_t qv = vld1q_s8(reinterpret_cast<const int8_t*>(q + i * qstride + d));
      qsum[i] = vdotq_s32(qsum[i], qv, ones);
      for (int j = 0; j < 4; ++j) acc[i][j] = vdotq_s32(acc[i][j], qv, c[j]);
    }
  }
  if (d < dim) {  // a query row is padded to kS8Pad bytes, so its 16 bytes are readable; a corpus row is not
    int8x16_t c[4];
    for (int j = 0; j < 4; ++j) c[j] = row_tail(r[j] + d, dim - d);
    for (int i = 0; i < MR; ++i) {
      const int8x16_t qv = vld1q_s8(reinterpret_cast<const int8_t*>(q + i * qstride + d));
      qsum[i] = vdotq_s32(qsum[i], qv, ones);
      for (int j = 0; j < 4; ++j) acc[i][j] = vdotq_s32(acc[i][j], qv, c[j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    const int32x4_t s = vaddq_s32(reduce4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]),
                                  vshlq_n_s32(vdupq_n_s32(vaddvq_s32(qsum[i])), 7));
    float scale;
    std::memcpy(&scale, q + i * qstride + pad, 4);
    const float32x4_t x = vmulq_n_f32(vcvtq_f32_s32(s), scale);
    if (nr == 4) {
      vst1q_f32(o + i * ldo, x);
    } else {
      float t[4];
      vst1q_f32(t, x);
      for (size_t j = 0; j < nr; ++j) o[i * ldo + j] = t[j];
    }
  }
}

void score_s8_dot(const uint8_t* q, size_t qstride, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim,
                  float* out, size_t ldo) {
  const size_t pad = (dim + kS8Pad - 1) / kS8Pad * kS8Pad;
  const size_t tiled = nq / 4 * 4;
  for (size_t j0 = 0; j0 < nrows; j0 += 4) {
    const size_t nr = nrows - j0 < 4 ? nrows - j0 : 4;
    const uint8_t* r[4];
    for (size_t j = 0; j < 4; ++j) r[j] = rows[j0 + (j < nr ? j : nr - 1)];  // a short group repeats its last row
    for (size_t i = 0; i < tiled; i += 4) sdot_tile<4>(q + i * qstride, qstride, r, dim, pad, out + i * ldo + j0, ldo, nr);
    for (size_t i = tiled; i < nq; ++i) sdot_tile<1>(q + i * qstride, qstride, r, dim, pad, out + i * ldo + j0, ldo, nr);
  }
}

// s8_tile (quant_dot.h) with SDOT by element: a panel vector holds 4 dimensions of 4 queries, and
// vdotq_laneq_s32(acc, panel, row, l) adds to each query's lane its dot with the row's 4 bytes in lane l. The 12 x 32
// tile runs as six sub-tiles of 4 rows x 16 queries (16 accumulators, 4 panel vectors and 4 row vectors: 24 of 32
// registers; a 12 x 32 tile of 4-query vectors would need 96), each row load serving 4 steps of 4 dimensions. The
// rows' -128 shift comes back as 128 * (each query's sum of codes), summed once per call from the panel.
// One step of 4 dimensions for 4 rows x 16 queries: the 4 panel vectors at p against lane L (4 bytes) of each row.
template <int L>
inline __attribute__((always_inline)) void lane_step(int32x4_t (&acc)[4][4], const int8_t* p, const int8x16_t (&x)[4]) {
  int8x16_t b[4];
  for (int k = 0; k < 4; ++k) b[k] = vld1q_s8(p + 16 * k);
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 4; ++k) acc[i][k] = vdotq_laneq_s32(acc[i][k], b[k], x[i], L);
}

bool s8_gemm_tile(size_t dim, const uint8_t* const* rows, const int8_t* panel, const float* scales, float* c, size_t ldc,
                  size_t m_used, size_t n_used, const float* thr, uint32_t* hits) {
  constexpr size_t R = kS8TileRows, Q = kS8TileQueries, V = Q / 4;  // V panel vectors a step of 4 dimensions
  static_assert(R % 4 == 0 && Q % 16 == 0, "sub-tiles of 4 rows x 16 queries");
  const size_t groups = (dim + 3) / 4;  // the panel is zero past dim; a row is read only within its bytes
  int32x4_t qsum[V];
  for (auto& s : qsum) s = vdupq_n_s32(0);
  const int8x16_t ones = vdupq_n_s8(1);
  for (size_t g = 0; g < groups; ++g)
    for (size_t v = 0; v < V; ++v) qsum[v] = vdotq_s32(qsum[v], vld1q_s8(panel + (g * V + v) * 16), ones);
  int32_t corr[Q];
  for (size_t v = 0; v < V; ++v) vst1q_s32(corr + 4 * v, vshlq_n_s32(qsum[v], 7));

  const size_t full = dim / 16 * 16;
  int32_t dots[R][Q];
  for (size_t r0 = 0; r0 < R; r0 += 4) {
    const uint8_t* r[4] = {rows[r0], rows[r0 + 1], rows[r0 + 2], rows[r0 + 3]};
    for (size_t h = 0; h < Q / 16; ++h) {
      int32x4_t acc[4][4];
      for (auto& row : acc)
        for (auto& a : row) a = vdupq_n_s32(0);
      for (size_t d = 0; d < full; d += 16) {
        const int8x16_t x[4] = {row16(r[0] + d), row16(r[1] + d), row16(r[2] + d), row16(r[3] + d)};
        const int8_t* p = panel + (d / 4 * V + 4 * h) * 16;
        lane_step<0>(acc, p, x);
        lane_step<1>(acc, p + Q * 4, x);
        lane_step<2>(acc, p + Q * 8, x);
        lane_step<3>(acc, p + Q * 12, x);
      }
      if (full < dim) {
        const size_t n = dim - full;
        const int8x16_t x[4] = {row_tail(r[0] + full, n), row_tail(r[1] + full, n), row_tail(r[2] + full, n),
                                row_tail(r[3] + full, n)};
        const int8_t* p = panel + (full / 4 * V + 4 * h) * 16;
        lane_step<0>(acc, p, x);
        if (n > 4) lane_step<1>(acc, p + Q * 4, x);
        if (n > 8) lane_step<2>(acc, p + Q * 8, x);
        if (n > 12) lane_step<3>(acc, p + Q * 12, x);
      }
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 4; ++k) vst1q_s32(&dots[r0 + i][16 * h + 4 * k], acc[i][k]);
    }
  }
  bool any = false;
  for (size_t i = 0; i < m_used; ++i) {
    uint32_t hit = 0;
    for (size_t j = 0; j < n_used; ++j) {
      const float x = scales[j] * float(dots[i][j] + corr[j]);
      c[i * ldc + j] = x;
      if (thr && x >= thr[j]) hit |= 1u << j;
    }
    if (thr) hits[i] = hit, any = any || hit != 0;
  }
  return any;
}

#pragma GCC pop_options

}  // namespace

const QuantDotOps* quant_dot_neon() {
  static const QuantDotOps plain{"neon", false, score_s8, score_bits, nullptr};
  static const QuantDotOps dot{"neon-dotprod", true, score_s8_dot, score_bits, s8_gemm_tile};
  return cpu_features().dotprod ? &dot : &plain;
}

}  // namespace quorum::kernels

#else
namespace quorum::kernels {
const QuantDotOps* quant_dot_neon() { return nullptr; }
}  // namespace quorum::kernels
#endif
