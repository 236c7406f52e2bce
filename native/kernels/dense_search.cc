#include "dense_search.h"

#include <cmath>
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "../common/aligned_buffer.h"
#include "../common/error.h"
#include "../common/int_math.h"
#include "../common/thread_pool.h"
#include "dispatch.h"
#include "gemm.h"
#include "quant_dot.h"
#include "topk.h"

namespace quorum::kernels {
namespace {

constexpr size_t kBlockBytes = 256 * 1024;  // corpus rows per block: about half of a 1 MiB L2
constexpr size_t kQueryChunk = 256;
// From this many queries on (twice as many for 2-byte corpora, which the GEMM widens to f32 first),
// scoreTopK runs as a GEMM (see GemmScan). Measured over 100k x 768 on the development machine: at B = 32
// f32 the GEMM gave 545-580 QPS against 320-400 for the dot tile, at B = 16 it was slower, and for bf16 it
// only drew level at 32.
constexpr size_t kGemmMinQueries = 32;
constexpr size_t kGemmBlockRows = 252;  // a multiple of the 12-row AVX-512 tile
constexpr size_t kMergeQueries = 8;

size_t block_rows(size_t row_bytes) {
  size_t nb = kBlockBytes / std::max<size_t>(row_bytes, 1);
  nb = nb / 4 * 4;
  return std::clamp<size_t>(nb, 16, 4096);
}

// The queries in the layout the corpus's scorer reads: dense_dot's prepared rows (a plain corpus, or f32 queries over
// int8 codes), quant_dot's int8 rows or bit planes. A coded corpus adds a constant per query (quant.h) to its final
// scores: `bias`, empty for a plain corpus.
enum class Scorer { Dense, S8, Bits };

// From this many queries on, int8 corpora are scored with int8 queries where quant_dot says that is faster (VNNI).
// Measured over 100k x 768 (bench/quantized.ts): see docs/results/quantization.md.
constexpr size_t kS8MinQueries = 1;
// An int8 corpus scored with int8 queries runs as a GEMM (quant_dot.h's s8_tile, where the CPU has it) from a whole
// panel of queries on, up to kS8GemmMaxDim dimensions. The 4 x 4 dot tile's reduction is paid once per dim / 64 steps,
// so the GEMM wins where rows are short. Measured on the AVX-512 VNNI development VM (QPS GEMM / dot tile): 13,348 x 100
// at B = 32 61.8k / 26.7k, B = 64 75.7k / 31.1k; 100k x 256 B = 64 7.4k / 6.5k, B = 256 9.2k / 7.4k; 50k x 384 B = 256
// 12.3k / 11.2k; 30k x 512 and 100k x 768 level or the dot tile ahead (768: B = 256 3.4k / 3.7k); B = 16 (half a
// panel) the dot tile ahead at every width.
constexpr size_t kS8GemmMinQueries = kS8TileQueries;
constexpr size_t kS8GemmMaxDim = 384;

struct Prepared {
  AlignedBuffer buf;
  size_t stride = 0;  // bytes
  Scorer scorer = Scorer::Dense;
  size_t planes = 0;
  std::vector<float> bias;
  const uint8_t* row(size_t b) const { return buf.as<uint8_t>() + b * stride; }

