// Benchmark-only contenders, measured in the same process as Quorum's kernels so that ratios are fair:
//   FaissFlat     faiss::IndexFlatIP (the Debian build), exact inner-product search
//   FaissSQ8      faiss::IndexScalarQuantizer (QT_8bit, inner product): int8 vectors, exact search over them
//   FaissBinary   faiss::IndexBinaryFlat: exact Hamming search over given sign bits
//   blasTopK      OpenBLAS sgemv (B = 1) or sgemm (B > 1) over row chunks, then a heap per query
//   memReadGBs    memory read bandwidth of this machine (all threads streaming a 1 GiB buffer)
//   fmaPeakGflops FMA peak (independent AVX-512 or AVX2 FMAs, all threads)
//   tileRateGflops the rate of a GEMM register tile on each thread (FMAs fed by loads, as in a real GEMM)
// Not shipped: built by CMake only, for `npm run bench`.
#include <napi.h>
#include <cblas.h>
#include <faiss/IndexBinaryFlat.h>
#include <faiss/IndexFlat.h>
#include <faiss/IndexScalarQuantizer.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "../common/aligned_buffer.h"
#include "../kernels/gemm.h"
#include "../kernels/topk.h"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_corename(void);

namespace {

using quorum::Hit;
using quorum::TopKHeap;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Napi::Float32Array f32(const Napi::Value& v) { return v.As<Napi::Float32Array>(); }

Napi::Object make_result(Napi::Env env, size_t B, size_t k, const std::vector<int64_t>& ids,
                         const std::vector<float>& scores) {
  Napi::Int32Array oi = Napi::Int32Array::New(env, B * k);
  Napi::Float32Array os = Napi::Float32Array::New(env, B * k);
  for (size_t i = 0; i < B * k; ++i) {
    oi[i] = int32_t(ids[i]);
    os[i] = scores[i];
  }
  Napi::Object r = Napi::Object::New(env);
  r.Set("ids", oi);
  r.Set("scores", os);
  return r;
}

// search(queries: Float32Array, k, threads) on a float index.
Napi::Value search_float(faiss::Index& index, const Napi::CallbackInfo& info) {
  auto q = f32(info[0]);
  size_t k = size_t(info[1].As<Napi::Number>().Int32Value());
  omp_set_num_threads(info[2].As<Napi::Number>().Int32Value());
  size_t B = q.ElementLength() / size_t(index.d);
  std::vector<float> scores(B * k);
  std::vector<faiss::Index::idx_t> labels(B * k);
  try {
    index.search(faiss::Index::idx_t(B), q.Data(), faiss::Index::idx_t(k), scores.data(), labels.data());
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
  return make_result(info.Env(), B, k, std::vector<int64_t>(labels.begin(), labels.end()), scores);
}

class FaissFlat : public Napi::ObjectWrap<FaissFlat> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "FaissFlat", {InstanceMethod<&FaissFlat::Search>("search")});
  }
  // new FaissFlat(corpus: Float32Array, dim)
  explicit FaissFlat(const Napi::CallbackInfo& info) : Napi::ObjectWrap<FaissFlat>(info) {
    auto c = f32(info[0]);
    int dim = info[1].As<Napi::Number>().Int32Value();
    index_ = std::make_unique<faiss::IndexFlatIP>(dim);
    index_->add(faiss::Index::idx_t(c.ElementLength() / size_t(dim)), c.Data());
  }
  // search(queries: Float32Array, k, threads)
  Napi::Value Search(const Napi::CallbackInfo& info) { return search_float(*index_, info); }

 private:
  std::unique_ptr<faiss::IndexFlatIP> index_;
};

