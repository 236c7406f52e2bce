// AVX-512 variant of quant_dot.h. score_s8 uses VNNI (vpdpbusd: 64 unsigned x signed byte products into 16 int32 lanes
// per instruction, four times the multiply-adds of an f32 FMA) in a 4-query x 4-row register tile; score_bits counts
// the bits of 8 words at a time with VPOPCNTDQ. A CPU with AVX-512 but without one of those extensions (Skylake-X)
// runs the AVX2 form of that kernel.
#include "quant_dot.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "../common/cpu_features.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vpopcntdq,avx2,fma,popcnt")

namespace quorum::kernels {
namespace {

constexpr int kMR = 4, kNR = 4;

// Lane 4 * i + j of the result is the total of acc[i][j]: the shuffle tree of dense_dot_avx512.cc in int32.
__m512i reduce16(const __m512i (&acc)[kMR][kNR]) {
  __m512i t[kNR];
  for (int j = 0; j < kNR; ++j) {
    const __m512i ab = _mm512_add_epi32(_mm512_shuffle_i32x4(acc[0][j], acc[1][j], 0x44), _mm512_shuffle_i32x4(acc[0][j], acc[1][j], 0xee));
    const __m512i cd = _mm512_add_epi32(_mm512_shuffle_i32x4(acc[2][j], acc[3][j], 0x44), _mm512_shuffle_i32x4(acc[2][j], acc[3][j], 0xee));
    t[j] = _mm512_add_epi32(_mm512_shuffle_i32x4(ab, cd, 0x88), _mm512_shuffle_i32x4(ab, cd, 0xdd));
  }
  const __m512i p01 = _mm512_add_epi32(_mm512_unpacklo_epi32(t[0], t[1]), _mm512_unpackhi_epi32(t[0], t[1]));
  const __m512i p23 = _mm512_add_epi32(_mm512_unpacklo_epi32(t[2], t[3]), _mm512_unpackhi_epi32(t[2], t[3]));
  const __m512 lo = _mm512_shuffle_ps(_mm512_castsi512_ps(p01), _mm512_castsi512_ps(p23), 0x44);
  const __m512 hi = _mm512_shuffle_ps(_mm512_castsi512_ps(p01), _mm512_castsi512_ps(p23), 0xee);
  return _mm512_add_epi32(_mm512_castps_si512(lo), _mm512_castps_si512(hi));
}

inline void s8_tile(const uint8_t* q, size_t qstride, const uint8_t* const (&r)[kNR], size_t dim, size_t pad,
                    float* o, size_t ldo, size_t nr) {
  __m512i acc[kMR][kNR];
  for (auto& row : acc)
    for (auto& a : row) a = _mm512_setzero_si512();
  size_t d = 0;
  __m512i c[kNR];
  for (; d + 64 <= dim; d += 64) {
    for (int j = 0; j < kNR; ++j) c[j] = _mm512_loadu_si512(r[j] + d);
    for (int i = 0; i < kMR; ++i) {
      const __m512i qv = _mm512_loadu_si512(q + i * qstride + d);
      for (int j = 0; j < kNR; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], c[j], qv);
    }
  }
  if (d < dim) {
    const __mmask64 m = _cvtu64_mask64((~0ull) >> (64 - (dim - d)));
    for (int j = 0; j < kNR; ++j) c[j] = _mm512_maskz_loadu_epi8(m, r[j] + d);
    for (int i = 0; i < kMR; ++i) {
      const __m512i qv = _mm512_loadu_si512(q + i * qstride + d);
      for (int j = 0; j < kNR; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], c[j], qv);
    }
  }
  alignas(64) int32_t res[16];
  _mm512_store_si512(res, reduce16(acc));
  for (int i = 0; i < kMR; ++i) {
    float scale;
    std::memcpy(&scale, q + i * qstride + pad, 4);
    for (size_t j = 0; j < nr; ++j) o[i * ldo + j] = scale * float(res[i * 4 + j]);
  }
}

