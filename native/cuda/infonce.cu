// InfoNCE forward and backward on the GPU (kernels.h): three products (there is no cuBLAS on the build machines):
// A = Q Pᵀ / tau, then dQ = G P and dP = Gᵀ Q with G = dL/dA / tau, which the row kernel writes over A. Where every
// size is a multiple of 8 the products run on tensor cores as three bf16 products of hi / lo halves
// (Ah Bh + Ah Bl + Al Bh, f32 accumulators: about 16 bits of each f32 operand's mantissa, the dropped Al Bl term
// below 2^-16 relative); otherwise on a register-tiled f32 GEMM. Cosine mode normalises copies of Q and P first and takes the gradients back through
// the normalisation (F.normalize's eps), as the CPU kernel does.
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "../common/error.h"
#include "device_math.cuh"
#include "kernels.h"
#include "runtime.h"

namespace quorum::cuda {
namespace {

constexpr float kNormEps = 1e-12f;
constexpr int kTile = 64, kStep = 16;

// C[m, n] = alpha * sum_k A(m, k) B(k, n), A(m, k) = a[m * sam + k * sak], B(k, n) = b[k * sbk + n * sbn],
// C row-major with leading dimension ldc. Each of 256 threads computes 4 x 4 outputs.
__global__ void __launch_bounds__(256) gemm_kernel(const float* a, size_t sam, size_t sak, const float* b, size_t sbk,
                                                    size_t sbn, float* c, size_t ldc, int M, int N, int K,
                                                    float alpha) {
  __shared__ __align__(16) float as[kStep][kTile + 4];
  __shared__ __align__(16) float bs[kStep][kTile + 4];
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  const int m0 = blockIdx.y * kTile, n0 = blockIdx.x * kTile;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += kStep) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int idx = tid + 256 * e;
      // Consecutive threads walk the operand's contiguous index, so the loads coalesce for either layout.
      int m, k;
      if (sak == 1) { m = idx / kStep; k = idx % kStep; } else { k = idx / kTile; m = idx % kTile; }
      const int gm = m0 + m, gk = k0 + k;
      as[k][m] = (gm < M && gk < K) ? a[size_t(gm) * sam + size_t(gk) * sak] : 0.f;
      int n, kb;
      if (sbk == 1) { n = idx / kStep; kb = idx % kStep; } else { kb = idx / kTile; n = idx % kTile; }
      const int gn = n0 + n, gkb = k0 + kb;
      bs[kb][n] = (gn < N && gkb < K) ? b[size_t(gkb) * sbk + size_t(gn) * sbn] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kStep; ++k) {
      const float4 av = *reinterpret_cast<const float4*>(&as[k][ty * 4]);
      const float4 bv = *reinterpret_cast<const float4*>(&bs[k][tx * 4]);
      const float x[4] = {av.x, av.y, av.z, av.w}, y[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(x[i], y[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;
      if (m < M && n < N) c[size_t(m) * ldc + n] = alpha * acc[i][j];
    }
}

void gemm(const float* a, size_t sam, size_t sak, const float* b, size_t sbk, size_t sbn, float* c, size_t ldc,
          size_t M, size_t N, size_t K, float alpha) {
  if (M == 0 || N == 0) return;
  need(M / kTile < 65535, "ERR_UNSUPPORTED", "too many rows for the GEMM on cuda");
  const dim3 grid(unsigned((N + kTile - 1) / kTile), unsigned((M + kTile - 1) / kTile));
  gemm_kernel<<<grid, 256, 0, stream()>>>(a, sam, sak, b, sbk, sbn, c, ldc, int(M), int(N), int(K), alpha);
  check(cudaGetLastError(), "info_nce gemm");
}

// ---- tensor-core GEMM over hi / lo halves ---------------------------------------------------------------------

using bf16 = __nv_bfloat16;

__global__ void split_f32(const float* x, size_t n, bf16* hi, bf16* lo) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    split_hi_lo<bf16>(x[i], hi[i], lo[i]);
}

// The hi / lo halves of an f32 device array, in device scratch.
struct Halves {
  Buffer hi, lo;
  Halves(const float* x, size_t n) : hi(n * 2), lo(n * 2) {
    if (n == 0) return;
    split_f32<<<unsigned(std::min<size_t>((n + 255) / 256, 65535)), 256, 0, stream()>>>(x, n, hi.as<bf16>(), lo.as<bf16>());
  }
};

constexpr int kTcM = 128, kTcN = 128, kTcK = 32;

// A shared tile of an operand as stored: `outer` rows of `inner` contiguous elements (padded by 8), filled with
// 16-byte groups (rows of the source `ld` apart; groups past `outer_n` / `inner_n` are zero).
template <int kOuter, int kInner>
struct Tile {
  static constexpr int kLd = kInner + 8;
  static constexpr int kGroups = kOuter * kInner / 8;
  static constexpr int kPerThread = kGroups / 256;
  uint4 r[kPerThread];
  __device__ void load(const bf16* src, size_t ld, int outer0, int inner0, int outer_n, int inner_n) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int g = threadIdx.x + 256 * j, o = g / (kInner / 8), c = (g % (kInner / 8)) * 8;
      const bool in = outer0 + o < outer_n && inner0 + c < inner_n;
      r[j] = in ? __ldg(reinterpret_cast<const uint4*>(src + size_t(outer0 + o) * ld + inner0 + c)) : make_uint4(0, 0, 0, 0);
    }
  }
  __device__ void store(bf16* dst) const {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int g = threadIdx.x + 256 * j, o = g / (kInner / 8), c = (g % (kInner / 8)) * 8;
      *reinterpret_cast<uint4*>(dst + o * kLd + c) = r[j];
    }
  }
};

