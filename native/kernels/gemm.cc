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

// A task is a block of row tiles by a range of panels, and packs its own panels (see Plan::run). Splitting
// rows repacks every panel once more, so columns are split first: one panel per task, then rows are halved
// only while there are fewer than about four tasks per thread (the loss's S = Q Pᵀ has 8 panels).
void task_shape(size_t mp, size_t np, size_t threads, size_t& pm, size_t& pn) {
  pm = std::min(mp, kTaskRowTiles);
  pn = std::max<size_t>(1, np / (4 * threads));
  while (ceil_div(mp, pm) * ceil_div(np, pn) < 4 * threads && pm > 1) pm = ceil_div(pm, 2);
}

// One product prepared for the pool: its packed A and its grid of tasks.
//
// A is packed once per product into row tiles (Goto's micro-panels): for the depth block starting at p0, tile
// t holds A(t * mr + i, p0 + p) at apack[p0 * mp * mr + t * kc * mr + p * mr + i], zero past row m. The tile
// then reads one contiguous stream of A whatever A's layout, and tails need no special case. Every task
// reads the whole packed A, so it is shared rather than packed per task.
struct Plan {
  GemmProduct g;
  size_t mp = 0, np = 0, pm = 0, pn = 0, tm = 0;
  size_t tasks = 0;
  AlignedBuffer apack;

  float* a_tile(size_t p0, size_t kc, size_t t, size_t MR) const {
    return apack.as<float>() + p0 * mp * MR + t * kc * MR;
  }
  void pack(const GemmOps& o, size_t t) const;
  void run(const GemmOps& o, size_t task) const;
};

// False when the product has no tasks (empty C, or k = 0, where C is zeroed here unless accumulating).
bool prepare(Plan& pl, const GemmOps& o, size_t threads) {
  const GemmProduct& g = pl.g;
  if (g.m == 0 || g.n == 0) return false;
  if (g.k == 0) {
    if (!g.accumulate)
      for (size_t i = 0; i < g.m; ++i) std::fill(g.c + i * g.ldc, g.c + i * g.ldc + g.n, 0.f);
    return false;
  }
  pl.mp = ceil_div(g.m, o.mr);
  pl.np = ceil_div(g.n, o.nr);
  pl.apack.reset(pl.mp * o.mr * g.k * sizeof(float));
  task_shape(pl.mp, pl.np, threads, pl.pm, pl.pn);
  pl.tm = ceil_div(pl.mp, pl.pm);
  pl.tasks = pl.tm * ceil_div(pl.np, pl.pn);
  return true;
}

void Plan::pack(const GemmOps& o, size_t t) const {
  const size_t MR = o.mr, i0 = t * MR, mu = std::min(MR, g.m - i0);
  for (size_t p0 = 0; p0 < g.k; p0 += kGemmDepthBlock) {
    const size_t kc = std::min(kGemmDepthBlock, g.k - p0);
    o.pack_a(kc, mu, {g.a.a + i0 * g.a.row + p0 * g.a.depth, g.a.row, g.a.depth}, a_tile(p0, kc, t, MR));
  }
}

void Plan::run(const GemmOps& o, size_t task) const {
  const size_t MR = o.mr, NR = o.nr, m = g.m, n = g.n, k = g.k;
  const size_t t_lo = (task % tm) * pm, t_hi = std::min(mp, t_lo + pm);
  const size_t jp_lo = (task / tm) * pn, jp_hi = std::min(np, jp_lo + pn);
  // The task packs each panel's depth block itself, just before its row tiles read it: the block stays in
  // this core's L1 (32 KiB) instead of coming back from a shared buffer packed by another core.
  AlignedBuffer big_panel;
  float* panel = ThreadScratch::floats(ThreadScratch::kGemmPack, kGemmDepthBlock * NR, big_panel);
  for (size_t p0 = 0; p0 < k; p0 += kGemmDepthBlock) {
    const size_t kc = std::min(kGemmDepthBlock, k - p0);
    const bool acc = g.accumulate || p0 > 0;
    for (size_t jp = jp_lo; jp < jp_hi; ++jp) {
      const size_t j0 = jp * NR, nu = std::min(NR, n - j0);
      o.pack_b(kc, nu, {g.b.b + p0 * g.b.row + j0 * g.b.col, g.b.row, g.b.col}, panel);
      for (size_t t = t_lo; t < t_hi; ++t) {
        const size_t i0 = t * MR;
        o.tile_cols(kc, a_tile(p0, kc, t, MR), MR, panel, g.c + i0 * g.ldc + j0, g.ldc, std::min(MR, m - i0), nu, acc);
      }
    }
  }
}

}  // namespace

const GemmOps& gemm_ops() { return pick(gemm_scalar(), gemm_avx2(), gemm_avx512(), gemm_neon()); }

void gemm_batch(const GemmProduct* products, size_t count) {
  const GemmOps& o = gemm_ops();
  const ThreadPool::Lease lease = ThreadPool::lease();
  ThreadPool& pool = lease.pool();
  std::vector<Plan> plans;
  plans.reserve(count);
  size_t packs = 0, tasks = 0;
  for (size_t i = 0; i < count; ++i) {
    Plan pl;
    pl.g = products[i];
    if (!prepare(pl, o, size_t(lease.threads()))) continue;
    packs += pl.mp;
    tasks += pl.tasks;
    plans.push_back(std::move(pl));
  }
  if (plans.empty()) return;
  // Two parallel regions for the whole batch: every product's A tiles, then every product's C tasks.
  const auto locate = [&](size_t index, size_t Plan::*per_plan, auto&& fn) {
    size_t i = 0;
    while (index >= plans[i].*per_plan) index -= plans[i++].*per_plan;
    fn(plans[i], index);
  };
  pool.parallel_for(packs, [&](size_t t, int) {
    locate(t, &Plan::mp, [&](const Plan& pl, size_t x) { pl.pack(o, x); });
  });
  pool.parallel_for(tasks, [&](size_t t, int) {
    locate(t, &Plan::tasks, [&](const Plan& pl, size_t x) { pl.run(o, x); });
  });
}

void gemm(size_t m, size_t n, size_t k, StridedA a, StridedB b, float* c, size_t ldc, bool accumulate) {
  const GemmProduct g{m, n, k, a, b, c, ldc, accumulate};
  gemm_batch(&g, 1);
}

}  // namespace quorum::kernels