class FaissSQ8 : public Napi::ObjectWrap<FaissSQ8> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "FaissSQ8", {InstanceMethod<&FaissSQ8::Search>("search"), InstanceMethod<&FaissSQ8::Bytes>("bytes")});
  }
  // new FaissSQ8(corpus: Float32Array, dim): trained (per-dimension min / max) and filled with the corpus
  explicit FaissSQ8(const Napi::CallbackInfo& info) : Napi::ObjectWrap<FaissSQ8>(info) {
    auto c = f32(info[0]);
    int dim = info[1].As<Napi::Number>().Int32Value();
    index_ = std::make_unique<faiss::IndexScalarQuantizer>(dim, faiss::ScalarQuantizer::QT_8bit, faiss::METRIC_INNER_PRODUCT);
    const auto n = faiss::Index::idx_t(c.ElementLength() / size_t(dim));
    index_->train(n, c.Data());
    index_->add(n, c.Data());
  }
  Napi::Value Bytes(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), double(index_->codes.size())); }
  // search(queries: Float32Array, k, threads)
  Napi::Value Search(const Napi::CallbackInfo& info) { return search_float(*index_, info); }

 private:
  std::unique_ptr<faiss::IndexScalarQuantizer> index_;
};

class FaissBinary : public Napi::ObjectWrap<FaissBinary> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "FaissBinary", {InstanceMethod<&FaissBinary::Search>("search")});
  }
  // new FaissBinary(codes: Uint8Array, bits): rows of bits / 8 bytes
  explicit FaissBinary(const Napi::CallbackInfo& info) : Napi::ObjectWrap<FaissBinary>(info) {
    auto c = info[0].As<Napi::Uint8Array>();
    int bits = info[1].As<Napi::Number>().Int32Value();
    index_ = std::make_unique<faiss::IndexBinaryFlat>(bits);
    index_->add(faiss::Index::idx_t(c.ElementLength() / size_t(bits / 8)), c.Data());
  }
  // search(queries: Uint8Array, k, threads) -> ids, scores (minus the Hamming distance)
  Napi::Value Search(const Napi::CallbackInfo& info) {
    auto q = info[0].As<Napi::Uint8Array>();
    size_t k = size_t(info[1].As<Napi::Number>().Int32Value());
    omp_set_num_threads(info[2].As<Napi::Number>().Int32Value());
    size_t B = q.ElementLength() / size_t(index_->code_size);
    std::vector<int32_t> dist(B * k);
    std::vector<faiss::Index::idx_t> labels(B * k);
    index_->search(faiss::Index::idx_t(B), q.Data(), faiss::Index::idx_t(k), dist.data(), labels.data());
    std::vector<float> scores(dist.begin(), dist.end());
    for (float& x : scores) x = -x;
    return make_result(info.Env(), B, k, std::vector<int64_t>(labels.begin(), labels.end()), scores);
  }

 private:
  std::unique_ptr<faiss::IndexBinaryFlat> index_;
};

// blasTopK(corpus: Float32Array, queries: Float32Array, dim, k, threads)
Napi::Value BlasTopK(const Napi::CallbackInfo& info) {
  auto c = f32(info[0]);
  auto q = f32(info[1]);
  size_t D = size_t(info[2].As<Napi::Number>().Int32Value());
  size_t k = size_t(info[3].As<Napi::Number>().Int32Value());
  openblas_set_num_threads(info[4].As<Napi::Number>().Int32Value());
  size_t N = c.ElementLength() / D, B = q.ElementLength() / D;
  const size_t chunk = 16384;
  std::vector<float> S(B * chunk);
  std::vector<Hit> store(B * k);
  std::vector<TopKHeap> heaps;
  for (size_t b = 0; b < B; ++b) heaps.emplace_back(store.data() + b * k, k);
  for (size_t n0 = 0; n0 < N; n0 += chunk) {
    size_t nn = std::min(chunk, N - n0);
    const float* cp = c.Data() + n0 * D;
    if (B == 1)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, int(nn), int(D), 1.f, cp, int(D), q.Data(), 1, 0.f, S.data(), 1);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(B), int(nn), int(D), 1.f, q.Data(), int(D), cp, int(D),
                  0.f, S.data(), int(nn));
    for (size_t b = 0; b < B; ++b)
      for (size_t j = 0; j < nn; ++j) {
        float s = S[b * nn + j];
        if (s >= heaps[b].threshold()) heaps[b].push(Hit{s, int64_t(n0 + j)});
      }
  }
  std::vector<int64_t> ids(B * k, -1);
  std::vector<float> scores(B * k, -INFINITY);
  for (size_t b = 0; b < B; ++b) {
    std::vector<Hit> h(heaps[b].data(), heaps[b].data() + heaps[b].size());
    std::sort(h.begin(), h.end(), quorum::better);
    for (size_t j = 0; j < h.size(); ++j) {
      ids[b * k + j] = h[j].id;
      scores[b * k + j] = h[j].score;
    }
  }
  return make_result(info.Env(), B, k, ids, scores);
}

