// Scalar reference variant of pair_distance.h: the shared body over one-lane vectors.
#include <cmath>

#include "pair_distance.h"

#include "../common/dtype.h"

namespace quorum::kernels {
namespace {
#include "simd/vec_scalar.h"
#include "simd/vec_math.h"
#include "pair_distance_body.h"
const PairDistanceOps kOps{"scalar", pair_dot, pair_l2sq};
}  // namespace

const PairDistanceOps& pair_distance_scalar() { return kOps; }

}  // namespace quorum::kernels
