#include "gemm.h"

#include <algorithm>
#include <vector>

#include "../common/aligned_buffer.h"
#include "../common/int_math.h"
#include "../common/thread_pool.h"
#include "dispatch.h"

namespace quorum::kernels {
namespace {

// Blocks of C given to one task: at most 8 x 8 tiles (96 x 256 on AVX-512), split further until every thread
// has about four tasks, so that small products (the loss's 128 x 256) still use all threads evenly.
void task_shape(size_t mp, size_t np, size_t threads, size_t& pm, size_t& pn) {
  pm = std::min<size_t>(mp, 8);
  pn = std::min<size_t>(np, 8);
  while (ceil_div(mp, pm) * ceil_div(np, pn) < 4 * threads && (pm > 1 || pn > 1)) {
    if (pm >= pn && pm > 1) pm = ceil_div(pm, 2);
    else pn = ceil_div(pn, 2);
  }
}

}  // namespace

const GemmOps& gemm_ops() { return pick(gemm_scalar(), gemm_avx2(), gemm_avx512()); }

void gemm(size_t m, size_t n, size_t k, StridedA a, StridedB b, float* c, size_t ldc, bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (size_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.f);
    return;
  }
  const GemmOps& o = gemm_ops();
  const size_t MR = o.mr, NR = o.nr, mp = ceil_div(m, MR), np = ceil_div(n, NR);
  const ThreadPool::Lease lease = ThreadPool::lease();  // scratch below is sized from its threads
  ThreadPool& pool = lease.pool();

  AlignedBuffer big_pack;
  float* pb = ThreadScratch::floats(ThreadScratch::kGemmPack, np * k * NR, big_pack);
  pool.parallel_for(np, [&](size_t t, int) {
    o.pack_b(k, std::min(NR, n - t * NR), {b.b + t * NR * b.col, b.row, b.col}, pb + t * k * NR);
  });

  // A is read in place when its rows or its columns are contiguous; otherwise it is copied column-major.
  const bool rows_mode = a.depth == 1;
  AlignedBuffer big_copy;
  const float* acols = a.a;
  size_t lda = a.depth;
  if (!rows_mode && a.row != 1) {
    lda = mp * MR;
    float* dst = ThreadScratch::floats(ThreadScratch::kGemmA, k * lda, big_copy);
    pool.parallel_for(k, [&](size_t p, int) {
      for (size_t i = 0; i < lda; ++i) dst[p * lda + i] = i < m ? a.a[i * a.row + p * a.depth] : 0.f;
    });
    acols = dst;
  }
  const bool padded = acols != a.a;  // the copy covers whole tiles, zero-padded

  size_t pm, pn;
  task_shape(mp, np, size_t(lease.threads()), pm, pn);
  const size_t tm = ceil_div(mp, pm), tn = ceil_div(np, pn);
  std::vector<AlignedBuffer> tails(size_t(lease.threads()));
  pool.parallel_for(tm * tn, [&](size_t task, int worker) {
    const size_t i_lo = (task % tm) * pm * MR, i_hi = std::min(m, i_lo + pm * MR);
    const size_t jp_lo = (task / tm) * pn, jp_hi = std::min(np, jp_lo + pn);
    std::vector<const float*> ptrs(MR);
    for (size_t p0 = 0; p0 < k; p0 += kGemmDepthBlock) {
      const size_t kc = std::min(kGemmDepthBlock, k - p0);
      const bool acc = accumulate || p0 > 0;
      // A column-major tail panel would read past row m: give it a zero-padded copy.
      const float* tail = nullptr;
      const size_t tail_i0 = i_lo + (i_hi - i_lo) / MR * MR;
      if (!rows_mode && !padded && tail_i0 < i_hi) {
        AlignedBuffer& buf = tails[size_t(worker)];
        if (!buf.as<float>()) buf.reset(kGemmDepthBlock * MR * sizeof(float));
        float* t = buf.as<float>();
        for (size_t p = 0; p < kc; ++p)
          for (size_t ii = 0; ii < MR; ++ii)
            t[p * MR + ii] = tail_i0 + ii < m ? acols[(p0 + p) * lda + tail_i0 + ii] : 0.f;
        tail = t;
      }
      for (size_t jp = jp_lo; jp < jp_hi; ++jp) {
        const float* panel = pb + jp * k * NR + p0 * NR;
        const size_t j0 = jp * NR, nu = std::min(NR, n - j0);
        for (size_t i0 = i_lo; i0 < i_hi; i0 += MR) {
          const size_t mu = std::min(MR, m - i0);
          float* ct = c + i0 * ldc + j0;
          if (rows_mode) {
            // Rows past m repeat the last one; their results are not stored.
            for (size_t ii = 0; ii < MR; ++ii) ptrs[ii] = a.a + std::min(i0 + ii, m - 1) * a.row + p0;
            o.tile_rows(kc, ptrs.data(), panel, ct, ldc, mu, nu, acc);
          } else if (i0 == tail_i0 && tail) {
            o.tile_cols(kc, tail, MR, panel, ct, ldc, mu, nu, acc);
          } else {
            o.tile_cols(kc, acols + p0 * lda + i0, lda, panel, ct, ldc, mu, nu, acc);
          }
        }
      }
    }
  });
}

}  // namespace quorum::kernels