__attribute__((target("avx512f"))) double sum_avx512(const float* p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

__attribute__((target("avx2"))) double sum_avx2(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  double s = 0;
  for (float x : t) s += x;
  return s;
}

template <class F>
double run_threads(int threads, F&& fn) {
  std::vector<std::thread> ts;
  double t0 = now_s();
  for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { fn(t); });
  for (auto& th : ts) th.join();
  return now_s() - t0;
}

// memReadGBs(threads): best of 5 passes over 1 GiB.
Napi::Value MemReadGBs(const Napi::CallbackInfo& info) {
  int threads = info[0].As<Napi::Number>().Int32Value();
  const size_t n = size_t(1) << 28;  // floats
  quorum::AlignedBuffer buf(n * sizeof(float));
  float* p = buf.as<float>();
  run_threads(threads, [&](int t) {
    size_t a = n * size_t(t) / size_t(threads), b = n * size_t(t + 1) / size_t(threads);
    for (size_t i = a; i < b; ++i) p[i] = float(i & 7);
  });
  bool avx512 = __builtin_cpu_supports("avx512f");
  std::atomic<double> sink{0};
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    double dt = run_threads(threads, [&](int t) {
      size_t a = n * size_t(t) / size_t(threads) / 64 * 64, b = n * size_t(t + 1) / size_t(threads) / 64 * 64;
      double s = avx512 ? sum_avx512(p + a, b - a) : sum_avx2(p + a, b - a);
      sink.store(sink.load() + s);
    });
    best = std::min(best, dt);
  }
  return Napi::Number::New(info.Env(), double(n * sizeof(float)) / best / 1e9);
}

// kChains independent accumulators per thread. AVX-512 uses 24 (of 32 registers): with 12, this VM measured
// 79-100 GFLOP/s per thread at moments when 16 or more chains gave 104-109, so 12 chains did not always cover
// the FMA latency. The chain loop must unroll fully: otherwise GCC keeps the array in memory.
constexpr int kChains512 = 24;
__attribute__((target("avx512f,fma"))) double fma_loop_512(size_t iters) {
  __m512 a[kChains512];
  for (int i = 0; i < kChains512; ++i) a[i] = _mm512_set1_ps(1.f + float(i) * 1e-3f);
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (size_t it = 0; it < iters; ++it)
#pragma GCC unroll 32
    for (int i = 0; i < kChains512; ++i) a[i] = _mm512_fmadd_ps(a[i], m, c);
  __m512 s = a[0];
  for (int i = 1; i < kChains512; ++i) s = _mm512_add_ps(s, a[i]);
  return _mm512_reduce_add_ps(s);
}

constexpr int kChains256 = 12;
__attribute__((target("avx2,fma"))) double fma_loop_256(size_t iters) {
  __m256 a[kChains256];
  for (int i = 0; i < kChains256; ++i) a[i] = _mm256_set1_ps(1.f + float(i) * 1e-3f);
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (size_t it = 0; it < iters; ++it)
    for (int i = 0; i < kChains256; ++i) a[i] = _mm256_fmadd_ps(a[i], m, c);
  __m256 s = a[0];
  for (int i = 1; i < kChains256; ++i) s = _mm256_add_ps(s, a[i]);
  alignas(32) float t[8];
  _mm256_store_ps(t, s);
  return double(t[0]);
}