  void score(const DenseDotOps& ops, const CorpusMatrix& c, size_t b0, size_t nq, const uint8_t* const* rows,
             size_t nrows, float* out, size_t ldo) const {
    switch (scorer) {
      case Scorer::Dense:
        return ops.score(reinterpret_cast<const float*>(row(b0)), stride / sizeof(float), nq, rows, nrows, c.dim, c.dtype,
                         out, ldo);
      case Scorer::S8: return quant_dot().score_s8(row(b0), stride, nq, rows, nrows, c.dim, out, ldo);
      case Scorer::Bits: return quant_dot().score_bits(row(b0), stride, planes, nq, rows, nrows, binary_words(c.dim), out, ldo);
    }
  }
  // Adds the constants of queries b0 .. b0 + nq to their `m` scores in `s` (row stride ldo).
  void add_bias(size_t b0, float* s, size_t nq, size_t m, size_t ldo) const {
    if (bias.empty()) return;
    for (size_t b = 0; b < nq; ++b)
      for (size_t j = 0; j < m; ++j) s[b * ldo + j] += bias[b0 + b];
  }
};

Scorer scorer_for(const CorpusMatrix& c, size_t nq) {
  if (c.coding == Coding::Binary) return Scorer::Bits;
  if (c.coding != Coding::Int8) return Scorer::Dense;
  if (c.query_bits == 8) return Scorer::S8;
  if (c.query_bits == 32) return Scorer::Dense;
  return quant_dot().fast_s8 && nq >= kS8MinQueries ? Scorer::S8 : Scorer::Dense;
}

Prepared prepare(const DenseDotOps& ops, const QueryMatrix& q, const CorpusMatrix& c) {
  Prepared p;
  p.scorer = scorer_for(c, q.rows);
  const size_t D = q.dim;
  if (c.coding != Coding::Plain) p.bias.resize(q.rows);
  if (p.scorer == Scorer::Dense) {
    const Dtype t = c.coding == Coding::Int8 ? Dtype::U8 : c.dtype;
    p.stride = ops.prepared_stride(D, t) * sizeof(float);
    p.buf.reset(std::max<size_t>(1, q.rows * p.stride));
    std::vector<float> scaled(c.coding == Coding::Int8 ? D : 0);
    for (size_t b = 0; b < q.rows; ++b) {
      const float* qb = q.data + b * D;
      if (c.coding == Coding::Int8) {
        p.bias[b] = prepare_int8_f32(qb, D, c.scale, c.offset, scaled.data());
        qb = scaled.data();
      }
      ops.prepare(qb, D, t, reinterpret_cast<float*>(p.buf.as<uint8_t>() + b * p.stride));
    }
    return p;
  }
  if (p.scorer == Scorer::S8) {
    p.stride = ceil_div(D, kS8Pad) * kS8Pad + kS8Pad;
  } else {
    p.planes = c.query_bits == 1 ? 1 : 4;
    p.stride = ceil_div(bits_query_bytes(D, p.planes), size_t(64)) * 64;
  }
  p.buf.reset(std::max<size_t>(1, q.rows * p.stride));
  for (size_t b = 0; b < q.rows; ++b) {
    uint8_t* out = p.buf.as<uint8_t>() + b * p.stride;
    p.bias[b] = p.scorer == Scorer::S8 ? prepare_int8_s8(q.data + b * D, D, c.scale, c.offset, out)
                                      : prepare_bits(q.data + b * D, D, c.center, c.rotation.get(), p.planes, out);
  }
  return p;
}

// A grid of (query chunk x corpus block) tasks, the chunk index varying fastest so that workers share the
// corpus block that is in cache.
struct Grid {
  size_t nq, nn, qchunk, nblock;
  size_t tasks() const { return ceil_div(nq, qchunk) * ceil_div(nn, nblock); }
  void at(size_t t, size_t& b0, size_t& b1, size_t& n0, size_t& n1) const {
    size_t nqc = ceil_div(nq, qchunk);
    b0 = (t % nqc) * qchunk;
    b1 = std::min(nq, b0 + qchunk);
    n0 = (t / nqc) * nblock;
    n1 = std::min(nn, n0 + nblock);
  }
};

// The corpus rows a search reads: all of them, or an ascending list (a filter's allowed rows); position j of the scan
// is row row(j), so the heaps hold true row ids and ties still go to the lower row.
struct RowSubset {
  const int32_t* rows;
  size_t n;
  size_t count(const CorpusMatrix& c) const { return rows ? n : c.rows; }
  size_t row(size_t j) const { return rows ? size_t(rows[j]) : j; }
};

// One search's candidate lists: `lists` lists of one TopKBuffer per query. A list is a worker's (over the blocks that
// worker took) or, for a GemmScan with one task per query group, the scan's only one; merge_topk joins a query's
// lists at the end.
struct Candidates {
  size_t B = 0;
  std::vector<uint64_t> store;
  std::vector<TopKBuffer> buf;
  void reset(size_t lists, size_t batch, size_t kk) {
    B = batch;
    const size_t slots = TopKBuffer::slots(kk);
    store.resize(lists * B * slots);
    buf.resize(lists * B);
    for (size_t i = 0; i < lists * B; ++i) buf[i] = TopKBuffer(store.data() + i * slots, kk);
  }
  size_t lists() const { return B == 0 ? 0 : buf.size() / B; }
  TopKBuffer& at(size_t list, size_t b) { return buf[list * B + b]; }
  const TopKBuffer& at(size_t list, size_t b) const { return buf[list * B + b]; }
};

// A worker's scratch, shared by every search of a call (sized for the largest).
struct Scratch {
  AlignedBuffer S;                  // a block of scores
  std::vector<const uint8_t*> rows;  // DotScan: the block's row pointers
  std::vector<uint32_t> idx;         // DotScan: select_ge's hits
  std::vector<float> thr;            // GemmScan: each query's threshold, refreshed after every push
  std::vector<const float*> rowp;    // GemmScan: the block's rows (in place, or widened)
  std::vector<const float*> ptrs;    // GemmScan: one register tile's rows
  AlignedBuffer wide;                // GemmScan: a block of bf16 / f16 corpus rows widened to f32
  uint32_t hits[32];                 // GemmScan: one register tile's hits, a word per row (mr <= 32)
};

// Few queries: the dot-product tile reads each corpus row once for up to four queries, and the search is
// bound by memory bandwidth, not arithmetic. A grid of small tasks, each worker keeping its own lists (a corpus
// block is a few hundred rows, too little to give each its own list).
struct DotScan {
  const QueryMatrix* q;
  const CorpusMatrix* c;
  RowSubset sub;
  Candidates* cand;
  Prepared qp;
  Grid grid;
  size_t row_bytes;

