// The GEMM register tile and packers over a vector type `Vec`, compiled per ISA by gemm_<isa>.cc.
//
// Tile: kMR rows of C x two vectors of columns, accumulated in registers over the whole depth block. Each step
// of k loads two vectors of the packed B panel and broadcasts kMR elements of A into 2 * kMR FMAs. AVX-512:
// 12 x 32 = 24 accumulators + 2 B vectors + 1 broadcast of 32 registers (a 14-row tile measured slower);
// AVX2: 6 x 16 = 12 accumulators of 16; NEON: 8 x 8 = 16 accumulators + 2 B + 1 broadcast of its 32 registers
// (chosen by that count: no arm64 machine has measured it).
constexpr size_t kMR = Vec::W == 16 ? 12 : Vec::W == 8 ? 6 : Vec::W == 4 ? 8 : 4;
constexpr size_t kNV = 2;
constexpr size_t kNR = kNV * Vec::W;

// C[i, j] (+)= acc for one row of the tile: whole vectors, then a masked one. With kHits, returns the bits j < n_used
// of the stored values that are >= thr[j] (thr holds n_used floats); else 0.
template <bool kHits, size_t NV>
inline uint32_t gemm_store_row(float* row, const typename Vec::V (&acc)[NV], size_t n_used, bool acc_c, const float* thr) {
  uint32_t hits = 0;
#pragma GCC unroll 4
  for (size_t v = 0; v < NV; ++v) {
    const size_t j = v * Vec::W;
    if (j >= n_used) break;
    const size_t w = n_used - j;
    if (w >= Vec::W) {
      const typename Vec::V x = acc_c ? Vec::add(Vec::load(row + j), acc[v]) : acc[v];
      Vec::store(row + j, x);
      if constexpr (kHits) hits |= Vec::bits(Vec::ge(x, Vec::load(thr + j))) << j;
    } else {
      const typename Vec::V x = acc_c ? Vec::add(Vec::loadn(row + j, w), acc[v]) : acc[v];
      Vec::storen(row + j, x, w);
      if constexpr (kHits) hits |= (Vec::bits(Vec::ge(x, Vec::loadn(thr + j, w))) & ((1u << w) - 1u)) << j;
    }
  }
  return hits;
}

// R <= kMR rows are computed (the caller's m_used <= R).
//
// Every loop over the accumulators unrolls fully, so they stay in registers: a loop with a run-time bound
// (rows < m_used) made GCC keep the whole array on the stack as well, zeroing it before the depth loop and
// spilling it after (measured: 18% of the tile's time outside its FMAs at kc = 256).
// kHits: hits[i] for i < m_used gets gemm_store_row's bits of row i; returns whether any is set.
template <size_t R = kMR, bool kHits = false, class AAt>
inline bool gemm_tile(size_t kc, AAt a_at, const float* panel, float* c, size_t ldc, size_t m_used, size_t n_used,
                      bool acc_c, const float* thr = nullptr, uint32_t* hits = nullptr) {
  using V = typename Vec::V;
  // C's lines are fetched for writing now, so that the stores after the depth loop do not wait on them: the
  // loss's dQ and dP are fresh blocks that no cache holds yet.
#pragma GCC unroll 16
  for (size_t i = 0; i < R; ++i)
    if (i < m_used)
      for (size_t j = 0; j < n_used; j += 64 / sizeof(float)) __builtin_prefetch(c + i * ldc + j, 1, 3);
  V acc[R][kNV];
#pragma GCC unroll 16
  for (size_t i = 0; i < R; ++i)
    for (size_t v = 0; v < kNV; ++v) acc[i][v] = Vec::zero();
  // Two steps of k per iteration: the loop's own uops are 3 of about 41 per step, on a front end that issues 4
  // per cycle (measured 1.02-1.03x on the loss; 4 steps gave no more).
#pragma GCC unroll 2
  for (size_t p = 0; p < kc; ++p) {
    V bv[kNV];
    for (size_t v = 0; v < kNV; ++v) bv[v] = Vec::load(panel + p * kNR + v * Vec::W);
#pragma GCC unroll 16
    for (size_t i = 0; i < R; ++i) {
      const V av = Vec::set1(a_at(i, p));
      for (size_t v = 0; v < kNV; ++v) acc[i][v] = Vec::fmadd(av, bv[v], acc[i][v]);
    }
  }
  // A whole tile stores with a constant width: straight-line code, no masks.
  uint32_t any = 0;
  if (m_used == R && n_used == kNR) {
#pragma GCC unroll 16
    for (size_t i = 0; i < R; ++i) {
      const uint32_t h = gemm_store_row<kHits>(c + i * ldc, acc[i], kNR, acc_c, thr);
      if constexpr (kHits) hits[i] = h, any |= h;
    }
    return any != 0;
  }
#pragma GCC unroll 16
  for (size_t i = 0; i < R; ++i) {
    if (i >= m_used) break;
    const uint32_t h = gemm_store_row<kHits>(c + i * ldc, acc[i], n_used, acc_c, thr);
    if constexpr (kHits) hits[i] = h, any |= h;
  }
  return any != 0;
}

