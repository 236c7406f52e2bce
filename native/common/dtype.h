// Element types a Tensor can hold, and the scalar conversions every kernel variant agrees on.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace quorum {

enum class Dtype : int32_t { F32 = 0, BF16 = 1, F16 = 2, I32 = 3, I64 = 4, U8 = 5 };

inline size_t dtype_size(Dtype t) {
  switch (t) {
    case Dtype::F32: case Dtype::I32: return 4;
    case Dtype::BF16: case Dtype::F16: return 2;
    case Dtype::I64: return 8;
    case Dtype::U8: return 1;
  }
  return 0;
}

inline const char* dtype_name(Dtype t) {
  switch (t) {
    case Dtype::F32: return "f32";
    case Dtype::BF16: return "bf16";
    case Dtype::F16: return "f16";
    case Dtype::I32: return "i32";
    case Dtype::I64: return "i64";
    case Dtype::U8: return "u8";
  }
  return "?";
}

inline bool dtype_is_float(Dtype t) { return t == Dtype::F32 || t == Dtype::BF16 || t == Dtype::F16; }

inline float bits_to_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t f32_to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

inline float bf16_to_f32(uint16_t h) { return bits_to_f32(uint32_t(h) << 16); }

// Round to nearest even; NaN stays NaN (quiet) rather than rounding into Inf.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// IEEE binary16, done in integer arithmetic so that the scalar path needs no F16C.
inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    if (man == 0) return bits_to_f32(sign);
    // Subnormal: value = man * 2^-24.
    float v = float(man) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_to_f32(sign | 0x7f800000u | (man << 13));
  return bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

inline uint16_t f32_to_f16(float f) {
  uint32_t u = f32_to_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);             // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);            // overflow (rounds to Inf)
  if (a < 0x38800000u) {                                            // subnormal or zero in f16
    // Add 0.5 (as a float) so that the hardware rounds the mantissa to nearest even for us.
    float v = bits_to_f32(a) + 0.5f;
    return uint16_t(sign | (f32_to_bits(v) - 0x3f000000u));
  }
  uint32_t mant_odd = (a >> 13) & 1u;
  a += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return uint16_t(sign | (a >> 13));
}

}  // namespace quorum
