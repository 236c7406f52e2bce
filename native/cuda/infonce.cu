// InfoNCE forward and backward on the GPU (kernels.h): three products by one register-tiled f32 GEMM (there is no
// cuBLAS on the build machines): A = Q Pᵀ / tau, then dQ = G P and dP = Gᵀ Q with G = dL/dA / tau, which the
// row kernel writes over A. Cosine mode normalises copies of Q and P first and takes the gradients back through
// the normalisation (F.normalize's eps), as the CPU kernel does.
#include <algorithm>
#include <cmath>
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
  // A[i, j] = q_i . p_j / tau
  gemm(qa, dim, 1, pa, 1, dim, scores.as<float>(), passages, batch, passages, dim, inv_tau);
  const bool grad = dq != nullptr;
  rows_kernel<<<unsigned(batch), 256, 0, st>>>(scores.as<float>(), passages, pos, weights, 1.f / float(batch), inv_tau,
                                               grad, row_loss, rank, wloss.as<float>());
  check(cudaGetLastError(), "info_nce rows");
  if (grad) {
    // dQ = G P, dP = Gᵀ Q (in the normalised space for cosine, then back through the normalisation).
    gemm(scores.as<float>(), passages, 1, pa, dim, 1, dq, dim, batch, dim, passages, 1.f);
    gemm(scores.as<float>(), 1, passages, qa, dim, 1, dp, dim, passages, dim, batch, 1.f);
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