// A(i, p) = rows[i][p], the row pointers copied to the stack so that the tile keeps them in registers.
template <bool kHits>
inline bool gemm_tile_rows_any(size_t kc, const float* const* rows, const float* panel, float* c, size_t ldc, size_t m_used,
                               size_t n_used, bool acc_c, const float* thr, uint32_t* hits) {
  const float* r[kMR];
  for (size_t i = 0; i < kMR; ++i) r[i] = rows[i];
  return gemm_tile<kMR, kHits>(kc, [&](size_t i, size_t p) { return r[i][p]; }, panel, c, ldc, m_used, n_used, acc_c, thr, hits);
}

void gemm_tile_rows(size_t kc, const float* const* rows, const float* panel, float* c, size_t ldc, size_t m_used,
                    size_t n_used, bool acc_c) {
  gemm_tile_rows_any<false>(kc, rows, panel, c, ldc, m_used, n_used, acc_c, nullptr, nullptr);
}

bool gemm_tile_rows_hits(size_t kc, const float* const* rows, const float* panel, float* c, size_t ldc, size_t m_used,
                         size_t n_used, bool acc_c, const float* thr, uint32_t* hits) {
  static_assert(kNR <= 32, "a row's hits are one 32-bit word");
  return gemm_tile_rows_any<true>(kc, rows, panel, c, ldc, m_used, n_used, acc_c, thr, hits);
}

void gemm_tile_cols(size_t kc, const float* a, size_t lda, const float* panel, float* c, size_t ldc, size_t m_used,
                    size_t n_used, bool acc_c) {
  const auto a_at = [&](size_t i, size_t p) { return a[p * lda + i]; };
  // A partial last tile of rows (the loss's 128 = 10 x 12 + 8) computes only the thirds it stores.
  if (kMR % 3 == 0 && m_used <= kMR / 3) gemm_tile<kMR / 3>(kc, a_at, panel, c, ldc, m_used, n_used, acc_c);
  else if (kMR % 3 == 0 && m_used <= 2 * kMR / 3)
    gemm_tile<2 * kMR / 3>(kc, a_at, panel, c, ldc, m_used, n_used, acc_c);
  else gemm_tile(kc, a_at, panel, c, ldc, m_used, n_used, acc_c);
}

// The packers write W lanes per step of k (W = kNR for a B panel, kMR for an A tile): out[p * W + l] holds
// lane l < used at step p, and lanes past `used` are zero, so tails need no special case in the tile.

// Lane l at step p read from src[l * lane + p * step]: in blocks of 16 steps of k, so that the reads of one
// lane stay within a cache line and the writes within a few KiB.
template <size_t W>
inline void pack_strided(size_t k, size_t used, const float* src, size_t step, size_t lane, float* out) {
  for (size_t p0 = 0; p0 < k; p0 += 16) {
    const size_t p1 = std::min(k, p0 + 16);
    for (size_t l = 0; l < W; ++l) {
      const float* s = src + l * lane;
      for (size_t p = p0; p < p1; ++p) out[p * W + l] = l < used ? s[p * step] : 0.f;
    }
  }
}

