// Fused dense scoring + top-k on the GPU (kernels.h). Persistent grids; every score meets a running top-k in
// shared memory (a list of 2 * KP slots: the sorted best KP, then a staging area sorted in when full). Only scores
// that beat the current k-th best reach the staging area, so after the first rows the merge is one compare per
// score, and only the blocks' lists (grid x B x k candidates) reach memory, never the B x N matrix. Three scorers:
// - few queries (B <= 4): one warp per corpus row, 16-byte loads, two rows in flight per warp, a private list per
//   warp (no block-wide barrier in the stream): the corpus stream runs at memory speed;
// - many queries over a bf16 / f16 corpus: tensor cores (WMMA 16x16x16, f32 accumulators). The f32 queries are split
//   into hi + lo halves of the corpus type (q - hi is exact in f32 and lo keeps its leading bits), and each tile
//   takes both products, so the scores keep the f32 queries' precision (relative error ~2^-16 against ~2^-8 for
//   rounded queries);
// - many queries over an f32 corpus: a register-tiled f32 product.
// A last kernel merges the blocks' lists, eight warps per query.
#include <mma.h>

#include <algorithm>
#include <cstring>

#include "../common/error.h"
#include "device_math.cuh"
#include "kernels.h"
#include "runtime.h"

namespace quorum::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kWarpQ = 4;      // at most this many queries: the warp-per-row scorer
constexpr int kTiledQ = 64;    // queries per block in the tiled scorers
constexpr int kTileRows = 64;  // corpus rows per chunk, f32 tiled scorer
constexpr int kTileD = 32;     // dimensions per step, f32 tiled scorer
constexpr int kMmaThreads = 512;  // tensor-core scorer: 16 warps, so that each scheduler has 4 to interleave
constexpr int kMmaWarps = kMmaThreads / 32;
constexpr int kMmaRows = 256;    // corpus rows per chunk, tensor-core scorer (16 warps of 32 rows x 32 queries)
constexpr int kMmaK = 64;        // dimensions staged in shared memory at a time, tensor-core scorer

// Sorts s / id [0, n) (n a power of two) best first, by one warp.
__device__ void warp_sort(float* s, int32_t* id, int n) {
  const int lane = threadIdx.x & 31;
  for (int size = 2; size <= n; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = lane; t < n / 2; t += 32) {
        const int i = 2 * t - (t & (stride - 1));
        const int j = i + stride;
        const bool best_first = (i & size) == 0;
        const float si = s[i], sj = s[j];
        const int32_t ii = id[i], ij = id[j];
        if (best_first ? better(sj, ij, si, ii) : better(si, ii, sj, ij)) {
          s[i] = sj; s[j] = si;
          id[i] = ij; id[j] = ii;
        }
      }
      __syncwarp();
    }
  }
}

// A running top-k of one query in shared memory, driven by one warp.
struct RunningTopK {
  float* s;    // 2 * kp slots
  int32_t* id;
  int* count;  // filled staging slots
  int kp, k;

  __device__ void init() {
    const int lane = threadIdx.x & 31;
    for (int i = lane; i < 2 * kp; i += 32) {
      s[i] = -INFINITY;
      id[i] = kNoId;
    }
    if (lane == 0) *count = 0;
    __syncwarp();
  }
  __device__ void flush() {
    const int lane = threadIdx.x & 31;
    for (int i = kp + *count + lane; i < 2 * kp; i += 32) {
      s[i] = -INFINITY;
      id[i] = kNoId;
    }
    __syncwarp();
    warp_sort(s, id, 2 * kp);
    if (lane == 0) *count = 0;
    __syncwarp();
  }
  // Offers one candidate per lane (valid = false for none); every lane of the warp calls it.
  __device__ void offer(bool valid, float score, int32_t row) {
    const int lane = threadIdx.x & 31;
    const bool keep = valid && !isnan(score) && better(score, row, s[k - 1], id[k - 1]);
    const unsigned mask = __ballot_sync(0xffffffffu, keep);
    if (mask == 0) return;
    const int c = *count;
    if (keep) {
      const int at = kp + c + __popc(mask & ((1u << lane) - 1u));
      s[at] = score;
      id[at] = row;
    }
    __syncwarp();
    if (lane == 0) *count = c + __popc(mask);
    __syncwarp();
    if (c + __popc(mask) > kp - 32) flush();
  }
  // Offers another list's first n entries.
  __device__ void offer_list(const float* os, const int32_t* oid, int n) {
    const int lane = threadIdx.x & 31;
    for (int i0 = 0; i0 < n; i0 += 32) {
      const int i = i0 + lane;
      const bool ok = i < n && oid[i] != kNoId;
      offer(ok, ok ? os[i] : 0.f, ok ? oid[i] : kNoId);
    }
  }
};

