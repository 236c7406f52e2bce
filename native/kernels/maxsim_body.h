// The MaxSim hot loops, written once over a vector type `Vec` (simd/vec_*.h) and compiled per ISA by
// maxsim_<isa>.cc. Include inside an anonymous namespace after the Vec definition.
//
// Register tile: R document tokens x G vectors of query tokens. Q is transposed so that one document
// element is broadcast against W query tokens: the dot products land directly in lanes, one per query
// token, ready for the running max without any horizontal reduction.

// Document tokens per register tile: 12 x 2 vectors is 24 accumulators of AVX-512's 32 registers (AVX2's 16
// hold 4 x 2). Measured on a Skylake-SP (Lq = 32, dim = 128, one thread, with the prefetch below): 12 tokens
// 88-92 GFLOP/s, 8 tokens 86-96, 4 tokens 47-90; without the prefetch every tile size gave 40-75.
constexpr int kTokTile = Vec::W == 16 ? 12 : 4;

// `pf` and `pf_bytes`: the stored bytes this tile fetches ahead while it computes (see MaxSimOps::update).
template <int R, int G>
inline void maxsim_tile(const float* qt, size_t lqp, size_t dim, const float* tok, size_t col, float base,
                        const char* pf, size_t pf_bytes, typename Vec::V (&best)[2], typename Vec::V (&arg)[2]) {
  using V = typename Vec::V;
  V acc[R][G];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) acc[r][g] = Vec::zero();
  // One line per step of j. A prefetch never faults, so reading past the buffer is harmless.
  const size_t lines = pf_bytes / 64;
  for (size_t j = 0; j < dim; ++j) {
    if (j < lines) __builtin_prefetch(pf + j * 64);
    V qv[G];
    for (int g = 0; g < G; ++g) qv[g] = Vec::load(qt + j * lqp + col + g * Vec::W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      V dv = Vec::set1(tok[r * dim + j]);
      for (int g = 0; g < G; ++g) acc[r][g] = Vec::fmadd(qv[g], dv, acc[r][g]);
    }
  }
  for (int r = 0; r < R; ++r) {  // in token order, strict >: the lowest index keeps a tie
    V idx = Vec::set1(base + float(r));
    for (int g = 0; g < G; ++g) {
      auto m = Vec::gt(acc[r][g], best[g]);
      best[g] = Vec::blend(m, best[g], acc[r][g]);
      arg[g] = Vec::blend(m, arg[g], idx);
    }
  }
}

// The last n < kTokTile tokens, as one tile of exactly n.
template <int R, int G>
inline void maxsim_tail(size_t n, const float* qt, size_t lqp, size_t dim, const float* tok, size_t col, float base,
                        const char* pf, size_t pf_row, typename Vec::V (&best)[2], typename Vec::V (&arg)[2]) {
  if constexpr (R > 0) {
    if (n == size_t(R)) maxsim_tile<R, G>(qt, lqp, dim, tok, col, base, pf, R * pf_row, best, arg);
    else maxsim_tail<R - 1, G>(n, qt, lqp, dim, tok, col, base, pf, pf_row, best, arg);
  }
}

template <int G>
inline void maxsim_columns(const float* qt, size_t lqp, size_t dim, const float* tokens, size_t len, float base,
                           const char* pf, size_t pf_row, size_t col, float* best, float* arg) {
  using V = typename Vec::V;
  V bv[2], av[2];
  for (int g = 0; g < G; ++g) {
    bv[g] = Vec::load(best + col + g * Vec::W);
    av[g] = Vec::load(arg + col + g * Vec::W);
  }
  size_t t = 0;
  for (; t + kTokTile <= len; t += kTokTile)
    maxsim_tile<kTokTile, G>(qt, lqp, dim, tokens + t * dim, col, base + float(t), pf + t * pf_row, kTokTile * pf_row,
                             bv, av);
  maxsim_tail<kTokTile - 1, G>(len - t, qt, lqp, dim, tokens + t * dim, col, base + float(t), pf + t * pf_row, pf_row,
                               bv, av);
  for (int g = 0; g < G; ++g) {
    Vec::store(best + col + g * Vec::W, bv[g]);
    Vec::store(arg + col + g * Vec::W, av[g]);
  }
}

void maxsim_update(const float* qt, size_t lqp, size_t dim, const float* tokens, size_t len, float base,
                   const void* prefetch, size_t prefetch_row, float* best, float* arg) {
  const char* pf = static_cast<const char*>(prefetch);
  size_t col = 0;
  for (; col + 2 * Vec::W <= lqp; col += 2 * Vec::W)
    maxsim_columns<2>(qt, lqp, dim, tokens, len, base, pf, prefetch_row, col, best, arg);
  if (col < lqp) maxsim_columns<1>(qt, lqp, dim, tokens, len, base, pf, prefetch_row, col, best, arg);
}

void to_f32(const void* src, Dtype t, size_t n, float* dst) {
  size_t i = 0;
  for (; i + Vec::W <= n; i += Vec::W) Vec::store(dst + i, vload<Vec>(src, t, i));
  if (i < n) Vec::storen(dst + i, vloadn<Vec>(src, t, i, n - i), n - i);
}