  DotScan(const DenseDotOps& ops, const QueryMatrix& q_, const CorpusMatrix& c_, const RowSubset& s, Candidates& cd)
      : q(&q_), c(&c_), sub(s), cand(&cd), qp(prepare(ops, q_, c_)), row_bytes(c_.row_bytes()) {
    // With several queries a coded corpus's blocks are sized as if its rows were f32: a block's scores (queries x rows
    // floats) must stay in L2 too, and int8 rows would make blocks 4x as long (measured: DPR-MUF at B = 64 over int8
    // passages 0.80x -> 0.84x of f32, int8 B = 256 over 100k x 768 2.42x -> 2.82x).
    const bool as_f32 = c_.coding != Coding::Plain && q_.rows >= 4;  // one or a few queries: their scores are few
    grid = Grid{q_.rows, sub.count(c_), std::min(q_.rows, kQueryChunk), block_rows(as_f32 ? c_.dim * sizeof(float) : row_bytes)};
  }
  size_t tasks() const { return grid.tasks(); }
  size_t scratch_floats() const { return grid.qchunk * grid.nblock; }
  size_t scratch_rows() const { return grid.nblock; }

  void run(const DenseDotOps& ops, size_t task, int wi, Scratch& w) const {
    size_t b0, b1, n0, n1;
    grid.at(task, b0, b1, n0, n1);
    const size_t nn = n1 - n0;
    for (size_t j = 0; j < nn; ++j) w.rows[j] = c->data + sub.row(n0 + j) * row_bytes;
    float* S = w.S.as<float>();
    qp.score(ops, *c, b0, b1 - b0, w.rows.data(), nn, S, grid.nblock);
    for (size_t b = b0; b < b1; ++b) {
      TopKBuffer& heap = cand->at(size_t(wi), b);
      const float* s = S + (b - b0) * grid.nblock;
      const float thr = heap.threshold();
      const size_t m = ops.select_ge(s, nn, thr, w.idx.data());
      for (size_t t = 0; t < m; ++t) heap.push(s[w.idx[t]], int32_t(sub.row(n0 + w.idx[t])));
    }
  }
};

// Many queries: the search is bound by arithmetic, so it runs as a GEMM, corpus rows x packed queries, one
// block of rows at a time (scores [rows, queries] stay in L2). Each register tile compares its scores with the
// queries' thresholds before it leaves registers (GemmOps::tile_rows_hits) and its hits are pushed straight away: a
// pass of select_ge over each row of the block after it had cost about 5 % of a B = 64 DPR-MUF search, and its
// thresholds were a block staler. Who keeps the candidates depends on the scan's share of the call's work:
// - a small share (each of MUF's 15 scans at B = 64): one task per group of queries scans every row into one list
//   per query. T lists over N / T rows each push about T k ln(N / (T k)) candidates where one list pushes
//   k ln(N / k), and merging T lists reads T times the keys: 46.5 -> 35.4 ms of CPU a B = 64 MUF batch
//   (docs/results/serving.md#dpr-muf);
// - a large share (a lone scan): tasks are single blocks that the threads take as they come, each thread keeping its
//   own lists. Splitting the rows into T fixed ranges instead kept the lists as few but left a slowed thread's range
//   to finish alone: a lone B = 64 scan of 50,000 rows took 7.3-7.8 ms against 5.6-6.1 on 2 vCPUs.
//
// An int8 corpus with int8 queries (s8) runs the same scan with quant_dot's s8_tile: the queries packed once into
// panels of 32, the rows' codes read in place, no depth blocks (the sums are exact int32). Its lists hold scores
// without the queries' constants (Prepared::bias), added at the merge as a DotScan's.
struct GemmScan {
  const QueryMatrix* q;
  const CorpusMatrix* c;
  RowSubset sub;
  Candidates* cand;
  bool s8;
  size_t mr, nr;         // the register tile
  AlignedBuffer packed;  // f32: the queries as B panels, B(p, j) = Q[j, p]; s8: pack_s8_panel's panels
  std::vector<float> scales;  // s8: the queries' scales, panel by panel
  std::vector<float> bias;    // s8: the queries' constants
  size_t group;          // queries a task: all of them up to kQueryChunk, else a multiple of NR
  size_t groups;
  bool per_worker = false;  // tasks of one block, a list per worker; else a task per group over every row

