#include "quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "../common/error.h"
#include "../common/int_math.h"
#include "../common/thread_pool.h"
#include "dense_search.h"
#include "quant_dot.h"

namespace quorum::kernels {
namespace {

float load(const void* data, Dtype t, size_t i) {
  switch (t) {
    case Dtype::BF16: return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case Dtype::F16: return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
    default: return static_cast<const float*>(data)[i];
  }
}

void check_input(const void* data, Dtype t, size_t rows, size_t dim) {
  if (!dtype_is_float(t))
    throw Error("ERR_DTYPE", std::string("only f32, bf16 and f16 vectors quantize, got ") + dtype_name(t));
  if (rows == 0 || dim == 0) throw Error("ERR_SHAPE", "nothing to quantize: the vectors are empty");
  if (!all_finite(data, rows * dim, t))
    throw Error("ERR_NONFINITE", "the vectors hold NaN or Infinity: they cannot be quantized");
}

uint8_t code_of(float x, float scale, float offset) {
  if (!(scale > 0.f)) return 0;
  const float u = std::nearbyint((x - offset) / scale);
  return uint8_t(std::clamp(u, 0.f, 255.f));
}

// A 32-bit LCG (Numerical Recipes' constants): integer arithmetic, the same draws on every platform.
struct Lcg {
  uint32_t s;
  uint32_t next() { return s = s * 1664525u + 1013904223u; }
  // In [0, n): the high bits (an LCG's low bits are weak).
  uint32_t below(uint32_t n) { return uint32_t((uint64_t(next()) * n) >> 32); }
};

void fwht64(float* a) {
  for (size_t h = 1; h < 64; h *= 2)
    for (size_t i = 0; i < 64; i += 2 * h)
      for (size_t j = i; j < i + h; ++j) {
        const float x = a[j], y = a[j + h];
        a[j] = x + y;
        a[j + h] = x - y;
      }
  for (size_t j = 0; j < 64; ++j) a[j] *= 0.125f;  // 1 / sqrt(64), exact
}

}  // namespace

std::shared_ptr<const Rotation> shared_rotation(size_t dim, uint32_t seed) {
  static std::mutex mutex;
  static std::map<std::pair<size_t, uint32_t>, std::weak_ptr<const Rotation>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  std::weak_ptr<const Rotation>& slot = cache[{dim, seed}];
  if (std::shared_ptr<const Rotation> r = slot.lock()) return r;
  // Expired entries are dropped as new ones come: the map holds only what something still uses, plus a few.
  for (auto it = cache.begin(); it != cache.end();) it = it->second.expired() && &it->second != &slot ? cache.erase(it) : std::next(it);
  auto r = std::make_shared<const Rotation>(dim, seed);
  slot = r;
  return r;
}

Rotation::Rotation(size_t dim_, uint32_t seed) : dim(dim_), dp(binary_words(dim_) * 64) {
  Lcg g{seed};
  sign.resize(kRotationRounds * dp);
  perm.resize(kRotationRounds * dp);
  for (int r = 0; r < kRotationRounds; ++r) {
    float* s = sign.data() + r * dp;
    uint32_t* p = perm.data() + r * dp;
    for (size_t d = 0; d < dp; ++d) s[d] = (g.next() >> 31) ? -1.f : 1.f;
    for (size_t d = 0; d < dp; ++d) p[d] = uint32_t(d);
    for (size_t i = dp - 1; i > 0; --i) std::swap(p[i], p[g.below(uint32_t(i + 1))]);  // Fisher-Yates
  }
}

void Rotation::apply(const float* x, float* out) const {
  std::vector<float> a(dp, 0.f), b(dp);
  std::copy(x, x + dim, a.begin());
  for (int r = 0; r < kRotationRounds; ++r) {
    for (size_t d = 0; d < dp; ++d) a[d] *= sign[r * dp + d];
    for (size_t o = 0; o < dp; o += 64) fwht64(a.data() + o);
    for (size_t d = 0; d < dp; ++d) b[perm[r * dp + d]] = a[d];
    a.swap(b);
  }
  std::copy(a.begin(), a.end(), out);
}

void Rotation::invert(const float* y, float* out) const {
  std::vector<float> a(y, y + dp), b(dp);
  for (int r = kRotationRounds - 1; r >= 0; --r) {
    for (size_t d = 0; d < dp; ++d) b[d] = a[perm[r * dp + d]];
    for (size_t o = 0; o < dp; o += 64) fwht64(b.data() + o);  // a normalized Hadamard is its own inverse
    for (size_t d = 0; d < dp; ++d) a[d] = b[d] * sign[r * dp + d];
  }
  std::copy(a.begin(), a.begin() + long(dim), out);
}

void fit_int8(const void* data, Dtype t, size_t rows, size_t dim, double clip, float* scale, float* offset) {
  check_input(data, t, rows, dim);
  if (!(clip >= 0 && clip < 0.5)) throw Error("ERR_ARG", "clip must be in [0, 0.5)");
  ThreadPool::global().parallel_for(dim, [&](size_t d, int) {
    float lo, hi;
    if (clip == 0) {
      lo = hi = load(data, t, d);
      for (size_t r = 1; r < rows; ++r) {
        const float x = load(data, t, r * dim + d);
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    } else {
      std::vector<float> col(rows);
      for (size_t r = 0; r < rows; ++r) col[r] = load(data, t, r * dim + d);
      const size_t a = size_t(std::floor(clip * double(rows - 1))), b = rows - 1 - a;
      std::nth_element(col.begin(), col.begin() + a, col.end());
      lo = col[a];
      std::nth_element(col.begin(), col.begin() + b, col.end());
      hi = col[b];
    }
    offset[d] = lo;
    scale[d] = (hi - lo) / 255.f;
  });
}

void encode_int8(const void* data, Dtype t, size_t rows, size_t dim, const float* scale, const float* offset,
                 uint8_t* codes) {
  check_input(data, t, rows, dim);
  ThreadPool::global().parallel_for(ceil_div(rows, size_t(256)), [&](size_t task, int) {
    for (size_t r = task * 256; r < std::min(rows, task * 256 + 256); ++r)
      for (size_t d = 0; d < dim; ++d) codes[r * dim + d] = code_of(load(data, t, r * dim + d), scale[d], offset[d]);
  });
}

void fit_center(const void* data, Dtype t, size_t rows, size_t dim, float* center) {
  check_input(data, t, rows, dim);
  ThreadPool::global().parallel_for(dim, [&](size_t d, int) {
    double s = 0;
    for (size_t r = 0; r < rows; ++r) s += load(data, t, r * dim + d);
    center[d] = float(s / double(rows));
  });
}

void encode_binary(const void* data, Dtype t, size_t rows, size_t dim, const float* center, const Rotation* rotation,
                   uint8_t* codes) {
  check_input(data, t, rows, dim);
  const size_t words = binary_words(dim), rb = coded_row_bytes(Coding::Binary, dim, t), dp = words * 64;
  ThreadPool::global().parallel_for(ceil_div(rows, size_t(256)), [&](size_t task, int) {
    std::vector<uint64_t> w(words);
    std::vector<float> x(dp), r(dp);
    for (size_t row = task * 256; row < std::min(rows, task * 256 + 256); ++row) {
      std::fill(x.begin(), x.end(), 0.f);
      for (size_t d = 0; d < dim; ++d) x[d] = load(data, t, row * dim + d) - (center ? center[d] : 0.f);
      if (rotation) rotation->apply(x.data(), r.data());
      const std::vector<float>& v = rotation ? r : x;
      std::fill(w.begin(), w.end(), 0);
      double l1 = 0, l2 = 0;
      uint32_t pop = 0;
      for (size_t d = 0; d < dp; ++d) {
        l1 += std::fabs(v[d]);
        l2 += double(v[d]) * double(v[d]);
        if (v[d] > 0.f) {
          w[d / 64] |= uint64_t(1) << (d % 64);
          ++pop;
        }
      }
      uint8_t* out = codes + row * rb;
      std::memcpy(out, w.data(), words * 8);
      // ||r||^2 / ||r||_1: the scale that makes alpha * (s . q) an unbiased estimate of r . q for a rotated r (RaBitQ's
      // estimator; the least-squares scale ||r||_1 / n shrinks each row by its own factor).
      const BitsRowTail tail{l1 > 0 ? float(l2 / l1) : 0.f, pop};
      std::memcpy(out + words * 8, &tail, sizeof tail);
    }
  });
}

void decode(Coding c, const uint8_t* codes, size_t rows, size_t dim, const float* scale, const float* offset,
            const float* center, const Rotation* rotation, float* out) {
  if (c == Coding::Int8) {
    for (size_t r = 0; r < rows; ++r)
      for (size_t d = 0; d < dim; ++d) out[r * dim + d] = offset[d] + scale[d] * float(codes[r * dim + d]);
    return;
  }
  const size_t words = binary_words(dim), rb = coded_row_bytes(Coding::Binary, dim, Dtype::U8), dp = words * 64;
  std::vector<float> v(dp), x(dp);
  for (size_t r = 0; r < rows; ++r) {
    const uint8_t* row = codes + r * rb;
    BitsRowTail tail;
    std::memcpy(&tail, row + words * 8, sizeof tail);
    for (size_t d = 0; d < dp; ++d) v[d] = (row[d / 8] >> (d % 8)) & 1u ? tail.alpha : -tail.alpha;  // little-endian words
    if (rotation) rotation->invert(v.data(), x.data());
    const float* y = rotation ? x.data() : v.data();
    for (size_t d = 0; d < dim; ++d) out[r * dim + d] = (center ? center[d] : 0.f) + y[d];
  }
}

float prepare_int8_f32(const float* q, size_t dim, const float* scale, const float* offset, float* out) {
  double bias = 0;
  for (size_t d = 0; d < dim; ++d) {
    out[d] = q[d] * scale[d];
    bias += double(q[d]) * double(offset[d]);
  }
  return float(bias);
}

float prepare_int8_s8(const float* q, size_t dim, const float* scale, const float* offset, uint8_t* out) {
  const size_t pad = ceil_div(dim, kS8Pad) * kS8Pad;
  double bias = 0;
  float amax = 0.f;
  for (size_t d = 0; d < dim; ++d) {
    amax = std::max(amax, std::fabs(q[d] * scale[d]));
    bias += double(q[d]) * double(offset[d]);
  }
  const float s = amax / 127.f;
  std::memset(out, 0, pad);
  for (size_t d = 0; d < dim && s > 0.f; ++d)
    out[d] = uint8_t(int8_t(std::clamp(std::nearbyint(q[d] * scale[d] / s), -127.f, 127.f)));
  std::memcpy(out + pad, &s, 4);
  return float(bias);
}

size_t bits_query_bytes(size_t dim, size_t planes) { return planes * binary_words(dim) * 8 + sizeof(BitsQueryTail); }

float prepare_bits(const float* q0, size_t dim, const float* center, const Rotation* rotation, size_t planes, uint8_t* out) {
  const size_t words = binary_words(dim), n = rotation ? words * 64 : dim;
  std::vector<uint64_t> w(planes * words, 0);
  double bias = 0;
  for (size_t d = 0; d < dim; ++d) bias += center ? double(q0[d]) * double(center[d]) : 0.0;
  std::vector<float> rq(rotation ? n : 0);
  if (rotation) rotation->apply(q0, rq.data());
  const float* q = rotation ? rq.data() : q0;
  BitsQueryTail t{};
  if (planes == 1) {
    size_t pos = 0;
    for (size_t d = 0; d < n; ++d)
      if (q[d] > 0.f) {
        w[d / 64] |= uint64_t(1) << (d % 64);
        ++pos;
      }
    t = {-2.f, 4.f, float(2.0 * double(pos) - double(n)), 0.f};
  } else {
    const float lo = *std::min_element(q, q + n), hi = *std::max_element(q, q + n);
    const float levels = float((1u << planes) - 1u);
    const float delta = (hi - lo) / levels;
    double sum_u = 0;
    for (size_t d = 0; d < n; ++d) {
      const uint32_t u = delta > 0.f ? uint32_t(std::clamp(std::nearbyint((q[d] - lo) / delta), 0.f, levels)) : 0u;
      sum_u += u;
      for (size_t p = 0; p < planes; ++p)
        if ((u >> p) & 1u) w[p * words + d / 64] |= uint64_t(1) << (d % 64);
    }
    t = {2.f * lo, 2.f * delta, float(double(n) * lo + double(delta) * sum_u), 0.f};
  }
  std::memcpy(out, w.data(), w.size() * 8);
  std::memcpy(out + w.size() * 8, &t, sizeof t);
  return float(bias);
}

}  // namespace quorum::kernels