// One query against 16 rows: the same 16 accumulators and reduction as a 4 x 4 tile, so that a lone query (B = 1, or
// the last of a batch) pays one reduction per 16 rows instead of per 4. Measured over 100k x 768 at B = 1: see
// docs/results/quantization.md.
void s8_rows16(const uint8_t* q, const uint8_t* const* r, size_t dim, size_t pad, float* o, size_t nr) {
  __m512i acc[kMR][kNR];
  for (auto& row : acc)
    for (auto& a : row) a = _mm512_setzero_si512();
  // Row after row, not a 64-byte step of all 16 rows at a time: rows of a block are contiguous, so this reads memory
  // in address order, which the hardware prefetcher follows; 16 interleaved streams of 12 lines each (768-d) were too
  // short for it to learn. Measured over 100k x 768 at B = 1, 2 threads: 14.5 -> 22-28 GB/s (docs/results/quantization.md).
  const size_t full = dim / 64 * 64;
  const __mmask64 m = _cvtu64_mask64(dim == full ? 0 : (~0ull) >> (64 - (dim - full)));
  for (int j = 0; j < 16; ++j) {
    __m512i a = _mm512_setzero_si512();
    const uint8_t* rj = r[j];
    for (size_t d = 0; d < full; d += 64) a = _mm512_dpbusd_epi32(a, _mm512_loadu_si512(rj + d), _mm512_loadu_si512(q + d));
    if (full < dim) a = _mm512_dpbusd_epi32(a, _mm512_maskz_loadu_epi8(m, rj + full), _mm512_loadu_si512(q + full));
    acc[j / 4][j % 4] = a;
  }
  alignas(64) int32_t res[16];
  _mm512_store_si512(res, reduce16(acc));
  float scale;
  std::memcpy(&scale, q + pad, 4);
  for (size_t j = 0; j < nr; ++j) o[j] = scale * float(res[j]);
}

void score_s8(const uint8_t* q, size_t qstride, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim,
              float* out, size_t ldo) {
  const size_t pad = (dim + kS8Pad - 1) / kS8Pad * kS8Pad;
  const size_t tiled = nq / kMR * kMR;
  if (tiled < nq)
    for (size_t j0 = 0; j0 < nrows; j0 += 16) {
      const size_t nr = nrows - j0 < 16 ? nrows - j0 : 16;
      const uint8_t* r[16];
      for (size_t j = 0; j < 16; ++j) r[j] = rows[j0 + (j < nr ? j : nr - 1)];
      for (size_t i = tiled; i < nq; ++i) s8_rows16(q + i * qstride, r, dim, pad, out + i * ldo + j0, nr);
    }
  if (tiled == 0) return;
  for (size_t j0 = 0; j0 < nrows; j0 += kNR) {
    const size_t nr = nrows - j0 < size_t(kNR) ? nrows - j0 : size_t(kNR);
    const uint8_t* r[kNR];
    for (size_t j = 0; j < size_t(kNR); ++j) r[j] = rows[j0 + (j < nr ? j : nr - 1)];  // a short group repeats its last row
    for (size_t i = 0; i < tiled; i += kMR) s8_tile(q + i * qstride, qstride, r, dim, pad, out + i * ldo + j0, ldo, nr);
  }
}

// s8_tile (quant_dot.h): 12 rows x 32 queries = 24 accumulators, 2 panel vectors and a broadcast of 32 registers,
// the shape of the f32 GEMM tile (gemm_body.h), with four dimensions a lane: each step of 4 dimensions loads the two
// panel vectors and broadcasts 4 bytes of each row into 24 vpdpbusd, and no horizontal sum follows (the 4 x 4 dot
// tile above pays a 16-accumulator reduction every 4 rows, which at 100 dimensions costs as much as its products).
uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

