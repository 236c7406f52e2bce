// AArch64 NEON variant of pair_distance.h: the shared body over 4-lane vectors.
#include "pair_distance.h"

#include "../common/dtype.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace quorum::kernels {
namespace {
#include "simd/vec_neon.h"
#include "simd/vec_math.h"
#include "pair_distance_body.h"
const PairDistanceOps kOps{"neon", pair_dot, pair_l2sq};
}  // namespace

const PairDistanceOps* pair_distance_neon() { return &kOps; }

}  // namespace quorum::kernels

#else
namespace quorum::kernels {
const PairDistanceOps* pair_distance_neon() { return nullptr; }
}  // namespace quorum::kernels
#endif