// Lists of `lists` queries (or warps x queries) at the start of shared memory.
struct Lists {
  float* s;
  int32_t* id;
  int* count;
  int kp, k;
  __device__ RunningTopK at(int i) const { return {s + size_t(i) * 2 * kp, id + size_t(i) * 2 * kp, count + i, kp, k}; }
  __device__ static Lists carve(char*& p, int lists, int kp, int k) {
    Lists l;
    l.s = reinterpret_cast<float*>(p);
    l.id = reinterpret_cast<int32_t*>(l.s + size_t(lists) * 2 * kp);
    l.count = reinterpret_cast<int*>(l.id + size_t(lists) * 2 * kp);
    l.kp = kp;
    l.k = k;
    p = reinterpret_cast<char*>(l.count + ((lists + 3) / 4) * 4);
    return l;
  }
};
size_t lists_bytes(int lists, int kp) { return size_t(lists) * 2 * kp * 8 + size_t((lists + 3) / 4) * 16; }

// Writes list i's first k entries as the block's candidates for query b.
__device__ void write_candidates(const RunningTopK& t, int b, int k, float* out_s, int32_t* out_id) {
  const int lane = threadIdx.x & 31;
  for (int i = lane; i < k; i += 32) {
    const size_t at = (size_t(b) * gridDim.x + blockIdx.x) * k + i;
    out_s[at] = t.s[i];
    out_id[at] = t.id[i];
  }
}

// ---- few queries: one warp per row -------------------------------------------------------------------------------

