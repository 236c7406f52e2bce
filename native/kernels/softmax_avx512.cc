// AVX-512 variant of softmax.h: the shared body over 16-lane vectors.
#include "softmax.h"

#include "../common/dtype.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace quorum::kernels {
namespace {
#include "simd/vec_avx512.h"
#include "simd/vec_math.h"
#include "softmax_body.h"
const SoftmaxOps kOps{"avx512", exp_shift, row_max, count_greater, scale, dot, scale_cols, sub_scaled};
}  // namespace

const SoftmaxOps* softmax_avx512() { return &kOps; }

}  // namespace quorum::kernels

#pragma GCC pop_options
#else
namespace quorum::kernels {
const SoftmaxOps* softmax_avx512() { return nullptr; }
}  // namespace quorum::kernels
#endif
