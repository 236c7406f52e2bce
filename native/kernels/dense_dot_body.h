// The dense dot-product loops of dense_dot.h, written once over a vector type `Vec` (simd/vec_*.h) and an ISA's
// `Dot` traits, and compiled per ISA by dense_dot_<isa>.cc. Include inside an anonymous namespace after both.
//
// `Dot` gives: MR (queries per register tile; NR = 4 corpus rows), bf16_pair (one chunk of 2 * W bf16 values as the
// even and the odd elements in f32) and store_tile (sums each accumulator of an MR x 4 tile into out, or adds it).
// Everything else (tiling, the bf16 query layout, tails, prefetch, blocking) is shared; the ISA file adds its
// select_ge (select_ge_bits below, or its own).
//
// Register tile: MR queries x 4 corpus rows of accumulators along the dimension (AVX-512: 4 x 4 of 32 registers,
// AVX2: 2 x 4 of 16). bf16 rows are read 2 * W at a time and split into even and odd elements by one shift and one
// mask, so the prepared queries hold each chunk's even elements, then its odd ones.

constexpr int kNR = 4;
using V = typename Vec::V;

size_t stride(size_t dim, Dtype t) {
  const size_t w = t == Dtype::BF16 ? 2 * Vec::W : Vec::W;
  return (dim + w - 1) / w * w;
}

void prepare(const float* q, size_t dim, Dtype t, float* out) {
  const size_t s = stride(dim, t);
  if (t != Dtype::BF16) {
    for (size_t d = 0; d < s; ++d) out[d] = d < dim ? q[d] : 0.f;
    return;
  }
  for (size_t c = 0; c < s; c += 2 * Vec::W)
    for (size_t t2 = 0; t2 < Vec::W; ++t2) {
      const size_t e = c + 2 * t2, o = e + 1;
      out[c + t2] = e < dim ? q[e] : 0.f;
      out[c + Vec::W + t2] = o < dim ? q[o] : 0.f;
    }
}

template <int MR>
inline void fma_rows(V (&acc)[Dot::MR][kNR], const float* qp, size_t qs, size_t off, const V (&c)[kNR]) {
  for (int i = 0; i < MR; ++i) {
    const V q = Vec::load(qp + i * qs + off);
    for (int j = 0; j < kNR; ++j) acc[i][j] = Vec::fmadd(q, c[j], acc[i][j]);
  }
}

// Each step touches one cache line per row; prefetching the same line of the next row group keeps enough misses
// in flight for one core to approach its share of memory bandwidth on bf16 / f16 rows.
inline void prefetch_rows(const uint8_t* const (&pf)[kNR], size_t byte) {
  for (int j = 0; j < kNR; ++j) __builtin_prefetch(pf[j] + byte);
}

// The last, partial chunk of a bf16 row through a zeroed buffer (tails only occur when dim is not a multiple of
// 2 * W).
inline void bf16_tail(const uint8_t* p, size_t n, V& even, V& odd) {
  alignas(64) uint16_t buf[2 * Vec::W] = {};
  std::memcpy(buf, p, 2 * n);
  Dot::bf16_pair(reinterpret_cast<const uint8_t*>(buf), even, odd);
}

// W f32, f16 or u8 (int8 codes) elements of a row as f32 (all of them, or the first n).
template <Dtype T>
inline V load_chunk(const uint8_t* p) {
  if constexpr (T == Dtype::F16) return Vec::load_f16(reinterpret_cast<const uint16_t*>(p));
  else if constexpr (T == Dtype::U8) return Vec::load_u8(p);
  else return Vec::load(reinterpret_cast<const float*>(p));
}
template <Dtype T>
inline V loadn_chunk(const uint8_t* p, size_t n) {
  if constexpr (T == Dtype::F16) return Vec::loadn_f16(reinterpret_cast<const uint16_t*>(p), n);
  else if constexpr (T == Dtype::U8) return Vec::loadn_u8(p, n);
  else return Vec::loadn(reinterpret_cast<const float*>(p), n);
}
template <Dtype T>
constexpr size_t elem_bytes() { return T == Dtype::F32 ? 4 : T == Dtype::U8 ? 1 : 2; }

// One register tile: MR queries x 4 rows over the whole (block of the) dimension, then its sums stored. The
// accumulators are locals of this function so that they stay in registers; inlined into the row loop, as a call per
// tile (16 steps of 16 FMAs at B >= 16 in f32) spent a fifth of the time moving them through the stack.
template <Dtype T, int MR>
__attribute__((always_inline)) inline void tile(const float* qp, size_t qs, const uint8_t* const (&r)[kNR], const uint8_t* const (&pf)[kNR], size_t dim,
                 float* o, size_t ldo, size_t nr, bool add) {
  constexpr size_t W = Vec::W;
  V acc[Dot::MR][kNR];
  for (auto& row : acc)
    for (auto& a : row) a = Vec::zero();
  if constexpr (T == Dtype::BF16) {
    size_t d = 0;
    V e[kNR], o[kNR];
    for (; d + 2 * W <= dim; d += 2 * W) {
      prefetch_rows(pf, 2 * d);
      for (int j = 0; j < kNR; ++j) Dot::bf16_pair(r[j] + 2 * d, e[j], o[j]);
      fma_rows<MR>(acc, qp, qs, d, e);
      fma_rows<MR>(acc, qp, qs, d + W, o);
    }
    if (d < dim) {
      for (int j = 0; j < kNR; ++j) bf16_tail(r[j] + 2 * d, dim - d, e[j], o[j]);
      fma_rows<MR>(acc, qp, qs, d, e);
      fma_rows<MR>(acc, qp, qs, d + W, o);
    }
  } else {
    constexpr size_t esize = elem_bytes<T>();
    size_t d = 0;
    V c[kNR];
    for (; d + W <= dim; d += W) {
      prefetch_rows(pf, esize * d);
      for (int j = 0; j < kNR; ++j) c[j] = load_chunk<T>(r[j] + esize * d);
      fma_rows<MR>(acc, qp, qs, d, c);
    }
    if (d < dim) {
      for (int j = 0; j < kNR; ++j) c[j] = loadn_chunk<T>(r[j] + esize * d, dim - d);
      fma_rows<MR>(acc, qp, qs, d, c);
    }
  }
  Dot::store_tile(acc, size_t(MR), nr, o, ldo, add);
}