// The lanes of each step contiguous (lane == 1): vector copies.
template <size_t W>
inline void pack_contiguous(size_t k, size_t used, const float* src, size_t step, float* out) {
  for (size_t p = 0; p < k; ++p)
    for (size_t l = 0; l < W; l += Vec::W) {
      const float* s = src + p * step + l;
      float* d = out + p * W + l;
      const size_t w = std::min(Vec::W, W - l), valid = used > l ? std::min(w, used - l) : 0;
      const typename Vec::V v = valid == Vec::W ? Vec::load(s) : valid ? Vec::loadn(s, valid) : Vec::zero();
      if (w == Vec::W) Vec::store(d, v);
      else Vec::storen(d, v, w);
    }
}

inline void pack_panel_strided(size_t k, size_t nr, StridedB b, size_t j0, float* o) {
  pack_strided<kNR>(k, nr, b.b + j0 * b.col, b.row, b.col, o);
}

inline void pack_a_strided(size_t k, size_t mu, StridedA a, float* out) {
  pack_strided<kMR>(k, mu, a.a, a.depth, a.row, out);
}

// A variant may define faster packers for row-major A (a.depth == 1) and for B = Xᵀ (b.row == 1), the two
// layouts that need a transpose, before including this body.
#ifndef QUORUM_GEMM_PACK_A_ROWS
#define QUORUM_GEMM_PACK_A_ROWS pack_a_strided
#endif
#ifndef QUORUM_GEMM_PACK_TRANSPOSED
#define QUORUM_GEMM_PACK_TRANSPOSED pack_panel_strided
#endif

void gemm_pack_a(size_t k, size_t mu, StridedA a, float* out) {
  if (a.depth == 1) QUORUM_GEMM_PACK_A_ROWS(k, mu, a, out);
  else if (a.row == 1) pack_contiguous<kMR>(k, mu, a.a, a.depth, out);  // A = Xᵀ
  else pack_a_strided(k, mu, a, out);
}

void gemm_pack_b(size_t k, size_t n, StridedB b, float* out) {
  for (size_t j0 = 0; j0 < n; j0 += kNR) {
    float* o = out + (j0 / kNR) * k * kNR;
    const size_t nr = std::min(kNR, n - j0);
    if (b.col == 1) pack_contiguous<kNR>(k, nr, b.b + j0, b.row, o);
    else if (b.row == 1) QUORUM_GEMM_PACK_TRANSPOSED(k, nr, b, j0, o);
    else pack_panel_strided(k, nr, b, j0, o);
  }
}

void gemm_widen(const void* src, Dtype t, size_t count, float* dst) {
  size_t i = 0;
  if (t == Dtype::F32) {
    const float* s = static_cast<const float*>(src);
    for (; i + Vec::W <= count; i += Vec::W) Vec::store(dst + i, Vec::load(s + i));
    for (; i < count; ++i) dst[i] = s[i];
    return;
  }
  const uint16_t* s = static_cast<const uint16_t*>(src);
  if (t == Dtype::BF16) {
    for (; i + Vec::W <= count; i += Vec::W) Vec::store(dst + i, Vec::load_bf16(s + i));
    for (; i < count; ++i) dst[i] = bf16_to_f32(s[i]);
  } else {
    for (; i + Vec::W <= count; i += Vec::W) Vec::store(dst + i, Vec::load_f16(s + i));
    for (; i < count; ++i) dst[i] = f16_to_f32(s[i]);
  }
}

const GemmOps kGemmOps{Vec::W == 16 ? "avx512" : Vec::W == 8 ? "avx2" : "scalar",
                       kMR,
                       kNR,
                       gemm_pack_b,
                       gemm_pack_a,
                       gemm_tile_rows,
                       gemm_tile_rows_hits,
                       gemm_tile_cols,
                       gemm_widen};