  GemmScan(const GemmOps& g, const QueryMatrix& q_, const CorpusMatrix& c_, const RowSubset& s, Candidates& cd)
      : q(&q_), c(&c_), sub(s), cand(&cd), s8(c_.coding == Coding::Int8) {
    const size_t B = q_.rows, D = q_.dim;
    mr = s8 ? kS8TileRows : g.mr;
    nr = s8 ? kS8TileQueries : g.nr;
    const size_t panels = ceil_div(B, nr);
    if (s8) {
      Prepared qp = prepare(dense_dot(), q_, c_);
      bias = std::move(qp.bias);
      packed.reset(panels * s8_panel_bytes(D));
      scales.resize(panels * nr);
      for (size_t t = 0; t < panels; ++t)
        pack_s8_panel(qp.row(t * nr), qp.stride, std::min(nr, B - t * nr), D, packed.as<int8_t>() + t * s8_panel_bytes(D),
                      scales.data() + t * nr);
    } else {
      packed.reset(panels * D * nr * sizeof(float));
      for (size_t t = 0; t < panels; ++t) g.pack_b(D, std::min(nr, B - t * nr), {q_.data + t * nr * D, 1, D}, packed.as<float>() + t * D * nr);
    }
    group = std::min(B, kQueryChunk / nr * nr);
    groups = ceil_div(B, group);
  }
  size_t blocks() const { return per_worker ? ceil_div(sub.count(*c), kGemmBlockRows) : 1; }
  size_t lists(size_t threads) const { return per_worker ? threads : 1; }
  // Multiply-adds: rows times queries rounded up to whole panels times the depth, of one task or of the whole scan.
  size_t task_work() const {
    return (per_worker ? std::min(kGemmBlockRows, sub.count(*c)) : sub.count(*c)) * ceil_div(group, nr) * nr * c->dim;
  }
  size_t total_work() const { return sub.count(*c) * ceil_div(group, nr) * nr * c->dim * groups; }
  size_t tasks() const { return groups * blocks(); }  // the group varies fastest: workers share a block in cache
  size_t scratch_floats() const { return kGemmBlockRows * group; }

  // A register tile's hits (rows from scan position `pos`): a push moves only its query's threshold, so the tile's
  // other hits stay valid while they are pushed.
  void push_hits(const float* St, size_t ldS, size_t mu, size_t pos, const uint32_t* hits, TopKBuffer* heaps, float* thr) const {
    for (size_t i = 0; i < mu; ++i) {
      const int32_t id = int32_t(sub.row(pos + i));
      const float* s = St + i * ldS;
      for (uint32_t bits = hits[i]; bits != 0; bits &= bits - 1) {
        const size_t j = size_t(__builtin_ctz(bits));
        thr[j] = heaps[j].push(s[j], id);
      }
    }
  }

  // What one task covers: the candidate list it pushes to, queries [b0, b1) and scan positions [r0, r1).
  struct Span {
    size_t list, b0, b1, r0, r1;
  };
  // Task `task` of worker `wi`, with its queries' thresholds loaded into w.thr.
  Span span(size_t task, int wi, Scratch& w) const {
    const size_t N = sub.count(*c);
    Span t;
    t.list = per_worker ? size_t(wi) : 0;
    t.b0 = (task % groups) * group;
    t.b1 = std::min(q->rows, t.b0 + group);
    t.r0 = per_worker ? (task / groups) * kGemmBlockRows : 0;
    t.r1 = per_worker ? std::min(N, t.r0 + kGemmBlockRows) : N;
    for (size_t b = t.b0; b < t.b1; ++b) w.thr[b - t.b0] = cand->at(t.list, b).threshold();
    return t;
  }