template <class T, int kNv>
__global__ void __launch_bounds__(kThreads) warp_rows_topk(const float* q, int qb, const T* corpus, size_t n, int dim,
                                                            int k, int kp, float* out_s, int32_t* out_id) {
  extern __shared__ __align__(128) char smem[];
  char* p = smem;
  const Lists lists = Lists::carve(p, kWarps * qb, kp, k);  // list (warp, b) at warp * qb + b
  float* qs = reinterpret_cast<float*>(p);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int i = threadIdx.x; i < qb * dim; i += kThreads) qs[i] = q[i];
  for (int b = 0; b < qb; ++b) lists.at(warp * qb + b).init();
  __syncthreads();
  constexpr int kVec = 16 / sizeof(T);
  const int nvec = dim / kVec;  // whole 16-byte vectors per row (the caller checked dim * sizeof(T) % 16 == 0)
  const size_t warps = size_t(gridDim.x) * kWarps;
  for (size_t base = (size_t(blockIdx.x) * kWarps + warp) * 32; base < n; base += warps * 32) {
    float mine[kWarpQ];
#pragma unroll
    for (int b = 0; b < kWarpQ; ++b) mine[b] = 0.f;
    for (int j = 0; j < 32; j += 2) {
      const size_t r0 = base + j, r1 = base + j + 1;
      const uint4* a0 = reinterpret_cast<const uint4*>(corpus + r0 * size_t(dim));
      const uint4* a1 = reinterpret_cast<const uint4*>(corpus + r1 * size_t(dim));
      uint4 x0[kNv], x1[kNv];
#pragma unroll
      for (int u = 0; u < kNv; ++u) {
        const int v = lane + 32 * u;
        x0[u] = (v < nvec && r0 < n) ? __ldg(a0 + v) : make_uint4(0, 0, 0, 0);
        x1[u] = (v < nvec && r1 < n) ? __ldg(a1 + v) : make_uint4(0, 0, 0, 0);
      }
      float acc0[kWarpQ], acc1[kWarpQ];
#pragma unroll
      for (int b = 0; b < kWarpQ; ++b) acc0[b] = acc1[b] = 0.f;
#pragma unroll
      for (int u = 0; u < kNv; ++u) {
        const int v = lane + 32 * u;
        if (v < nvec) {
          const T* e0 = reinterpret_cast<const T*>(&x0[u]);
          const T* e1 = reinterpret_cast<const T*>(&x1[u]);
#pragma unroll
          for (int b = 0; b < kWarpQ; ++b) {
            if (b < qb) {
              // The query's matching values as whole float4 reads (a lane's scalar reads at a stride of kVec floats
              // would meet kVec-way bank conflicts).
              const float4* qv4 = reinterpret_cast<const float4*>(qs + b * dim + v * kVec);
#pragma unroll
              for (int e4 = 0; e4 < kVec / 4; ++e4) {
                const float4 qv = qv4[e4];
                const float qa[4] = {qv.x, qv.y, qv.z, qv.w};
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                  acc0[b] = fmaf(to_f32<T>(e0[e4 * 4 + e]), qa[e], acc0[b]);
                  acc1[b] = fmaf(to_f32<T>(e1[e4 * 4 + e]), qa[e], acc1[b]);
                }
              }
            }
          }
        }
      }
#pragma unroll
      for (int b = 0; b < kWarpQ; ++b) {
        if (b < qb) {
          const float s0 = warp_sum(acc0[b]), s1 = warp_sum(acc1[b]);
          if (lane == j) mine[b] = s0;
          if (lane == j + 1) mine[b] = s1;
        }
      }
    }
    const bool valid = base + lane < n;
    for (int b = 0; b < qb; ++b) lists.at(warp * qb + b).offer(valid, mine[b], int32_t(base + lane));
  }
  for (int b = 0; b < qb; ++b) lists.at(warp * qb + b).flush();
  __syncthreads();
  // Warp w gathers the other warps' lists of the queries b = w, w + 8, ... and writes the block's candidates.
  for (int b = warp; b < qb; b += kWarps) {
    RunningTopK mine = lists.at(warp * qb + b);
    for (int w = 0; w < kWarps; ++w)
      if (w != warp) mine.offer_list(lists.at(w * qb + b).s, lists.at(w * qb + b).id, k);
    mine.flush();
    write_candidates(mine, b, k, out_s, out_id);
  }
}

// ---- many queries: block-wide lists, a tile of rows x queries per chunk ------------------------------------------

// Offers a chunk's scores [qb][ld] (rows [0, rows)) to the block's per-query lists; warps take queries in turn.
__device__ void offer_chunk(const Lists& lists, const float* scores, int ld, int qb, int rows, size_t row0) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int b = warp; b < qb; b += warps) {
    RunningTopK top = lists.at(b);
    for (int i0 = 0; i0 < rows; i0 += 32) {
      const int i = i0 + lane;
      top.offer(i < rows, i < rows ? scores[b * ld + i] : 0.f, int32_t(row0 + i));
    }
  }
}

__device__ void finish_block(const Lists& lists, int qb, int k, float* out_s, int32_t* out_id) {
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int b = warp; b < qb; b += warps) {
    RunningTopK top = lists.at(b);
    top.flush();
    write_candidates(top, b, k, out_s, out_id);
  }
}