// C[M, N] = alpha * A B with A(m, k) at a[m * lda + k] (row_major) or a[k * lda + m] (col_major), B(k, n) at
// b[k * ldb + n] (row_major) or b[n * ldb + k] (col_major); C row-major (ldc). A 128 x 128 tile per block, 8 warps
// of 64 x 32, K staged 32 at a time through shared memory, the next step's tiles loaded while this one computes.
template <class LA, class LB>
__global__ void __launch_bounds__(256) gemm_tc(const bf16* ah, const bf16* al, size_t lda, const bf16* bh,
                                                const bf16* bl, size_t ldb, float* c, size_t ldc, int M, int N, int K,
                                                float alpha) {
  using namespace nvcuda;
  constexpr bool kArow = std::is_same<LA, wmma::row_major>::value;
  constexpr bool kBrow = std::is_same<LB, wmma::row_major>::value;
  // Row-major A is stored [m][k], column-major [k][m]; row-major B [k][n], column-major [n][k].
  using TA = Tile<kArow ? kTcM : kTcK, kArow ? kTcK : kTcM>;
  using TB = Tile<kBrow ? kTcK : kTcN, kBrow ? kTcN : kTcK>;
  __shared__ __align__(128) bf16 sah[(kArow ? kTcM : kTcK) * TA::kLd], sal[(kArow ? kTcM : kTcK) * TA::kLd];
  __shared__ __align__(128) bf16 sbh[(kBrow ? kTcK : kTcN) * TB::kLd], sbl[(kBrow ? kTcK : kTcN) * TB::kLd];
  __shared__ __align__(128) float scratch[8][256];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int m0 = blockIdx.y * kTcM, n0 = blockIdx.x * kTcN;
  const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
  TA rah, ral;
  TB rbh, rbl;
  auto load = [&](int k0) {
    if (kArow) { rah.load(ah, lda, m0, k0, M, K); ral.load(al, lda, m0, k0, M, K); }
    else { rah.load(ah, lda, k0, m0, K, M); ral.load(al, lda, k0, m0, K, M); }
    if (kBrow) { rbh.load(bh, ldb, k0, n0, K, N); rbl.load(bl, ldb, k0, n0, K, N); }
    else { rbh.load(bh, ldb, n0, k0, N, K); rbl.load(bl, ldb, n0, k0, N, K); }
  };
  load(0);
  for (int k0 = 0; k0 < K; k0 += kTcK) {
    __syncthreads();
    rah.store(sah); ral.store(sal); rbh.store(sbh); rbl.store(sbl);
    __syncthreads();
    if (k0 + kTcK < K) load(k0 + kTcK);
#pragma unroll
    for (int kk = 0; kk < kTcK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, LA> fah[4], fal[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, LB> fbh[2], fbl[2];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int m = wm + 16 * i;
        const int off = kArow ? m * TA::kLd + kk : kk * TA::kLd + m;
        wmma::load_matrix_sync(fah[i], sah + off, TA::kLd);
        wmma::load_matrix_sync(fal[i], sal + off, TA::kLd);
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int n = wn + 16 * j;
        const int off = kBrow ? kk * TB::kLd + n : n * TB::kLd + kk;
        wmma::load_matrix_sync(fbh[j], sbh + off, TB::kLd);
        wmma::load_matrix_sync(fbl[j], sbl + off, TB::kLd);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          wmma::mma_sync(acc[i][j], fah[i], fbh[j], acc[i][j]);
          wmma::mma_sync(acc[i][j], fah[i], fbl[j], acc[i][j]);
          wmma::mma_sync(acc[i][j], fal[i], fbh[j], acc[i][j]);
        }
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      for (int e = 0; e < acc[i][j].num_elements; ++e) acc[i][j].x[e] *= alpha;
      const int m = m0 + wm + 16 * i, n = n0 + wn + 16 * j;
      if (m >= M || n >= N) continue;
      wmma::store_matrix_sync(scratch[warp], acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {
        const int r = e / 16, cc = e % 16;
        if (m + r < M && n + cc < N) c[size_t(m + r) * ldc + n + cc] = scratch[warp][e];
      }
      __syncwarp();
    }
}

template <class LA, class LB>
void gemm_tensor_cores(const Halves& a, size_t lda, const Halves& b, size_t ldb, float* c, size_t ldc, size_t M,
                       size_t N, size_t K, float alpha) {
  if (M == 0 || N == 0) return;
  need(M / kTcM < 65535, "ERR_UNSUPPORTED", "too many rows for the GEMM on cuda");
  const dim3 grid{unsigned((N + kTcN - 1) / kTcN), unsigned((M + kTcM - 1) / kTcM)};
  gemm_tc<LA, LB><<<grid, 256, 0, stream()>>>(a.hi.as<bf16>(), a.lo.as<bf16>(), lda, b.hi.as<bf16>(), b.lo.as<bf16>(),
                                               ldb, c, ldc, int(M), int(N), int(K), alpha);
  check(cudaGetLastError(), "info_nce gemm");
}

// out = x / max(|x|, eps) per row; norm[r] = max(|x_r|, eps). One warp per row.
__global__ void normalize_rows(const float* x, size_t rows, int dim, float* out, float* norm) {
  const size_t r = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  const float* xr = x + r * dim;
  float s = 0.f;
  for (int d = lane; d < dim; d += 32) s = fmaf(xr[d], xr[d], s);
  const float n = fmaxf(sqrtf(warp_sum(s)), kNormEps);
  const float inv = 1.f / n;
  for (int d = lane; d < dim; d += 32) out[r * dim + d] = xr[d] * inv;
  if (lane == 0) norm[r] = n;
}

// g <- (g - x (x . g) / n^2) / n for each row (the gradient through x / n), or g / eps below the clamp.
__global__ void through_normalize(const float* x, const float* norm, size_t rows, int dim, float* g) {
  const size_t r = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  const float* xr = x + r * dim;
  float* gr = g + r * dim;
  float s = 0.f;
  for (int d = lane; d < dim; d += 32) s = fmaf(xr[d], gr[d], s);
  s = warp_sum(s);
  const float n = norm[r];
  const float c = n <= kNormEps ? 0.f : s / (n * n);
  const float inv = 1.f / n;
  for (int d = lane; d < dim; d += 32) gr[d] = (gr[d] - c * xr[d]) * inv;
}

// One block per row of A [B, M]: the row's loss, rank, weighted loss and (grad) G = w_i / B (softmax - onehot) / tau.
__global__ void rows_kernel(float* a, size_t passages, const int32_t* pos, const float* weights, float inv_batch,
                            float inv_tau, bool grad, float* row_loss, int32_t* rank, float* wloss) {
  __shared__ float red[32];
  __shared__ int redi[32];
  const size_t i = blockIdx.x;
  float* row = a + i * passages;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
  const float apos = row[pos[i]];
  float mx = -INFINITY;
  int above = 0;
  for (size_t j = tid; j < passages; j += blockDim.x) {
    mx = fmaxf(mx, row[j]);
    above += row[j] > apos;
  }
  mx = warp_max(mx);
  for (int o = 16; o > 0; o >>= 1) above += __shfl_xor_sync(0xffffffffu, above, o);
  if (lane == 0) { red[warp] = mx; redi[warp] = above; }
  __syncthreads();
  if (tid < 32) {
    float v = tid < warps ? red[tid] : -INFINITY;
    int c = tid < warps ? redi[tid] : 0;
    v = warp_max(v);
    for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
    if (tid == 0) { red[0] = v; redi[0] = c; }
  }
  __syncthreads();
  mx = red[0];
  const int count = redi[0];
  __syncthreads();
  float s = 0.f;
  for (size_t j = tid; j < passages; j += blockDim.x) s += expf(row[j] - mx);
  s = warp_sum(s);
  if (lane == 0) red[warp] = s;
  __syncthreads();
  if (tid < 32) {
    float v = tid < warps ? red[tid] : 0.f;
    v = warp_sum(v);
    if (tid == 0) red[0] = v;
  }
  __syncthreads();
  const float total = red[0];
  const float lse = mx + logf(total);
  const float w = weights ? weights[i] : 1.f;
  if (tid == 0) {
    row_loss[i] = lse - apos;
    rank[i] = 1 + count;
    wloss[i] = w * (lse - apos);
  }
  if (grad) {
    const float scale = w * inv_batch * inv_tau, inv_total = 1.f / total;
    for (size_t j = tid; j < passages; j += blockDim.x) {
      const float p = expf(row[j] - mx) * inv_total;
      row[j] = scale * (p - (j == size_t(pos[i]) ? 1.f : 0.f));
    }
  }
}

}  // namespace

InfoNceResult info_nce(const float* q, const float* p, size_t batch, size_t passages, size_t dim, const int32_t* pos,
                       const float* weights, float temperature, bool cosine, float* row_loss, int32_t* rank,
                       float* dq, float* dp) {
  need(std::isfinite(temperature) && temperature > 0, "ERR_RANGE", "temperature must be positive and finite");
  InfoNceResult r;
  if (batch == 0) return r;
  cudaStream_t st = stream();
  const float inv_tau = 1.f / temperature;
  Buffer qn, pn, qnorm, pnorm;
  const float* qa = q;
  const float* pa = p;
  if (cosine) {
    qn = Buffer(batch * dim * 4);
    pn = Buffer(passages * dim * 4);
    qnorm = Buffer(batch * 4);
    pnorm = Buffer(passages * 4);
    normalize_rows<<<unsigned((batch * 32 + 255) / 256), 256, 0, st>>>(q, batch, int(dim), qn.as<float>(), qnorm.as<float>());
    if (passages)
      normalize_rows<<<unsigned((passages * 32 + 255) / 256), 256, 0, st>>>(p, passages, int(dim), pn.as<float>(),
                                                                           pnorm.as<float>());
    qa = qn.as<float>();
    pa = pn.as<float>();
  }
  Buffer scores(batch * passages * 4), wloss(batch * 4);
  using namespace nvcuda;
  const bool tc = batch % 8 == 0 && passages % 8 == 0 && dim % 8 == 0;
  std::unique_ptr<Halves> qh, ph;
  if (tc) {
    qh = std::make_unique<Halves>(qa, batch * dim);
    ph = std::make_unique<Halves>(pa, passages * dim);
  }
  // A[i, j] = q_i . p_j / tau
  if (tc) gemm_tensor_cores<wmma::row_major, wmma::col_major>(*qh, dim, *ph, dim, scores.as<float>(), passages, batch,
                                                              passages, dim, inv_tau);
  else gemm(qa, dim, 1, pa, 1, dim, scores.as<float>(), passages, batch, passages, dim, inv_tau);
  const bool grad = dq != nullptr;
  rows_kernel<<<unsigned(batch), 256, 0, st>>>(scores.as<float>(), passages, pos, weights, 1.f / float(batch), inv_tau,
                                               grad, row_loss, rank, wloss.as<float>());
  check(cudaGetLastError(), "info_nce rows");
  if (grad) {
    // dQ = G P, dP = Gᵀ Q (in the normalised space for cosine, then back through the normalisation).
    if (tc) {
      const Halves gh(scores.as<float>(), batch * passages);
      gemm_tensor_cores<wmma::row_major, wmma::row_major>(gh, passages, *ph, dim, dq, dim, batch, dim, passages, 1.f);
      gemm_tensor_cores<wmma::col_major, wmma::row_major>(gh, passages, *qh, dim, dp, dim, passages, dim, batch, 1.f);
      sync("info_nce");  // gh's halves go back to the cache when this block ends
    } else {
      gemm(scores.as<float>(), passages, 1, pa, dim, 1, dq, dim, batch, dim, passages, 1.f);
      gemm(scores.as<float>(), 1, passages, qa, dim, 1, dp, dim, passages, dim, batch, 1.f);
    }
    if (cosine) {
      through_normalize<<<unsigned((batch * 32 + 255) / 256), 256, 0, st>>>(q, qnorm.as<float>(), batch, int(dim), dq);
      if (passages)
        through_normalize<<<unsigned((passages * 32 + 255) / 256), 256, 0, st>>>(p, pnorm.as<float>(), passages,
                                                                                int(dim), dp);
    }
  }
  std::vector<float> wl(batch);
  std::vector<int32_t> rk(batch);
  check(cudaMemcpyAsync(wl.data(), wloss.get(), batch * 4, cudaMemcpyDeviceToHost, st), "cudaMemcpy");
  check(cudaMemcpyAsync(rk.data(), rank, batch * 4, cudaMemcpyDeviceToHost, st), "cudaMemcpy");
  sync("info_nce");
  double loss = 0;
  size_t first = 0;
  for (size_t i = 0; i < batch; ++i) {
    loss += double(wl[i]);
    first += rk[i] == 1;
  }
  r.loss = loss / double(batch);
  r.accuracy = double(first) / double(batch);
  return r;
}

}  // namespace quorum::cuda