  void run(size_t task, int wi, Scratch& w) const {
    if (s8) return run_s8(task, wi, w);
    const GemmOps& g = gemm_ops();
    const size_t D = c->dim, MR = mr, NR = nr;
    const size_t esize = dtype_size(c->dtype), row_bytes = D * esize;
    const auto [list, b0, b1, r0, r1] = span(task, wi, w);
    float* S = w.S.as<float>();
    const size_t ldS = group;
    const float* pq = packed.as<float>();
    for (size_t n0 = r0; n0 < r1; n0 += kGemmBlockRows) {
      const size_t n1 = std::min(r1, n0 + kGemmBlockRows), nn = n1 - n0;
      for (size_t p0 = 0; p0 < D; p0 += kGemmDepthBlock) {
        const size_t kc = std::min(kGemmDepthBlock, D - p0);
        for (size_t r = 0; r < nn; ++r) {
          const uint8_t* src = c->data + sub.row(n0 + r) * row_bytes;
          if (c->dtype == Dtype::F32) {
            w.rowp[r] = reinterpret_cast<const float*>(src) + p0;
          } else {
            float* dst = w.wide.as<float>() + r * kGemmDepthBlock;
            g.widen(src + p0 * esize, c->dtype, kc, dst);
            w.rowp[r] = dst;
          }
        }
        const bool last = p0 + kc == D;
        // One panel of queries (32 KiB) stays in L1 while every row tile of the block streams past it.
        for (size_t j0 = b0; j0 < b1; j0 += NR) {
          const float* panel = pq + (j0 / NR) * D * NR + p0 * NR;
          const size_t nu = std::min(NR, b1 - j0);
          for (size_t t0 = 0; t0 < nn; t0 += MR) {
            const size_t mu = std::min(MR, nn - t0);
            for (size_t i = 0; i < MR; ++i) w.ptrs[i] = w.rowp[t0 + std::min(i, mu - 1)];  // repeats are not stored
            float* St = S + t0 * ldS + (j0 - b0);
            if (!last) {
              g.tile_rows(kc, w.ptrs.data(), panel, St, ldS, mu, nu, p0 > 0);
              continue;
            }
            // The tile compares its scores with the thresholds while they are in registers.
            float* thr = w.thr.data() + (j0 - b0);
            if (g.tile_rows_hits(kc, w.ptrs.data(), panel, St, ldS, mu, nu, p0 > 0, thr, w.hits))
              push_hits(St, ldS, mu, n0 + t0, w.hits, &cand->at(list, j0), thr);
          }
        }
      }
    }
  }