// Any corpus type and shape (the f32 corpus's many-query scorer, and the fallback): each thread computes 4 rows x 4
// queries of a 64 x 64 tile, kTileD dimensions at a time, in f32.
template <class T>
__global__ void __launch_bounds__(kThreads) tiled_topk(const float* q, int qb, const T* corpus, size_t n, int dim,
                                                        int k, int kp, float* out_s, int32_t* out_id) {
  extern __shared__ __align__(128) char smem[];
  char* p = smem;
  const Lists lists = Lists::carve(p, qb, kp, k);
  constexpr int kLd = kTileRows + 4;
  float* scores = reinterpret_cast<float*>(p);  // [kTiledQ][kTileRows]
  float* cs = scores + kTiledQ * kTileRows;     // [kTileD][kLd]
  float* qs = cs + kTileD * kLd;                // [kTileD][kLd]
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  for (int b = tid >> 5; b < qb; b += kWarps) lists.at(b).init();
  __syncthreads();
  const size_t chunks = (n + kTileRows - 1) / kTileRows;
  for (size_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const size_t row0 = chunk * kTileRows;
    const int rows = int(min(size_t(kTileRows), n - row0));
    float acc[4][4] = {};
    for (int d0 = 0; d0 < dim; d0 += kTileD) {
      const int r = tid >> 2, dd = (tid & 3) * 8;
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const int d = d0 + dd + e;
        cs[(dd + e) * kLd + r] = (r < rows && d < dim) ? to_f32<T>(corpus[(row0 + r) * size_t(dim) + d]) : 0.f;
        qs[(dd + e) * kLd + r] = (r < qb && d < dim) ? q[size_t(r) * dim + d] : 0.f;
      }
      __syncthreads();
#pragma unroll 8
      for (int d = 0; d < kTileD; ++d) {
        const float4 a = *reinterpret_cast<const float4*>(&cs[d * kLd + ty * 4]);
        const float4 b = *reinterpret_cast<const float4*>(&qs[d * kLd + tx * 4]);
        const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
      __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) scores[(tx * 4 + j) * kTileRows + ty * 4 + i] = acc[i][j];
    __syncthreads();
    offer_chunk(lists, scores, kTileRows, qb, rows, row0);
    __syncthreads();
  }
  finish_block(lists, qb, k, out_s, out_id);
}

// Splits f32 queries [qb, dim] into hi / lo halves of type T, rows padded to kTiledQ with zeros: [kTiledQ][dim] each.
template <class T>
__global__ void split_queries(const float* q, int qb, int dim, T* hi, T* lo, int* overflow) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < kTiledQ * dim; i += gridDim.x * blockDim.x) {
    const int b = i / dim;
    const float x = b < qb ? q[i] : 0.f;
    T h, l;
    split_hi_lo<T>(x, h, l);
    // f16 holds no |x| >= 65520: such a query cannot be split, and the caller takes the f32 path instead.
    if (isfinite(x) && !isfinite(to_f32<T>(h))) *overflow = 1;
    hi[i] = h;
    lo[i] = l;
  }
}

// bf16 / f16 corpus, many queries: the 16 warps tile a 256-row chunk x 64 queries as 8 x 2, each warp 32 rows x 32
// queries (2 x 2 accumulators of 16 x 16: every fragment loaded serves two products). The chunk's corpus tile and the queries' hi / lo halves pass through shared memory kMmaK
// dimensions at a time (16-byte coalesced loads, rows past the corpus zero); the next step's tile is loaded into
// registers while the tensor cores work on the current one. The scores reuse the tiles' memory.
constexpr int kLdT = kMmaK + 8;  // padded rows of the shared tiles: fragment loads spread over the banks

