// AVX2 + FMA variant of softmax.h: the shared body over 8-lane vectors.
#include "softmax.h"

#include "../common/dtype.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace quorum::kernels {
namespace {
#include "simd/vec_avx2.h"
#include "simd/vec_math.h"
#include "softmax_body.h"
const SoftmaxOps kOps{"avx2", exp_shift, row_max, count_greater, scale, dot, scale_cols, sub_scaled};
}  // namespace

const SoftmaxOps* softmax_avx2() { return &kOps; }

}  // namespace quorum::kernels

#pragma GCC pop_options
#else
namespace quorum::kernels {
const SoftmaxOps* softmax_avx2() { return nullptr; }
}  // namespace quorum::kernels
#endif
