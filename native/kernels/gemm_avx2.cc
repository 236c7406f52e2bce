// AVX2 + FMA variant of gemm.h: the shared body over 8-lane vectors.
#include "gemm.h"

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
#include "gemm_body.h"
}  // namespace

const GemmOps* gemm_avx2() { return &kGemmOps; }

}  // namespace quorum::kernels

#pragma GCC pop_options
#else
namespace quorum::kernels {
const GemmOps* gemm_avx2() { return nullptr; }
}  // namespace quorum::kernels
#endif