bool s8_gemm_tile(size_t dim, const uint8_t* const* rows, const int8_t* panel, const float* scales, float* c, size_t ldc,
                  size_t m_used, size_t n_used, const float* thr, uint32_t* hits) {
  constexpr size_t R = kS8TileRows;
  static_assert(kS8TileQueries == 32, "two vectors of 16 queries");
  const uint8_t* r[R];
  for (size_t i = 0; i < R; ++i) r[i] = rows[i];
  __m512i acc[R][2];
#pragma GCC unroll 16
  for (size_t i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_si512();
  const size_t groups = dim / 4, rest = dim % 4;
  const int8_t* p = panel;
#pragma GCC unroll 2
  for (size_t g = 0; g < groups; ++g, p += 4 * kS8TileQueries) {
    const __m512i b0 = _mm512_loadu_si512(p), b1 = _mm512_loadu_si512(p + 64);
#pragma GCC unroll 16
    for (size_t i = 0; i < R; ++i) {
      const __m512i a = _mm512_set1_epi32(int(load_u32(r[i] + 4 * g)));
      acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], a, b0);
      acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], a, b1);
    }
  }
  if (rest) {  // the last 1-3 dimensions: a row is read only within its bytes
    const __m512i b0 = _mm512_loadu_si512(p), b1 = _mm512_loadu_si512(p + 64);
#pragma GCC unroll 16
    for (size_t i = 0; i < R; ++i) {
      uint32_t t = 0;
      std::memcpy(&t, r[i] + 4 * groups, rest);
      const __m512i a = _mm512_set1_epi32(int(t));
      acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], a, b0);
      acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], a, b1);
    }
  }
  const __m512 s0 = _mm512_loadu_ps(scales), s1 = _mm512_loadu_ps(scales + 16);
  const __mmask16 m0 = __mmask16(n_used >= 16 ? 0xffffu : (1u << n_used) - 1u);
  const __mmask16 m1 = __mmask16(n_used >= 32 ? 0xffffu : n_used > 16 ? (1u << (n_used - 16)) - 1u : 0u);
  __m512 t0 = _mm512_setzero_ps(), t1 = _mm512_setzero_ps();
  if (thr) t0 = _mm512_maskz_loadu_ps(m0, thr), t1 = _mm512_maskz_loadu_ps(m1, thr + 16);
  uint32_t any = 0;
#pragma GCC unroll 16
  for (size_t i = 0; i < R; ++i) {
    if (i >= m_used) break;
    const __m512 x0 = _mm512_mul_ps(s0, _mm512_cvtepi32_ps(acc[i][0]));
    const __m512 x1 = _mm512_mul_ps(s1, _mm512_cvtepi32_ps(acc[i][1]));
    _mm512_mask_storeu_ps(c + i * ldc, m0, x0);
    _mm512_mask_storeu_ps(c + i * ldc + 16, m1, x1);
    if (thr) {
      const uint32_t h = uint32_t(_mm512_mask_cmp_ps_mask(m0, x0, t0, _CMP_GE_OQ)) |
                         uint32_t(_mm512_mask_cmp_ps_mask(m1, x1, t1, _CMP_GE_OQ)) << 16;
      hits[i] = h;
      any |= h;
    }
  }
  return any != 0;
}

void score_bits(const uint8_t* q, size_t qstride, size_t planes, size_t nq, const uint8_t* const* rows, size_t nrows,
                size_t words, float* out, size_t ldo) {
  for (size_t j = 0; j < nrows; ++j) {
    const uint8_t* r = rows[j];
    if (j + 4 < nrows) _mm_prefetch(reinterpret_cast<const char*>(rows[j + 4]), _MM_HINT_T0);
    BitsRowTail rt;
    std::memcpy(&rt, r + words * 8, sizeof rt);
    for (size_t i = 0; i < nq; ++i) {
      const uint8_t* qi = q + i * qstride;
      __m512i acc = _mm512_setzero_si512();
      for (size_t w = 0; w < words; w += 8) {
        const __mmask8 m = words - w >= 8 ? __mmask8(0xff) : __mmask8((1u << (words - w)) - 1u);
        const __m512i y = _mm512_maskz_loadu_epi64(m, r + w * 8);
        for (size_t p = 0; p < planes; ++p) {
          const __m512i x = _mm512_maskz_loadu_epi64(m, qi + (p * words + w) * 8);
          acc = _mm512_add_epi64(acc, _mm512_slli_epi64(_mm512_popcnt_epi64(_mm512_and_si512(x, y)), unsigned(p)));
        }
      }
      BitsQueryTail t;
      std::memcpy(&t, qi + planes * words * 8, sizeof t);
      out[i * ldo + j] = bits_score(t, rt, uint32_t(_mm512_reduce_add_epi64(acc)));
    }
  }
}

QuantDotOps make() {
  const CpuFeatures& cpu = cpu_features();
  const QuantDotOps* avx2 = quant_dot_avx2();
  return QuantDotOps{"avx512", cpu.avx512_vnni, cpu.avx512_vnni ? score_s8 : avx2->score_s8,
                     cpu.avx512_vpopcntdq ? score_bits : avx2->score_bits, cpu.avx512_vnni ? s8_gemm_tile : avx2->s8_tile};
}

}  // namespace

const QuantDotOps* quant_dot_avx512() {
  static const QuantDotOps ops = make();
  return &ops;
}

}  // namespace quorum::kernels

#pragma GCC pop_options

#else
namespace quorum::kernels {
const QuantDotOps* quant_dot_avx512() { return nullptr; }
}  // namespace quorum::kernels
#endif
