// The GEMM register tile over a vector type `Vec`, compiled per ISA by gemm_<isa>.cc:
// MR rows of C x NV vectors of columns, accumulated in registers across the whole k loop.
//
// B is read in place (row stride ldb), so each step of k loads NV vectors from a new row: the tile is sized
// so that those loads (from L2 once the panel leaves L1) feed as many FMAs as possible. AVX-512: 8 x 3
// vectors = 24 accumulators + 3 B vectors + 1 broadcast of 32 registers, 192 bytes per 24 FMAs. AVX2:
// 6 x 2 = 12 accumulators of 16 registers.
constexpr int kMR = Vec::W == 16 ? 8 : Vec::W == 8 ? 6 : 4;
constexpr int kNV = Vec::W == 16 ? 3 : Vec::W == 8 ? 2 : 4;

// Full-width tile: NV * W columns starting at c.
template <int MR>
inline void gemm_tile(size_t k, StridedA a, const float* b, size_t ldb, float* c, size_t ldc, bool acc_c) {
  using V = typename Vec::V;
  V acc[MR][kNV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < kNV; ++v) acc[i][v] = acc_c ? Vec::load(c + i * ldc + v * Vec::W) : Vec::zero();
  for (size_t p = 0; p < k; ++p) {
    V bv[kNV];
    for (int v = 0; v < kNV; ++v) bv[v] = Vec::load(b + p * ldb + v * Vec::W);
    for (int i = 0; i < MR; ++i) {
      V av = Vec::set1(a.a[i * a.row + p * a.depth]);
      for (int v = 0; v < kNV; ++v) acc[i][v] = Vec::fmadd(av, bv[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < kNV; ++v) Vec::store(c + i * ldc + v * Vec::W, acc[i][v]);
}

// One vector of `width` (<= W) columns.
template <int MR>
inline void gemm_tile_narrow(size_t k, StridedA a, const float* b, size_t ldb, float* c, size_t ldc,
                             size_t width, bool acc_c) {
  using V = typename Vec::V;
  V acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = acc_c ? Vec::loadn(c + i * ldc, width) : Vec::zero();
  for (size_t p = 0; p < k; ++p) {
    V bv = Vec::loadn(b + p * ldb, width);
    for (int i = 0; i < MR; ++i) acc[i] = Vec::fmadd(Vec::set1(a.a[i * a.row + p * a.depth]), bv, acc[i]);
  }
  for (int i = 0; i < MR; ++i) Vec::storen(c + i * ldc, acc[i], width);
}

template <int MR>
void gemm_rows(size_t n, size_t k, StridedA a, const float* b, size_t ldb, float* c, size_t ldc, bool acc_c) {
  const size_t wide = kNV * Vec::W;
  size_t j = 0;
  for (; j + wide <= n; j += wide) gemm_tile<MR>(k, a, b + j, ldb, c + j, ldc, acc_c);
  for (; j < n; j += Vec::W) gemm_tile_narrow<MR>(k, a, b + j, ldb, c + j, ldc, std::min(Vec::W, n - j), acc_c);
}

inline StridedA shift(StridedA a, size_t rows) { return {a.a + rows * a.row, a.row, a.depth}; }

// The last m < kMR rows, as one tile of exactly m rows.
template <int R>
inline void gemm_tail_rows(size_t m, size_t n, size_t k, StridedA a, const float* b, size_t ldb,
                           float* c, size_t ldc, bool acc_c) {
  if constexpr (R > 0) {
    if (m == size_t(R)) gemm_rows<R>(n, k, a, b, ldb, c, ldc, acc_c);
    else gemm_tail_rows<R - 1>(m, n, k, a, b, ldb, c, ldc, acc_c);
  }
}

void gemm_block(size_t m, size_t n, size_t k, StridedA a, const float* b, size_t ldb, float* c, size_t ldc,
                bool accumulate) {
  size_t i = 0;
  for (; i + kMR <= m; i += kMR) gemm_rows<kMR>(n, k, shift(a, i), b, ldb, c + i * ldc, ldc, accumulate);
  gemm_tail_rows<kMR - 1>(m - i, n, k, shift(a, i), b, ldb, c + i * ldc, ldc, accumulate);
}
