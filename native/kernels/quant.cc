#include "quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

}  // namespace

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

void encode_binary(const void* data, Dtype t, size_t rows, size_t dim, const float* center, uint8_t* codes) {
  check_input(data, t, rows, dim);
  const size_t words = binary_words(dim), rb = coded_row_bytes(Coding::Binary, dim, t);
  ThreadPool::global().parallel_for(ceil_div(rows, size_t(256)), [&](size_t task, int) {
    std::vector<uint64_t> w(words);
    for (size_t r = task * 256; r < std::min(rows, task * 256 + 256); ++r) {
      std::fill(w.begin(), w.end(), 0);
      double l1 = 0;
      uint32_t pop = 0;
      for (size_t d = 0; d < dim; ++d) {
        const float x = load(data, t, r * dim + d) - (center ? center[d] : 0.f);
        l1 += std::fabs(x);
        if (x > 0.f) {
          w[d / 64] |= uint64_t(1) << (d % 64);
          ++pop;
        }
      }
      uint8_t* row = codes + r * rb;
      std::memcpy(row, w.data(), words * 8);
      const BitsRowTail tail{float(l1 / double(dim)), pop};
      std::memcpy(row + words * 8, &tail, sizeof tail);
    }
  });
}

void decode(Coding c, const uint8_t* codes, size_t rows, size_t dim, const float* scale, const float* offset,
            const float* center, float* out) {
  if (c == Coding::Int8) {
    for (size_t r = 0; r < rows; ++r)
      for (size_t d = 0; d < dim; ++d) out[r * dim + d] = offset[d] + scale[d] * float(codes[r * dim + d]);
    return;
  }
  const size_t words = binary_words(dim), rb = coded_row_bytes(Coding::Binary, dim, Dtype::U8);
  for (size_t r = 0; r < rows; ++r) {
    const uint8_t* row = codes + r * rb;
    BitsRowTail tail;
    std::memcpy(&tail, row + words * 8, sizeof tail);
    for (size_t d = 0; d < dim; ++d) {
      const bool bit = (row[d / 8] >> (d % 8)) & 1u;  // little-endian words: bit d of the row is bit d % 8 of byte d / 8
      out[r * dim + d] = (center ? center[d] : 0.f) + (bit ? tail.alpha : -tail.alpha);
    }
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

float prepare_bits(const float* q, size_t dim, const float* center, size_t planes, uint8_t* out) {
  const size_t words = binary_words(dim);
  std::vector<uint64_t> w(planes * words, 0);
  double bias = 0;
  for (size_t d = 0; d < dim; ++d) bias += center ? double(q[d]) * double(center[d]) : 0.0;
  BitsQueryTail t{};
  if (planes == 1) {
    size_t pos = 0;
    for (size_t d = 0; d < dim; ++d)
      if (q[d] > 0.f) {
        w[d / 64] |= uint64_t(1) << (d % 64);
        ++pos;
      }
    t = {-2.f, 4.f, float(2.0 * double(pos) - double(dim)), 0.f};
  } else {
    const float lo = *std::min_element(q, q + dim), hi = *std::max_element(q, q + dim);
    const float levels = float((1u << planes) - 1u);
    const float delta = (hi - lo) / levels;
    double sum_u = 0;
    for (size_t d = 0; d < dim; ++d) {
      const uint32_t u = delta > 0.f ? uint32_t(std::clamp(std::nearbyint((q[d] - lo) / delta), 0.f, levels)) : 0u;
      sum_u += u;
      for (size_t p = 0; p < planes; ++p)
        if ((u >> p) & 1u) w[p * words + d / 64] |= uint64_t(1) << (d % 64);
    }
    t = {2.f * lo, 2.f * delta, float(double(dim) * lo + double(delta) * sum_u), 0.f};
  }
  std::memcpy(out, w.data(), w.size() * 8);
  std::memcpy(out + w.size() * 8, &t, sizeof t);
  return float(bias);
}

}  // namespace quorum::kernels
