// AVX-512 variant of pair_distance.h: the shared body over 16-lane vectors.
#include "pair_distance.h"

#include "../common/dtype.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace quorum::kernels {
namespace {
#include "simd/vec_avx512.h"
#include "simd/vec_math.h"
#include "pair_distance_body.h"
const PairDistanceOps kOps{"avx512", pair_dot, pair_l2sq};
}  // namespace

const PairDistanceOps* pair_distance_avx512() { return &kOps; }

}  // namespace quorum::kernels

#pragma GCC pop_options
#else
namespace quorum::kernels {
const PairDistanceOps* pair_distance_avx512() { return nullptr; }
}  // namespace quorum::kernels
#endif