// fmaPeakGflops(threads, iters = 5e7): best of 3 passes of iters x 12 FMAs per thread (AVX-512: iters / 2 x
// 24). About 0.2 s per pass at the default; a few million iterations (tens of ms) sample the peak of the
// moment, as the kernel bench does beside each InfoNCE round.
Napi::Value FmaPeakGflops(const Napi::CallbackInfo& info) {
  int threads = info[0].As<Napi::Number>().Int32Value();
  bool avx512 = __builtin_cpu_supports("avx512f");
  const size_t iters =
      info.Length() > 1 && info[1].IsNumber() ? size_t(info[1].As<Napi::Number>().Int64Value()) : 50'000'000;
  // AVX-512 runs twice the chains per round, so half the rounds.
  const size_t rounds = avx512 ? iters / 2 : iters;
  const double flops_per_round = avx512 ? kChains512 * 16 * 2.0 : kChains256 * 8 * 2.0;
  std::atomic<double> sink{0};
  double best = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    double dt = run_threads(threads, [&](int) {
      double s = avx512 ? fma_loop_512(rounds) : fma_loop_256(rounds);
      sink.store(sink.load() + s);
    });
    best = std::min(best, dt);
  }
  const double flops = double(threads) * double(rounds) * flops_per_round;
  return Napi::Number::New(info.Env(), flops / best / 1e9);
}

// tileRateGflops(threads, reps = 2e4) -> number[]: GFLOP/s of each thread, all running the library's own GEMM
// register tile (gemm_ops().tile_cols: 12 x 32 with AVX-512, 6 x 16 with AVX2) reps times at once over an A tile
// and a panel small enough for L1 (kTileSteps steps of k: 3 + 8 KiB with AVX-512); about 20 ms at the default.
// The FMA chains above issue no loads; on this VM the two rates part at times by a third or more while the
// chains hold (docs/results/kernels.md#gemm-tile-rate-and-the-vms-slow-phases), so this is the ceiling a GEMM-bound kernel meets at that
// moment. A thread slowed by whatever shares its core shows here as a low entry.
constexpr size_t kTileSteps = 64;
Napi::Value TileRateGflops(const Napi::CallbackInfo& info) {
  const int threads = info[0].As<Napi::Number>().Int32Value();
  const size_t reps = info.Length() > 1 && info[1].IsNumber() ? size_t(info[1].As<Napi::Number>().Int64Value()) : 20'000;
  const quorum::kernels::GemmOps& o = quorum::kernels::gemm_ops();
  const size_t rows = o.mr, cols = o.nr;
  std::vector<double> gflops(size_t(std::max(threads, 0)));
  run_threads(threads, [&](int t) {
    // Per thread, so that no line is shared between cores.
    quorum::AlignedBuffer a(kTileSteps * rows * sizeof(float)), b(kTileSteps * cols * sizeof(float)),
        c(rows * cols * sizeof(float));
    for (size_t i = 0; i < kTileSteps * rows; ++i) a.as<float>()[i] = 1e-3f * float(i % 97);
    for (size_t i = 0; i < kTileSteps * cols; ++i) b.as<float>()[i] = 1e-3f * float(i % 89);
    const double t0 = now_s();
    for (size_t r = 0; r < reps; ++r)
      o.tile_cols(kTileSteps, a.as<float>(), rows, b.as<float>(), c.as<float>(), cols, rows, cols, false);
    const double dt = now_s() - t0;
    gflops[size_t(t)] = double(reps) * double(kTileSteps * rows * cols) * 2.0 / dt / 1e9;
  });
  Napi::Array out = Napi::Array::New(info.Env(), gflops.size());
  for (size_t i = 0; i < gflops.size(); ++i) out.Set(uint32_t(i), Napi::Number::New(info.Env(), gflops[i]));
  return out;
}

Napi::Value BlasCore(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), openblas_get_corename()); }

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("FaissFlat", FaissFlat::Init(env));
  exports.Set("FaissSQ8", FaissSQ8::Init(env));
  exports.Set("FaissBinary", FaissBinary::Init(env));
  exports.Set("blasTopK", Napi::Function::New(env, BlasTopK));
  exports.Set("memReadGBs", Napi::Function::New(env, MemReadGBs));
  exports.Set("fmaPeakGflops", Napi::Function::New(env, FmaPeakGflops));
  exports.Set("tileRateGflops", Napi::Function::New(env, TileRateGflops));
  exports.Set("blasCore", Napi::Function::New(env, BlasCore));
  return exports;
}

}  // namespace

NODE_API_MODULE(quorum_baselines, Init)
