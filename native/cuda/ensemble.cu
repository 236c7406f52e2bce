// Ensemble mutual information on the GPU (kernels.h): one warp per query, the query's candidates spread over the
// lanes (kPer per lane, in registers), members taken one at a time: a max and a sum of exponentials per member
// (warp reductions), its entropy from the log-sum-exp, and its probabilities added into the mean M.
#include <algorithm>
#include <cmath>

#include "../common/error.h"
#include "device_math.cuh"
#include "kernels.h"
#include "runtime.h"

namespace quorum::cuda {
namespace {

template <int kPer>
__global__ void mi_kernel(const float* z, size_t batch, int members, int len, const int32_t* lengths, float inv_temp,
                          bool eps_mode, float* mi, float* conf) {
  const size_t b = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (b >= batch) return;
  const int n = lengths ? lengths[b] : len;
  float mean[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) mean[j] = 0.f;
  float h_members = 0.f;
  const float inv_k = 1.f / float(members);
  for (int k = 0; k < members; ++k) {
    const float* row = z + (b * members + k) * size_t(len);
    float x[kPer];
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int d = lane + 32 * j;
      x[j] = d < n ? row[d] : -INFINITY;
      mx = fmaxf(mx, x[j]);
    }
    mx = warp_max(mx);
    float s = 0.f, sa = 0.f;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int d = lane + 32 * j;
      if (d < n) {
        x[j] = (x[j] - mx) * inv_temp;  // a_d
        const float e = expf(x[j]);
        s += e;
        if (e > 0.f) sa += e * x[j];
      }
    }
    s = warp_sum(s);
    sa = warp_sum(sa);
    const float inv_s = 1.f / s;
    float h;
    if (!eps_mode) {
      h = logf(s) - sa * inv_s;  // -sum p log p with log p = a - log S; 0 log 0 = 0
    } else {
      float acc = 0.f;
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int d = lane + 32 * j;
        if (d < n) {
          const float p = expf(x[j]) * inv_s;
          acc -= p * logf(p + 1e-6f);
        }
      }
      h = warp_sum(acc);
    }
    h_members += h;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int d = lane + 32 * j;
      if (d < n) mean[j] += expf(x[j]) * inv_s * inv_k;
    }
  }
  float hm = 0.f;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int d = lane + 32 * j;
    if (d < n) {
      const float m = mean[j];
      if (eps_mode) hm -= m * logf(m + 1e-6f);
      else if (m > 0.f) hm -= m * logf(m);
    }
  }
  hm = warp_sum(hm);
  if (lane == 0) {
    const float v = hm - h_members * inv_k;
    mi[b] = v;
    conf[b] = fminf(1.f, fmaxf(0.f, 1.f - v / logf(float(members))));
  }
}

}  // namespace

void ensemble_mi(const float* z, size_t batch, size_t members, size_t len, const int32_t* lengths, float temperature,
                 bool eps_mode, float* mi, float* conf) {
  need(members >= 2 && len >= 1, "ERR_SHAPE", "ensemble MI needs at least 2 members and 1 candidate");
  need(std::isfinite(temperature) && temperature > 0, "ERR_RANGE", "temperature must be positive and finite");
  need(len <= kMaxEnsembleLen, "ERR_UNSUPPORTED",
       "more than " + std::to_string(kMaxEnsembleLen) + " candidates per query in ensemble MI on cuda");
  if (batch == 0) return;
  cudaStream_t st = stream();
  const int threads = 256;
  const unsigned grid = unsigned((batch * 32 + threads - 1) / threads);
  const float inv_temp = 1.f / temperature;
  const int m = int(members), l = int(len);
  if (len <= 32) mi_kernel<1><<<grid, threads, 0, st>>>(z, batch, m, l, lengths, inv_temp, eps_mode, mi, conf);
  else if (len <= 128) mi_kernel<4><<<grid, threads, 0, st>>>(z, batch, m, l, lengths, inv_temp, eps_mode, mi, conf);
  else if (len <= 256) mi_kernel<8><<<grid, threads, 0, st>>>(z, batch, m, l, lengths, inv_temp, eps_mode, mi, conf);
  else mi_kernel<32><<<grid, threads, 0, st>>>(z, batch, m, l, lengths, inv_temp, eps_mode, mi, conf);
  check(cudaGetLastError(), "ensemble_mi");
}

}  // namespace quorum::cuda