template <class T>
__global__ void __launch_bounds__(kMmaThreads) mma_topk(const T* qhi, const T* qlo, int qb, const T* corpus, size_t n,
                                                      int dim, int k, int kp, float* out_s, int32_t* out_id) {
  using namespace nvcuda;
  extern __shared__ __align__(128) char smem[];
  T* at = reinterpret_cast<T*>(smem);    // [kMmaRows][kLdT] corpus tile
  T* bh = at + kMmaRows * kLdT;          // [kTiledQ][kLdT] query hi
  T* bl = bh + kTiledQ * kLdT;           // [kTiledQ][kLdT] query lo
  float* scores = reinterpret_cast<float*>(smem);  // [kTiledQ][kMmaRows], after the products (aliases the tiles)
  constexpr size_t kTiles = (size_t(kMmaRows) + 2 * kTiledQ) * kLdT * sizeof(T);
  constexpr size_t kScores = size_t(kTiledQ) * kMmaRows * 4;
  char* p = smem + (kTiles > kScores ? kTiles : kScores);
  const Lists lists = Lists::carve(p, qb, kp, k);
  const int tid = threadIdx.x, warp = tid >> 5;
  for (int b = warp; b < qb; b += kMmaWarps) lists.at(b).init();
  constexpr int kGroups = kMmaK / 8;                       // 16-byte groups per tile row
  constexpr int kA = kMmaRows * kGroups / kMmaThreads;     // corpus groups per thread (4)
  constexpr int kB = kTiledQ * kGroups / kMmaThreads;      // query groups per thread, per half (1)
  const int ksteps = (dim + kMmaK - 1) / kMmaK;
  const size_t chunks = (n + kMmaRows - 1) / kMmaRows;
  uint4 ra[kA], rh[kB], rl[kB];
  auto load = [&](size_t row0, int k0) {
#pragma unroll
    for (int j = 0; j < kA; ++j) {
      const int i = tid + kMmaThreads * j, r = i / kGroups, c = (i % kGroups) * 8;
      const bool in = row0 + r < n && k0 + c < dim;
      ra[j] = in ? __ldg(reinterpret_cast<const uint4*>(corpus + (row0 + r) * size_t(dim) + k0 + c)) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int j = 0; j < kB; ++j) {
      const int i = tid + kMmaThreads * j, r = i / kGroups, c = (i % kGroups) * 8;
      const bool in = k0 + c < dim;
      const size_t off = size_t(r) * dim + k0 + c;
      rh[j] = in ? __ldg(reinterpret_cast<const uint4*>(qhi + off)) : make_uint4(0, 0, 0, 0);
      rl[j] = in ? __ldg(reinterpret_cast<const uint4*>(qlo + off)) : make_uint4(0, 0, 0, 0);
    }
  };
  auto store = [&] {
#pragma unroll
    for (int j = 0; j < kA; ++j) {
      const int i = tid + kMmaThreads * j, r = i / kGroups, c = (i % kGroups) * 8;
      *reinterpret_cast<uint4*>(at + r * kLdT + c) = ra[j];
    }
#pragma unroll
    for (int j = 0; j < kB; ++j) {
      const int i = tid + kMmaThreads * j, r = i / kGroups, c = (i % kGroups) * 8;
      *reinterpret_cast<uint4*>(bh + r * kLdT + c) = rh[j];
      *reinterpret_cast<uint4*>(bl + r * kLdT + c) = rl[j];
    }
  };
  size_t chunk = blockIdx.x;
  if (chunk < chunks) load(chunk * kMmaRows, 0);
  for (; chunk < chunks; chunk += gridDim.x) {
    const size_t row0 = chunk * kMmaRows;
    const int rows = int(min(size_t(kMmaRows), n - row0));
    const int wr = (warp >> 1) * 32, wq = (warp & 1) * 32;  // this warp's rows and queries
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
    for (int ks = 0; ks < ksteps; ++ks) {
      __syncthreads();  // the last step's tiles (or the last chunk's scores) are no longer read
      store();
      __syncthreads();
      // Next: this chunk's next dimensions, or the next chunk's first (the grid-stride loop's order).
      if (ks + 1 < ksteps) load(row0, (ks + 1) * kMmaK);
      else if (chunk + gridDim.x < chunks) load((chunk + gridDim.x) * kMmaRows, 0);
#pragma unroll
      for (int d = 0; d < kMmaK; d += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> h[2], l[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], at + (wr + 16 * i) * kLdT + d, kLdT);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          wmma::load_matrix_sync(h[j], bh + (wq + 16 * j) * kLdT + d, kLdT);
          wmma::load_matrix_sync(l[j], bl + (wq + 16 * j) * kLdT + d, kLdT);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            wmma::mma_sync(acc[i][j], a[i], h[j], acc[i][j]);
            wmma::mma_sync(acc[i][j], a[i], l[j], acc[i][j]);
          }
      }
    }
    __syncthreads();  // every warp is done with the tiles: the scores take their place
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j)
        wmma::store_matrix_sync(scores + (wq + 16 * j) * kMmaRows + wr + 16 * i, acc[i][j], kMmaRows,
                                wmma::mem_col_major);
    __syncthreads();
    offer_chunk(lists, scores, kMmaRows, qb, rows, row0);
  }
  __syncthreads();
  finish_block(lists, qb, k, out_s, out_id);
}

