// AVX2 + FMA variant of splade.h: the shared body over 8-lane vectors.
#include "splade.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace quorum::kernels {
namespace {
#include "simd/vec_avx2.h"
#include "simd/vec_math.h"
#include "splade_body.h"
const SpladeOps kOps{"avx2", max_update, log1p_inplace};
}  // namespace

const SpladeOps* splade_avx2() { return &kOps; }

}  // namespace quorum::kernels

#pragma GCC pop_options
#else
namespace quorum::kernels {
const SpladeOps* splade_avx2() { return nullptr; }
}  // namespace quorum::kernels
#endif
