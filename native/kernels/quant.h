// Quantized corpora (docs/methods/quantization.md): fitting and encoding int8 and binary codes, and preparing queries
// for the scorers of dense_dot.h (f32 queries over u8 codes) and quant_dot.h (int8 queries, bit planes).
//
// int8: x_d ~ offset_d + scale_d * u_d, u_d in 0..255 stored as bytes. A query q scores u through q'_d = q_d * scale_d
// plus a constant q . offset, which does not change a query's ranking and is added to the final scores only.
// binary: r = R (x - center) (R the Rotation below, or none; center 0: plain signs), b_d = [r_d > 0], and
// q . (x - center) ~ alpha * (R q) . (2b - 1) with alpha = ||r||^2 / ||r||_1 (RaBitQ's unbiased estimator), stored after
// the bits with the row's popcount (quant_dot.h). q . center is likewise a per-query constant.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "../common/dtype.h"

namespace quorum::kernels {

enum class Coding : int32_t { Plain = 0, Int8 = 1, Binary = 2 };

inline size_t binary_words(size_t dim) { return (dim + 63) / 64; }
// Bytes of one stored row of a coded corpus.
inline size_t coded_row_bytes(Coding c, size_t dim, Dtype t) {
  switch (c) {
    case Coding::Int8: return dim;
    case Coding::Binary: return binary_words(dim) * 8 + 8;
    default: return dim * dtype_size(t);
  }
}

// Per-dimension offset and scale of int8 codes over `rows` rows of f32 / bf16 / f16 `data`: the range [lo, hi] of
// each dimension is its min and max (clip 0) or its clip and 1 - clip quantiles (0 < clip < 0.5, outliers saturate
// at 0 or 255). ERR_NONFINITE for a NaN or infinite value (checked first: nothing is written).
void fit_int8(const void* data, Dtype t, size_t rows, size_t dim, double clip, float* scale, float* offset);
// codes[r * dim + d] = clamp(round((x - offset_d) / scale_d), 0, 255); a dimension of scale 0 codes as 0.
void encode_int8(const void* data, Dtype t, size_t rows, size_t dim, const float* scale, const float* offset,
                 uint8_t* codes);
// The mean of each dimension (double sums).
void fit_center(const void* data, Dtype t, size_t rows, size_t dim, float* center);
// The binary codes' random rotation (docs/methods/quantization.md#binary-1-bit-vectors): x padded with zeros to
// dp = 64 * binary_words(dim) dimensions, then kRotationRounds rounds of (random signs, a normalized Walsh-Hadamard
// transform on each block of 64, a random permutation), drawn from `seed` by a 32-bit LCG. Orthogonal (dot products are
// kept), made of additions, subtractions and exact scalings by 1/8, so every platform rotates to the same bits.
constexpr int kRotationRounds = 3;
struct Rotation {
  size_t dim = 0, dp = 0;
  std::vector<float> sign;      // [rounds * dp], +-1
  std::vector<uint32_t> perm;   // [rounds * dp]: element d moves to perm[d]
  Rotation(size_t dim, uint32_t seed);
  // out: dp values (x: dim values).
  void apply(const float* x, float* out) const;
  // The inverse: dp values back to dim (the padding's share dropped).
  void invert(const float* y, float* out) const;
};

// The rotation of `dim` dimensions drawn from `seed`, shared: a search builds none per call (the last few asked for are
// kept while anything holds them).
std::shared_ptr<const Rotation> shared_rotation(size_t dim, uint32_t seed);
// The seed of the rotation lib/quantized.ts and DenseIndex's binary storage draw theirs from.
constexpr uint32_t kRotationSeed = 0x51a7e;

// Rows of coded_row_bytes(Binary, dim) bytes: the bits of x - center (center may be null), rotated when `rotation` is
// given, then the row's scale ||r||^2 / ||r||_1 (r the vector the bits stand for) and its popcount.
void encode_binary(const void* data, Dtype t, size_t rows, size_t dim, const float* center, const Rotation* rotation,
                   uint8_t* codes);
// Decodes rows back to f32 (int8: offset + scale * u; binary: center + alpha * (2b - 1)): the reconstruction the tests
// and the recall tables check.
void decode(Coding c, const uint8_t* codes, size_t rows, size_t dim, const float* scale, const float* offset,
            const float* center, const Rotation* rotation, float* out);

// One query prepared for a coded corpus; each returns the query's constant (added to its final scores).
// f32 over u8 codes: out[d] = q_d * scale_d for d < dim (the caller pads with dense_dot's prepare).
float prepare_int8_f32(const float* q, size_t dim, const float* scale, const float* offset, float* out);
// int8 over u8 codes (quant_dot.h's score_s8 row: codes padded to kS8Pad bytes, then the f32 scale).
float prepare_int8_s8(const float* q, size_t dim, const float* scale, const float* offset, uint8_t* out);
// Bit planes (quant_dot.h's score_bits row): planes 1 (the signs of q: Hamming) or 4 (q on 16 levels).
size_t bits_query_bytes(size_t dim, size_t planes);
float prepare_bits(const float* q, size_t dim, const float* center, const Rotation* rotation, size_t planes, uint8_t* out);

}  // namespace quorum::kernels