// ---- the final merge --------------------------------------------------------------------------------------------

// One block per query: warp w merges slice w of the blocks' candidates ([qb][per_query]), then warp 0 merges the
// eight lists and writes the result (empty slots: id -1, score -inf).
__global__ void __launch_bounds__(kThreads) merge_topk(const float* cand_s, const int32_t* cand_id, size_t per_query,
                                                        int k, int kp, int32_t* ids, float* scores) {
  extern __shared__ __align__(128) char smem[];
  char* p = smem;
  const Lists lists = Lists::carve(p, kWarps, kp, k);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const size_t b = blockIdx.x;
  RunningTopK mine = lists.at(warp);
  mine.init();
  const size_t per = (per_query + kWarps - 1) / kWarps;
  const size_t lo = min(per_query, per * warp), hi = min(per_query, lo + per);
  const float* cs = cand_s + b * per_query;
  const int32_t* ci = cand_id + b * per_query;
  for (size_t i0 = lo; i0 < hi; i0 += 32) {
    const size_t i = i0 + lane;
    const bool ok = i < hi && ci[i] != kNoId;
    mine.offer(ok, ok ? cs[i] : 0.f, ok ? ci[i] : kNoId);
  }
  mine.flush();
  __syncthreads();
  if (warp != 0) return;
  for (int w = 1; w < kWarps; ++w) mine.offer_list(lists.at(w).s, lists.at(w).id, k);
  mine.flush();
  for (int i = lane; i < k; i += 32) {
    const bool empty = mine.id[i] == kNoId;
    ids[b * k + i] = empty ? -1 : mine.id[i];
    scores[b * k + i] = empty ? -INFINITY : mine.s[i];
  }
}

int pow2_at_least(size_t v) {
  int p = 32;
  while (size_t(p) < v) p <<= 1;
  return p;
}


template <class K>
int persistent_grid(K kernel, size_t smem, size_t work_items, int threads = kThreads) {
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), "cudaFuncSetAttribute");
  int per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem), "occupancy");
  const size_t sms = size_t(sm_count());
  return int(std::max<size_t>(1, std::min<size_t>(std::max<size_t>(work_items, 1), size_t(std::max(per_sm, 1)) * sms)));
}

void merge(const Buffer& cs, const Buffer& ci, int qb, size_t per_query, size_t k, int kp, int32_t* ids, float* scores) {
  const size_t smem = lists_bytes(kWarps, kp);
  need(smem <= smem_budget(), "ERR_UNSUPPORTED", "k is too large for this GPU's shared memory");
  check(cudaFuncSetAttribute(merge_topk, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), "cudaFuncSetAttribute");
  merge_topk<<<qb, kThreads, smem, stream()>>>(cs.as<float>(), ci.as<int32_t>(), per_query, int(k), kp, ids, scores);
  check(cudaGetLastError(), "score_topk merge");
}

// Whether the warp-per-row scorer fits one query with k's lists in shared memory (else the tiled scorers take it).
bool warp_rows_fit(size_t dim, int kp) { return lists_bytes(kWarps, kp) + dim * 4 <= smem_budget(); }

