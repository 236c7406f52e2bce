#include "gemm.h"

#include <algorithm>
#include <vector>

#include "../common/aligned_buffer.h"
#include "../common/int_math.h"
#include "../common/thread_pool.h"
#include "dispatch.h"

namespace quorum::kernels {
namespace {

// Rows of C one task covers at most: its C block for one panel (768 x 32 floats) stays in L2 across the
// depth blocks.
constexpr size_t kTaskRowTiles = 64;

// A task is a block of row tiles by a range of panels, and packs its own panels (see gemm below). Splitting
// rows repacks every panel once more, so columns are split first: one panel per task, then rows are halved
// only while there are fewer than about four tasks per thread (the loss's S = Q Pᵀ has 8 panels).
void task_shape(size_t mp, size_t np, size_t threads, size_t& pm, size_t& pn) {
  pm = std::min(mp, kTaskRowTiles);
  pn = std::max<size_t>(1, np / (4 * threads));
  while (ceil_div(mp, pm) * ceil_div(np, pn) < 4 * threads && pm > 1) pm = ceil_div(pm, 2);
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
    // The task packs each panel's depth block itself, just before its row tiles read it: the block stays in
    // this core's L1 (32 KiB) instead of coming back from a shared buffer packed by another core.
    AlignedBuffer big_panel;
    float* panel = ThreadScratch::floats(ThreadScratch::kGemmPack, kGemmDepthBlock * NR, big_panel);
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
        const size_t j0 = jp * NR, nu = std::min(NR, n - j0);
        o.pack_b(kc, nu, {b.b + p0 * b.row + j0 * b.col, b.row, b.col}, panel);
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