  void run_s8(size_t task, int wi, Scratch& w) const {
    const QuantDotOps& qd = quant_dot();
    const size_t D = c->dim, row_bytes = c->row_bytes();
    const auto [list, b0, b1, r0, r1] = span(task, wi, w);
    float* S = w.S.as<float>();
    const size_t ldS = group, panel_bytes = s8_panel_bytes(D);
    for (size_t n0 = r0; n0 < r1; n0 += kGemmBlockRows) {
      const size_t nn = std::min(r1, n0 + kGemmBlockRows) - n0;
      for (size_t r = 0; r < nn; ++r) w.rows[r] = c->data + sub.row(n0 + r) * row_bytes;
      // One panel (32 x D bytes) stays in L1 while the block's rows stream past it from L2.
      for (size_t j0 = b0; j0 < b1; j0 += nr) {
        const int8_t* panel = packed.as<int8_t>() + (j0 / nr) * panel_bytes;
        const size_t nu = std::min(nr, b1 - j0);
        float* thr = w.thr.data() + (j0 - b0);
        TopKBuffer* heaps = &cand->at(list, j0);
        for (size_t t0 = 0; t0 < nn; t0 += mr) {
          const size_t mu = std::min(mr, nn - t0);
          const uint8_t* ptrs[kS8TileRows];
          for (size_t i = 0; i < mr; ++i) ptrs[i] = w.rows[t0 + std::min(i, mu - 1)];  // repeats are not stored
          float* St = S + t0 * ldS + (j0 - b0);
          if (qd.s8_tile(D, ptrs, panel, scales.data() + j0, St, ldS, mu, nu, thr, w.hits)) push_hits(St, ldS, mu, n0 + t0, w.hits, heaps, thr);
        }
      }
    }
  }
};

bool many_queries(const TopKSearch& x) {
  if (x.c.coding == Coding::Int8)
    return x.q.rows >= kS8GemmMinQueries && x.c.dim <= kS8GemmMaxDim && quant_dot().s8_tile &&
           scorer_for(x.c, x.q.rows) == Scorer::S8;
  if (x.c.coding != Coding::Plain) return false;  // the binary scorer reads its own row format
  return x.q.rows >= (x.c.dtype == Dtype::F32 ? kGemmMinQueries : 2 * kGemmMinQueries); }

}  // namespace

void score_topk_many(const TopKSearch* searches, size_t n) {
  for (size_t s = 0; s < n; ++s)  // ids are int32 (rank_key holds them in 32 bits)
    need(searches[s].c.rows <= size_t(INT32_MAX), "ERR_RANGE", "a corpus of more than 2^31 - 1 rows: search it in shards");
  const ThreadPool::Lease lease = ThreadPool::lease();  // per-worker scratch below is sized from its threads
  ThreadPool& pool = lease.pool();
  const size_t T = size_t(lease.threads());
  const DenseDotOps& ops = dense_dot();
  const GemmOps& g = gemm_ops();
  std::vector<Candidates> cand(n);
  std::vector<DotScan> dots;
  std::vector<GemmScan> gemms;
  dots.reserve(n);
  gemms.reserve(n);
  std::vector<size_t> gemm_of(n, SIZE_MAX);
  std::vector<size_t> kk(n);  // a list never holds more than the rows searched
  std::vector<std::vector<float>> bias_of(n);  // a coded corpus's per-query constants (quant.h)
  for (size_t s = 0; s < n; ++s) {
    const TopKSearch& x = searches[s];
    const RowSubset sub{x.rows, x.n_rows};
    kk[s] = std::min(x.k, sub.count(x.c));
    if (x.q.rows == 0 || kk[s] == 0) continue;
    if (many_queries(x)) {
      gemm_of[s] = gemms.size();
      gemms.emplace_back(g, x.q, x.c, sub, cand[s]);
      bias_of[s] = gemms.back().bias;
    } else {
      dots.emplace_back(ops, x.q, x.c, sub, cand[s]);
      bias_of[s] = dots.back().qp.bias;
    }
  }
  // A scan with more than 1/T of all the GEMM work could not keep the threads busy as one task per group: it runs as
  // blocks with per-worker lists (a lone scan), the others as one task per group (each of MUF's 15 scans at B = 64).
  size_t total = 0;
  for (const GemmScan& x : gemms) total += x.total_work();
  for (GemmScan& x : gemms) x.per_worker = T > 1 && x.total_work() * T > total;
  for (size_t s = 0; s < n; ++s) cand[s].reset(gemm_of[s] != SIZE_MAX ? gemms[gemm_of[s]].lists(T) : T, searches[s].q.rows, kk[s]);

  // Every task of every scan in one region: GEMM tasks largest first (so that the last ones to start are short),
  // then the dot scans' grids.
  struct Task {
    size_t work, scan, task;
  };
  std::vector<Task> tasks;
  size_t floats = 0, rows = 0, group = 0;
  for (size_t i = 0; i < gemms.size(); ++i) {
    for (size_t t = 0; t < gemms[i].tasks(); ++t) tasks.push_back({gemms[i].task_work(), i, t});
    floats = std::max(floats, gemms[i].scratch_floats());
    group = std::max(group, gemms[i].group);
    if (gemms[i].s8) rows = std::max(rows, kGemmBlockRows);
  }
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.work > b.work; });
  const size_t n_gemm = tasks.size();
  for (size_t i = 0; i < dots.size(); ++i) {
    for (size_t t = 0; t < dots[i].tasks(); ++t) tasks.push_back({0, i, t});
    floats = std::max(floats, dots[i].scratch_floats());
    rows = std::max(rows, dots[i].scratch_rows());
  }
  std::vector<Scratch> scratch(T);
  const bool widen = std::any_of(gemms.begin(), gemms.end(), [](const GemmScan& x) { return !x.s8 && x.c->dtype != Dtype::F32; });
  for (Scratch& w : scratch) {
    w.S.reset(std::max<size_t>(floats, 1) * sizeof(float));
    w.rows.resize(rows);
    w.idx.resize(rows + 16);  // select_ge's contract
    w.thr.resize(group);
    w.rowp.resize(gemms.empty() ? 0 : kGemmBlockRows);
    w.ptrs.resize(g.mr);
    if (widen) w.wide.reset(kGemmBlockRows * kGemmDepthBlock * sizeof(float));
  }
  if (!tasks.empty())
    pool.parallel_for(tasks.size(), [&](size_t i, int wi) {
      const Task& t = tasks[i];
      if (i < n_gemm) gemms[t.scan].run(t.task, wi, scratch[size_t(wi)]);
      else dots[t.scan].run(ops, t.task, wi, scratch[size_t(wi)]);
    });

  // Each search's lists merged, kMergeQueries questions a task (every thread takes part: a query's lists hold a few
  // hundred keys to select from and sort), every search's tasks in one region.
  std::vector<size_t> merge_offsets(n + 1, 0);
  for (size_t s = 0; s < n; ++s) merge_offsets[s + 1] = merge_offsets[s] + ceil_div(searches[s].q.rows, kMergeQueries);
  pool.parallel_for(merge_offsets[n], [&](size_t task, int) {
    const size_t s = size_t(std::upper_bound(merge_offsets.begin(), merge_offsets.end(), task) - merge_offsets.begin()) - 1;
    const TopKSearch& x = searches[s];
    const size_t t0 = (task - merge_offsets[s]) * kMergeQueries;
    const size_t L = cand[s].lists();
    std::vector<const uint64_t*> lists(L);
    std::vector<size_t> sizes(L);
    std::vector<float> floors(L);
    for (size_t b = t0; b < std::min(x.q.rows, t0 + kMergeQueries); ++b) {
      for (size_t l = 0; l < L; ++l) {
        lists[l] = cand[s].at(l, b).data();
        sizes[l] = cand[s].at(l, b).size();
        floors[l] = cand[s].at(l, b).threshold();
      }
      merge_topk(lists.data(), sizes.data(), floors.data(), L, x.k, x.ids + b * x.k, x.scores + b * x.k, x.sorted);
    }
    if (const std::vector<float>& bias = bias_of[s]; !bias.empty())
      for (size_t b = t0; b < std::min(x.q.rows, t0 + kMergeQueries); ++b)
        for (size_t j = 0; j < x.k; ++j)
          if (x.ids[b * x.k + j] >= 0) x.scores[b * x.k + j] += bias[b];
  });
}