// Each tile reads two full vectors per 4 * MR FMAs, so both operands must come from L1. With more than one query
// tile, f32 rows are cut along the dimension into blocks of kDimBlock so that a sub-chunk of kQuerySub prepared
// queries (16 KB) and a row group stay in L1; partial dots are summed into `out` block by block. 2-byte rows
// halve the traffic and already fit: measured slower with blocking.
constexpr size_t kDimBlock = 256;  // a multiple of 2 * W
constexpr size_t kQuerySub = 16;

// The tile of `mr` <= Dot::MR queries (the compiler sees only the sizes that fit the accumulators).
template <Dtype T, int M = Dot::MR>
__attribute__((always_inline)) inline void tile_into(const float* q, size_t qs, size_t mr, const uint8_t* const (&r)[kNR], const uint8_t* const (&pf)[kNR],
                      size_t dim, float* o, size_t ldo, size_t nr, bool add) {
  if constexpr (M > 1) {
    if (mr == size_t(M)) return tile<T, M>(q, qs, r, pf, dim, o, ldo, nr, add);
    return tile_into<T, M - 1>(q, qs, mr, r, pf, dim, o, ldo, nr, add);
  } else {
    tile<T, 1>(q, qs, r, pf, dim, o, ldo, nr, add);
  }
}

template <Dtype T>
void score_t(const float* qp, size_t qs, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim, float* out,
             size_t ldo) {
  constexpr size_t esize = elem_bytes<T>();
  const size_t dblock = (T == Dtype::F32 && nq > size_t(Dot::MR)) ? kDimBlock : dim;
  for (size_t s0 = 0; s0 < nq; s0 += kQuerySub) {
    const size_t s1 = nq - s0 < kQuerySub ? nq : s0 + kQuerySub;
    for (size_t d0 = 0; d0 < dim; d0 += dblock) {
      const size_t dc = dim - d0 < dblock ? dim - d0 : dblock;
      for (size_t j0 = 0; j0 < nrows; j0 += kNR) {
        const size_t nr = nrows - j0 < size_t(kNR) ? nrows - j0 : size_t(kNR);
        // A short last group repeats its last row; the extra results are dropped.
        const uint8_t* r[kNR];
        const uint8_t* pf[kNR];
        for (size_t j = 0; j < size_t(kNR); ++j) {
          r[j] = rows[j0 + (j < nr ? j : nr - 1)] + esize * d0;
          const size_t next = j0 + kNR + j;
          pf[j] = (next < nrows ? rows[next] : rows[j0 + (j < nr ? j : nr - 1)]) + esize * d0;
        }
        for (size_t i0 = s0; i0 < s1; i0 += Dot::MR) {
          const size_t mr = s1 - i0 < size_t(Dot::MR) ? s1 - i0 : size_t(Dot::MR);
          tile_into<T>(qp + i0 * qs + d0, qs, mr, r, pf, dc, out + i0 * ldo + j0, ldo, nr, d0 > 0);
        }
      }
    }
  }
}

void score(const float* qp, size_t qs, size_t nq, const uint8_t* const* rows, size_t nrows, size_t dim, Dtype t,
           float* out, size_t ldo) {
  switch (t) {
    case Dtype::BF16: return score_t<Dtype::BF16>(qp, qs, nq, rows, nrows, dim, out, ldo);
    case Dtype::F16: return score_t<Dtype::F16>(qp, qs, nq, rows, nrows, dim, out, ldo);
    case Dtype::U8: return score_t<Dtype::U8>(qp, qs, nq, rows, nrows, dim, out, ldo);
    default: return score_t<Dtype::F32>(qp, qs, nq, rows, nrows, dim, out, ldo);
  }
}

// The indices j < n with s[j] >= thr, one vector's comparison bits at a time (AVX-512 has its own, by compress).
inline size_t select_ge_bits(const float* s, size_t n, float thr, uint32_t* idx) {
  size_t m = 0, j = 0;
  const V t = Vec::set1(thr);
  for (; j + Vec::W <= n; j += Vec::W)
    for (uint32_t bits = Vec::bits(Vec::ge(Vec::load(s + j), t)); bits != 0; bits &= bits - 1)
      idx[m++] = uint32_t(j + size_t(__builtin_ctz(bits)));
  for (; j < n; ++j)
    if (s[j] >= thr) idx[m++] = uint32_t(j);
  return m;
}
