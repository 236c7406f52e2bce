#include "gemm.h"

#include <algorithm>

#include "../common/thread_pool.h"
#include "dispatch.h"

namespace quorum::kernels {
namespace {
constexpr size_t kRowBlock = 32;
constexpr size_t kColBlock = 256;
constexpr size_t kDepthBlock = 512;  // a 512 x 256 panel of B is 512 KiB: half of L2
}  // namespace

void gemm(size_t m, size_t n, size_t k, StridedA a, const float* b, size_t ldb, float* c, size_t ldc,
          bool accumulate) {
  const GemmOps& o = pick(gemm_scalar(), gemm_avx2(), gemm_avx512());
  const size_t rb = (m + kRowBlock - 1) / kRowBlock, cb = (n + kColBlock - 1) / kColBlock;
  ThreadPool::global().parallel_for(rb * cb, [&](size_t task, int) {
    const size_t i0 = (task / cb) * kRowBlock, j0 = (task % cb) * kColBlock;
    const size_t mi = std::min(kRowBlock, m - i0), nj = std::min(kColBlock, n - j0);
    if (k == 0 && !accumulate)
      for (size_t i = 0; i < mi; ++i) std::fill(c + (i0 + i) * ldc + j0, c + (i0 + i) * ldc + j0 + nj, 0.f);
    for (size_t p0 = 0; p0 < k; p0 += kDepthBlock)
      o.gemm(mi, nj, std::min(kDepthBlock, k - p0), {a.a + i0 * a.row + p0 * a.depth, a.row, a.depth},
             b + p0 * ldb + j0, ldb, c + i0 * ldc + j0, ldc, accumulate || p0 > 0);
  });
}

}  // namespace quorum::kernels