void score_topk(const QueryMatrix& q, const CorpusMatrix& c, size_t k, int32_t* ids, float* scores, const int32_t* rows,
                size_t n_rows) {
  const TopKSearch one{q, c, k, ids, scores, rows, n_rows};
  score_topk_many(&one, 1);
}

void score_matrix(const QueryMatrix& q, const CorpusMatrix& c, float* out) {
  const size_t B = q.rows, N = c.rows;
  if (B == 0 || N == 0) return;
  const DenseDotOps& ops = dense_dot();
  const ThreadPool::Lease lease = ThreadPool::lease();  // per-worker scratch below is sized from its threads
  ThreadPool& pool = lease.pool();
  const size_t row_bytes = c.row_bytes();
  const Prepared qp = prepare(ops, q, c);
  // Small corpora (the contrastive loss's in-batch passages) still get a few blocks per thread, so that no
  // thread waits on another's last block.
  const size_t per_thread = (N + 4 * size_t(lease.threads()) - 1) / (4 * size_t(lease.threads()));
  const size_t nblock = std::min(block_rows(row_bytes), std::max<size_t>(16, (per_thread + 3) / 4 * 4));
  const Grid grid{B, N, std::min(B, kQueryChunk), nblock};
  std::vector<std::vector<const uint8_t*>> rows(size_t(lease.threads()), std::vector<const uint8_t*>(grid.nblock));
  pool.parallel_for(grid.tasks(), [&](size_t task, int wi) {
    size_t b0, b1, n0, n1;
    grid.at(task, b0, b1, n0, n1);
    auto& r = rows[size_t(wi)];
    for (size_t j = 0; j < n1 - n0; ++j) r[j] = c.data + (n0 + j) * row_bytes;
    qp.score(ops, c, b0, b1 - b0, r.data(), n1 - n0, out + b0 * N + n0, N);
    qp.add_bias(b0, out + b0 * N + n0, b1 - b0, n1 - n0, N);
  });
}

void gather_scores(const QueryMatrix& q, const CorpusMatrix& c, const void* ids, bool ids64, size_t m, float* out) {
  const size_t B = q.rows;
  auto id_at = [&](size_t i) -> int64_t {
    return ids64 ? static_cast<const int64_t*>(ids)[i] : int64_t(static_cast<const int32_t*>(ids)[i]);
  };
  for (size_t i = 0; i < B * m; ++i) {
    int64_t id = id_at(i);
    if (id < 0 || uint64_t(id) >= c.rows)
      throw Error("ERR_RANGE", "id " + std::to_string(id) + " at [" + std::to_string(i / m) + ", " +
                                   std::to_string(i % m) + "] is outside the corpus (" + std::to_string(c.rows) +
                                   " rows)");
  }
  if (B == 0 || m == 0) return;
  const DenseDotOps& ops = dense_dot();
  const ThreadPool::Lease lease = ThreadPool::lease();  // per-worker scratch below is sized from its threads
  ThreadPool& pool = lease.pool();
  const size_t row_bytes = c.row_bytes();
  const Prepared qp = prepare(ops, q, c);
  std::vector<std::vector<const uint8_t*>> rows(size_t(lease.threads()), std::vector<const uint8_t*>(m));
  const size_t per_task = std::max<size_t>(1, 4096 / m);
  pool.parallel_for(ceil_div(B, per_task), [&](size_t task, int wi) {
    auto& r = rows[size_t(wi)];
    for (size_t b = task * per_task; b < std::min(B, (task + 1) * per_task); ++b) {
      for (size_t j = 0; j < m; ++j) r[j] = c.data + size_t(id_at(b * m + j)) * row_bytes;
      qp.score(ops, c, b, 1, r.data(), m, out + b * m, m);
      qp.add_bias(b, out + b * m, 1, m, m);
    }
  });
}