template <class T>
void run_warp_rows(const float* q, size_t batch, const T* corpus, size_t n, size_t dim, size_t k, int kp, int32_t* ids,
                   float* scores) {
  constexpr int kVec = 16 / sizeof(T);
  const size_t nvec = dim / kVec;
  auto pick = [&](auto nv_tag) {
    constexpr int kNv = decltype(nv_tag)::value;
    auto kernel = warp_rows_topk<T, kNv>;
    // Queries per launch: as many (at most kWarpQ) as the eight warps' lists leave room for.
    int qmax = kWarpQ;
    while (qmax > 1 && lists_bytes(kWarps * qmax, kp) + size_t(qmax) * dim * 4 > smem_budget()) qmax >>= 1;
    for (size_t b0 = 0; b0 < batch; b0 += qmax) {
      const int qb = int(std::min<size_t>(qmax, batch - b0));
      const size_t smem = lists_bytes(kWarps * qb, kp) + size_t(qb) * dim * 4;
      const int grid = persistent_grid(kernel, smem, (n + 32 * kWarps - 1) / (32 * kWarps));
      Buffer cs(size_t(qb) * grid * k * 4), ci(size_t(qb) * grid * k * 4);
      {
        ProfileScope prof("score_topk warp-per-row scorer");
        kernel<<<grid, kThreads, smem, stream()>>>(q + b0 * dim, qb, corpus, n, int(dim), int(k), kp, cs.as<float>(),
                                                   ci.as<int32_t>());
        check(cudaGetLastError(), "score_topk");
      }
      ProfileScope prof("score_topk merge");
      merge(cs, ci, qb, size_t(grid) * k, k, kp, ids + b0 * k, scores + b0 * k);
    }
  };
  if (nvec <= 32) pick(std::integral_constant<int, 1>{});
  else if (nvec <= 64) pick(std::integral_constant<int, 2>{});
  else if (nvec <= 128) pick(std::integral_constant<int, 4>{});
  else pick(std::integral_constant<int, 8>{});
}

// Queries per launch: the most (at most kTiledQ) whose lists fit the shared-memory budget beside `fixed` bytes.
int tiled_queries(size_t batch, int kp, size_t fixed) {
  int qb = kTiledQ;
  while (qb > 1 && fixed + lists_bytes(qb, kp) > smem_budget()) qb >>= 1;
  need(fixed + lists_bytes(qb, kp) <= smem_budget(), "ERR_UNSUPPORTED", "k is too large for the GPU kernel");
  return int(std::min<size_t>(qb, batch));
}

// The FMA scorer, for any corpus type and shape.
template <class T>
void run_tiled(const float* q, size_t batch, const T* corpus, size_t n, size_t dim, size_t k, int kp, int32_t* ids,
               float* scores) {
  const size_t fixed = (kTiledQ * kTileRows + 2 * kTileD * (kTileRows + 4)) * 4;
  const int qmax = tiled_queries(batch, kp, fixed);
  for (size_t b0 = 0; b0 < batch; b0 += qmax) {
    const int qb = int(std::min<size_t>(qmax, batch - b0));
    const size_t smem = fixed + lists_bytes(qb, kp);
    const int grid = persistent_grid(tiled_topk<T>, smem, (n + kTileRows - 1) / kTileRows);
    Buffer cs(size_t(qb) * grid * k * 4), ci(size_t(qb) * grid * k * 4);
    tiled_topk<T><<<grid, kThreads, smem, stream()>>>(q + b0 * dim, qb, corpus, n, int(dim), int(k), kp,
                                                     cs.as<float>(), ci.as<int32_t>());
    check(cudaGetLastError(), "score_topk");
    merge(cs, ci, qb, size_t(grid) * k, k, kp, ids + b0 * k, scores + b0 * k);
  }
}

