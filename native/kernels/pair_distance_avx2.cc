// AVX2 + FMA variant of pair_distance.h: the shared body over 8-lane vectors.
#include "pair_distance.h"

#include "../common/dtype.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace quorum::kernels {
namespace {
#include "simd/vec_avx2.h"
#include "simd/vec_math.h"
#include "pair_distance_body.h"
const PairDistanceOps kOps{"avx2", pair_dot, pair_l2sq};
}  // namespace

const PairDistanceOps* pair_distance_avx2() { return &kOps; }

}  // namespace quorum::kernels

#pragma GCC pop_options
#else
namespace quorum::kernels {
const PairDistanceOps* pair_distance_avx2() { return nullptr; }
}  // namespace quorum::kernels
#endif