void score_topk_rescored(const QueryMatrix& q, const CorpusMatrix& c, const CorpusMatrix& full, size_t m, size_t k, int32_t* ids,
                         float* scores, const int32_t* rows, size_t n_rows) {
  std::vector<int32_t> cand(q.rows * m);
  std::vector<float> approx(q.rows * m);
  score_topk(q, c, m, cand.data(), approx.data(), rows, n_rows);
  rescore_topk(q, full, cand.data(), m, k, ids, scores);
}

void rescore_topk(const QueryMatrix& q, const CorpusMatrix& full, const int32_t* cand, size_t m, size_t k, int32_t* ids,
                  float* scores) {
  const size_t B = q.rows;
  // The candidates as dense ids (-1 slots point at row 0 and are dropped after scoring).
  std::vector<int32_t> dense(B * m);
  for (size_t i = 0; i < B * m; ++i) {
    need(cand[i] < 0 || size_t(cand[i]) < full.rows, "ERR_RANGE",
         "candidate " + std::to_string(cand[i]) + " is outside the full vectors (" + std::to_string(full.rows) + " rows)");
    dense[i] = cand[i] < 0 ? 0 : cand[i];
  }
  std::vector<float> s(B * m);
  if (full.rows > 0) gather_scores(q, full, dense.data(), false, m, s.data());
  for (size_t b = 0; b < B; ++b) {
    std::vector<std::pair<float, int32_t>> hits;
    hits.reserve(m);
    for (size_t j = 0; j < m; ++j) {
      const int32_t id = cand[b * m + j];
      if (id >= 0 && !std::isnan(s[b * m + j])) hits.emplace_back(s[b * m + j], id);
    }
    // A candidate listed twice (never from score_topk) counts once.
    std::sort(hits.begin(), hits.end(), [](const auto& a, const auto& c) { return a.first > c.first || (a.first == c.first && a.second < c.second); });
    hits.erase(std::unique(hits.begin(), hits.end(), [](const auto& a, const auto& c) { return a.second == c.second; }), hits.end());
    for (size_t j = 0; j < k; ++j) {
      ids[b * k + j] = j < hits.size() ? hits[j].second : -1;
      scores[b * k + j] = j < hits.size() ? hits[j].first : -INFINITY;
    }
  }
}

bool all_finite(const void* data, size_t count, Dtype t) {
  // Integer tests on the exponent field: branch-free, so the compiler vectorizes them.
  uint32_t bad = 0;
  if (t == Dtype::F32) {
    const uint32_t* p = static_cast<const uint32_t*>(data);
    for (size_t i = 0; i < count; ++i) bad |= uint32_t((p[i] & 0x7f800000u) == 0x7f800000u);
  } else if (t == Dtype::BF16 || t == Dtype::F16) {
    const uint16_t mask = t == Dtype::BF16 ? 0x7f80 : 0x7c00;
    const uint16_t* p = static_cast<const uint16_t*>(data);
    for (size_t i = 0; i < count; ++i) bad |= uint32_t((p[i] & mask) == mask);
  }
  return bad == 0;
}

void convert(const void* src, Dtype from, void* dst, Dtype to, size_t count) {
  auto is_conv = [](Dtype t) { return t == Dtype::F32 || t == Dtype::BF16 || t == Dtype::F16; };
  if (!is_conv(from) || !is_conv(to))
    throw Error("ERR_DTYPE", std::string("cannot convert ") + dtype_name(from) + " to " + dtype_name(to) +
                                 ": only f32, bf16 and f16 convert");
  constexpr size_t chunk = 1 << 16;
  ThreadPool::global().parallel_for(ceil_div(count, chunk), [&](size_t task, int) {
    size_t i0 = task * chunk, i1 = std::min(count, i0 + chunk);
    auto load = [&](size_t i) -> float {
      switch (from) {
        case Dtype::BF16: return bf16_to_f32(static_cast<const uint16_t*>(src)[i]);
        case Dtype::F16: return f16_to_f32(static_cast<const uint16_t*>(src)[i]);
        default: return static_cast<const float*>(src)[i];
      }
    };
    for (size_t i = i0; i < i1; ++i) {
      float v = load(i);
      switch (to) {
        case Dtype::BF16: static_cast<uint16_t*>(dst)[i] = f32_to_bf16(v); break;
        case Dtype::F16: static_cast<uint16_t*>(dst)[i] = f32_to_f16(v); break;
        default: static_cast<float*>(dst)[i] = v; break;
      }
    }
  });
}

}  // namespace quorum::kernels