// The tensor-core scorer: a bf16 / f16 corpus whose dimension is a whole number of 16-wide fragments.
template <class T>
void run_mma(const float* q, size_t batch, const T* corpus, size_t n, size_t dim, size_t k, int kp, int32_t* ids,
             float* scores) {
  cudaStream_t st = stream();
  const size_t fixed = std::max((size_t(kMmaRows) + 2 * kTiledQ) * kLdT * sizeof(T), size_t(kTiledQ) * kMmaRows * 4);
  const int qmax = tiled_queries(batch, kp, fixed);
  Buffer hi(size_t(kTiledQ) * dim * sizeof(T)), lo(size_t(kTiledQ) * dim * sizeof(T)), flag(4);
  for (size_t b0 = 0; b0 < batch; b0 += qmax) {
    const int qb = int(std::min<size_t>(qmax, batch - b0));
    const size_t smem = fixed + lists_bytes(qb, kp);
    check(cudaMemsetAsync(flag.get(), 0, 4, st), "cudaMemset");
    split_queries<T><<<int(std::min<size_t>((kTiledQ * dim + 255) / 256, 4096)), 256, 0, st>>>(
        q + b0 * dim, qb, int(dim), hi.as<T>(), lo.as<T>(), flag.as<int>());
    if (std::is_same<T, __half>::value) {
      int overflow = 0;
      check(cudaMemcpyAsync(&overflow, flag.get(), 4, cudaMemcpyDeviceToHost, st), "cudaMemcpy");
      sync("score_topk");
      if (overflow) {
        run_tiled<T>(q + b0 * dim, size_t(qb), corpus, n, dim, k, kp, ids + b0 * k, scores + b0 * k);
        continue;
      }
    }
    const int grid = persistent_grid(mma_topk<T>, smem, (n + kMmaRows - 1) / kMmaRows, kMmaThreads);
    Buffer cs(size_t(qb) * grid * k * 4), ci(size_t(qb) * grid * k * 4);
    {
      ProfileScope prof("score_topk tensor-core scorer");
      mma_topk<T><<<grid, kMmaThreads, smem, st>>>(hi.as<T>(), lo.as<T>(), qb, corpus, n, int(dim), int(k), kp,
                                                cs.as<float>(), ci.as<int32_t>());
      check(cudaGetLastError(), "score_topk");
    }
    ProfileScope prof("score_topk merge");
    merge(cs, ci, qb, size_t(grid) * k, k, kp, ids + b0 * k, scores + b0 * k);
  }
}

__global__ void finite_kernel(const void* data, size_t count, int dtype, int* bad) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    float v;
    if (dtype == int(Dtype::F32)) v = static_cast<const float*>(data)[i];
    else if (dtype == int(Dtype::BF16)) v = __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
    else v = __half2float(static_cast<const __half*>(data)[i]);
    if (!isfinite(v)) {
      *bad = 1;
      return;
    }
  }
}

}  // namespace

void score_topk(const float* q, size_t batch, const void* corpus, Dtype dtype, size_t n, size_t dim, size_t k,
                int32_t* ids, float* scores) {
  need(k >= 1 && k <= kMaxTopK, "ERR_UNSUPPORTED", "k must be in [1, " + std::to_string(kMaxTopK) + "] on cuda");
  if (batch == 0) return;
  need(n <= size_t(0x7ffffffe), "ERR_UNSUPPORTED", "more than 2^31 - 2 corpus rows on cuda");
  const int kp = pow2_at_least(k);
  QUORUM_CUDA_FLOAT_TYPES(dtype, {
    const T* c = static_cast<const T*>(corpus);
    // The warp-per-row scorer reads whole 16-byte vectors: rows of such a size, at most 8 vectors per lane.
    const bool vec_rows = (dim * sizeof(T)) % 16 == 0 && dim * sizeof(T) <= 16 * 32 * 8;
    // The tensor-core scorer reads 16 x 16 fragments: dimensions in whole fragments.
    const bool mma_ok = !std::is_same<T, float>::value && dim % 16 == 0;
    if (batch <= size_t(kWarpQ) && vec_rows && warp_rows_fit(dim, kp)) {
      run_warp_rows<T>(q, batch, c, n, dim, k, kp, ids, scores);
    } else if constexpr (!std::is_same<T, float>::value) {
      if (mma_ok) run_mma<T>(q, batch, c, n, dim, k, kp, ids, scores);
      else run_tiled<T>(q, batch, c, n, dim, k, kp, ids, scores);
    } else {
      run_tiled<T>(q, batch, c, n, dim, k, kp, ids, scores);
    }
  });
}

bool all_finite(const void* data, size_t count, Dtype dtype) {
  if (count == 0) return true;
  Buffer flag(4);
  cudaStream_t st = stream();
  check(cudaMemsetAsync(flag.get(), 0, 4, st), "cudaMemset");
  const int grid = int(std::min<size_t>((count + 255) / 256, 4096));
  finite_kernel<<<grid, 256, 0, st>>>(data, count, int(dtype), flag.as<int>());
  int bad = 0;
  check(cudaMemcpyAsync(&bad, flag.get(), 4, cudaMemcpyDeviceToHost, st), "cudaMemcpy");
  sync("all_finite");
  return bad == 0;
}

}  // namespace quorum::cuda
